"""Profile eligibility, ordering and the unavailable reason (spec §3.5–3.7)."""

from __future__ import annotations

import pytest

from openclaw_runtime.auth import (
    AuthProfile,
    AuthProfileStoreState,
    is_auth_profile_in_cooldown,
    resolve_auth_profile_order,
    resolve_profiles_unavailable_reason,
)
from openclaw_runtime.auth.order import (
    AuthProfileOrderResolution,
    prepend_auth_profile_pin,
    resolve_auth_profile_eligibility,
    resolve_auth_profile_order_with_metadata,
    resolve_token_expiry_state,
)
from openclaw_runtime.config import AuthSettings, RuntimeConfig

NOW = 1_700_000_000_000
ENV = {"KEY_SET": "sk-live"}


def profile(pid: str, mode: str = "api_key", provider: str | None = None, **fields) -> AuthProfile:
    data = {"id": pid, "provider": provider or pid.split(":")[0], "mode": mode}
    if mode != "aws-sdk" and "credential" not in fields and "refresh" not in fields:
        data["credential"] = f"secret-{pid}"
    data.update(fields)
    return AuthProfile(**data)


def store(*profiles: AuthProfile, usage=None, order=None) -> AuthProfileStoreState:
    return AuthProfileStoreState.of(profiles, usage_stats=usage or {}, order=order)


def order(state, provider="openai", **kwargs) -> list[str]:
    return resolve_auth_profile_order(store=state, provider=provider, now_ms=NOW, env=ENV, **kwargs)


# --- token expiry ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expires", "expected"),
    [
        (None, "missing"),
        ("2030-01-01", "invalid_expires"),
        (True, "invalid_expires"),
        (0, "invalid_expires"),
        (-1, "invalid_expires"),
        (float("nan"), "invalid_expires"),
        (float("inf"), "invalid_expires"),
        (NOW, "expired"),
        (NOW - 1, "expired"),
        (NOW + 1, "valid"),
    ],
)
def test_token_expiry_state(expires, expected):
    assert resolve_token_expiry_state(expires, NOW) == expected


# --- eligibility -----------------------------------------------------------------------------


def cfg_profiles(**modes: tuple[str, str]) -> dict:
    """OpenClaw's config shape: ``{"auth": {"profiles": {id: {provider, mode}}}}``."""
    return {
        "auth": {"profiles": {pid: {"provider": p, "mode": m} for pid, (p, m) in modes.items()}}
    }


