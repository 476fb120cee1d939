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

import errno
import html as html_module
import math
import re
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import orjson

from .._json import loads_untrusted, prune_json
from ..messages import AssistantMessage
from ..redaction import redact_diagnostic
from .network_errors import NETWORK_ERROR_PREFIX, is_network_error_message

__all__ = [
    "EMPTY_STREAM_ERROR",
    "MAX_ERROR_BODY_CHARS",
    "NETWORK_ERROR_PREFIX",
    "UNEXPECTED_BODY_PREFIX",
    "ProviderFailure",
    "body_has_content",
    "describe_body_briefly",
    "describe_connect_error",
    "failure_from_exception",
    "failure_from_http",
    "failure_from_payload",
    "failure_from_unexpected_body",
    "is_network_error_message",
    "parse_retry_after_ms",
    "public_url",
]

#: The error of a 200 whose body held no event at all (every provider uses these words).
EMPTY_STREAM_ERROR = "Provider returned an empty response (HTTP 200 without any stream event)"
#: How the error of a 200 without an event stream starts.
UNEXPECTED_BODY_PREFIX = "HTTP 200 without an event stream: "
_TITLE_RE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(r"<[^>]*>")
_HTML_SKIP_RE = re.compile(
    r"<(script|style|head)\b[^>]*>.*?</\1\s*>|<!--.*?-->", re.IGNORECASE | re.DOTALL
)
#: How a connection that could not be made starts (OpenClaw's "Connection error" wording).
_DNS_ERRNOS = frozenset({socket.EAI_NONAME, socket.EAI_AGAIN, getattr(socket, "EAI_NODATA", -5)})
_DNS_WORDS = (
    "name or service not known",
    "nodename nor servname",
    "temporary failure in name resolution",
    "no address associated with hostname",
    "getaddrinfo failed",
)
_UNREACHABLE_ERRNOS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ENETUNREACH: "network unreachable",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ECONNRESET: "connection reset",
}

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


def failure_from_unexpected_body(
    content_type: str | None, url: str, body: bytes, *, total_bytes: int | None = None
) -> ProviderFailure:
    """A 200 whose body is not an event stream (a proxy's HTML error page, some JSON, random
    bytes): one error naming what came back — ``got text/html from <url>: 502 Bad Gateway``.

    A JSON ``{"error": ...}`` body is the provider's own error and is read as one. Anything
    else is typed ``upstream_error``: when its text says nothing the classifier knows (rate
    limit, overload, context overflow...), the failover reason is ``server_error`` — the
    endpoint is broken, so the turn is not re-sent as an "empty response".
    """
    size = len(body) if total_bytes is None else total_bytes
    kind = (content_type or "").split(";")[0].strip().lower() or "a body without content-type"
    text = body.decode("utf-8", errors="replace").strip()
    payload: Any = None
    if text[:1] in ("{", "["):
        try:
            payload = loads_untrusted(text)
        except ValueError:
            payload = None
    if isinstance(payload, dict) and payload.get("error"):
        error = payload["error"]
        status = error.get("code") if isinstance(error, dict) else None
        return failure_from_payload(
            payload, status=status if isinstance(status, int) and 400 <= status < 600 else None
        )
    summary = describe_body_briefly(body, kind, size)
    return ProviderFailure(
        message=f"{UNEXPECTED_BODY_PREFIX}got {kind} from {public_url(url)}: {summary}",
        error_type="upstream_error",
        body=text[:MAX_ERROR_BODY_CHARS] or None,
    )


def body_has_content(body: bytes | bytearray) -> bool:
    """Anything besides blank lines and SSE comments (``: ping``)? An empty stream has not."""
    return any(
        line.strip() and not line.lstrip().startswith(b":") for line in bytes(body).splitlines()
    )


