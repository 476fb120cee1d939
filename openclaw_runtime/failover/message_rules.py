"""The message classifier of the reference snapshot (spec §1.3): ``MESSAGE_RULES``, in order, first
match wins; ``classify_failover_classification_from_message`` runs them on one error text and
``merge_message_and_detail_classification`` combines a message's verdict with its details'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, TypeAlias

from .api_errors import (
    extract_leading_http_status,
    infer_signal_status,
    is_cloud_code_assist_format_error,
    is_generic_provider_internal_error,
    is_json_api_internal_server_error,
    is_structured_server_error_message,
    parse_api_error_info,
)
from .http_status import (
    classify_failover_classification_from_http_status,
    plugin_classification,
    reason_classification,
)
from .matchers import (
    classify_core_failover_reason_from_error_type,
    classify_failover_reason_from_402_text,
    classify_legacy_provider_specific_error,
    classify_oauth_refresh_failure_reason,
    is_auth_error_message,
    is_auth_permanent_error_message,
    is_billing_error_message,
    is_cli_session_expired_error_message,
    is_exact_unknown_no_details_error,
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
)
from .overflow import is_context_overflow_error_from_tables, matches_context_overflow_message
from .owners import ProviderFailoverDialect, as_reason
from .reasons import FailoverClassification, FailoverReason, FailoverSignal

__all__ = [
    "MESSAGE_RULES",
    "MessageRule",
    "classify_details",
    "classify_failover_classification_from_message",
    "merge_message_and_detail_classification",
]

# --------------------------------------------------------------------------- message rules (§1.3)


@dataclass(frozen=True, slots=True)
class _MessageContext:
    provider: str | None
    error_type: str | None
    owner: ProviderFailoverDialect | None


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
        result = reason_classification(outcome)

    def rule(raw: str, _context: _MessageContext) -> _Verdict:
        return result if predicate(raw) else NO_MATCH

    rule.__name__ = getattr(predicate, "__name__", "rule")
    return rule


def _derived(compute: Callable[[str, _MessageContext], FailoverReason | None]) -> MessageRule:
    """A rule whose reason is computed; no reason means no match."""

    def rule(raw: str, context: _MessageContext) -> _Verdict:
        reason = compute(raw, context)
        return reason_classification(reason) if reason is not None else NO_MATCH

    rule.__name__ = compute.__name__
    return rule


def _owner_message_rules(raw: str, context: _MessageContext) -> _Verdict:
    if context.owner is None:
        return NO_MATCH
    for provider_rule in context.owner.message_rules:
        reason = as_reason(provider_rule(raw, context.provider))
        if reason is not None:
            return plugin_classification(reason)
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
    provider_owner: ProviderFailoverDialect | None = None,
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


def classify_details(
    details: Iterable[str], provider: str | None, owner: ProviderFailoverDialect | None
) -> FailoverClassification | None:
    for detail in details:
        found = classify_failover_classification_from_message(
            detail, provider, provider_owner=owner
        )
        if found is not None:
            return found
    return None
