"""Auth profiles: credentials, their shared health ledger (cooldowns, disables) and ordering.

What the orchestrator calls (OpenClaw's names in snake_case):

* order the candidates of a run: ``resolve_auth_profile_order(store=await s.load(), ...)``,
  then ``create_scoped_auth_profile_store(s, order)`` for the run;
* skip a cooling candidate: ``is_auth_profile_in_cooldown(state, profile_id, ...)``;
* record a failure: ``resolve_auth_profile_failure_reason(...)`` then
  ``await mark_auth_profile_failure(s, profile_id, reason, model_id=...)``;
* record a success: ``mark_embedded_run_auth_profile_success(task_group, s, profile_id)``
  (fire and forget) or ``await mark_auth_profile_success(s, profile_id)``.
"""

from __future__ import annotations

from .cooldown import (
    ALL_MODELS,
    DEFAULT_AUTH_COOLDOWN_POLICY,
    DISABLED_FAILURE_BACKOFF_POLICIES,
    MAX_DATE_TIMESTAMP_MS,
    RATE_LIMIT_BACKOFF_BASE_MS,
    RATE_LIMIT_BACKOFF_MAX_MS,
    AuthCooldownPolicy,
    apply_blocked_until,
    apply_failure,
    calculate_auth_profile_cooldown_ms,
    calculate_capped_exponential_backoff_ms,
    clear_expired_cooldowns,
    compute_next_profile_usage_stats,
    get_soonest_cooldown_expiry,
    is_auth_cooldown_bypassed_for_provider,
    is_model_scoped_cooldown_reason,
    is_profile_in_cooldown,
    keep_active_window_or_recompute,
    reset_auth_profile_failure_state,
    resolve_profile_unusable_until,
)
from .json_file import AUTH_PROFILES_FILENAME, JsonFileAuthProfileStore, open_auth_profile_store
from .operations import (
    POST_RUN_AUTH_PROFILE_SUCCESS_SLOW_MS,
    AuthProfileScopeError,
    AuthProfileStore,
    AuthProfileStoreError,
    clear_auth_profile_cooldown,
    mark_auth_profile_blocked_until,
    mark_auth_profile_cooldown,
    mark_auth_profile_failure,
    mark_auth_profile_success,
    mark_auth_profile_used,
    mark_embedded_run_auth_profile_success,
    record_auth_profile_success,
)
from .order import (
    AuthProfileEligibility,
    AuthProfileOrderResolution,
    evaluate_stored_credential_eligibility,
    is_auth_profile_in_cooldown,
    prepend_auth_profile_pin,
    resolve_auth_profile_eligibility,
    resolve_auth_profile_order,
    resolve_auth_profile_order_with_metadata,
    resolve_profiles_unavailable_reason,
    resolve_token_expiry_state,
)
from .profiles import (
    AuthProfile,
    CredentialRef,
    UnresolvedCredentialError,
    normalize_provider_id,
)
from .recording import (
    AuthProfileFailurePolicy,
    resolve_auth_profile_failure_reason,
    should_probe_wham_for_failure,
    should_record_auth_profile_failure,
)
from .state import AUTH_PROFILE_FAILURE_REASONS, AuthProfileStoreState, ProfileUsageStats
from .store import (
    InMemoryAuthProfileStore,
    ScopedAuthProfileStore,
    create_scoped_auth_profile_store,
)
from .wham import WHAM_USAGE_URL, WhamCooldownProbeResult, WhamProbe, probe_wham_for_cooldown

__all__ = [
    "ALL_MODELS",
    "AUTH_PROFILES_FILENAME",
    "AUTH_PROFILE_FAILURE_REASONS",
    "DEFAULT_AUTH_COOLDOWN_POLICY",
    "DISABLED_FAILURE_BACKOFF_POLICIES",
    "MAX_DATE_TIMESTAMP_MS",
    "POST_RUN_AUTH_PROFILE_SUCCESS_SLOW_MS",
    "RATE_LIMIT_BACKOFF_BASE_MS",
    "RATE_LIMIT_BACKOFF_MAX_MS",
    "WHAM_USAGE_URL",
    "AuthCooldownPolicy",
    "AuthProfile",
    "AuthProfileEligibility",
    "AuthProfileFailurePolicy",
    "AuthProfileOrderResolution",
    "AuthProfileScopeError",
    "AuthProfileStore",
    "AuthProfileStoreError",
    "AuthProfileStoreState",
    "CredentialRef",
    "InMemoryAuthProfileStore",
    "JsonFileAuthProfileStore",
    "ProfileUsageStats",
    "ScopedAuthProfileStore",
    "UnresolvedCredentialError",
    "WhamCooldownProbeResult",
    "WhamProbe",
    "apply_blocked_until",
    "apply_failure",
    "calculate_auth_profile_cooldown_ms",
    "calculate_capped_exponential_backoff_ms",
    "clear_auth_profile_cooldown",
    "clear_expired_cooldowns",
    "compute_next_profile_usage_stats",
    "create_scoped_auth_profile_store",
    "evaluate_stored_credential_eligibility",
    "get_soonest_cooldown_expiry",
    "is_auth_cooldown_bypassed_for_provider",
    "is_auth_profile_in_cooldown",
    "is_model_scoped_cooldown_reason",
    "is_profile_in_cooldown",
    "keep_active_window_or_recompute",
    "mark_auth_profile_blocked_until",
    "mark_auth_profile_cooldown",
    "mark_auth_profile_failure",
    "mark_auth_profile_success",
    "mark_auth_profile_used",
    "mark_embedded_run_auth_profile_success",
    "normalize_provider_id",
    "open_auth_profile_store",
    "prepend_auth_profile_pin",
    "probe_wham_for_cooldown",
    "record_auth_profile_success",
    "reset_auth_profile_failure_state",
    "resolve_auth_profile_eligibility",
    "resolve_auth_profile_failure_reason",
    "resolve_auth_profile_order",
    "resolve_auth_profile_order_with_metadata",
    "resolve_profile_unusable_until",
    "resolve_profiles_unavailable_reason",
    "resolve_token_expiry_state",
    "should_probe_wham_for_failure",
    "should_record_auth_profile_failure",
]