@pytest.mark.parametrize(
    ("profiles", "cfg", "provider", "profile_id", "eligible", "code"),
    [
        ([profile("openai:a")], None, "openai", "openai:a", True, "ok"),
        ([profile("openai:a")], None, " OpenAI ", "openai:a", True, "ok"),
        ([], None, "openai", "openai:a", False, "profile_missing"),
        ([profile("anthropic:a")], None, "openai", "anthropic:a", False, "provider_mismatch"),
        # the configured provider disagrees with the request
        (
            [profile("openai:a")],
            cfg_profiles(**{"openai:a": ("anthropic", "api_key")}),
            "openai",
            "openai:a",
            False,
            "provider_mismatch",
        ),
        # configured mode vs stored credential type
        (
            [profile("openai:a", "token")],
            cfg_profiles(**{"openai:a": ("openai", "api_key")}),
            "openai",
            "openai:a",
            False,
            "mode_mismatch",
        ),
        (
            [profile("openai:a", "token")],
            cfg_profiles(**{"openai:a": ("openai", "oauth")}),
            "openai",
            "openai:a",
            True,
            "ok",
        ),  # an oauth config accepts a token credential
        (
            [profile("openai:a", "oauth")],
            cfg_profiles(**{"openai:a": ("openai", "token")}),
            "openai",
            "openai:a",
            False,
            "mode_mismatch",
        ),
        # aws-sdk: configured, no stored credential needed
        (
            [],
            cfg_profiles(**{"bedrock:aws": ("amazon-bedrock", "aws-sdk")}),
            "amazon-bedrock",
            "bedrock:aws",
            True,
            "ok",
        ),
        (
            [],
            cfg_profiles(**{"bedrock:aws": ("amazon-bedrock", "aws-sdk")}),
            "openai",
            "bedrock:aws",
            False,
            "profile_missing",
        ),
        ([profile("aws", "aws-sdk", "amazon-bedrock")], None, "amazon-bedrock", "aws", True, "ok"),
        # credentials
        ([profile("openai:a", credential=None)], None, "openai", "openai:a", False, "missing_credential"),
        ([profile("openai:t", "token", credential=None)], None, "openai", "openai:t", False, "missing_credential"),
        ([profile("openai:t", "token", expires=NOW - 1)], None, "openai", "openai:t", False, "expired"),
        ([profile("openai:t", "token", expires=NOW)], None, "openai", "openai:t", False, "expired"),
        ([profile("openai:t", "token", expires="soon")], None, "openai", "openai:t", False, "invalid_expires"),
        ([profile("openai:t", "token", expires=0)], None, "openai", "openai:t", False, "invalid_expires"),
        ([profile("openai:t", "token", expires=NOW + 1)], None, "openai", "openai:t", True, "ok"),
        ([profile("openai:t", "token")], None, "openai", "openai:t", True, "ok"),  # no expiry
        ([profile("openai:o", "oauth", expires=NOW - 1)], None, "openai", "openai:o", True, "ok"),
        ([profile("openai:o", "oauth", credential=None, refresh="r")], None, "openai", "openai:o", True, "ok"),
        ([profile("openai:o", "oauth", credential=None)], None, "openai", "openai:o", False, "missing_credential"),
        # references
        ([profile("openai:e", credential={"env": "KEY_SET"})], None, "openai", "openai:e", True, "ok"),
        ([profile("openai:e", credential={"env": "KEY_UNSET"})], None, "openai", "openai:e", False, "unresolved_ref"),
        ([profile("openai:f", credential={"file": "/nonexistent/key"})], None, "openai", "openai:f", False, "unresolved_ref"),
        ([profile("openai:x", credential={"source": "exec", "id": "vault"})], None, "openai", "openai:x", False, "unresolved_ref"),
        ([profile("openai:t", "token", credential={"env": "KEY_UNSET"}, expires=NOW - 1)], None, "openai", "openai:t", False, "expired"),
    ],
)  # fmt: skip
def test_eligibility_reason_codes(profiles, cfg, provider, profile_id, eligible, code):
    result = resolve_auth_profile_eligibility(
        store=store(*profiles),
        provider=provider,
        profile_id=profile_id,
        now_ms=NOW,
        cfg=cfg,
        env=ENV,
    )
    assert (result.eligible, result.reason_code) == (eligible, code)
    assert result.to_dict() == {"eligible": eligible, "reasonCode": code}


def test_file_reference_is_checked_without_reading(tmp_path):
    key = tmp_path / "key"
    key.write_text("sk-from-file\n")
    state = store(profile("openai:f", credential={"file": str(key)}))
    result = resolve_auth_profile_eligibility(
        store=state, provider="openai", profile_id="openai:f", now_ms=NOW
    )
    assert result.eligible
    assert state.profiles["openai:f"].resolve_secret().get_secret_value() == "sk-from-file"


def test_refs_need_not_be_checked():
    state = store(profile("openai:e", credential={"env": "KEY_UNSET"}))
    result = resolve_auth_profile_eligibility(
        store=state, provider="openai", profile_id="openai:e", now_ms=NOW, env={}, check_refs=False
    )
    assert result.eligible


# --- order: explicit ---------------------------------------------------------------------------


def cooling(until: float, **extra) -> dict:
    return {"cooldownUntil": until, "cooldownReason": "rate_limit", **extra}


