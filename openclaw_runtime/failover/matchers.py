"""The message predicates of OpenClaw's failure classifier (spec §1.3, §1.6, §1.7).

The snake_case twins of ``message-patterns.ts`` and ``classification-rules.ts``: each reads the
tables of ``patterns`` (data only) and answers one question about one error text or code: is it
a rate limit, billing, auth, format, timeout, overflow-sized request, a TLS certificate error;
which reason does a 402 text, a structured code or an error type map to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeAlias

from .patterns import (
    AUTH_PATTERNS,
    AUTH_PERMANENT_PATTERNS,
    BARE_LEADING_402_RE,
    BILLING_402_HINTS,
    BILLING_402_PLAN_HINTS,
    BILLING_HEAD_RE,
    BILLING_HEAD_WORDS,
    BILLING_PATTERNS,
    CERTIFICATE_INVALID_CODES,
    CERTIFICATE_INVALID_PATTERNS,
    CLI_SESSION_EXPIRED_RE,
    DEPRECATED_RES,
    FAILOVER_CODE_REASONS,
    FAILOVER_ERROR_TYPE_REASONS,
    FAILOVER_TIMEOUT_ERROR_CODES,
    FORMAT_PATTERNS,
    GENERIC_UNKNOWN_STREAM_RE,
    HOSTNAME_MISMATCH_CODES,
    HOSTNAME_MISMATCH_PATTERNS,
    HTTP_5XX_STATUS_RE,
    INVALID_MODEL_RE,
    INVALID_MODEL_REFERENCE_RE,
    LEADING_402_WRAPPER_RE,
    LEGACY_PROVIDER_PATTERNS,
    MARKDOWN_SECTION_RE,
    MODEL_NOT_FOUND_ALWAYS,
    MODEL_NOT_FOUND_PAIRS,
    NO_ENDPOINTS_RE,
    OVERLOADED_PATTERNS,
    PERIODIC_402_HINTS,
    PERIODIC_USAGE_LIMIT_RE,
    PRE_DISPATCH_TOOL_CALL_REJECTION_MESSAGES,
    PROVIDER_COMPLETED_ERROR_FINISH_REASON_PATTERNS,
    RATE_LIMIT_PATTERNS,
    RAW_402_MARKER_RE,
    REPLAY_INVALID_RE,
    RETRYABLE_402_LIMIT_HINTS,
    RETRYABLE_402_RETRY_HINTS,
    RETRYABLE_402_SCOPED_HINTS,
    RETRYABLE_402_SCOPED_RESULT_HINTS,
    SERVER_ERROR_PATTERNS,
    STATED_TOKEN_SIZES_RE,
    STATUS_INTERNAL_SERVER_ERROR_RE,
    STATUS_INTERNAL_SERVER_ERROR_WITH_500_RE,
    STEALTH_RES,
    SUPPORT_IMAGE_INPUT_RE,
    THINKING_RE,
    THINKING_SIGNATURE_RE,
    TIMEOUT_PATTERNS,
    TRANSIENT_NETWORK_CODES,
    UNSUPPORTED_IMAGE_RES,
    VALID_MODEL_ID_RE,
)
from .reasons import FailoverReason
from .text import matches_error_patterns, normalize_lower, normalize_optional_lower

__all__ = [
    "TlsCertificateErrorKind",
    "classify_402_message",
    "classify_core_failover_reason_from_error_type",
    "classify_failover_reason_from_402_text",
    "classify_failover_reason_from_code",
    "classify_legacy_provider_specific_error",
    "classify_oauth_refresh_failure_reason",
    "inspect_tls_certificate_error",
    "is_auth_error_message",
    "is_auth_permanent_error_message",
    "is_billing_error_message",
    "is_cli_session_expired_error_message",
    "is_exact_unknown_no_details_error",
    "is_format_error_message",
    "is_generic_unknown_stream_error_message",
    "is_image_dimension_error_message",
    "is_image_size_error",
    "is_model_not_found_error_message",
    "is_oauth_refresh_failure_message",
    "is_overloaded_error_message",
    "is_periodic_usage_limit_error_message",
    "is_pre_dispatch_tool_call_rejection_message",
    "is_provider_completed_error_finish_reason_message",
    "is_provider_request_size_ceiling_error",
    "is_rate_limit_error_message",
    "is_replay_invalid_error_message",
    "is_server_error_message",
    "is_timeout_error_message",
    "is_unsupported_image_input_error_message",
]

TlsCertificateErrorKind: TypeAlias = Literal["certificate_invalid", "hostname_mismatch"]


def _any_of(text: str, hints: Iterable[str]) -> bool:
    return any(hint in text for hint in hints)


# --------------------------------------------------------------------------- group predicates


def is_rate_limit_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isRateLimitErrorMessage``."""
    return matches_error_patterns(raw, RATE_LIMIT_PATTERNS)


