"""Cooldown math of auth profiles (spec §3.1–3.2): constants, sequences, scope, resets."""

from __future__ import annotations

import math

import pytest

from openclaw_runtime.auth import (
    AuthCooldownPolicy,
    AuthProfileStoreState,
    ProfileUsageStats,
    clear_expired_cooldowns,
)
from openclaw_runtime.auth.cooldown import (
    ALL_MODELS,
    DISABLED_FAILURE_BACKOFF_POLICIES,
    MAX_DATE_TIMESTAMP_MS,
    RATE_LIMIT_BACKOFF_BASE_MS,
    RATE_LIMIT_BACKOFF_MAX_MS,
    apply_blocked_until,
    apply_failure,
    calculate_auth_profile_cooldown_ms,
    calculate_capped_exponential_backoff_ms,
    clear_expired_windows,
    compute_next_profile_usage_stats,
    get_soonest_cooldown_expiry,
    is_auth_cooldown_bypassed_for_provider,
    is_model_scoped_cooldown_reason,
    is_profile_in_cooldown,
    keep_active_window_or_recompute,
    reset_auth_profile_failure_state,
    resolve_disabled_failure_backoff_ms,
    resolve_profile_unusable_until,
    resolve_usage_window_until,
)

NOW = 1_700_000_000_000
MIN = 60_000
HOUR = 60 * MIN


def stats(**fields) -> ProfileUsageStats:
    return ProfileUsageStats.from_dict(fields)


# --- constants ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error_count", "expected"),
    [
        (-3, 30_000),
        (0, 30_000),
        (1, 30_000),
        (2, 60_000),
        (3, 300_000),
        (4, 300_000),
        (99, 300_000),
    ],
)
def test_ordinary_cooldown_steps_30s_60s_then_5min(error_count, expected):
    assert calculate_auth_profile_cooldown_ms(error_count) == expected


def test_rate_limit_constants():
    assert RATE_LIMIT_BACKOFF_BASE_MS == 30_000
    assert RATE_LIMIT_BACKOFF_MAX_MS == 86_400_000
    assert MAX_DATE_TIMESTAMP_MS == 8.64e15


RATE_LIMIT_SEQUENCE = [
    30_000,
    60_000,
    2 * MIN,
    4 * MIN,
    8 * MIN,
    16 * MIN,
    32 * MIN,
    64 * MIN,
    128 * MIN,
    256 * MIN,
    512 * MIN,
    1_024 * MIN,  # 61 440 s
    24 * HOUR,
    24 * HOUR,
]


@pytest.mark.parametrize(("count", "expected"), list(enumerate(RATE_LIMIT_SEQUENCE, start=1)))
def test_capped_exponential_rate_limit_table(count, expected):
    assert (
        calculate_capped_exponential_backoff_ms(
            count, RATE_LIMIT_BACKOFF_BASE_MS, RATE_LIMIT_BACKOFF_MAX_MS
        )
        == expected
    )


@pytest.mark.parametrize(
    ("count", "base", "cap", "expected"),
    [
        (0, 1000, 8000, 1000),  # counts below one behave like one
        (4, 1000, 8000, 8000),
        (9, 1000, 8000, 8000),
        (3, 0, 10, 4),  # base is at least 1 ms
        (2, 5000, 1000, 5000),  # a cap below the base is raised to the base
        (50, 1, 1, 1),
    ],
)
def test_capped_exponential_edges(count, base, cap, expected):
    assert calculate_capped_exponential_backoff_ms(count, base, cap) == expected


def test_rate_limit_14_step_sequence_through_the_ledger():
    """OpenClaw's test: clear expired windows, fail, wait until just after the window."""
    now, state, seen = NOW, AuthProfileStoreState.of(), []
    for _ in RATE_LIMIT_SEQUENCE:
        state = clear_expired_cooldowns(state, now)
        entry = apply_failure(state.stats_for("p"), "rate_limit", None, now)
        state = state.with_usage_stats("p", entry)
        seen.append(entry.cooldown_until - now)
        now += seen[-1] + 1
    assert seen == RATE_LIMIT_SEQUENCE
    assert state.stats_for("p").failure_count("rate_limit") == 14


