"""Why did a model call fail? OpenClaw's ``classifyFailoverSignal`` and its parts (spec §1.2–1.4).

The procedure is small; the rules are data:

* ``MESSAGE_RULES`` — the ordered message classifier (§1.3, first match wins);
* ``classify_failover_classification_from_http_status`` — the status mapping (§1.4);
* ``classify_failover_signal`` — status inference, TLS and HTML short-circuits, detail merge,
  structured codes, a provider owner's answer, then the status mapping (§1.2).

Provider-specific rules live in provider plugins as a ``ProviderFailoverOwner`` (their
structured codes, their message rules); core keeps the cross-provider rows. A plugin answers
the ``classify_failover`` hook with ``owner.classify(signal)``, which runs this same procedure
with its owner, exactly like OpenClaw consults a provider's ``classifyFailoverReason`` hook.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, TypeAlias

from .._json import MAX_UNTRUSTED_JSON_DEPTH, loads_untrusted, untrusted_json_object
from .overflow import (
    is_context_overflow_error_from_tables,
    looks_like_provider_context_overflow_candidate,
    matches_context_overflow_message,
)
from .patterns import (
    classify_402_message,
    classify_core_failover_reason_from_error_type,
    classify_failover_reason_from_402_text,
    classify_failover_reason_from_code,
    classify_legacy_provider_specific_error,
    classify_oauth_refresh_failure_reason,
    inspect_tls_certificate_error,
    is_auth_error_message,
    is_auth_permanent_error_message,
    is_billing_error_message,
    is_cli_session_expired_error_message,
    is_exact_unknown_no_details_error,
    is_format_error_message,
    is_generic_unknown_stream_error_message,
    is_image_dimension_error_message,
    is_image_size_error,
    is_model_not_found_error_message,
    is_overloaded_error_message,
    is_periodic_usage_limit_error_message,
    is_provider_completed_error_finish_reason_message,
    is_rate_limit_error_message,
    is_replay_invalid_error_message,
    is_server_error_message,
    is_timeout_error_message,
    is_unsupported_image_input_error_message,
    js_regex,
    normalize_lower,
    normalize_optional_lower,
)
from .reasons import FAILOVER_REASONS, FailoverClassification, FailoverReason, FailoverSignal
from .token_plan import is_token_plan_quota_429_message

__all__ = [
    "MESSAGE_RULES",
    "TIMING_HTTP_STATUSES",
    "ApiErrorInfo",
    "LeadingHttpStatus",
    "MessageRule",
    "ProviderFailoverContext",
    "ProviderFailoverOwner",
    "ProviderMessageRule",
    "classify_failover_classification_from_http_status",
    "classify_failover_classification_from_message",
    "classify_failover_reason",
    "classify_failover_signal",
    "extract_failover_signal_details",
    "extract_leading_http_status",
    "failover_reason_from_classification",
    "infer_signal_status",
    "is_cloud_code_assist_format_error",
    "is_failover_error_message",
    "is_generic_provider_internal_error",
    "is_html_error_response",
    "is_json_api_internal_server_error",
    "is_structured_server_error_message",
    "is_timing_http_status",
    "is_unclassified_no_body_http_signal",
    "merge_message_and_detail_classification",
    "parse_api_error_info",
    "parse_api_error_payload",
    "signal_from_assistant_message",
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


def _strip_error_prefix(raw: str) -> str:
    return _ERROR_PREFIX_RE.sub("", raw, count=1).strip()


def _finite_status(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return int(value)


def infer_signal_status(signal: FailoverSignal | Mapping[str, Any]) -> int | None:
    """The explicit status, else the leading status of the message (after ``Error:``)."""
    facts = _coerce_signal(signal)
    explicit = _finite_status(facts.status)
    if explicit is not None:
        return explicit
    leading = extract_leading_http_status(_strip_error_prefix((facts.message or "").strip()))
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
    candidate = trimmed if extract_leading_http_status(trimmed) else _strip_error_prefix(trimmed)
    leading = extract_leading_http_status(candidate)
    inferred = status if status is not None else (leading.code if leading else None)
    if inferred is None or inferred < 400:
        return False
    rest = leading.rest if leading else candidate
    return bool(_HTML_BODY_RE.search(rest) and _HTML_CLOSE_RE.search(rest))


def _is_transport_html_error_status(status: int | None) -> bool:
    return status is not None and (status in (408, 499) or 500 <= status < 600)


def _is_explicit_no_body_http_message(raw: str | None, status: int | None) -> bool:
    trimmed = raw.strip() if raw else ""
    if not trimmed:
        return False
    candidate = trimmed if extract_leading_http_status(trimmed) else _strip_error_prefix(trimmed)
    leading = extract_leading_http_status(candidate)
    if leading is not None:
        if status is not None and leading.code != status:
            return False
        return _NO_BODY_HTTP_WRAPPER_RE.search(leading.rest) is not None
    return _NO_BODY_HTTP_WRAPPER_RE.search(candidate) is not None


def is_unclassified_no_body_http_signal(signal: FailoverSignal | Mapping[str, Any]) -> bool:
    """A 400/422 with no body (``400 status code (no body)``): likely a proxy blip, not format."""
    facts = _coerce_signal(signal)
    status = infer_signal_status(facts)
    if status not in (400, 422):
        return False
    message = (facts.message or "").strip()
    return not message or _is_explicit_no_body_http_message(message, status)


# --------------------------------------------------------------------------- status mapping (§1.4)

#: 408, 499 (our own deadline), and the 504/522/524 gateway timeouts. Every other 5xx is a
#: provider-side error: calling an outage a timeout would skip a configured fallback chain.
TIMING_HTTP_STATUSES: frozenset[int] = frozenset({408, 499, 504, 522, 524})
_AMBIGUOUS_429_BALANCE_RE = js_regex(r"\binsufficient\s+account\s+balance\b", "i")


def is_timing_http_status(status: int | None) -> bool:
    """Does this status describe a timing failure?"""
    return status is not None and status in TIMING_HTTP_STATUSES


def failover_reason_from_classification(
    classification: FailoverClassification | None,
) -> FailoverReason | None:
    """The reason of a classification, with the overflow kind as ``context_overflow``."""
    return classification.effective_reason if classification is not None else None


def _reason(reason: FailoverReason | str) -> FailoverClassification:
    return FailoverClassification.of(reason)


def _plugin_classification(reason: FailoverReason) -> FailoverClassification:
    if reason == FailoverReason.CONTEXT_OVERFLOW:
        return FailoverClassification.context_overflow()
    return _reason(reason)


def _has_billing_api_error_type(raw: str) -> bool:
    info = parse_api_error_info(raw)
    kind = normalize_optional_lower(info.type if info else None)
    if not kind:
        return False
    return is_billing_error_message(kind) or is_billing_error_message(kind.replace("_", " "))


def _has_structured_billing_429_signal(raw: str) -> bool:
    if _has_billing_api_error_type(raw):
        return True
    leading = extract_leading_http_status(raw.strip())
    return bool(leading and leading.rest and _has_billing_api_error_type(leading.rest))


def _is_ambiguous_generic_429_balance_message(raw: str) -> bool:
    return bool(_AMBIGUOUS_429_BALANCE_RE.search(raw)) and not _has_structured_billing_429_signal(
        raw
    )


def _has_provider_billing_429_override(provider: str | None) -> bool:
    normalized = normalize_optional_lower(provider) or ""
    return any(name in normalized for name in ("xai", "moonshot", "kimi"))


def _is_billing_429_message_for_provider(raw: str, provider: str | None) -> bool:
    if not is_billing_error_message(raw):
        return False
    return _has_provider_billing_429_override(provider) or not (
        _is_ambiguous_generic_429_balance_message(raw)
    )


_KEEP_ON_410 = frozenset(
    {
        FailoverReason.SESSION_EXPIRED,
        FailoverReason.BILLING,
        FailoverReason.AUTH_PERMANENT,
        FailoverReason.AUTH,
    }
)
_KEEP_ON_404 = _KEEP_ON_410 | {FailoverReason.FORMAT}


def classify_failover_classification_from_http_status(
    status: int | None,
    message: str | None,
    message_classification: FailoverClassification | None,
    explicit_status: int | None = None,
    provider: str | None = None,
    *,
    preserve_provider_signal_classification: bool = False,
) -> FailoverClassification | None:
    """OpenClaw's HTTP status mapping (spec §1.4), applied to the message's classification.

    The order matters: 402, 429, 401/403, 408, 410 decide before an overflow classification
    is preserved for every other status.
    """
    message_reason = failover_reason_from_classification(message_classification)
    if status is None:
        return None
    if status == 402:
        if not message:
            return _reason(FailoverReason.BILLING)
        leading = extract_leading_http_status(message.strip())
        if leading is not None and leading.code == 402:
            from_text = classify_failover_reason_from_402_text(message)
            if from_text is not None:
                return _reason(from_text)
            if explicit_status is not None:
                return _reason(classify_402_message(message))
            return message_classification
        return _reason(classify_402_message(message))
    if status == 429:
        if message and is_token_plan_quota_429_message(message, provider):
            return _reason(FailoverReason.RATE_LIMIT)
        if message_reason == FailoverReason.BILLING and not (
            _is_ambiguous_generic_429_balance_message(message or "")
        ):
            return _reason(FailoverReason.BILLING)
        if message and _is_billing_429_message_for_provider(message, provider):
            return _reason(FailoverReason.BILLING)
        return _reason(FailoverReason.RATE_LIMIT)
    if status in (401, 403):
        if preserve_provider_signal_classification and message_classification is not None:
            return message_classification
        if message and is_auth_permanent_error_message(message):
            return _reason(FailoverReason.AUTH_PERMANENT)
        if message_reason == FailoverReason.BILLING:
            return _reason(FailoverReason.BILLING)
        return _reason(FailoverReason.AUTH)
    if status == 408:
        return _reason(FailoverReason.TIMEOUT)
    if status == 410:
        if message_reason in _KEEP_ON_410:
            return message_classification
        return _reason(FailoverReason.TIMEOUT)
    if message_classification is not None and message_classification.kind == "context_overflow":
        return message_classification
    if status == 404:
        if message_reason in _KEEP_ON_404:
            return message_classification
        return _reason(FailoverReason.MODEL_NOT_FOUND)
    if status == 529:
        return _reason(FailoverReason.OVERLOADED)
    if status == 499 or 500 <= status < 600:
        if message_reason in (FailoverReason.OVERLOADED, FailoverReason.SERVER_ERROR) or (
            status >= 500 and message_reason == FailoverReason.FORMAT
        ):
            return message_classification
        return _reason(
            FailoverReason.TIMEOUT if is_timing_http_status(status) else FailoverReason.SERVER_ERROR
        )
    if status in (400, 422):
        if message_classification is not None and message_reason != FailoverReason.SERVER_ERROR:
            return message_classification
        if is_unclassified_no_body_http_signal(FailoverSignal(status=status, message=message)):
            return None
        return _reason(FailoverReason.FORMAT)
    return None


# --------------------------------------------------------------------------- provider owners


@dataclass(frozen=True, slots=True)
class ProviderFailoverContext:
    """What a provider owner sees of a failure (OpenClaw's ``ProviderFailoverErrorContext``)."""

    error_message: str
    provider: str | None = None
    status: int | None = None
    code: str | None = None
    error_type: str | None = None


#: ``(raw message, provider) -> reason``: a provider-gated message rule, run early (§1.3 step 2).
ProviderMessageRule: TypeAlias = Callable[[str, "str | None"], "FailoverReason | str | None"]


def _as_reason(value: object) -> FailoverReason | None:
    if isinstance(value, FailoverReason):
        return value
    if isinstance(value, str) and value in FAILOVER_REASONS:
        return FailoverReason(value)
    return None


@dataclass(frozen=True)
class ProviderFailoverOwner:
    """A provider plugin's failure dialect: the providers it owns and how it reads them.

    ``classify_failover_reason`` and ``matches_context_overflow_error`` mirror OpenClaw's
    provider hooks; their answer is authoritative over the tables (the status mapping still
    applies). ``message_rules`` run in the message classifier right after the image checks.
    """

    id: str
    providers: frozenset[str] = frozenset()
    classify_failover_reason: Callable[[ProviderFailoverContext], object] | None = None
    matches_context_overflow_error: Callable[[ProviderFailoverContext], bool] | None = None
    message_rules: tuple[ProviderMessageRule, ...] = ()

    def owns(self, provider: str | None) -> bool:
        """Is ``provider`` (case-insensitive) one of this owner's providers?"""
        normalized = normalize_optional_lower(provider)
        return normalized is not None and (normalized == self.id or normalized in self.providers)

    def classify_reason(
        self,
        *,
        error_message: str,
        provider: str | None = None,
        status: int | None = None,
        code: str | None = None,
        error_type: str | None = None,
    ) -> FailoverReason | None:
        """The owner's own verdict (overflow first), or None."""
        context = ProviderFailoverContext(error_message, provider, status, code, error_type)
        if self.matches_context_overflow_error is not None and self.matches_context_overflow_error(
            context
        ):
            return FailoverReason.CONTEXT_OVERFLOW
        if self.classify_failover_reason is None:
            return None
        return _as_reason(self.classify_failover_reason(context))

    def classify(self, signal: FailoverSignal | Mapping[str, Any]) -> FailoverClassification | None:
        """The full classification with this owner, or None for a provider it does not own."""
        facts = _coerce_signal(signal)
        if not self.owns(facts.provider):
            return None
        return classify_failover_signal(facts, provider_owner=self)


# --------------------------------------------------------------------------- message rules (§1.3)


@dataclass(frozen=True, slots=True)
class _MessageContext:
    provider: str | None
    error_type: str | None
    owner: ProviderFailoverOwner | None


class _NoMatch:
    __slots__ = ()


NO_MATCH: Final = _NoMatch()
_Verdict: TypeAlias = "FailoverClassification | _NoMatch | None"
MessageRule: TypeAlias = Callable[[str, _MessageContext], _Verdict]


def _when(predicate: Callable[[str], bool], outcome: FailoverReason | str | None) -> MessageRule:
    """A rule: if ``predicate(raw)``, stop with ``outcome`` (None: stop with no opinion)."""
    if outcome is None:
        result: FailoverClassification | None = None
    elif outcome == FailoverReason.CONTEXT_OVERFLOW:
        result = FailoverClassification.context_overflow()
    else:
        result = _reason(outcome)

    def rule(raw: str, _context: _MessageContext) -> _Verdict:
        return result if predicate(raw) else NO_MATCH

    rule.__name__ = getattr(predicate, "__name__", "rule")
    return rule


def _derived(compute: Callable[[str, _MessageContext], FailoverReason | None]) -> MessageRule:
    """A rule whose reason is computed; no reason means no match."""

    def rule(raw: str, context: _MessageContext) -> _Verdict:
        reason = compute(raw, context)
        return _reason(reason) if reason is not None else NO_MATCH

    rule.__name__ = compute.__name__
    return rule


def _owner_message_rules(raw: str, context: _MessageContext) -> _Verdict:
    if context.owner is None:
        return NO_MATCH
    for provider_rule in context.owner.message_rules:
        reason = _as_reason(provider_rule(raw, context.provider))
        if reason is not None:
            return _plugin_classification(reason)
    return NO_MATCH


def _legacy_provider_reason(raw: str, _context: _MessageContext) -> FailoverReason | None:
    return classify_legacy_provider_specific_error(raw)


def _reason_from_402_text(raw: str, _context: _MessageContext) -> FailoverReason | None:
    return classify_failover_reason_from_402_text(raw)


def _billing_unless_leading_429(raw: str, _context: _MessageContext) -> FailoverReason | None:
    leading = extract_leading_http_status(raw.strip())
    if (leading is None or leading.code != 429) and is_billing_error_message(raw):
        return FailoverReason.BILLING
    return None


def _periodic_usage_limit(raw: str, _context: _MessageContext) -> FailoverReason | None:
    if not is_periodic_usage_limit_error_message(raw):
        return None
    return FailoverReason.BILLING if is_billing_error_message(raw) else FailoverReason.RATE_LIMIT


def _is_structured_server_error_not_access(raw: str) -> bool:
    return (
        is_structured_server_error_message(raw)
        and not is_billing_error_message(raw)
        and not is_auth_permanent_error_message(raw)
        and not is_auth_error_message(raw)
    )


def _has_oauth_refresh_failure_reason(raw: str) -> bool:
    return classify_oauth_refresh_failure_reason(raw) is not None


def _is_assistant_error_overflow(raw: str) -> bool:
    return matches_context_overflow_message(raw, "assistant-error")


def _api_error_type_reason(raw: str, context: _MessageContext) -> FailoverReason | None:
    info = parse_api_error_info(raw)
    kind = info.type if info is not None and info.type is not None else context.error_type
    return classify_core_failover_reason_from_error_type(kind)


def _leading_status_mapping(raw: str, context: _MessageContext) -> _Verdict:
    return classify_failover_classification_from_http_status(
        infer_signal_status(FailoverSignal(message=raw)), raw, None, None, context.provider
    )


#: The message classifier of the reference snapshot, in order; the first rule that matches
#: decides (a ``None`` outcome stops with no opinion).
MESSAGE_RULES: tuple[MessageRule, ...] = (
    _when(is_image_dimension_error_message, None),
    _when(is_image_size_error, None),
    _when(is_unsupported_image_input_error_message, FailoverReason.FORMAT),
    _owner_message_rules,
    _when(is_cli_session_expired_error_message, FailoverReason.SESSION_EXPIRED),
    _when(is_model_not_found_error_message, FailoverReason.MODEL_NOT_FOUND),
    _derived(_legacy_provider_reason),
    _when(is_context_overflow_error_from_tables, FailoverReason.CONTEXT_OVERFLOW),
    _when(is_replay_invalid_error_message, FailoverReason.FORMAT),
    _derived(_reason_from_402_text),
    _derived(_billing_unless_leading_429),
    _derived(_periodic_usage_limit),
    _when(is_rate_limit_error_message, FailoverReason.RATE_LIMIT),
    _when(is_overloaded_error_message, FailoverReason.OVERLOADED),
    _when(is_provider_completed_error_finish_reason_message, FailoverReason.SERVER_ERROR),
    _when(_is_structured_server_error_not_access, FailoverReason.SERVER_ERROR),
    _when(is_generic_provider_internal_error, FailoverReason.TIMEOUT),
    _when(_has_oauth_refresh_failure_reason, FailoverReason.AUTH_PERMANENT),
    _when(is_auth_permanent_error_message, FailoverReason.AUTH_PERMANENT),
    _when(is_auth_error_message, FailoverReason.AUTH),
    _when(is_generic_unknown_stream_error_message, FailoverReason.TIMEOUT),
    _when(is_server_error_message, FailoverReason.TIMEOUT),
    _when(is_json_api_internal_server_error, FailoverReason.TIMEOUT),
    _when(is_cloud_code_assist_format_error, FailoverReason.FORMAT),
    _when(is_exact_unknown_no_details_error, FailoverReason.NO_ERROR_DETAILS),
    _when(is_timeout_error_message, FailoverReason.TIMEOUT),
    _when(_is_assistant_error_overflow, FailoverReason.CONTEXT_OVERFLOW),
    _derived(_api_error_type_reason),
    _leading_status_mapping,
)


def classify_failover_classification_from_message(
    raw: str,
    provider: str | None = None,
    error_type: str | None = None,
    *,
    provider_owner: ProviderFailoverOwner | None = None,
) -> FailoverClassification | None:
    """Classify one error text by ``MESSAGE_RULES`` (spec §1.3)."""
    context = _MessageContext(provider, error_type, provider_owner)
    for rule in MESSAGE_RULES:
        verdict = rule(raw, context)
        if not isinstance(verdict, _NoMatch):
            return verdict
    return None


def merge_message_and_detail_classification(
    message: FailoverClassification | None, detail: FailoverClassification | None
) -> FailoverClassification | None:
    """Overflow from either side wins; a billing detail beats a rate-limit message; a format
    message gives way to any detail; otherwise the message stands."""
    if message is None or detail is None:
        return message if message is not None else detail
    if message.kind == "context_overflow":
        return message
    if detail.kind == "context_overflow":
        return detail
    if detail.reason == FailoverReason.BILLING and message.reason == FailoverReason.RATE_LIMIT:
        return detail
    return detail if message.reason == FailoverReason.FORMAT else message


def _classify_details(
    details: Iterable[str], provider: str | None, owner: ProviderFailoverOwner | None
) -> FailoverClassification | None:
    for detail in details:
        found = classify_failover_classification_from_message(
            detail, provider, provider_owner=owner
        )
        if found is not None:
            return found
    return None


# --------------------------------------------------------------------------- the signal procedure


def _coerce_signal(signal: FailoverSignal | Mapping[str, Any]) -> FailoverSignal:
    if isinstance(signal, FailoverSignal):
        return signal
    if isinstance(signal, Mapping):
        return FailoverSignal.from_mapping(dict(signal))
    raise TypeError(
        f"expected a FailoverSignal or a mapping of its fields, got {type(signal).__name__}"
    )


_THROTTLING_EXCEPTION_RE = re.compile(r"^throttling_?exception$", re.IGNORECASE)
_RETRYABLE_4XX = frozenset({408, 409, 410, 429, 499})
_TRANSIENT_CODE_REASONS = frozenset(
    {FailoverReason.RATE_LIMIT, FailoverReason.OVERLOADED, FailoverReason.TIMEOUT}
)


def _has_independent_transient_message(
    raw: str | None,
    reason: FailoverReason,
    provider: str | None,
    owner: ProviderFailoverOwner | None,
) -> bool:
    if not raw:
        return False
    leading = extract_leading_http_status(raw)
    text = leading.rest if leading is not None else raw
    info = parse_api_error_info(text)
    payload = untrusted_json_object(text) if info is None and text else None
    if info is not None:
        prose = info.message
    elif payload is not None:
        prose = payload.get("message") if isinstance(payload.get("message"), str) else None
    else:
        prose = text
    if not prose:
        return False
    if classify_failover_reason_from_code(prose) == reason:
        return False
    found = classify_failover_classification_from_message(prose, provider, provider_owner=owner)
    return failover_reason_from_classification(found) == reason


def classify_failover_signal(
    signal: FailoverSignal | Mapping[str, Any],
    *,
    provider_owner: ProviderFailoverOwner | None = None,
) -> FailoverClassification | None:
    """OpenClaw's ``classifyFailoverSignal`` (spec §1.2): every fact of a failure in, a reason
    or the overflow kind out, or None when nothing is known.

    Accepts a ``FailoverSignal`` or a dict with OpenClaw's keys (``status``, ``retryAfterMs``,
    ``code``, ``errorType``, ``message``, ``provider``, ``details``). ``provider_owner`` is the
    failing provider's dialect (see ``ProviderFailoverOwner``).
    """
    facts = _coerce_signal(signal)
    owner = provider_owner
    inferred_status = infer_signal_status(facts)
    explicit_status = _finite_status(facts.status)
    message_classification = (
        classify_failover_classification_from_message(
            facts.message, facts.provider, facts.error_type, provider_owner=owner
        )
        if facts.message
        else None
    )
    detail_classification = _classify_details(facts.details, facts.provider, owner)
    message_or_detail = merge_message_and_detail_classification(
        message_classification, detail_classification
    )
    error_type_reason = classify_core_failover_reason_from_error_type(facts.error_type)
    error_type_classification = _reason(error_type_reason) if error_type_reason else None

    provider_reason: FailoverReason | None = None
    if owner is not None:
        hook_status = explicit_status
        if hook_status is None and facts.provider and inferred_status in (401, 403, 429):
            hook_status = inferred_status
        has_signal = bool(
            facts.message or facts.code or facts.error_type or inferred_status is not None
        )
        has_descriptor = (
            hook_status is not None or facts.code is not None or facts.error_type is not None
        )
        has_context_candidate = bool(
            facts.message and looks_like_provider_context_overflow_candidate(facts.message)
        )
        if has_signal and (has_descriptor or has_context_candidate or not message_classification):
            provider_reason = owner.classify_reason(
                error_message=facts.message or "",
                provider=facts.provider,
                status=hook_status,
                code=facts.code,
                error_type=facts.error_type,
            )

    if (
        provider_reason is None
        and inferred_status is None
        and inspect_tls_certificate_error(facts.code, facts.message) is not None
    ):
        return _reason(FailoverReason.TLS_CERTIFICATE)
    if (
        provider_reason is None
        and facts.message
        and _is_transport_html_error_status(inferred_status)
        and is_html_error_response(facts.message, inferred_status)
    ):
        html = classify_failover_classification_from_http_status(
            inferred_status, None, None, facts.status, facts.provider
        )
        if html is not None:
            return html

    info = parse_api_error_info(facts.message)
    code_reason = classify_failover_reason_from_code(facts.code) or (
        classify_failover_reason_from_code(info.code if info else None)
    )
    effective: FailoverClassification | None
    if provider_reason is not None:
        effective = _plugin_classification(provider_reason)
    elif code_reason == FailoverReason.FORMAT:
        effective = _reason(FailoverReason.FORMAT)
    else:
        effective = merge_message_and_detail_classification(
            message_or_detail or error_type_classification,
            _reason(code_reason) if code_reason else None,
        )
    if code_reason == FailoverReason.AUTH_PERMANENT:
        return _reason(code_reason)
    status_classification = classify_failover_classification_from_http_status(
        inferred_status,
        facts.message,
        effective,
        facts.status,
        facts.provider,
        preserve_provider_signal_classification=provider_reason is not None,
    )
    if status_classification is not None:
        classification: FailoverClassification | None = status_classification
    elif code_reason is not None:
        classification = _reason(code_reason)
    else:
        classification = effective
    if provider_reason is not None:
        return classification
    return _mark_same_model_retry(classification, facts, inferred_status, code_reason, owner)


def _mark_same_model_retry(
    classification: FailoverClassification | None,
    facts: FailoverSignal,
    inferred_status: int | None,
    code_reason: FailoverReason | None,
    owner: ProviderFailoverOwner | None,
) -> FailoverClassification | None:
    """The newer ``classify-core`` rule: a transient reason that only a 4xx *code* supplied,
    with no transient prose, is not worth retrying on the same model."""
    if (
        classification is None
        or classification.kind != "reason"
        or code_reason not in _TRANSIENT_CODE_REASONS
        or classification.reason != code_reason
        or inferred_status is None
        or not 400 <= inferred_status < 500
        or inferred_status in _RETRYABLE_4XX
    ):
        return classification
    assert code_reason is not None
    transient_prose = _has_independent_transient_message(
        facts.message, code_reason, facts.provider, owner
    ) or any(
        _has_independent_transient_message(detail, code_reason, facts.provider, owner)
        for detail in facts.details
    )
    info = parse_api_error_info(facts.message)
    code = facts.code if facts.code is not None else (info.code if info else None)
    if transient_prose or _THROTTLING_EXCEPTION_RE.search(code or ""):
        return classification
    return replace(classification, same_model_retry=False)


def classify_failover_reason(
    raw: str,
    *,
    provider: str | None = None,
    provider_owner: ProviderFailoverOwner | None = None,
) -> FailoverReason | None:
    """OpenClaw's ``classifyFailoverReason``: the reason of a bare message (overflow as
    ``context_overflow``), or None."""
    classification = classify_failover_signal(
        FailoverSignal(message=raw, provider=provider), provider_owner=provider_owner
    )
    return failover_reason_from_classification(classification)


def is_failover_error_message(raw: str, *, provider: str | None = None) -> bool:
    """Does the message classify at all?"""
    return classify_failover_reason(raw, provider=provider) is not None


# --------------------------------------------------------------------------- signal builders

_MAX_DETAIL_CANDIDATES = 12
_MAX_DETAIL_CHARS = 1_000
_DETAIL_KEYS = ("message", "param", "code", "type", "error", "detail", "body")


def _detail_text(value: object) -> str | None:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, str | int | float):
        text = str(value)
    else:
        return None
    text = text.strip()
    return text[:_MAX_DETAIL_CHARS] if text else None


