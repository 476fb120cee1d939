"""Cooldown math for auth profiles: pure functions of (ledger entry, reason, model, now).

Two tracks, as in OpenClaw's ``usage.ts``:

* **cooldown** (``cooldownUntil``): ordinary failures step 30 s → 60 s → 5 min
  (``calculate_auth_profile_cooldown_ms``); ``rate_limit`` backs off exponentially from 30 s to
  24 h on its own counter ``failureCounts.rate_limit``, which survives expiry until a success.
  ``rate_limit``, ``timeout`` and ``model_not_found`` cool down only the failing model.
* **disabled** (``disabledUntil``): ``billing`` and ``auth_permanent`` back off exponentially
  with configurable base and cap (``DISABLED_FAILURE_BACKOFF_POLICIES``).

An active window is never extended by a repeated failure; it is recomputed only after expiry.
Every function takes ``now_ms``: there is no hidden clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from .profiles import normalize_provider_id
from .state import (
    AuthProfileStoreState,
    ProfileUsageStats,
    check_auth_profile_failure_reason,
)

__all__ = [
    "ALL_MODELS",
    "DEFAULT_AUTH_COOLDOWN_POLICY",
    "DISABLED_FAILURE_BACKOFF_POLICIES",
    "MAX_DATE_TIMESTAMP_MS",
    "MAX_SAFE_INTEGER",
    "RATE_LIMIT_BACKOFF_BASE_MS",
    "RATE_LIMIT_BACKOFF_MAX_MS",
    "AllModels",
    "AuthCooldownPolicy",
    "DisabledFailureBackoffPolicy",
    "ModelSelector",
    "apply_blocked_until",
    "apply_failure",
    "as_date_timestamp_ms",
    "calculate_auth_profile_cooldown_ms",
    "calculate_capped_exponential_backoff_ms",
    "clear_expired_cooldowns",
    "clear_expired_windows",
    "compute_next_profile_usage_stats",
    "get_soonest_cooldown_expiry",
    "is_active_unusable_window",
    "is_auth_cooldown_bypassed_for_provider",
    "is_blocked_window_active_for_model",
    "is_future_date_timestamp_ms",
    "is_model_scoped_cooldown_reason",
    "is_profile_in_cooldown",
    "keep_active_window_or_recompute",
    "reset_auth_profile_failure_state",
    "resolve_disabled_failure_backoff_ms",
    "resolve_profile_unusable_until",
    "resolve_usage_window_until",
    "should_bypass_model_scoped_cooldown",
]

#: The largest timestamp a JavaScript ``Date`` accepts (±8.64e15 ms).
MAX_DATE_TIMESTAMP_MS: Final = 8_640_000_000_000_000
#: ``Number.MAX_SAFE_INTEGER``.
MAX_SAFE_INTEGER: Final = 2**53 - 1

RATE_LIMIT_BACKOFF_BASE_MS: Final = 30_000
RATE_LIMIT_BACKOFF_MAX_MS: Final = 24 * 60 * 60 * 1000

_MINUTE: Final = 60_000
_HOUR: Final = 60 * _MINUTE


@dataclass(frozen=True, slots=True)
class AuthCooldownPolicy:
    """The configurable knobs of the disabled track and the failure window.

    Defaults are OpenClaw's: billing 10 min doubling to 24 h, auth_permanent 10 min doubling to
    60 min, counters forgotten 24 h after the last failure. ``billing_backoff_ms_by_provider``
    overrides the billing base per (normalized) provider.
    """

    billing_backoff_ms: float = 10 * _MINUTE
    billing_max_ms: float = 24 * _HOUR
    auth_permanent_backoff_ms: float = 10 * _MINUTE
    auth_permanent_max_ms: float = 60 * _MINUTE
    failure_window_ms: float = 24 * _HOUR
    billing_backoff_ms_by_provider: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def for_provider(self, provider: str | None) -> AuthCooldownPolicy:
        """This policy with the provider's billing override applied (if any)."""
        key = normalize_provider_id(provider)
        for name, value in self.billing_backoff_ms_by_provider.items():
            if normalize_provider_id(name) == key:
                return AuthCooldownPolicy(
                    billing_backoff_ms=value,
                    billing_max_ms=self.billing_max_ms,
                    auth_permanent_backoff_ms=self.auth_permanent_backoff_ms,
                    auth_permanent_max_ms=self.auth_permanent_max_ms,
                    failure_window_ms=self.failure_window_ms,
                )
        return self


DEFAULT_AUTH_COOLDOWN_POLICY: Final = AuthCooldownPolicy()