@pytest.mark.parametrize(
    ("reason", "count", "expected"),
    [
        ("billing", 1, 10 * MIN),
        ("billing", 2, 20 * MIN),
        ("billing", 3, 40 * MIN),
        ("billing", 5, 160 * MIN),
        ("billing", 8, 1280 * MIN),
        ("billing", 9, 24 * HOUR),
        ("billing", 30, 24 * HOUR),
        ("auth_permanent", 1, 10 * MIN),
        ("auth_permanent", 2, 20 * MIN),
        ("auth_permanent", 3, 40 * MIN),
        ("auth_permanent", 4, 60 * MIN),
        ("auth_permanent", 12, 60 * MIN),
    ],
)
def test_disabled_track_defaults(reason, count, expected):
    assert resolve_disabled_failure_backoff_ms(reason, count) == expected


def test_disabled_policies_cover_exactly_billing_and_auth_permanent():
    assert set(DISABLED_FAILURE_BACKOFF_POLICIES) == {"billing", "auth_permanent"}


def test_disabled_track_base_and_cap_are_configurable():
    policy = AuthCooldownPolicy(
        billing_backoff_ms=HOUR, billing_max_ms=3 * HOUR, auth_permanent_backoff_ms=MIN
    )
    assert resolve_disabled_failure_backoff_ms("billing", 1, policy) == HOUR
    assert resolve_disabled_failure_backoff_ms("billing", 3, policy) == 3 * HOUR
    assert resolve_disabled_failure_backoff_ms("auth_permanent", 2, policy) == 2 * MIN
    entry = apply_failure(None, "billing", None, NOW, policy)
    assert entry.disabled_until == NOW + HOUR


def test_billing_base_can_be_overridden_per_provider():
    policy = AuthCooldownPolicy(billing_backoff_ms_by_provider={" OpenAI ": 5 * MIN})
    assert policy.for_provider("openai").billing_backoff_ms == 5 * MIN
    assert policy.for_provider("anthropic") is policy


# --- window helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("existing", "now", "recomputed", "expected"),
    [
        (NOW + 10, NOW, NOW + 99, NOW + 10),  # active: kept, never extended
        (NOW + 10, NOW, NOW + 1, NOW + 10),  # active: kept even if the new one is shorter
        (NOW, NOW, NOW + 99, NOW + 99),  # ends now: expired
        (NOW - 1, NOW, NOW + 99, NOW + 99),
        (None, NOW, NOW + 99, NOW + 99),
        (math.inf, NOW, NOW + 99, NOW + 99),  # not finite: recomputed
        (math.nan, NOW, NOW + 99, NOW + 99),
        ("soon", NOW, NOW + 99, NOW + 99),
    ],
)
def test_keep_active_window_or_recompute(existing, now, recomputed, expected):
    assert keep_active_window_or_recompute(existing, now, recomputed) == expected


@pytest.mark.parametrize(
    ("now", "duration", "expected"),
    [
        (NOW, 30_000, NOW + 30_000),
        (NOW, 1.7, NOW + 1),  # floored to whole ms
        (NOW, 0.2, NOW + 1),  # but at least 1 ms
        (NOW, 0, NOW),
        (NOW, -5, NOW),
        (NOW, math.inf, NOW),
        (NOW, math.nan, NOW),
        (MAX_DATE_TIMESTAMP_MS, 30_000, MAX_DATE_TIMESTAMP_MS),  # never past the Date range
        (MAX_DATE_TIMESTAMP_MS - 10, 30_000, MAX_DATE_TIMESTAMP_MS - 10),
        (NOW + 0.5, 30_000, NOW + 0.5),  # not a safe integer: falls back to now
    ],
)
def test_resolve_usage_window_until(now, duration, expected):
    assert resolve_usage_window_until(now, duration) == expected


@pytest.mark.parametrize("reason", ["rate_limit", "billing"])
def test_recomputed_windows_stay_inside_the_date_range(reason):
    entry = apply_failure(None, reason, None, MAX_DATE_TIMESTAMP_MS)
    until = entry.cooldown_until if reason == "rate_limit" else entry.disabled_until
    assert until == MAX_DATE_TIMESTAMP_MS


