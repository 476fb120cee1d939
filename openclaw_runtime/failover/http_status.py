"""The HTTP status mapping of the classifier (spec §1.4).

``classify_failover_classification_from_http_status``: a status and the message's own
classification in, a classification out: 402/429 billing vs. rate
limit (with the provider-specific 429 billing override), 401/403 auth, 404/410, 5xx timing vs.
server error, 400/422 format.
"""

from __future__ import annotations

from .api_errors import (
    extract_leading_http_status,
    is_timing_http_status,
    is_unclassified_no_body_http_signal,
    parse_api_error_info,
)
from .matchers import (
    classify_402_message,
    classify_failover_reason_from_402_text,
    is_auth_permanent_error_message,
    is_billing_error_message,
)
from .reasons import FailoverClassification, FailoverReason, FailoverSignal
from .text import js_regex, normalize_optional_lower
from .token_plan import is_token_plan_quota_429_message

__all__ = [
    "classify_failover_classification_from_http_status",
    "failover_reason_from_classification",
    "plugin_classification",
    "reason_classification",
]

# --------------------------------------------------------------------------- status mapping (§1.4)

_AMBIGUOUS_429_BALANCE_RE = js_regex(r"\binsufficient\s+account\s+balance\b", "i")


def failover_reason_from_classification(
    classification: FailoverClassification | None,
) -> FailoverReason | None:
    """The reason of a classification, with the overflow kind as ``context_overflow``."""
    return classification.effective_reason if classification is not None else None


def reason_classification(reason: FailoverReason | str) -> FailoverClassification:
    return FailoverClassification.of(reason)


def plugin_classification(reason: FailoverReason) -> FailoverClassification:
    if reason == FailoverReason.CONTEXT_OVERFLOW:
        return FailoverClassification.context_overflow()
    return reason_classification(reason)


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
            return reason_classification(FailoverReason.BILLING)
        leading = extract_leading_http_status(message.strip())
        if leading is not None and leading.code == 402:
            from_text = classify_failover_reason_from_402_text(message)
            if from_text is not None:
                return reason_classification(from_text)
            if explicit_status is not None:
                return reason_classification(classify_402_message(message))
            return message_classification
        return reason_classification(classify_402_message(message))
    if status == 429:
        if message and is_token_plan_quota_429_message(message, provider):
            return reason_classification(FailoverReason.RATE_LIMIT)
        if message_reason == FailoverReason.BILLING and not (
            _is_ambiguous_generic_429_balance_message(message or "")
        ):
            return reason_classification(FailoverReason.BILLING)
        if message and _is_billing_429_message_for_provider(message, provider):
            return reason_classification(FailoverReason.BILLING)
        return reason_classification(FailoverReason.RATE_LIMIT)
    if status in (401, 403):
        if preserve_provider_signal_classification and message_classification is not None:
            return message_classification
        if message and is_auth_permanent_error_message(message):
            return reason_classification(FailoverReason.AUTH_PERMANENT)
        if message_reason == FailoverReason.BILLING:
            return reason_classification(FailoverReason.BILLING)
        return reason_classification(FailoverReason.AUTH)
    if status == 408:
        return reason_classification(FailoverReason.TIMEOUT)
    if status == 410:
        if message_reason in _KEEP_ON_410:
            return message_classification
        return reason_classification(FailoverReason.TIMEOUT)
    if message_classification is not None and message_classification.kind == "context_overflow":
        return message_classification
    if status == 404:
        if message_reason in _KEEP_ON_404:
            return message_classification
        return reason_classification(FailoverReason.MODEL_NOT_FOUND)
    if status == 529:
        return reason_classification(FailoverReason.OVERLOADED)
    if status == 499 or 500 <= status < 600:
        if message_reason in (FailoverReason.OVERLOADED, FailoverReason.SERVER_ERROR) or (
            status >= 500 and message_reason == FailoverReason.FORMAT
        ):
            return message_classification
        return reason_classification(
            FailoverReason.TIMEOUT if is_timing_http_status(status) else FailoverReason.SERVER_ERROR
        )
    if status in (400, 422):
        if message_classification is not None and message_reason != FailoverReason.SERVER_ERROR:
            return message_classification
        if is_unclassified_no_body_http_signal(FailoverSignal(status=status, message=message)):
            return None
        return reason_classification(FailoverReason.FORMAT)
    return None