def is_overloaded_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isOverloadedErrorMessage``."""
    return matches_error_patterns(raw, OVERLOADED_PATTERNS)


def is_timeout_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isTimeoutErrorMessage``."""
    return matches_error_patterns(raw, TIMEOUT_PATTERNS)


def is_format_error_message(raw: str | None) -> bool:
    """OpenClaw's ``matchesFormatErrorPattern`` (request-shape rejections)."""
    return matches_error_patterns(raw, FORMAT_PATTERNS)


def is_auth_permanent_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isAuthPermanentErrorMessage``: revoked/deactivated keys and workspaces."""
    return matches_error_patterns(raw, AUTH_PERMANENT_PATTERNS)


def is_auth_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isAuthErrorMessage``."""
    return matches_error_patterns(raw, AUTH_PATTERNS)


def is_provider_completed_error_finish_reason_message(raw: str | None) -> bool:
    """A provider completed with a bare ``error`` stop/finish reason (not a hang)."""
    return matches_error_patterns(raw, PROVIDER_COMPLETED_ERROR_FINISH_REASON_PATTERNS)


def is_periodic_usage_limit_error_message(raw: str | None) -> bool:
    """``daily/weekly/monthly (usage) limit (exhausted|reached|exceeded)`` in the raw text."""
    return bool(raw) and PERIODIC_USAGE_LIMIT_RE.search(raw or "") is not None


def is_billing_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isBillingErrorMessage``.

    Text with more than one Markdown ``##`` section is explanatory content, never billing.
    """
    value = normalize_lower(raw)
    if not value or raw is None:
        return False
    if len(MARKDOWN_SECTION_RE.findall(raw)) > 1:
        return False
    if matches_error_patterns(value, BILLING_PATTERNS):
        return True
    if not BILLING_HEAD_RE.search(raw):
        return False
    return _any_of(value, BILLING_HEAD_WORDS)


def is_server_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isServerErrorMessage``.

    ``status: internal server error`` counts on its own or paired with ``code 500``; as a
    prefix of other prose only the first occurrence is removed before matching.
    """
    value = normalize_lower(raw)
    if not value:
        return False
    if STATUS_INTERNAL_SERVER_ERROR_WITH_500_RE.search(value) or HTTP_5XX_STATUS_RE.search(value):
        return True
    scrubbed = STATUS_INTERNAL_SERVER_ERROR_RE.sub("", value, count=1).strip()
    if scrubbed == "":
        return True
    return matches_error_patterns(scrubbed, SERVER_ERROR_PATTERNS)


def is_pre_dispatch_tool_call_rejection_message(message: str | None) -> bool:
    """One of the five exact transport texts for a tool call rejected before dispatch."""
    return message is not None and message in PRE_DISPATCH_TOOL_CALL_REJECTION_MESSAGES


def _stated_token_count(digits: str | None) -> float | None:
    if digits is None:
        return None
    cleaned = digits.replace(",", "")
    try:
        value = float(cleaned) if cleaned else 0.0
    except ValueError:
        return None
    return value if value > 0 else None


def is_provider_request_size_ceiling_error(error_message: str | None) -> bool:
    """A single TPM clause whose ``Requested`` size exceeds its whole ``Limit`` (Groq's 413).

    Such a request can never fit, so it is overflow-like rather than a rate limit.
    """
    if not error_message:
        return False
    stated = STATED_TOKEN_SIZES_RE.search(error_message)
    if stated is None:
        return False
    limit = _stated_token_count(stated.group(1))
    requested = _stated_token_count(stated.group(2))
    return limit is not None and requested is not None and requested > limit


def _has_explicit_402_billing_signal(text: str) -> bool:
    return (
        _any_of(text, BILLING_402_HINTS)
        or (_any_of(text, BILLING_402_PLAN_HINTS) and "limit" in text)
        or "billing hard limit" in text
        or "hard limit reached" in text
        or ("maximum allowed" in text and "limit" in text)
    )