# --- active windows never extend --------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "existing", "field"),
    [
        (
            "rate_limit",
            {"cooldownUntil": 1_000_000 + 50 * MIN, "errorCount": 3, "lastFailureAt": 400_000},
            "cooldown_until",
        ),
        (
            "billing",
            {
                "disabledUntil": 1_000_000 + 20 * HOUR,
                "disabledReason": "billing",
                "errorCount": 5,
                "failureCounts": {"billing": 5},
                "lastFailureAt": 940_000,
            },
            "disabled_until",
        ),
        (
            "auth_permanent",
            {
                "disabledUntil": 1_000_000 + 50 * MIN,
                "disabledReason": "auth_permanent",
                "errorCount": 5,
                "failureCounts": {"auth_permanent": 5},
                "lastFailureAt": 940_000,
            },
            "disabled_until",
        ),
        (
            "timeout",
            {"cooldownUntil": 1_000_000 + 5, "errorCount": 9, "lastFailureAt": 999_000},
            "cooldown_until",
        ),
    ],
)
def test_active_windows_are_not_extended_on_retry(reason, existing, field):
    before = stats(**existing)
    after = apply_failure(before, reason, None, 1_000_000)
    assert getattr(after, field) == getattr(before, field)
    assert after.error_count == before.error_count + 1  # still counted


@pytest.mark.parametrize(
    ("reason", "existing", "field", "expected"),
    [
        (
            "rate_limit",
            {"cooldownUntil": 940_000, "errorCount": 3, "lastFailureAt": 940_000},
            "cooldown_until",
            1_000_000 + 30_000,
        ),
        (
            "billing",
            {
                "disabledUntil": 940_000,
                "disabledReason": "billing",
                "errorCount": 5,
                "failureCounts": {"billing": 2},
                "lastFailureAt": 940_000,
            },
            "disabled_until",
            1_000_000 + 10 * MIN,
        ),
        (
            "auth_permanent",
            {
                "disabledUntil": 940_000,
                "disabledReason": "auth_permanent",
                "errorCount": 5,
                "failureCounts": {"auth_permanent": 2},
                "lastFailureAt": 940_000,
            },
            "disabled_until",
            1_000_000 + 10 * MIN,
        ),
    ],
)
def test_expired_windows_recompute_from_a_fresh_counter(reason, existing, field, expected):
    after = apply_failure(stats(**existing), reason, None, 1_000_000)
    assert getattr(after, field) == expected
    assert after.error_count == 1


# --- counters ------------------------------------------------------------------------------------


def test_three_rate_limits_then_timeout_then_rate_limit_is_count_four_240s():
    now = NOW
    entry = stats(
        cooldownUntil=now - 1,
        cooldownReason="rate_limit",
        errorCount=3,
        failureCounts={"rate_limit": 3},
        lastFailureAt=now - 60_000,
    )
    entry = apply_failure(entry, "timeout", None, now)
    assert entry.error_count == 1  # aggregate counter reset: the window had expired
    assert dict(entry.failure_counts) == {"rate_limit": 3, "timeout": 1}
    now = entry.cooldown_until + 1
    entry = clear_expired_windows(entry, now)
    assert dict(entry.failure_counts) == {"rate_limit": 3}
    entry = apply_failure(entry, "rate_limit", None, now)
    assert entry.failure_count("rate_limit") == 4
    assert entry.cooldown_until - now == 240_000


@pytest.mark.parametrize(
    ("existing", "now", "reason", "error_count", "counts"),
    [
        # inside an active window: counters accumulate
        (
            {"cooldownUntil": NOW + 1, "errorCount": 2, "failureCounts": {"auth": 2}},
            NOW,
            "auth",
            3,
            {"auth": 3},
        ),
        # failure window (24 h) passed: counters reset, rate_limit kept
        (
            {
                "errorCount": 7,
                "failureCounts": {"auth": 4, "rate_limit": 3},
                "lastFailureAt": NOW - 24 * HOUR - 1,
            },
            NOW,
            "auth",
            1,
            {"auth": 1, "rate_limit": 3},
        ),
        # exactly 24 h is still inside the window
        (
            {"errorCount": 7, "failureCounts": {"auth": 4}, "lastFailureAt": NOW - 24 * HOUR},
            NOW,
            "auth",
            8,
            {"auth": 5},
        ),
        # the previous unusable window expired: reset
        (
            {"cooldownUntil": NOW, "errorCount": 2, "failureCounts": {"timeout": 2}},
            NOW,
            "timeout",
            1,
            {"timeout": 1},
        ),
        # no window and no history: first failure
        ({}, NOW, "unknown", 1, {"unknown": 1}),
        # only a disabled window, still active: counters accumulate across lanes
        (
            {"disabledUntil": NOW + HOUR, "errorCount": 1, "failureCounts": {"billing": 1}},
            NOW,
            "format",
            2,
            {"billing": 1, "format": 1},
        ),
    ],
)
def test_counter_reset_rules(existing, now, reason, error_count, counts):
    after = apply_failure(stats(**existing), reason, None, now)
    assert after.error_count == error_count
    assert dict(after.failure_counts) == counts
    assert after.last_failure_at == now