@dataclass(frozen=True, slots=True)
class DisabledFailureBackoffPolicy:
    """Where a disabled-track reason takes its base and cap from."""

    base_ms: Callable[[AuthCooldownPolicy], float]
    max_ms: Callable[[AuthCooldownPolicy], float]


DISABLED_FAILURE_BACKOFF_POLICIES: Final[Mapping[str, DisabledFailureBackoffPolicy]] = (
    MappingProxyType(
        {
            "billing": DisabledFailureBackoffPolicy(
                base_ms=lambda p: p.billing_backoff_ms, max_ms=lambda p: p.billing_max_ms
            ),
            # recovers quickly: some providers send auth-looking payloads during incidents
            "auth_permanent": DisabledFailureBackoffPolicy(
                base_ms=lambda p: p.auth_permanent_backoff_ms,
                max_ms=lambda p: p.auth_permanent_max_ms,
            ),
        }
    )
)


class AllModels:
    """Type of ``ALL_MODELS``."""

    def __repr__(self) -> str:
        return "ALL_MODELS"


#: Model selector meaning "account-wide": windows limited to one model are ignored
#: (OpenClaw passes ``forModel: null``; ``None`` here is OpenClaw's ``undefined``).
ALL_MODELS: Final = AllModels()
ModelSelector = str | AllModels | None

# --- small number rules ------------------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_date_timestamp_ms(value: object) -> float | None:
    """``value`` if it is a finite number a ``Date`` can hold, else ``None``."""
    if not _is_number(value):
        return None
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or abs(number) > MAX_DATE_TIMESTAMP_MS:
        return None
    return value  # type: ignore[return-value]


def is_future_date_timestamp_ms(value: object, now_ms: object) -> bool:
    """Both are valid timestamps and ``value`` is later than ``now_ms``."""
    timestamp = as_date_timestamp_ms(value)
    now = as_date_timestamp_ms(now_ms)
    return timestamp is not None and now is not None and timestamp > now


def _is_safe_integer(value: float) -> bool:
    return math.isfinite(value) and float(value).is_integer() and abs(value) <= MAX_SAFE_INTEGER


def resolve_usage_window_until(now_ms: float, duration_ms: float) -> float:
    """``now + duration`` as OpenClaw computes window ends.

    A non-positive or non-finite duration gives ``now``; so does an end that would leave the
    valid Date range (or the safe-integer range), so a recomputed window never ends after
    ``MAX_DATE_TIMESTAMP_MS``.
    """
    if not _is_number(duration_ms) or not math.isfinite(duration_ms) or duration_ms <= 0:
        return now_ms
    duration = max(1, math.floor(duration_ms))
    if duration > MAX_SAFE_INTEGER or as_date_timestamp_ms(now_ms) is None:
        return now_ms
    expires = now_ms + duration
    if not _is_safe_integer(expires) or abs(expires) > MAX_DATE_TIMESTAMP_MS:
        return now_ms
    return expires


def keep_active_window_or_recompute(
    existing_until: object, now_ms: float, recomputed_until: float
) -> float:
    """Keep a window that is still active (``until > now``); otherwise take the new end."""
    if _is_number(existing_until) and math.isfinite(existing_until) and existing_until > now_ms:  # type: ignore[arg-type,operator]
        return existing_until  # type: ignore[return-value]
    return recomputed_until


# --- durations ---------------------------------------------------------------------------------


def calculate_auth_profile_cooldown_ms(error_count: int) -> int:
    """The ordinary cooldown: 30 s for the first error, 60 s for the second, then 5 min."""
    normalized = max(1, error_count)
    if normalized <= 1:
        return 30_000
    if normalized <= 2:
        return 60_000
    return 5 * 60_000


def calculate_capped_exponential_backoff_ms(
    error_count: int, base_ms: float, max_ms: float
) -> float:
    """``base · 2^(n-1)`` capped at ``max`` (exponent capped at ``ceil(log2(max/base))``)."""
    normalized = max(1, error_count)
    base = max(1, base_ms)
    cap = max(base, max_ms)
    max_exponent = max(0, math.ceil(math.log2(cap / base)))
    exponent = min(normalized - 1, max_exponent)
    return min(cap, base * 2**exponent)


def resolve_disabled_failure_backoff_ms(
    reason: str, error_count: int, policy: AuthCooldownPolicy = DEFAULT_AUTH_COOLDOWN_POLICY
) -> float:
    """How long a ``billing`` / ``auth_permanent`` failure disables the profile."""
    lane = DISABLED_FAILURE_BACKOFF_POLICIES[reason]
    return calculate_capped_exponential_backoff_ms(
        error_count, lane.base_ms(policy), lane.max_ms(policy)
    )


