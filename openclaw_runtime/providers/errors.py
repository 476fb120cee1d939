"""Turning every way a provider call can fail into facts a classifier can use.

A provider never raises; it ends its stream with an error message carrying: the text (in the
shape OpenClaw's classifier expects — ``"429 <detail>"``, ``"413 status code (no body)"``,
``"Connection error: ..."``, ``"stream disconnected before completion: ..."``), the HTTP
status, the provider's error code and type, the raw body (capped), the retry-after hint from
headers or body, and whether any output had started. Secrets in any of these are masked here,
where they enter (``openclaw_runtime.redaction``). Bodies of any shape survive: OpenAI's
``{"error": {...}}``, ``{"detail": ...}``, bare strings, plain text and HTML pages from proxies.
"""

from __future__ import annotations

import math
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import orjson

from .._json import loads_untrusted, prune_json
from ..messages import AssistantMessage
from ..redaction import redact_diagnostic

__all__ = [
    "MAX_ERROR_BODY_CHARS",
    "ProviderFailure",
    "failure_from_exception",
    "failure_from_http",
    "parse_retry_after_ms",
]

MAX_ERROR_BODY_CHARS = 4_000
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)
_TRY_AGAIN_RE = re.compile(
    r"(?:try again|retry)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*(?:ms|h|m|s)\s*)+)", re.IGNORECASE
)
_PART_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|h|m|s)", re.IGNORECASE)
_UNIT_MS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


@dataclass(slots=True)
class ProviderFailure:
    """Why a provider call failed, with every fact that was available."""

    message: str
    status: int | None = None
    code: str | None = None
    error_type: str | None = None
    body: str | None = None
    retry_after_ms: float | None = None
    aborted: bool = False

    def __post_init__(self) -> None:
        # Providers echo keys in their errors: mask them where they enter the runtime, so
        # the message, the transcript, events and results never hold them.
        self.message = redact_diagnostic(self.message)
        if self.body is not None:
            self.body = redact_diagnostic(self.body)
        if self.code is not None:
            self.code = redact_diagnostic(self.code)
        if self.error_type is not None:
            self.error_type = redact_diagnostic(self.error_type)

    def apply_to(self, message: AssistantMessage) -> None:
        """Write the facts onto an error message (unset facts stay absent on the wire)."""
        facts = {
            "error_status": self.status,
            "error_code": self.code,
            "error_type": self.error_type,
            "error_body": self.body,
            "error_retry_after_ms": self.retry_after_ms,
        }
        for name, value in facts.items():
            if value is not None:
                setattr(message, name, value)


def failure_from_http(
    status: int, headers: Mapping[str, str], body: bytes, *, now_ms: float | None = None
) -> ProviderFailure:
    """A failure from a non-2xx response: detail, code and type from whatever the body is."""
    text = body.decode("utf-8", errors="replace").strip()
    detail, code, error_type, payload = _describe_body(text)
    message = f"{status} {detail}" if detail else f"{status} status code (no body)"
    retry = parse_retry_after_ms(headers, payload, detail, now_ms=now_ms)
    return ProviderFailure(
        message=message,
        status=status,
        code=code,
        error_type=error_type,
        body=redact_diagnostic(text)[:MAX_ERROR_BODY_CHARS] or None,
        retry_after_ms=retry,
    )


def failure_from_payload(payload: Any, *, status: int | None = None) -> ProviderFailure:
    """A failure reported inside a 200 stream (``data: {"error": {...}}``)."""
    text = _payload_text(payload)
    detail, code, error_type, _ = _describe_body(text)
    prefix = f"{status} " if status else ""
    return ProviderFailure(
        message=f"{prefix}{detail or text}",
        status=status,
        code=code,
        error_type=error_type,
        body=redact_diagnostic(text)[:MAX_ERROR_BODY_CHARS],
        retry_after_ms=parse_retry_after_ms({}, payload, detail),
    )


def _payload_text(payload: Any) -> str:
    """The payload as JSON text, containers nested too deeply cut off (a payload parsed
    from a stream may be 1,000 levels deep; its message and code are near the top)."""
    pruned = prune_json(payload)
    try:
        return orjson.dumps(pruned).decode()
    except TypeError:  # orjson.JSONEncodeError: a type JSON has no form for
        return repr(pruned)[:MAX_ERROR_BODY_CHARS]