def test_explicit_order_is_kept_and_cooling_profiles_move_to_the_end_by_expiry():
    state = store(
        *(profile(f"openai:{n}") for n in "abcde"),
        usage={"openai:a": cooling(NOW + 500), "openai:c": cooling(NOW + 100)},
    )
    cfg = {"auth": {"order": {"openai": ["openai:a", "openai:b", "openai:c", "openai:d"]}}}
    assert order(state, cfg=cfg) == ["openai:b", "openai:d", "openai:c", "openai:a"]


def test_store_order_wins_over_config_order():
    state = store(profile("openai:a"), profile("openai:b"), order={"OpenAI": ["openai:b"]})
    cfg = {"auth": {"order": {"openai": ["openai:a", "openai:b"]}}}
    resolution = resolve_auth_profile_order_with_metadata(
        store=state, provider="openai", now_ms=NOW, cfg=cfg
    )
    assert resolution == AuthProfileOrderResolution(("openai:b",), True)


def test_explicit_order_is_a_hard_constraint_even_against_type_rank_and_lru():
    state = store(
        profile("openai:key"),
        profile("openai:oauth", "oauth", expires=NOW + 1000),
        usage={"openai:key": {"lastUsed": NOW}},
    )
    cfg = {"auth": {"order": {"openai": ["openai:key", "openai:oauth"]}}}
    assert order(state, cfg=cfg) == ["openai:key", "openai:oauth"]


@pytest.mark.parametrize(
    ("preferred", "expected"),
    [
        ("openai:c", ["openai:c", "openai:b", "openai:a"]),  # even while cooling down
        ("openai:b", ["openai:b", "openai:a", "openai:c"]),
        ("openai:zzz", ["openai:b", "openai:a", "openai:c"]),  # not a candidate: ignored
        (None, ["openai:b", "openai:a", "openai:c"]),
    ],
)
def test_preferred_profile_leads_an_explicit_order(preferred, expected):
    state = store(*(profile(f"openai:{n}") for n in "abc"), usage={"openai:c": cooling(NOW + 100)})
    cfg = {"auth": {"order": {"openai": ["openai:b", "openai:a", "openai:c"]}}}
    assert order(state, cfg=cfg, preferred_profile=preferred) == expected


def test_explicit_order_drops_ineligible_and_duplicate_ids():
    state = store(
        profile("openai:a"),
        profile("openai:b", credential={"env": "KEY_UNSET"}),
        profile("anthropic:c"),
    )
    cfg = {"auth": {"order": {"openai": ["openai:a", "openai:b", "anthropic:c", "openai:a"]}}}
    assert order(state, cfg=cfg) == ["openai:a"]


def test_empty_explicit_order_selects_nothing():
    state = store(profile("openai:a"))
    resolution = resolve_auth_profile_order_with_metadata(
        store=state, provider="openai", now_ms=NOW, cfg={"auth": {"order": {"openai": []}}}
    )
    assert resolution == AuthProfileOrderResolution((), True)


def test_drifted_store_order_falls_back_to_store_profiles():
    state = store(
        profile("openai:new-a"),
        profile("openai:new-b", "oauth"),
        order={"openai": ["openai:old"]},
    )
    resolution = resolve_auth_profile_order_with_metadata(
        store=state, provider="openai", now_ms=NOW
    )
    # repaired: ordered like an implicit order (oauth first)
    assert resolution.profile_ids == ("openai:new-b", "openai:new-a")
    assert resolution.has_explicit_order is True


def test_drifted_config_profile_ids_fall_back_to_store_profiles():
    state = store(profile("openai:stored"))
    cfg = {"auth": {"profiles": {"openai:configured": {"provider": "openai", "mode": "api_key"}}}}
    assert order(state, cfg=cfg) == ["openai:stored"]


def test_bare_config_order_of_missing_ids_is_not_repaired():
    state = store(profile("openai:stored"))
    assert order(state, cfg={"auth": {"order": {"openai": ["openai:gone"]}}}) == []


# --- order: implicit ---------------------------------------------------------------------------