def describe_body_briefly(body: bytes, content_type: str = "", size: int | None = None) -> str:
    """A few words on what a body is: an HTML page's ``<title>`` (or first text), the start
    of a text, or ``N bytes of binary data``."""
    size = len(body) if size is None else size
    if not body.strip():
        return "an empty body"
    text = body.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(2, len(text) // 20) or any(
        ord(c) < 9 or 13 < ord(c) < 32 for c in text[:512]
    ):
        return f"{size} bytes of binary data"
    lowered = text[:4096].lower()
    if "html" in content_type or "<html" in lowered or "<!doctype html" in lowered:
        title = _TITLE_RE.search(text)
        if title is not None and title.group(1).strip():
            return _brief(_html_text(title.group(1)))
        visible = _html_text(_HTML_SKIP_RE.sub(" ", text))
        return _brief(visible) if visible else "an HTML page without text"
    return _brief(text)


def _html_text(html: str) -> str:
    return " ".join(html_module.unescape(_TAG_RE.sub(" ", html)).split())


def _brief(text: str, limit: int = 200) -> str:
    collapsed = " ".join(text.split())
    return collapsed if len(collapsed) <= limit else collapsed[: limit - 1] + "…"


def failure_from_exception(
    exc: BaseException, *, idle_timeout: float | None = None
) -> ProviderFailure:
    """A failure from a transport exception (connect, TLS, timeouts, cut connections).

    A connection that could not be made names the URL and says why (``describe_connect_error``):
    refused, name not resolved, unreachable. Its text starts ``Connection error:``, which
    OpenClaw's classifier files under ``timeout`` for the failover decision (the next model is
    tried); ``is_network_error_message`` tells it apart from a real timeout for users.
    """
    url = _request_url(exc)
    where = f" to {url}" if url else ""
    if isinstance(exc, httpx.ConnectTimeout):
        return ProviderFailure(f"Connection error: timed out connecting{where} ({exc})")
    if isinstance(exc, httpx.ConnectError):
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(
            exc
        ):
            return ProviderFailure(f"TLS certificate verification failed: {exc}")
        return ProviderFailure(describe_connect_error(exc, url))
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


def describe_connect_error(exc: BaseException, url: str | None) -> str:
    """``Connection error: cannot reach <url> (connection refused)`` and the like: what could
    not be reached and why, from the OS error under ``exc`` (or its text)."""
    target = url or "the provider"
    why = str(exc) or type(exc).__name__
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror) or (
            isinstance(cause, OSError)
            and cause.errno is not None
            and cause.errno < 0
            and cause.errno in _DNS_ERRNOS
        ):
            return f"{NETWORK_ERROR_PREFIX}cannot resolve host {_host(url)} for {target} ({why})"
        if isinstance(cause, OSError) and cause.errno in _UNREACHABLE_ERRNOS:
            why = _UNREACHABLE_ERRNOS[cause.errno]
            return f"{NETWORK_ERROR_PREFIX}cannot reach {target} ({why})"
    lowered = why.lower()
    if any(word in lowered for word in _DNS_WORDS):
        return f"{NETWORK_ERROR_PREFIX}cannot resolve host {_host(url)} for {target} ({why})"
    if "refused" in lowered:
        return f"{NETWORK_ERROR_PREFIX}cannot reach {target} (connection refused)"
    return f"{NETWORK_ERROR_PREFIX}cannot reach {target} ({why})"


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from, outermost first (cycles and depth bounded)."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(out) < 16 and not any(current is e for e in out):
        out.append(current)
        nested = getattr(current, "exceptions", None)  # an ExceptionGroup of connect attempts
        if isinstance(nested, tuple) and nested:
            out.extend(e for e in nested[:8] if isinstance(e, BaseException))
        current = current.__cause__ or current.__context__
    return out


def _request_url(exc: BaseException) -> str | None:
    try:
        request = exc.request if isinstance(exc, httpx.RequestError) else None
    except RuntimeError:  # httpx raises when the error carries no request
        return None
    return None if request is None else public_url(str(request.url))


def public_url(url: str) -> str:
    """``url`` fit for an error message: no credentials, no query string (Gemini's key travels
    in ``?key=``), no fragment."""
    try:
        return str(httpx.URL(url).copy_with(query=None, fragment=None, userinfo=b""))
    except (httpx.InvalidURL, TypeError, ValueError):
        return "(an invalid URL)"


def _host(url: str | None) -> str:
    if not url:
        return "(unknown)"
    host = httpx.URL(url).host
    return repr(host) if host else "(unknown)"


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