def _has_quota_refresh_window_signal(text: str) -> bool:
    return "subscription quota limit" in text and (
        "automatic quota refresh" in text or "rolling time window" in text
    )


def _has_retryable_402_transient_signal(text: str) -> bool:
    periodic = _any_of(text, PERIODIC_402_HINTS)
    spend_limit = "spend limit" in text or "spending limit" in text
    scoped = _any_of(text, RETRYABLE_402_SCOPED_HINTS)
    return (
        (_any_of(text, RETRYABLE_402_RETRY_HINTS) and _any_of(text, RETRYABLE_402_LIMIT_HINTS))
        or (periodic and ("usage limit" in text or spend_limit))
        or (periodic and "limit" in text and "reset" in text)
        or (
            scoped
            and "limit" in text
            and (spend_limit or _any_of(text, RETRYABLE_402_SCOPED_RESULT_HINTS))
        )
    )


def _normalize_402_message(raw: str) -> str:
    lowered = normalize_optional_lower(raw)
    if lowered is None:
        return ""
    return LEADING_402_WRAPPER_RE.sub("", lowered, count=1).strip()


def classify_402_message(message: str) -> FailoverReason:
    """A payment-required text is billing unless it reads as a temporary limit."""
    normalized = _normalize_402_message(message)
    if not normalized:
        return FailoverReason.BILLING
    if _has_quota_refresh_window_signal(normalized):
        return FailoverReason.RATE_LIMIT
    if _has_explicit_402_billing_signal(normalized):
        return FailoverReason.BILLING
    if is_rate_limit_error_message(normalized):
        return FailoverReason.RATE_LIMIT
    if _has_retryable_402_transient_signal(normalized):
        return FailoverReason.RATE_LIMIT
    return FailoverReason.BILLING


def classify_failover_reason_from_402_text(raw: str) -> FailoverReason | None:
    """OpenClaw's ``classifyFailoverReasonFrom402Text``: billing or rate_limit, or None.

    A bare leading ``402`` counts only with a known billing/limit signal after it.
    """
    if RAW_402_MARKER_RE.search(raw):
        return classify_402_message(raw)
    if not BARE_LEADING_402_RE.search(raw):
        return None
    normalized = _normalize_402_message(raw)
    if not normalized or not (
        _has_quota_refresh_window_signal(normalized)
        or _has_explicit_402_billing_signal(normalized)
        or is_rate_limit_error_message(normalized)
        or _has_retryable_402_transient_signal(normalized)
    ):
        return None
    return classify_402_message(raw)


def is_replay_invalid_error_message(raw: str) -> bool:
    """The provider rejected the replayed transcript (ids, roles, thinking signatures)."""
    if REPLAY_INVALID_RE.search(raw):
        return True
    return bool(THINKING_RE.search(raw) and THINKING_SIGNATURE_RE.search(raw))


def is_unsupported_image_input_error_message(raw: str | None) -> bool:
    """The model cannot take images (a format failure, not a missing model)."""
    value = normalize_optional_lower(raw)
    if value is None:
        return False
    if any(pattern.search(value) for pattern in UNSUPPORTED_IMAGE_RES):
        return True
    return bool(NO_ENDPOINTS_RE.search(value) and SUPPORT_IMAGE_INPUT_RE.search(value))


def is_image_dimension_error_message(raw: str | None) -> bool:
    """Anthropic's many-image dimension limit (handled by image resizing, not failover)."""
    return bool(raw) and "image dimensions exceed max allowed size" in (raw or "").lower()


def is_image_size_error(error_message: str | None) -> bool:
    """An ``image exceeds N MB`` rejection (handled by image resizing, not failover)."""
    if not error_message:
        return False
    lower = error_message.lower()
    return "image exceeds" in lower and "mb" in lower


def is_generic_unknown_stream_error_message(raw: str) -> bool:
    """The runtime's bare ``An unknown error occurred`` (a transport failure; #71620)."""
    return GENERIC_UNKNOWN_STREAM_RE.search(raw) is not None


def is_exact_unknown_no_details_error(raw: str) -> bool:
    """Exactly ``unknown error (no error details in response)``."""
    return normalize_optional_lower(raw) == "unknown error (no error details in response)"