# --- reading windows ---------------------------------------------------------------------------


def is_auth_cooldown_bypassed_for_provider(provider: str | None) -> bool:
    """OpenRouter and Kilocode manage their own limits: their profiles never cool down here."""
    return normalize_provider_id(provider) in ("openrouter", "kilocode")


def is_model_scoped_cooldown_reason(reason: str | None) -> bool:
    """Failures that cool down only the failing model (siblings on the profile stay usable)."""
    return reason in ("rate_limit", "timeout", "model_not_found")


def is_active_unusable_window(until: object, now_ms: float) -> bool:
    """``until`` is a valid timestamp in the future of ``now_ms``."""
    timestamp = as_date_timestamp_ms(until)
    return timestamp is not None and timestamp > 0 and now_ms < timestamp


def _selects_model(for_model: ModelSelector) -> bool:
    return for_model is ALL_MODELS or bool(for_model)


def _is_block_scoped_to_different_model(stats: ProfileUsageStats, for_model: ModelSelector) -> bool:
    # legacy rows carry blockedModel without a scope marker: those stay profile-wide
    return (
        _selects_model(for_model)
        and stats.blocked_scope == "model"
        and bool(stats.blocked_model)
        and (for_model is ALL_MODELS or stats.blocked_model != for_model)
    )


def _is_cooldown_scoped_to_different_model(
    stats: ProfileUsageStats, for_model: ModelSelector
) -> bool:
    return (
        _selects_model(for_model)
        and is_model_scoped_cooldown_reason(stats.cooldown_reason)
        and bool(stats.cooldown_model)
        and (for_model is ALL_MODELS or stats.cooldown_model != for_model)
    )


def is_blocked_window_active_for_model(
    stats: ProfileUsageStats, now_ms: float, for_model: ModelSelector = None
) -> bool:
    """A ``blockedUntil`` window applies to ``for_model`` and is active."""
    return not _is_block_scoped_to_different_model(stats, for_model) and is_active_unusable_window(
        stats.blocked_until, now_ms
    )


def resolve_profile_unusable_until(
    stats: ProfileUsageStats, for_model: ModelSelector = None
) -> float | None:
    """The latest of blocked/cooldown/disabled ends that apply to ``for_model`` (or None)."""
    blocked = None if _is_block_scoped_to_different_model(stats, for_model) else stats.blocked_until
    cooldown = (
        None
        if for_model is ALL_MODELS
        and is_model_scoped_cooldown_reason(stats.cooldown_reason)
        and stats.cooldown_model
        else stats.cooldown_until
    )
    values = [as_date_timestamp_ms(v) for v in (blocked, cooldown, stats.disabled_until)]
    valid = [v for v in values if v is not None and v > 0]
    return max(valid) if valid else None


def should_bypass_model_scoped_cooldown(
    stats: ProfileUsageStats, now_ms: float, for_model: ModelSelector = None
) -> bool:
    """A model-scoped cooldown of *another* model, with no block or disable that applies."""
    return (
        _is_cooldown_scoped_to_different_model(stats, for_model)
        and not is_blocked_window_active_for_model(stats, now_ms, for_model)
        and not is_active_unusable_window(stats.disabled_until, now_ms)
    )


def is_profile_in_cooldown(
    stats: ProfileUsageStats | None,
    model_id: ModelSelector,
    now_ms: float,
    *,
    provider: str | None = None,
) -> bool:
    """Whether a profile with ledger entry ``stats`` is unusable for ``model_id`` at ``now_ms``.

    A model-scoped cooldown blocks only its model; blocks and disables stay profile-wide
    (unless the block itself is model-scoped). ``provider`` applies the OpenRouter/Kilocode
    bypass.
    """
    if provider is not None and is_auth_cooldown_bypassed_for_provider(provider):
        return False
    if stats is None:
        return False
    if should_bypass_model_scoped_cooldown(stats, now_ms, model_id):
        return False
    until = resolve_profile_unusable_until(stats, model_id)
    return bool(until) and now_ms < until  # type: ignore[operator]