def failure_from_exception(
    exc: BaseException, *, idle_timeout: float | None = None
) -> ProviderFailure:
    """A failure from a transport exception (connect, TLS, timeouts, cut connections)."""
    if isinstance(exc, httpx.ConnectTimeout):
        return ProviderFailure(f"Connection error: timed out connecting ({exc})")
    if isinstance(exc, httpx.ConnectError):
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(
            exc
        ):
            return ProviderFailure(f"TLS certificate verification failed: {exc}")
        return ProviderFailure(f"Connection error: {exc}")
    if isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout | httpx.PoolTimeout):
        return ProviderFailure(f"Request timed out: {type(exc).__name__}: {exc}")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return ProviderFailure(f"stream disconnected before completion: {exc}")
    if isinstance(exc, TimeoutError):
        seconds = f" for {idle_timeout:g}s" if idle_timeout is not None else ""
        return ProviderFailure(f"Stream idle timeout: no data received{seconds} (timed out)")
    if isinstance(exc, httpx.HTTPError):
        return ProviderFailure(f"Network error: {type(exc).__name__}: {exc}")
    return ProviderFailure(f"{type(exc).__name__}: {exc}")


def parse_retry_after_ms(
    headers: Mapping[str, str],
    payload: Any = None,
    detail: str | None = None,
    *,
    now_ms: float | None = None,
) -> float | None:
    """Retry-after in ms: ``retry-after-ms``, ``retry-after`` (seconds or HTTP date), a
    structured body hint (Gemini ``RetryInfo.retryDelay``, ``retry_after``), or "try again in
    20s" wording in the message, in that order. Always finite and non-negative, or None
    (a ``retry-after: 1e400`` is no hint at all)."""
    found = _retry_after_ms(headers, payload, detail, now_ms=now_ms)
    return found if found is not None and math.isfinite(found) and found >= 0 else None


def _retry_after_ms(
    headers: Mapping[str, str],
    payload: Any,
    detail: str | None,
    *,
    now_ms: float | None,
) -> float | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        value = _number(raw_ms)
        if value is not None and value >= 0:
            return value
    raw = lowered.get("retry-after")
    if raw is not None:
        seconds = _number(raw)
        if seconds is not None and seconds >= 0:
            return seconds * 1000.0
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            import time

            current = now_ms if now_ms is not None else time.time() * 1000.0
            return max(0.0, when.timestamp() * 1000.0 - current)
    structured = _structured_retry_ms(payload)
    if structured is not None:
        return structured
    if detail:
        match = _TRY_AGAIN_RE.search(detail)
        if match:
            return sum(float(n) * _UNIT_MS[u.lower()] for n, u in _PART_RE.findall(match.group(1)))
    return None


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def _duration_ms(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) * 1000.0
    if isinstance(value, str):
        match = _DURATION_RE.match(value)
        if match:
            return float(match.group(1)) * _UNIT_MS[(match.group(2) or "s").lower()]
    return None


def _structured_retry_ms(payload: Any) -> float | None:
    if not isinstance(payload, dict):
        return None
    nested = payload.get("error")
    error: dict[str, Any] = nested if isinstance(nested, dict) else payload
    for key in ("retry_after_ms", "retryAfterMs"):
        if isinstance(error.get(key), int | float):
            return float(error[key])
    for key in ("retry_after", "retryAfter"):
        found = _duration_ms(error.get(key))
        if found is not None:
            return found
    details = error.get("details")
    if isinstance(details, list):
        for item in details:
            if isinstance(item, dict) and "retryDelay" in item:
                found = _duration_ms(item["retryDelay"])
                if found is not None:
                    return found
    return None


def _describe_body(text: str) -> tuple[str, str | None, str | None, Any]:
    """(detail, code, type, parsed payload) for a response body of any shape."""
    if not text:
        return "", None, None, None
    try:
        payload = loads_untrusted(text)
    except ValueError:  # not JSON, or nested too deeply to be an error body
        return _collapse(text), None, None, None
    if not isinstance(payload, dict):
        return _collapse(text), None, None, payload
    error = payload.get("error")
    container: dict[str, Any] = error if isinstance(error, dict) else payload
    detail = _first_text(container, "message", "msg", "error_description")
    if detail is None and isinstance(error, str):
        detail = error
    if detail is None:
        detail = _detail_text(payload.get("detail"))
    if detail is None:
        detail = _collapse(text)
    code = _code(container.get("code"), container.get("status"))
    error_type = _first_text(container, "type") or (
        payload.get("type")
        if isinstance(payload.get("type"), str) and payload["type"] != "error"
        else None
    )
    return detail, code, error_type, payload


def _first_text(container: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = container.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _detail_text(detail: Any) -> str | None:
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        parts = [d["msg"] for d in detail if isinstance(d, dict) and isinstance(d.get("msg"), str)]
        if parts:
            return "; ".join(str(p) for p in parts)
    if detail is not None:
        return orjson.dumps(detail).decode()
    return None


def _code(code: Any, status: Any) -> str | None:
    if isinstance(status, str) and status and not status.isdigit():
        return status  # Gemini: {"code": 429, "status": "RESOURCE_EXHAUSTED"}
    if isinstance(code, str) and code:
        return code
    if isinstance(code, int) and not isinstance(code, bool):
        return str(code)
    return None


def _collapse(text: str) -> str:
    return " ".join(text.split())[:MAX_ERROR_BODY_CHARS]