def test_implicit_order_by_type_then_live_oauth_then_least_recently_used():
    state = store(
        profile("openai:key-old"),
        profile("openai:key-new"),
        profile("openai:token", "token"),
        profile("openai:oauth-expired", "oauth", expires=NOW - 1),
        profile("openai:oauth-live-recent", "oauth", expires=NOW + 10_000),
        profile("openai:oauth-live-old", "oauth", expires=NOW + 10_000),
        profile("openai:aws", "aws-sdk"),
        usage={
            "openai:key-old": {"lastUsed": 10},
            "openai:key-new": {"lastUsed": 20},
            "openai:oauth-live-recent": {"lastUsed": 500},
            "openai:oauth-live-old": {"lastUsed": 5},
            "openai:oauth-expired": {"lastUsed": 1},
        },
    )
    assert order(state) == [
        "openai:oauth-live-old",
        "openai:oauth-live-recent",
        "openai:oauth-expired",
        "openai:token",
        "openai:key-old",
        "openai:key-new",
        "openai:aws",
    ]


def test_implicit_order_appends_cooling_and_disabled_profiles_by_expiry():
    state = store(
        profile("openai:a", "oauth"),
        profile("openai:b"),
        profile("openai:c"),
        profile("openai:d"),
        usage={
            "openai:a": {"disabledUntil": NOW + 900, "disabledReason": "billing"},
            "openai:b": cooling(NOW + 300),
            "openai:c": {"blockedUntil": NOW + 100},
        },
    )
    assert order(state) == ["openai:d", "openai:c", "openai:b", "openai:a"]


def test_preferred_profile_leads_an_implicit_order():
    state = store(profile("openai:a", "oauth"), profile("openai:b"))
    assert order(state, preferred_profile="openai:b") == ["openai:b", "openai:a"]


def test_expired_windows_are_cleared_before_ordering():
    state = store(
        profile("openai:a"),
        profile("openai:b"),
        usage={"openai:a": cooling(NOW - 1, lastUsed=1), "openai:b": {"lastUsed": 2}},
    )
    assert order(state) == ["openai:a", "openai:b"]


def test_model_scoped_cooldown_only_demotes_for_that_model():
    state = store(
        profile("openai:a"),
        profile("openai:b"),
        usage={"openai:a": cooling(NOW + 100, cooldownModel="gpt-5"), "openai:b": {"lastUsed": 9}},
    )
    assert order(state, for_model="gpt-5") == ["openai:b", "openai:a"]
    assert order(state, for_model="gpt-5-mini") == ["openai:a", "openai:b"]
    assert order(state) == ["openai:b", "openai:a"]  # no model context: profile-wide
    assert order(state, cooldown_scope="all-models") == ["openai:a", "openai:b"]


def test_only_profiles_of_the_provider_are_candidates():
    state = store(profile("openai:a"), profile("anthropic:b"), profile("x", provider=" OPENAI "))
    assert order(state) == ["openai:a", "x"]
    assert order(state, provider="anthropic") == ["anthropic:b"]
    assert order(state, provider="google") == []


def test_openrouter_profiles_never_move_to_the_cooldown_tail():
    state = store(
        profile("openrouter:a"),
        profile("openrouter:b"),
        usage={"openrouter:a": cooling(NOW + 100, lastUsed=1), "openrouter:b": {"lastUsed": 2}},
    )
    assert order(state, provider="openrouter") == ["openrouter:a", "openrouter:b"]


def test_read_only_readiness_keeps_unresolved_refs():
    state = store(profile("openai:e", credential={"env": "KEY_UNSET"}))
    assert order(state) == []
    assert order(state, readiness_mode="read-only") == ["openai:e"]


def test_config_objects_are_accepted():
    state = store(profile("openai:a"), profile("openai:b"))
    settings = AuthSettings(order={"openai": ["openai:b", "openai:a"]})
    assert order(state, cfg=settings) == ["openai:b", "openai:a"]
    assert order(state, cfg=RuntimeConfig(auth=settings)) == ["openai:b", "openai:a"]


