"""Reading a provider's error text (spec §1.2–1.4): leading HTTP statuses, JSON error payloads,
server-error and HTML/no-body shapes, the timing statuses.

Pure predicates and parsers over one message; the classifier (``classify``) and the message rules
(``message_rules``) combine them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._json import untrusted_json_object
from .matchers import (
    is_auth_error_message,
    is_auth_permanent_error_message,
    is_billing_error_message,
    is_format_error_message,
    is_image_dimension_error_message,
)
from .reasons import FailoverSignal
from .signals import coerce_signal
from .text import js_regex, normalize_lower, normalize_optional_lower

__all__ = [
    "TIMING_HTTP_STATUSES",
    "ApiErrorInfo",
    "LeadingHttpStatus",
    "extract_leading_http_status",
    "finite_status",
    "infer_signal_status",
    "is_cloud_code_assist_format_error",
    "is_generic_provider_internal_error",
    "is_html_error_response",
    "is_json_api_internal_server_error",
    "is_structured_server_error_message",
    "is_timing_http_status",
    "is_transport_html_error_status",
    "is_unclassified_no_body_http_signal",
    "parse_api_error_info",
    "parse_api_error_payload",
    "strip_error_prefix",
]

# --------------------------------------------------------------------------- HTTP status text

_HTTP_STATUS_CODE_PREFIX_RE = js_regex(r"^(?:http\s*)?(\d{3})(?:(?:\s*:\s*|\s+)([\s\S]+))?$", "i")
_ERROR_PREFIX_RE = js_regex(r"^error:\s*", "i")


@dataclass(frozen=True, slots=True)
class LeadingHttpStatus:
    """A 3-digit HTTP status at the start of a message, and the text after it."""

    code: int
    rest: str


def extract_leading_http_status(raw: str) -> LeadingHttpStatus | None:
    """``"429 Too Many Requests"`` → ``(429, "Too Many Requests")``; statuses 100–599 only."""
    match = _HTTP_STATUS_CODE_PREFIX_RE.search(raw)
    if match is None:
        return None
    code = int(match.group(1))
    if code < 100 or code > 599:
        return None
    return LeadingHttpStatus(code, (match.group(2) or "").strip())


def strip_error_prefix(raw: str) -> str:
    return _ERROR_PREFIX_RE.sub("", raw, count=1).strip()


def finite_status(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return int(value)


def infer_signal_status(signal: FailoverSignal | Mapping[str, Any]) -> int | None:
    """The explicit status, else the leading status of the message (after ``Error:``)."""
    facts = coerce_signal(signal)
    explicit = finite_status(facts.status)
    if explicit is not None:
        return explicit
    leading = extract_leading_http_status(strip_error_prefix((facts.message or "").strip()))
    return leading.code if leading else None


# --------------------------------------------------------------------------- API error payloads

_ERROR_PAYLOAD_PREFIX_RE = js_regex(
    r"^(?:error|(?:[a-z][\w-]*\s+)?api\s*error|apierror|openai\s*error|anthropic\s*error"
    r"|gateway\s*error|codex\s*error)(?:\s+\d{3})?[:\s-]+",
    "i",
)


@dataclass(frozen=True, slots=True)
class ApiErrorInfo:
    """The structured facts of a provider's JSON error body."""

    http_code: str | None = None
    type: str | None = None
    code: str | None = None
    message: str | None = None
    request_id: str | None = None