def test_failure_window_is_configurable():
    policy = AuthCooldownPolicy(failure_window_ms=HOUR)
    before = stats(errorCount=4, failureCounts={"auth": 4}, lastFailureAt=NOW - HOUR - 1)
    assert apply_failure(before, "auth", None, NOW, policy).error_count == 1
    assert apply_failure(before, "auth", None, NOW).error_count == 5


@pytest.mark.parametrize("reason", ["auth", "rate_limit", "billing", "unknown"])
def test_every_new_failure_clears_the_cooldown_classification(reason):
    before = stats(
        cooldownUntil=NOW + 12 * HOUR, cooldownReason="auth", cooldownClassification="wham_x"
    )
    assert apply_failure(before, reason, "m", NOW).cooldown_classification is None


def test_ordinary_steps_follow_the_aggregate_counter():
    entry, now, seen = None, NOW, []
    for _ in range(4):
        entry = apply_failure(entry, "unknown", None, now)
        seen.append(entry.cooldown_until - now)
        now += 1  # still inside the (kept) first window
    assert seen == [30_000, 29_999, 29_998, 29_997]  # the first window is kept, not extended
    assert entry.error_count == 4
    # after the first window expires the next failure starts over at 30 s
    later = apply_failure(entry, "unknown", None, entry.cooldown_until)
    assert later.cooldown_until - entry.cooldown_until == 30_000


def test_unknown_reason_is_rejected_by_name():
    with pytest.raises(ValueError, match="server_error"):
        apply_failure(None, "server_error", None, NOW)


def test_compute_next_profile_usage_stats_is_apply_failure():
    assert compute_next_profile_usage_stats is apply_failure


def test_unknown_keys_survive_a_failure():
    before = ProfileUsageStats.from_dict({"custom": {"a": 1}, "cooldownUntil": "bogus"})
    after = apply_failure(before, "auth", None, NOW)
    assert after.to_dict()["custom"] == {"a": 1}
    assert after.cooldown_until == NOW + 30_000


# --- model scope (§3.2) ------------------------------------------------------------------------


def active(reason: str, model: str) -> dict:
    return {
        "cooldownUntil": 1_000_000 + 30_000,
        "cooldownReason": reason,
        "cooldownModel": model,
        "errorCount": 1,
        "lastFailureAt": 999_000,
    }


@pytest.mark.parametrize(
    ("initial", "reason", "model", "expected_reason", "expected_model"),
    [
        ({}, "rate_limit", "claude-sonnet-4.6", "rate_limit", "claude-sonnet-4.6"),
        ({}, "timeout", "claude-sonnet-4.6", "timeout", "claude-sonnet-4.6"),
        ({}, "model_not_found", "claude-sonnet-4.6", "model_not_found", "claude-sonnet-4.6"),
        ({}, "auth", "claude-sonnet-4.6", "auth", None),  # not scoped
        ({}, "rate_limit", None, "rate_limit", None),
        (active("model_not_found", "claude-sonnet-4.6"), "model_not_found", "gpt-4.1", "model_not_found", None),
        (active("model_not_found", "claude-sonnet-4.6"), "model_not_found", "claude-sonnet-4.6", "model_not_found", "claude-sonnet-4.6"),
        (active("model_not_found", "claude-sonnet-4.6"), "model_not_found", None, "model_not_found", None),
        (active("rate_limit", "claude-sonnet-4.6"), "rate_limit", "gpt-4.1", "rate_limit", None),
        (active("rate_limit", "claude-sonnet-4.6"), "rate_limit", "claude-sonnet-4.6", "rate_limit", "claude-sonnet-4.6"),
        (active("rate_limit", "claude-sonnet-4.6"), "rate_limit", None, "rate_limit", None),
        (active("rate_limit", "claude-sonnet-4.6"), "timeout", "claude-sonnet-4.6", "timeout", "claude-sonnet-4.6"),
        (active("rate_limit", "claude-sonnet-4.6"), "auth", "claude-opus-4.6", "auth", None),
        (active("rate_limit", "claude-sonnet-4.6"), "auth", "claude-sonnet-4.6", "auth", None),
        # an active profile-wide cooldown never narrows again
        ({"cooldownUntil": 1_030_000, "cooldownReason": "auth"}, "rate_limit", "m", "rate_limit", None),
        # expired scoped cooldown: a new failure starts a new scope
        ({**active("rate_limit", "a"), "cooldownUntil": 1_000_000}, "rate_limit", "b", "rate_limit", "b"),
    ],
)  # fmt: skip
def test_model_scope_is_set_kept_or_widened(
    initial, reason, model, expected_reason, expected_model
):
    after = apply_failure(stats(**initial), reason, model, 1_000_000)
    assert after.cooldown_reason == expected_reason
    assert after.cooldown_model == expected_model