def test_configured_profile_list_is_the_base_order():
    a, b = profile("openai:a"), profile("openai:b")
    cfg = AuthSettings(profiles=[b, a])
    # equal rank: the configured sequence stands (the sort is stable) ...
    assert order(store(a, b), cfg=cfg) == ["openai:b", "openai:a"]
    # ... and least recently used still goes first
    used = store(a, b, usage={"openai:b": {"lastUsed": 50}, "openai:a": {"lastUsed": 10}})
    assert order(used, cfg=cfg) == ["openai:a", "openai:b"]


def test_session_pin_leads_without_dropping_candidates():
    resolution = AuthProfileOrderResolution(("a", "b", "c"), False)
    assert prepend_auth_profile_pin(resolution, "c").profile_ids == ("c", "a", "b")
    assert prepend_auth_profile_pin(resolution, "z").profile_ids == ("z", "a", "b", "c")
    assert prepend_auth_profile_pin(resolution, None) is resolution


def test_store_level_cooldown_check():
    state = store(
        profile("openai:a"),
        profile("openrouter:b"),
        usage={"openai:a": cooling(NOW + 5), "openrouter:b": cooling(NOW + 5)},
    )
    assert is_auth_profile_in_cooldown(state, "openai:a", now_ms=NOW)
    assert not is_auth_profile_in_cooldown(state, "openai:a", now_ms=NOW + 5)
    assert not is_auth_profile_in_cooldown(state, "openrouter:b", now_ms=NOW)
    assert not is_auth_profile_in_cooldown(state, "missing", now_ms=NOW)


# --- unavailable reason ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({}, None),
        ({"a": {"cooldownUntil": NOW - 1, "cooldownReason": "auth"}}, None),  # inactive
        ({"a": {"disabledUntil": NOW + 1, "disabledReason": "billing"}}, "billing"),
        ({"a": {"blockedUntil": NOW + 1, "blockedReason": "subscription_limit"}}, "rate_limit"),
        ({"a": {"cooldownUntil": NOW + 1, "cooldownReason": "timeout"}}, "timeout"),
        ({"a": {"cooldownUntil": NOW + 1}}, "unknown"),
        (
            {"a": {"cooldownUntil": NOW + 1, "failureCounts": {"format": 2, "timeout": 3}}},
            "timeout",
        ),
        # disabled (1000) beats a cooldown with many counted failures
        (
            {
                "a": {"disabledUntil": NOW + 1, "disabledReason": "auth_permanent"},
                "b": {"cooldownUntil": NOW + 1, "failureCounts": {"rate_limit": 999}},
            },
            "auth_permanent",
        ),
        # two rate-limited profiles outweigh one billing
        (
            {
                "a": {"disabledUntil": NOW + 1, "disabledReason": "billing"},
                "b": {"cooldownUntil": NOW + 1, "cooldownReason": "rate_limit"},
                "c": {"blockedUntil": NOW + 1},
            },
            "rate_limit",
        ),
        # ties go to the higher-priority reason
        (
            {
                "a": {"cooldownUntil": NOW + 1, "cooldownReason": "rate_limit"},
                "b": {"cooldownUntil": NOW + 1, "cooldownReason": "auth"},
            },
            "auth",
        ),
        (
            {"a": {"cooldownUntil": NOW + 1, "failureCounts": {"unknown": 1, "billing": 1}}},
            "billing",
        ),
        # an unknown disabled reason falls through to the cooldown
        (
            {"a": {"disabledUntil": NOW + 1, "disabledReason": "weird", "cooldownUntil": NOW + 1}},
            "unknown",
        ),
        # WHAM: the canonical cooldown reason is reported
        (
            {
                "a": {
                    "cooldownUntil": NOW + 1,
                    "cooldownReason": "auth_permanent",
                    "cooldownClassification": "wham_account_dead",
                }
            },
            "auth_permanent",
        ),
    ],
)
def test_profiles_unavailable_reason(usage, expected):
    state = AuthProfileStoreState.of(usage_stats=usage)
    assert (
        resolve_profiles_unavailable_reason(
            store=state, profile_ids=[*usage, "no-stats"], now_ms=NOW
        )
        == expected
    )