def is_cli_session_expired_error_message(raw: str) -> bool:
    """A CLI backend lost the session/conversation it was resuming."""
    return CLI_SESSION_EXPIRED_RE.search(normalize_lower(raw)) is not None


def is_model_not_found_error_message(raw: str) -> bool:
    """A missing, retired or plan-restricted model id (``live-model-errors.ts``).

    "Not available" alone also describes outages, so it does not count.
    """
    msg = raw.strip()
    if not msg:
        return False
    if any(pattern.search(msg) for pattern in MODEL_NOT_FOUND_ALWAYS):
        return True
    for first, second in MODEL_NOT_FOUND_PAIRS:
        if first.search(msg) and (second is None or second.search(msg)):
            return True
    if all(pattern.search(msg) for pattern in DEPRECATED_RES):
        return True
    if all(pattern.search(msg) for pattern in STEALTH_RES):
        return True
    if VALID_MODEL_ID_RE.search(msg):
        return True
    return bool(INVALID_MODEL_RE.search(msg) and not INVALID_MODEL_REFERENCE_RE.search(msg))


def classify_legacy_provider_specific_error(error_message: str) -> FailoverReason | None:
    """The first matching provider-specific phrase (Cloudflare, Bedrock, Groq), or None."""
    for pattern, reason in LEGACY_PROVIDER_PATTERNS:
        if pattern.search(error_message):
            return reason
    return None


# --------------------------------------------------------------------------- OAuth refresh


def is_oauth_refresh_failure_message(message: str) -> bool:
    """The text reports a failed OAuth token refresh (incl. a CLI subprocess 401)."""
    lower = message.lower()
    return (
        "oauth token refresh failed" in lower
        or "access token could not be refreshed" in lower
        or "authentication session could not be refreshed automatically" in lower
        or ("failed to authenticate" in lower and "401" in lower)
    )


def classify_oauth_refresh_failure_reason(message: str) -> str | None:
    """Why an OAuth refresh failed for good (``invalid_grant``, ``revoked``...), or None.

    Gated on ``is_oauth_refresh_failure_message``; a definitive reason makes the failure
    ``auth_permanent``.
    """
    if not is_oauth_refresh_failure_message(message):
        return None
    lower = message.lower()
    if "refresh_token_reused" in lower:
        return "refresh_token_reused"
    if "invalid_grant" in lower:
        return "invalid_grant"
    if "signing in again" in lower or "sign in again" in lower:
        return "sign_in_again"
    if "invalid refresh token" in lower:
        return "invalid_refresh_token"
    if "expired or revoked" in lower or "revoked" in lower:
        return "revoked"
    if "failed to authenticate" in lower and "401" in lower:
        return "revoked"
    return None


def inspect_tls_certificate_error(
    code: str | None, message: str | None
) -> TlsCertificateErrorKind | None:
    """A deterministic certificate-validation failure, from its code or its message."""
    normalized = code.strip().upper() if isinstance(code, str) else None
    if normalized in HOSTNAME_MISMATCH_CODES:
        return "hostname_mismatch"
    if normalized in CERTIFICATE_INVALID_CODES:
        return "certificate_invalid"
    if not message or not message.strip():
        return None
    if any(pattern.search(message) for pattern in HOSTNAME_MISMATCH_PATTERNS):
        return "hostname_mismatch"
    if any(pattern.search(message) for pattern in CERTIFICATE_INVALID_PATTERNS):
        return "certificate_invalid"
    return None


def classify_failover_reason_from_code(raw: str | None) -> FailoverReason | None:
    """OpenClaw's ``classifyFailoverReasonFromCode`` (transient network codes are timeout)."""
    normalized = raw.strip().upper() if isinstance(raw, str) else ""
    if not normalized:
        return None
    reason = FAILOVER_CODE_REASONS.get(normalized)
    if reason is not None:
        return reason
    if normalized in FAILOVER_TIMEOUT_ERROR_CODES or normalized in TRANSIENT_NETWORK_CODES:
        return FailoverReason.TIMEOUT
    return None


def classify_core_failover_reason_from_error_type(raw: str | None) -> FailoverReason | None:
    """OpenClaw's ``classifyCoreFailoverReasonFromErrorType``."""
    normalized = normalize_optional_lower(raw)
    return FAILOVER_ERROR_TYPE_REASONS.get(normalized) if normalized else None