def test_billing_goes_to_the_disabled_lane_and_leaves_cooldown_metadata():
    before = stats(**active("rate_limit", "m"))
    after = apply_failure(before, "billing", "m", 1_000_000)
    assert after.disabled_until == 1_000_000 + 10 * MIN
    assert after.disabled_reason == "billing"
    assert after.cooldown_until == before.cooldown_until
    assert after.cooldown_model == "m"
    # but the disable blocks every model
    assert is_profile_in_cooldown(after, "other", 1_000_000)


@pytest.mark.parametrize(
    ("reason", "scoped"),
    [
        ("rate_limit", True),
        ("timeout", True),
        ("model_not_found", True),
        ("auth", False),
        ("billing", False),
        ("format", False),
        ("overloaded", False),
        (None, False),
    ],
)
def test_model_scoped_reasons(reason, scoped):
    assert is_model_scoped_cooldown_reason(reason) is scoped


@pytest.mark.parametrize(
    ("entry", "model", "now", "expected"),
    [
        (active("rate_limit", "a"), "a", 1_000_000, True),
        (active("rate_limit", "a"), "b", 1_000_000, False),  # sibling model stays available
        (active("rate_limit", "a"), None, 1_000_000, True),  # no model context: blocked
        (active("rate_limit", "a"), ALL_MODELS, 1_000_000, False),  # account-wide ignores scope
        (active("rate_limit", "a"), "", 1_000_000, True),  # empty model: no context
        (active("auth", "a"), "b", 1_000_000, True),  # non-scoped reason blocks all
        (active("rate_limit", "a"), "a", 1_030_000, False),  # expired (end is exclusive)
        (active("rate_limit", "a"), "a", 1_029_999, True),
        ({**active("rate_limit", "a"), "disabledUntil": 2_000_000}, "b", 1_000_000, True),
        ({**active("rate_limit", "a"), "blockedUntil": 2_000_000}, "b", 1_000_000, True),
        (
            {"blockedUntil": 2_000_000, "blockedModel": "a", "blockedScope": "model"},
            "b",
            1_000_000,
            False,
        ),
        (
            {"blockedUntil": 2_000_000, "blockedModel": "a", "blockedScope": "model"},
            "a",
            1_000_000,
            True,
        ),
        # legacy row: blockedModel without scope is profile-wide
        ({"blockedUntil": 2_000_000, "blockedModel": "a"}, "b", 1_000_000, True),
        ({"cooldownUntil": MAX_DATE_TIMESTAMP_MS + 1}, "a", 1_000_000, False),  # invalid date
        ({}, "a", 1_000_000, False),
    ],
)
def test_is_profile_in_cooldown(entry, model, now, expected):
    assert is_profile_in_cooldown(stats(**entry), model, now) is expected


def test_no_stats_means_available():
    assert is_profile_in_cooldown(None, "a", NOW) is False


@pytest.mark.parametrize(
    ("provider", "bypassed"),
    [("openrouter", True), (" OpenRouter ", True), ("kilocode", True), ("openai", False)],
)
def test_openrouter_and_kilocode_never_cool_down(provider, bypassed):
    entry = stats(cooldownUntil=NOW + HOUR, disabledUntil=NOW + HOUR)
    assert is_auth_cooldown_bypassed_for_provider(provider) is bypassed
    assert is_profile_in_cooldown(entry, None, NOW, provider=provider) is not bypassed


def test_unusable_until_is_the_latest_window_that_applies():
    entry = stats(
        cooldownUntil=NOW + 10,
        cooldownReason="rate_limit",
        cooldownModel="a",
        disabledUntil=NOW + 5,
        blockedUntil=NOW + 20,
        blockedModel="b",
        blockedScope="model",
    )
    assert resolve_profile_unusable_until(entry) == NOW + 20
    assert resolve_profile_unusable_until(entry, "a") == NOW + 10
    assert resolve_profile_unusable_until(entry, ALL_MODELS) == NOW + 5