def _collect_details(value: object, out: list[str], seen: set[int], depth: int = 0) -> None:
    # depth-bounded: values handed in by callers need not come from the bounded parser
    if len(out) >= _MAX_DETAIL_CANDIDATES or value is None or depth > MAX_UNTRUSTED_JSON_DEPTH:
        return
    if isinstance(value, str | int | float):
        text = _detail_text(value)
        if text is not None and text not in out:
            out.append(text)
        if isinstance(value, str):
            trimmed = value.strip()
            if trimmed.startswith("{") and trimmed.endswith("}"):
                try:
                    parsed = loads_untrusted(trimmed)
                except ValueError:
                    return
                _collect_details(parsed, out, seen, depth + 1)
        return
    if not isinstance(value, Mapping) or id(value) in seen:
        return
    seen.add(id(value))
    for key in _DETAIL_KEYS:
        _collect_details(value.get(key), out, seen, depth + 1)
        if len(out) >= _MAX_DETAIL_CANDIDATES:
            return


def extract_failover_signal_details(*values: object) -> tuple[str, ...]:
    """Classifier candidates from raw error values: each string, and the ``message``/``code``/
    ``type``/``error``/... fields of JSON bodies, deduplicated (at most 12, 1000 chars each)."""
    out: list[str] = []
    seen: set[int] = set()
    for value in values:
        _collect_details(value, out, seen)
        if len(out) >= _MAX_DETAIL_CANDIDATES:
            break
    return tuple(out)


def signal_from_assistant_message(message: Any) -> FailoverSignal:
    """The ``FailoverSignal`` of an assistant error response (an ``AssistantMessage`` or its
    wire dict): status, code, type, text, retry-after, provider, model; the raw body's fields
    become ``details``."""
    if isinstance(message, Mapping):
        from ..messages import AssistantMessage

        message = AssistantMessage.model_validate(dict(message))
    body = getattr(message, "error_body", None)
    text = getattr(message, "error_message", None)
    details = tuple(
        detail for detail in extract_failover_signal_details(body) if detail != (text or "").strip()
    )
    retry_after = getattr(message, "error_retry_after_ms", None)
    return FailoverSignal(
        status=getattr(message, "error_status", None),
        retry_after_ms=float(retry_after) if retry_after is not None else None,
        code=getattr(message, "error_code", None),
        error_type=getattr(message, "error_type", None),
        message=text,
        provider=getattr(message, "provider", None) or None,
        model=getattr(message, "model", None) or None,
        details=details,
    )
