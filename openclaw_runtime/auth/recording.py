"""Which failures reach the shared auth-profile ledger (OpenClaw's failure-recording policy).

The ledger is shared by every session that uses a profile, so only evidence about the
*credential* belongs there. A rejected transcript (``format``), an overloaded or failing
provider, a TLS problem, an empty reply or a context overflow says nothing about the key, and
recording it would cool a healthy profile down for everyone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .cooldown import (
    is_auth_cooldown_bypassed_for_provider,
    is_future_date_timestamp_ms,
)
from .profiles import AuthProfile, normalize_provider_id

__all__ = [
    "NOT_RECORDED_FAILOVER_REASONS",
    "WHAM_PROBE_REASONS",
    "AuthProfileFailurePolicy",
    "resolve_auth_profile_failure_reason",
    "should_probe_wham_for_failure",
    "should_record_auth_profile_failure",
]

AuthProfileFailurePolicy = Literal["shared", "local", "local_transient"]

#: Failover reasons that never reach the ledger (whatever the policy).
NOT_RECORDED_FAILOVER_REASONS: frozenset[str] = frozenset(
    {
        "overloaded",
        "server_error",
        "tls_certificate",
        "empty_response",
        "context_overflow",
        "format",
    }
)

#: Reasons for which an OpenAI OAuth profile asks WHAM (ChatGPT usage) what really happened.
WHAM_PROBE_REASONS: frozenset[str] = frozenset(
    {"rate_limit", "empty_response", "no_error_details", "unclassified", "unknown"}
)

#: ChatGPT credentials obtained through these flows are not probed.
_WHAM_EXCLUDED_AUTH_FLOWS = frozenset({"chatgpt-token-sharing", "chatgpt-identity"})


def _reason_text(reason: object) -> str | None:
    if reason is None:
        return None
    value = getattr(reason, "value", reason)
    return str(value) if value else None


def resolve_auth_profile_failure_reason(
    failover_reason: object = None,
    *,
    provider_started: bool = False,
    transient_rate_limit: bool = False,
    policy: AuthProfileFailurePolicy | None = None,
) -> str | None:
    """The reason to record against the profile, or None when the failure stays local.

    None for: policy ``local``; no reason; ``overloaded``; a transient ``rate_limit`` under
    policy ``local_transient``; ``server_error``, ``tls_certificate``, ``empty_response``,
    ``context_overflow``, ``format``; and ``timeout`` unless the provider had started.

    ``failover_reason`` may also be a mapping with OpenClaw's keys (``failoverReason``,
    ``providerStarted``, ``transientRateLimit``, ``policy``).
    """
    if isinstance(failover_reason, Mapping):
        params: Mapping[str, Any] = failover_reason

        def pick(snake: str, camel: str) -> Any:
            return params.get(camel, params.get(snake))

        return resolve_auth_profile_failure_reason(
            pick("failover_reason", "failoverReason"),
            provider_started=bool(pick("provider_started", "providerStarted")),
            transient_rate_limit=bool(pick("transient_rate_limit", "transientRateLimit")),
            policy=pick("policy", "policy"),
        )
    if policy not in (None, "shared", "local", "local_transient"):
        raise ValueError(
            f"unknown auth profile failure policy {policy!r}; expected shared, local or "
            "local_transient"
        )
    reason = _reason_text(failover_reason)
    if policy == "local" or reason is None or reason in NOT_RECORDED_FAILOVER_REASONS:
        return None
    if policy == "local_transient" and reason == "rate_limit" and transient_rate_limit:
        return None
    if reason == "timeout" and provider_started is not True:
        return None
    return reason


def should_probe_wham_for_failure(profile: AuthProfile | None, reason: str, now_ms: float) -> bool:
    """An OpenAI OAuth profile with a live access token, failing for a probe-worthy reason.

    A locally expired access token is not probed: that would always answer 401 and look like a
    12 h token outage, while a refresh fixes it.
    """
    return (
        profile is not None
        and profile.mode == "oauth"
        and profile.credential is not None
        and is_future_date_timestamp_ms(profile.expires, now_ms)
        and normalize_provider_id(profile.provider) == "openai"
        and profile.auth_flow not in _WHAM_EXCLUDED_AUTH_FLOWS
        and reason in WHAM_PROBE_REASONS
    )


def should_record_auth_profile_failure(
    profile: AuthProfile | None, reason: str, now_ms: float, *, wham_probe_enabled: bool = False
) -> bool:
    """``markAuthProfileFailure``'s own skips: unknown profile, OpenRouter/Kilocode, and
    ``no_error_details`` (no credential evidence) unless a WHAM probe can disambiguate it."""
    if profile is None or is_auth_cooldown_bypassed_for_provider(profile.provider):
        return False
    if reason == "no_error_details":
        return wham_probe_enabled and should_probe_wham_for_failure(profile, reason, now_ms)
    return True