def test_soonest_cooldown_expiry():
    usage = {
        "x": stats(cooldownUntil=NOW + 50),
        "y": stats(cooldownUntil=NOW + 20),
        "z": stats(cooldownUntil=NOW + 90, cooldownReason="rate_limit", cooldownModel="m"),
    }
    assert get_soonest_cooldown_expiry(usage, ["x", "y", "z", "nope"], now_ms=NOW) == NOW + 20
    assert get_soonest_cooldown_expiry(usage, ["z"], now_ms=NOW, for_model="m") == NOW + 90
    assert get_soonest_cooldown_expiry(usage, ["z"], now_ms=NOW, for_model="other") is None
    assert get_soonest_cooldown_expiry(usage, [], now_ms=NOW) is None


# --- clear_expired_cooldowns ------------------------------------------------------------------------


def test_clear_expired_cooldowns_clears_windows_independently():
    state = AuthProfileStoreState.of(
        usage_stats={
            "both": {
                "cooldownUntil": NOW - 1,
                "cooldownReason": "rate_limit",
                "cooldownModel": "m",
                "disabledUntil": NOW + HOUR,
                "disabledReason": "billing",
                "errorCount": 4,
                "failureCounts": {"billing": 2, "rate_limit": 2},
            },
            "done": {
                "cooldownUntil": NOW,
                "cooldownClassification": "wham_token_expired",
                "blockedUntil": NOW - 5,
                "blockedReason": "subscription_limit",
                "blockedSource": "wham",
                "blockedModel": "m",
                "blockedScope": "model",
                "errorCount": 4,
                "failureCounts": {"auth": 1, "rate_limit": 5},
                "lastFailureAt": NOW - 10,
                "lastUsed": 7,
            },
            "clean": {"errorCount": 2, "failureCounts": {"auth": 2}},
        }
    )
    cleared = clear_expired_cooldowns(state, NOW)
    both = cleared.stats_for("both")
    assert both.cooldown_until is None and both.cooldown_reason is None
    assert both.cooldown_model is None
    assert both.disabled_until == NOW + HOUR and both.error_count == 4  # a window is left
    assert dict(both.failure_counts) == {"billing": 2, "rate_limit": 2}
    done = cleared.stats_for("done")
    assert done.to_dict() == {
        "errorCount": 0,
        "failureCounts": {"rate_limit": 5},
        "lastFailureAt": NOW - 10,
        "lastUsed": 7,
    }
    assert cleared.stats_for("clean") is state.stats_for("clean")  # nothing expired
    assert state.stats_for("both").cooldown_until == NOW - 1  # pure: input unchanged


def test_clear_expired_cooldowns_returns_the_same_snapshot_when_nothing_expired():
    state = AuthProfileStoreState.of(usage_stats={"a": {"cooldownUntil": NOW + 1}})
    assert clear_expired_cooldowns(state, NOW) is state


def test_clear_without_rate_limit_history_drops_failure_counts():
    entry = clear_expired_windows(stats(cooldownUntil=1, failureCounts={"auth": 3}), NOW)
    assert entry.failure_counts is None and entry.error_count == 0


# --- markAuthProfileBlockedUntil ---------------------------------------------------------------------

T = 1_780_164_000_000  # 2026-05-30T18:00:00Z


@pytest.mark.parametrize(
    ("previous", "model", "until", "expected_model", "expected_scope", "expected_until"),
    [
        ({}, "gpt-5.4", T + 120_000, "gpt-5.4", "model", T + 120_000),
        ({}, None, T + 120_000, None, None, T + 120_000),
        (
            {"blockedUntil": T + 60_000, "blockedModel": "gpt-5.4", "blockedScope": "model"},
            "gpt-5.4",
            T + 120_000,
            "gpt-5.4",
            "model",
            T + 120_000,
        ),
        (
            {"blockedUntil": T + 60_000, "blockedModel": "gpt-5.4", "blockedScope": "model"},
            "gpt-5.4-mini",
            T + 120_000,
            None,
            None,
            T + 120_000,
        ),
        ({"blockedUntil": T + 60_000}, "gpt-5.4", T + 120_000, None, None, T + 120_000),
        ({"blockedUntil": T + 9_000_000}, None, T + 120_000, None, None, T + 9_000_000),
        # an expired block does not count: the new one may be model-scoped
        ({"blockedUntil": T - 1}, "gpt-5.4", T + 120_000, "gpt-5.4", "model", T + 120_000),
    ],
)
def test_blocked_until_scope_and_end(
    previous, model, until, expected_model, expected_scope, expected_until
):
    after = apply_blocked_until(stats(**previous), until, "codex_rate_limits", model, T)
    assert after.blocked_model == expected_model
    assert after.blocked_scope == expected_scope
    assert after.blocked_until == expected_until
    assert after.blocked_reason == "subscription_limit"
    assert after.blocked_source == "codex_rate_limits"
    assert after.last_failure_at == T