def get_soonest_cooldown_expiry(
    usage_stats: Mapping[str, ProfileUsageStats],
    profile_ids: list[str] | tuple[str, ...],
    *,
    now_ms: float,
    for_model: str | None = None,
) -> float | None:
    """The soonest unusable-until among ``profile_ids`` (may be in the past), or None.

    Cooldowns scoped to ``for_model`` by a rate limit count with their *latest* end.
    """
    soonest: float | None = None
    latest_matching: float | None = None
    for profile_id in profile_ids:
        stats = usage_stats.get(profile_id)
        if stats is None or should_bypass_model_scoped_cooldown(stats, now_ms, for_model):
            continue
        until = resolve_profile_unusable_until(stats, for_model)
        if until is None:
            continue
        matching = (
            bool(for_model)
            and stats.cooldown_reason == "rate_limit"
            and stats.cooldown_model == for_model
            and not is_blocked_window_active_for_model(stats, now_ms, for_model)
            and not is_active_unusable_window(stats.disabled_until, now_ms)
        )
        if matching:
            latest_matching = until if latest_matching is None else max(latest_matching, until)
            continue
        if soonest is None or until < soonest:
            soonest = until
    if soonest is None:
        return latest_matching
    if latest_matching is None:
        return soonest
    return min(soonest, latest_matching)


# --- expiry --------------------------------------------------------------------------------------

_WINDOWS: Final = (
    ("cooldown_until", ("cooldown_reason", "cooldown_classification", "cooldown_model")),
    ("blocked_until", ("blocked_reason", "blocked_source", "blocked_model", "blocked_scope")),
    ("disabled_until", ("disabled_reason",)),
)


def _expired(until: object, now_ms: float) -> bool:
    return _is_number(until) and math.isfinite(until) and until > 0 and now_ms >= until  # type: ignore[arg-type,operator]


def clear_expired_windows(stats: ProfileUsageStats, now_ms: float) -> ProfileUsageStats:
    """``stats`` with each expired window (and its metadata) removed.

    When no window is left, ``errorCount`` resets to 0 and ``failureCounts`` keeps only the
    ``rate_limit`` count (a half-open rate-limited profile keeps backing off until a success).
    ``lastFailureAt`` stays for the failure-window check. Returns ``stats`` itself when
    nothing expired.
    """
    changes: dict[str, None] = {}
    for until_field, metadata in _WINDOWS:
        if _expired(getattr(stats, until_field), now_ms):
            changes[until_field] = None
            changes.update(dict.fromkeys(metadata))
    if not changes:
        return stats
    cleared = stats.replace(**changes)
    if resolve_profile_unusable_until(cleared) is None:
        rate_limit = (cleared.failure_counts or {}).get("rate_limit")
        cleared = cleared.replace(
            error_count=0, failure_counts={"rate_limit": rate_limit} if rate_limit else None
        )
    return cleared


def clear_expired_cooldowns(store: AuthProfileStoreState, now_ms: float) -> AuthProfileStoreState:
    """``clearExpiredCooldowns``: every profile's expired windows cleared (see above).

    Pure: returns a new snapshot (or ``store`` itself when nothing expired). OpenClaw persists
    this lazily with the next write; so does this runtime.
    """
    changed = {}
    for profile_id, stats in store.usage_stats.items():
        cleared = clear_expired_windows(stats, now_ms)
        if cleared is not stats:
            changed[profile_id] = cleared
    if not changed:
        return store
    return store.replace(usage_stats={**store.usage_stats, **changed})


def reset_auth_profile_failure_state(
    stats: ProfileUsageStats | None, *, last_used: float | None = None
) -> ProfileUsageStats:
    """Every window and counter cleared, other history kept (a success or a manual clear)."""
    base = stats or ProfileUsageStats()
    changes: dict[str, object] = {"error_count": 0, "failure_counts": None}
    for until_field, metadata in _WINDOWS:
        changes[until_field] = None
        changes.update(dict.fromkeys(metadata))
    if last_used is not None:
        changes["last_used"] = last_used
    return base.replace(**changes)


# --- failures ------------------------------------------------------------------------------------