def _record(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _string_field(record: Mapping[str, Any] | None, key: str) -> str | None:
    value = record.get(key) if record is not None else None
    return value if isinstance(value, str) else None


def _first_string(*values: str | None) -> str | None:
    return next((value for value in values if value is not None), None)


def _is_error_payload_object(payload: object) -> bool:
    record = _record(payload)
    if record is None:
        return False
    if record.get("type") == "error":
        return True
    if isinstance(record.get("request_id"), str) or isinstance(record.get("requestId"), str):
        return True
    error = _record(record.get("error"))
    if error is not None and any(
        isinstance(error.get(key), str) for key in ("message", "type", "code")
    ):
        return True
    return isinstance(record.get("error"), str) and isinstance(record.get("message"), str)


def parse_api_error_payload(raw: str | None) -> dict[str, Any] | None:
    """A JSON error body (optionally after ``API error:``-style prefixes), or None."""
    trimmed = raw.strip() if isinstance(raw, str) else ""
    if not trimmed:
        return None
    candidate = _ERROR_PAYLOAD_PREFIX_RE.sub("", trimmed, count=1).strip()
    if not (candidate.startswith("{") and candidate.endswith("}")):
        return None
    parsed = untrusted_json_object(candidate)
    return parsed if parsed is not None and _is_error_payload_object(parsed) else None


def parse_api_error_info(raw: str | None) -> ApiErrorInfo | None:
    """Type, code, message and request id of an error body (a proxy's last attempt wins)."""
    trimmed = raw.strip() if isinstance(raw, str) else ""
    if not trimmed:
        return None
    http_code: str | None = None
    candidate = trimmed
    leading = extract_leading_http_status(candidate)
    if leading is not None:
        http_code = str(leading.code)
        candidate = leading.rest
    payload = parse_api_error_payload(candidate)
    if payload is None:
        return None
    for _depth in range(4):
        attempts = (_record(payload.get("error")) or {}).get("attempts")
        final = _record(attempts[-1]) if isinstance(attempts, list) and attempts else None
        details = _record(final.get("details")) if final is not None else None
        if details is None or not _is_error_payload_object(details):
            break
        payload = details
    error = _record(payload.get("error"))
    error_code = _string_field(error, "code")
    error_type = _string_field(error, "type")
    if error is not None:
        kind = error_code if error_code is not None and not error_type else error_type
    else:
        kind = _string_field(payload, "error")
    return ApiErrorInfo(
        http_code=http_code,
        type=kind if kind is not None else _string_field(payload, "type"),
        code=error_code if error_code is not None else _string_field(payload, "code"),
        message=_first_string(_string_field(error, "message"), _string_field(payload, "message")),
        request_id=_first_string(
            _string_field(payload, "request_id"), _string_field(payload, "requestId")
        ),
    )


_GENERIC_PROVIDER_INTERNAL_ERROR_RE = js_regex(
    r"an error occurred while processing your request", "i"
)
_HELP_OPENAI_RE = js_regex(r"help\.openai\.com", "i")
_SUPPORT_REQUEST_ID_RE = js_regex(
    r"(?:request[\s_-]*id)\s*[:#]?\s*([a-z0-9][a-z0-9_-]{6,}[a-z0-9])", "i"
)


def is_generic_provider_internal_error(raw: str) -> bool:
    """OpenAI's "An error occurred while processing your request" with support details."""
    trimmed = raw.strip()
    return bool(
        _GENERIC_PROVIDER_INTERNAL_ERROR_RE.search(trimmed)
        and (_HELP_OPENAI_RE.search(trimmed) or _SUPPORT_REQUEST_ID_RE.search(trimmed))
    )


_API_ERROR_TRANSIENT_SIGNALS_RE = js_regex(
    r"internal server error|overload|temporarily unavailable|service unavailable|unknown error"
    r"|server error|bad gateway|gateway timeout|upstream error|backend error|try again later"
    r"|temporarily.+unable|unexpected error",
    "i",
)


def is_json_api_internal_server_error(raw: str) -> bool:
    """A ``"type":"api_error"`` body with transient wording (not billing or auth)."""
    if not raw:
        return False
    if '"type":"api_error"' not in normalize_lower(raw):
        return False
    if is_billing_error_message(raw) or is_auth_error_message(raw):
        return False
    if is_auth_permanent_error_message(raw):
        return False
    return _API_ERROR_TRANSIENT_SIGNALS_RE.search(raw) is not None


_STRUCTURED_SERVER_ERROR_MARKERS = (
    '"type":"server_error"',
    '"code":"server_error"',
    '"type":"upstream_error"',
    '"code":"upstream_error"',
)


def is_structured_server_error_message(raw: str) -> bool:
    """A body typed ``server_error``/``upstream_error``."""
    if not raw:
        return False
    info = parse_api_error_info(raw)
    if normalize_optional_lower(info.type if info else None) in ("server_error", "upstream_error"):
        return True
    value = normalize_lower(raw)
    return any(marker in value for marker in _STRUCTURED_SERVER_ERROR_MARKERS)


def is_cloud_code_assist_format_error(raw: str) -> bool:
    """A request-shape rejection (never an image-dimension error)."""
    return not is_image_dimension_error_message(raw) and is_format_error_message(raw)


# --------------------------------------------------------------------------- HTML and no-body

_HTML_BODY_RE = js_regex(r"^\s*(?:<!doctype\s+html\b|<html\b)", "i")
_HTML_CLOSE_RE = js_regex(r"<\/html>", "i")
_NO_BODY_HTTP_WRAPPER_RE = js_regex(
    r"^(?:no body(?: response)?|no response body|status code \(no body\))$", "i"
)


def is_html_error_response(raw: str, status: int | None = None) -> bool:
    """An HTML page (a CDN or proxy answered) with an error status."""
    trimmed = raw.strip()
    if not trimmed:
        return False
    candidate = trimmed if extract_leading_http_status(trimmed) else strip_error_prefix(trimmed)
    leading = extract_leading_http_status(candidate)
    inferred = status if status is not None else (leading.code if leading else None)
    if inferred is None or inferred < 400:
        return False
    rest = leading.rest if leading else candidate
    return bool(_HTML_BODY_RE.search(rest) and _HTML_CLOSE_RE.search(rest))


def is_transport_html_error_status(status: int | None) -> bool:
    return status is not None and (status in (408, 499) or 500 <= status < 600)


def _is_explicit_no_body_http_message(raw: str | None, status: int | None) -> bool:
    trimmed = raw.strip() if raw else ""
    if not trimmed:
        return False
    candidate = trimmed if extract_leading_http_status(trimmed) else strip_error_prefix(trimmed)
    leading = extract_leading_http_status(candidate)
    if leading is not None:
        if status is not None and leading.code != status:
            return False
        return _NO_BODY_HTTP_WRAPPER_RE.search(leading.rest) is not None
    return _NO_BODY_HTTP_WRAPPER_RE.search(candidate) is not None


def is_unclassified_no_body_http_signal(signal: FailoverSignal | Mapping[str, Any]) -> bool:
    """A 400/422 with no body (``400 status code (no body)``): likely a proxy blip, not format."""
    facts = coerce_signal(signal)
    status = infer_signal_status(facts)
    if status not in (400, 422):
        return False
    message = (facts.message or "").strip()
    return not message or _is_explicit_no_body_http_message(message, status)


# --------------------------------------------------------------------------- status mapping (§1.4)

#: 408, 499 (our own deadline), and the 504/522/524 gateway timeouts. Every other 5xx is a
#: provider-side error: calling an outage a timeout would skip a configured fallback chain.
TIMING_HTTP_STATUSES: frozenset[int] = frozenset({408, 499, 504, 522, 524})


def is_timing_http_status(status: int | None) -> bool:
    """Does this status describe a timing failure?"""
    return status is not None and status in TIMING_HTTP_STATUSES