def test_same_model_block_leaves_sibling_models_available():
    previous = stats(blockedUntil=T + 60_000, blockedModel="gpt-5.4", blockedScope="model")
    after = apply_blocked_until(previous, T + 120_000, "codex_rate_limits", "gpt-5.4", T)
    assert is_profile_in_cooldown(after, "gpt-5.4", T)
    assert not is_profile_in_cooldown(after, "gpt-5.4-mini", T)


def test_block_clears_cooldown_and_stale_wham_classification_and_counts_a_rate_limit():
    previous = stats(
        cooldownUntil=T + 60_000,
        cooldownReason="auth",
        cooldownClassification="wham_token_expired",
        failureCounts={"rate_limit": 2, "auth": 1},
    )
    after = apply_blocked_until(previous, T + 120_000, "codex_rate_limits", None, T)
    assert after.cooldown_classification is None
    assert after.cooldown_until is None and after.cooldown_reason is None
    assert dict(after.failure_counts) == {"rate_limit": 3, "auth": 1}


@pytest.mark.parametrize(
    ("now", "until"),
    [
        (math.nan, T + 1000),  # invalid process clock
        (T, 2**53 - 1),  # outside the Date range
        (T, T),  # not in the future
        (T, T - 5),
    ],
)
def test_blocked_until_ignores_invalid_clocks_and_dates(now, until):
    assert apply_blocked_until(None, until, "codex_rate_limits", None, now) is None


def test_rate_limit_during_an_active_subscription_block_changes_nothing():
    previous = stats(blockedUntil=T + HOUR, blockedReason="subscription_limit", errorCount=1)
    assert apply_failure(previous, "rate_limit", "m", T) is previous
    assert apply_failure(previous, "rate_limit", None, T) is previous
    # a block scoped to another model does not cover this model's rate limit
    scoped = previous.replace(blocked_model="other", blocked_scope="model")
    assert apply_failure(scoped, "rate_limit", "m", T) is not scoped
    # nor does a block cover other reasons
    assert apply_failure(previous, "timeout", "m", T) is not previous


# --- success / manual clear ------------------------------------------------------------------------


def test_reset_clears_every_window_and_counter_but_keeps_history():
    before = stats(
        cooldownUntil=NOW + 1,
        cooldownReason="rate_limit",
        cooldownModel="m",
        disabledUntil=NOW + 1,
        disabledReason="billing",
        blockedUntil=NOW + 1,
        blockedReason="subscription_limit",
        errorCount=5,
        failureCounts={"rate_limit": 5},
        lastFailureAt=NOW - 1,
        lastUsed=3,
    )
    after = reset_auth_profile_failure_state(before, last_used=NOW)
    assert after.to_dict() == {"errorCount": 0, "lastFailureAt": NOW - 1, "lastUsed": NOW}
    assert reset_auth_profile_failure_state(before).last_used == 3


def test_ledger_entries_round_trip_with_openclaw_field_names():
    raw = {
        "lastUsed": 1,
        "blockedUntil": 2,
        "blockedReason": "subscription_limit",
        "blockedSource": "wham",
        "blockedModel": "m",
        "blockedScope": "model",
        "cooldownUntil": 3,
        "cooldownReason": "rate_limit",
        "cooldownClassification": "wham_token_expired",
        "cooldownModel": "m",
        "disabledUntil": 4,
        "disabledReason": "billing",
        "errorCount": 5,
        "failureCounts": {"billing": 1, "rate_limit": 4},
        "lastFailureAt": 6,
        "lastProbeAt": 7,
        "futureField": [1, 2],
    }
    assert ProfileUsageStats.from_dict(raw).to_dict() == raw