def apply_failure(
    state: ProfileUsageStats | None,
    reason: str,
    model_id: str | None,
    now_ms: float,
    policy: AuthCooldownPolicy = DEFAULT_AUTH_COOLDOWN_POLICY,
) -> ProfileUsageStats:
    """The ledger entry after one failure of ``reason`` on ``model_id`` at ``now_ms``.

    OpenClaw's ``computeNextProfileUsageStats``: counters reset when the failure window
    (``policy.failure_window_ms`` since ``lastFailureAt``) or the previous unusable window has
    passed, except ``failureCounts.rate_limit``; ``billing``/``auth_permanent`` go to the
    disabled track, everything else to the cooldown track, where model scope is kept, set or
    widened. A rate limit that a provider quota block for this model already covers changes
    nothing.
    """
    reason = check_auth_profile_failure_reason(reason)
    existing = state or ProfileUsageStats()
    if (
        reason == "rate_limit"
        and existing.blocked_reason == "subscription_limit"
        and is_blocked_window_active_for_model(
            existing, now_ms, model_id if model_id is not None else ALL_MODELS
        )
    ):
        return existing

    last_failure_at = existing.last_failure_at
    window_expired = (
        _is_number(last_failure_at)
        and last_failure_at > 0  # type: ignore[operator]
        and now_ms - last_failure_at > policy.failure_window_ms  # type: ignore[operator]
    )
    unusable_until = resolve_profile_unusable_until(existing)
    previous_expired = unusable_until is not None and now_ms >= unusable_until
    reset_counters = window_expired or previous_expired

    next_error_count = (0 if reset_counters else (existing.error_count or 0)) + 1
    preserved_rate_limit = (existing.failure_counts or {}).get("rate_limit")
    counts: dict[str, int] = (
        ({"rate_limit": preserved_rate_limit} if preserved_rate_limit else {})
        if reset_counters
        else dict(existing.failure_counts or {})
    )
    counts[reason] = counts.get(reason, 0) + 1

    updated = existing.replace(
        cooldown_classification=None,
        error_count=next_error_count,
        failure_counts=counts,
        last_failure_at=now_ms,
    )

    if reason in DISABLED_FAILURE_BACKOFF_POLICIES:
        backoff = resolve_disabled_failure_backoff_ms(reason, counts[reason], policy)
        return updated.replace(
            disabled_until=keep_active_window_or_recompute(
                existing.disabled_until, now_ms, resolve_usage_window_until(now_ms, backoff)
            ),
            disabled_reason=reason,
        )

    backoff = (
        calculate_capped_exponential_backoff_ms(
            counts["rate_limit"], RATE_LIMIT_BACKOFF_BASE_MS, RATE_LIMIT_BACKOFF_MAX_MS
        )
        if reason == "rate_limit"
        else calculate_auth_profile_cooldown_ms(next_error_count)
    )
    cooldown_until = keep_active_window_or_recompute(
        existing.cooldown_until, now_ms, resolve_usage_window_until(now_ms, backoff)
    )
    scoped = is_model_scoped_cooldown_reason(reason)
    existing_active = (
        _is_number(existing.cooldown_until) and existing.cooldown_until > now_ms  # type: ignore[operator]
    )
    if not existing_active:
        cooldown_model = model_id if scoped else None
    elif existing.cooldown_model and model_id and existing.cooldown_model != model_id:
        cooldown_model = None  # another model failed inside the window: widen
    elif scoped and not model_id and existing.cooldown_model:
        cooldown_model = None  # unknown model: widen conservatively
    elif not scoped:
        cooldown_model = None  # profile-wide failure
    else:
        cooldown_model = existing.cooldown_model
    return updated.replace(
        cooldown_until=cooldown_until, cooldown_reason=reason, cooldown_model=cooldown_model or None
    )


#: OpenClaw's name for ``apply_failure``.
compute_next_profile_usage_stats = apply_failure


def apply_blocked_until(
    state: ProfileUsageStats | None,
    blocked_until: float,
    source: str,
    model_id: str | None,
    now_ms: float,
) -> ProfileUsageStats | None:
    """The entry after a provider reported a quota reset at ``blocked_until`` (Codex limits).

    Returns None (nothing to record) for an invalid clock or a ``blocked_until`` that is not a
    valid future timestamp. Same-model blocks stay model-scoped; a different or unknown model
    widens an active block; an active profile-wide block is never narrowed; the later end wins;
    the cooldown window and its (WHAM) classification are cleared.
    """
    if not is_future_date_timestamp_ms(blocked_until, now_ms):
        return None
    previous = state or ProfileUsageStats()
    active = as_date_timestamp_ms(previous.blocked_until)
    active_until = active if active is not None and active > now_ms else 0
    if not active_until:
        blocked_model = model_id or None
    elif previous.blocked_scope == "model" and model_id and previous.blocked_model == model_id:
        blocked_model = model_id
    else:
        blocked_model = None
    return previous.replace(
        blocked_until=max(active_until, blocked_until),
        blocked_reason="subscription_limit",
        blocked_source=source,
        blocked_model=blocked_model,
        blocked_scope="model" if blocked_model else None,
        cooldown_until=None,
        cooldown_reason=None,
        cooldown_classification=None,
        cooldown_model=None,
        last_failure_at=now_ms,
        failure_counts={
            **(previous.failure_counts or {}),
            "rate_limit": previous.failure_count("rate_limit") + 1,
        },
    )
