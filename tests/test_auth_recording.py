"""What reaches the shared auth-profile ledger (spec §3.3)."""

from __future__ import annotations

import pytest

from openclaw_runtime.auth import (
    AuthProfile,
    InMemoryAuthProfileStore,
    mark_auth_profile_failure,
    resolve_auth_profile_failure_reason,
)
from openclaw_runtime.auth.recording import (
    should_probe_wham_for_failure,
    should_record_auth_profile_failure,
)
from openclaw_runtime.failover import FAILOVER_REASONS, FailoverReason

NOW = 1_700_000_000_000

NEVER_RECORDED = {
    "overloaded",
    "server_error",
    "tls_certificate",
    "empty_response",
    "context_overflow",
    "format",
}


@pytest.mark.parametrize("reason", [str(r) for r in FAILOVER_REASONS])
@pytest.mark.parametrize("policy", [None, "shared", "local", "local_transient"])
@pytest.mark.parametrize("provider_started", [False, True])
def test_every_reason_under_every_policy(reason, policy, provider_started):
    got = resolve_auth_profile_failure_reason(
        reason, provider_started=provider_started, policy=policy
    )
    stays_local = (
        policy == "local"
        or reason in NEVER_RECORDED
        or (reason == "timeout" and not provider_started)
    )
    expected = None if stays_local else reason
    assert got == expected


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"failover_reason": None}, None),
        ({"failover_reason": ""}, None),
        ({"failover_reason": "rate_limit", "policy": "local_transient"}, "rate_limit"),
        (
            {
                "failover_reason": "rate_limit",
                "policy": "local_transient",
                "transient_rate_limit": True,
            },
            None,
        ),
        # only local_transient drops a transient rate limit
        (
            {"failover_reason": "rate_limit", "policy": "shared", "transient_rate_limit": True},
            "rate_limit",
        ),
        ({"failover_reason": "timeout", "provider_started": True}, "timeout"),
        ({"failover_reason": "timeout"}, None),
        ({"failover_reason": FailoverReason.BILLING}, "billing"),  # enum members work
        ({"failover_reason": "no_error_details"}, "no_error_details"),  # decided later
        ({"failover_reason": "session_expired"}, "session_expired"),
    ],
)
def test_failure_reason_rows(kwargs, expected):
    assert resolve_auth_profile_failure_reason(**kwargs) == expected


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"failoverReason": "timeout", "providerStarted": True}, "timeout"),
        ({"failoverReason": "timeout", "providerStarted": False}, None),
        (
            {
                "failoverReason": "rate_limit",
                "transientRateLimit": True,
                "policy": "local_transient",
            },
            None,
        ),
        ({"failover_reason": "auth", "policy": "local"}, None),
        ({"failover_reason": "auth"}, "auth"),
    ],
)
def test_openclaw_camel_case_params(params, expected):
    assert resolve_auth_profile_failure_reason(params) == expected


def test_unknown_policy_is_named():
    with pytest.raises(ValueError, match="'global'"):
        resolve_auth_profile_failure_reason("auth", policy="global")  # type: ignore[arg-type]


def oauth(provider: str = "openai", **overrides) -> AuthProfile:
    fields = {
        "id": f"{provider}:default",
        "provider": provider,
        "mode": "oauth",
        "credential": "codex-access-token",
        "expires": NOW + 3_600_000,
        "account_id": "acct_test_123",
    }
    fields.update(overrides)
    return AuthProfile(**fields)


def api_key(provider: str) -> AuthProfile:
    return AuthProfile(id=f"{provider}:key", provider=provider, mode="api_key", credential="k")


@pytest.mark.parametrize(
    ("profile", "reason", "expected"),
    [
        (oauth(), "rate_limit", True),
        (oauth(), "no_error_details", True),
        (oauth(), "empty_response", True),
        (oauth(), "unclassified", True),
        (oauth(), "unknown", True),
        (oauth(), "auth", False),
        (oauth(), "timeout", False),
        (oauth(provider=" OpenAI "), "rate_limit", True),
        (oauth(provider="anthropic"), "rate_limit", False),
        (oauth(expires=NOW - 1), "rate_limit", False),  # locally expired token: no probe
        (oauth(expires=None), "rate_limit", False),
        (oauth(credential=None, refresh="r"), "rate_limit", False),  # no access token
        (oauth(auth_flow="chatgpt-token-sharing"), "rate_limit", False),
        (oauth(auth_flow="chatgpt-identity"), "rate_limit", False),
        (api_key("openai"), "rate_limit", False),
        (None, "rate_limit", False),
    ],
)
def test_should_probe_wham(profile, reason, expected):
    assert should_probe_wham_for_failure(profile, reason, NOW) is expected


@pytest.mark.parametrize(
    ("profile", "reason", "wham", "expected"),
    [
        (api_key("openrouter"), "auth", False, False),
        (api_key("OpenRouter"), "billing", False, False),
        (api_key("kilocode"), "rate_limit", False, False),
        (api_key("anthropic"), "rate_limit", False, True),
        (api_key("azure-foundry"), "no_error_details", False, False),
        (api_key("openai"), "no_error_details", True, False),  # API keys cannot be probed
        (oauth(), "no_error_details", False, False),  # probing disabled
        (oauth(), "no_error_details", True, True),
        (oauth(expires=NOW - 1), "no_error_details", True, False),
        (None, "auth", True, False),
    ],
)
def test_should_record(profile, reason, wham, expected):
    assert (
        should_record_auth_profile_failure(profile, reason, NOW, wham_probe_enabled=wham)
        is expected
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("profile", "reason"),
    [
        (api_key("openrouter"), "rate_limit"),
        (api_key("kilocode"), "billing"),
        (api_key("azure-foundry"), "no_error_details"),
        (api_key("openai"), "no_error_details"),
        (oauth(), "no_error_details"),  # without a WHAM probe there is no evidence
    ],
)
async def test_mark_failure_skips_what_must_not_be_recorded(profile, reason):
    store = InMemoryAuthProfileStore(profiles=[profile])
    assert await mark_auth_profile_failure(store, profile.id, reason, now_ms=NOW) is None
    assert dict((await store.load()).usage_stats) == {}


@pytest.mark.anyio
async def test_mark_failure_records_a_credential_failure():
    store = InMemoryAuthProfileStore(profiles=[api_key("anthropic")])
    entry = await mark_auth_profile_failure(store, "anthropic:key", "auth", now_ms=NOW)
    assert entry is not None and entry.cooldown_until == NOW + 30_000
    assert (await store.load()).stats_for("anthropic:key") == entry


@pytest.mark.anyio
async def test_mark_failure_rejects_a_reason_that_is_not_a_ledger_reason():
    store = InMemoryAuthProfileStore(profiles=[api_key("anthropic")])
    with pytest.raises(ValueError, match="context_overflow"):
        await mark_auth_profile_failure(store, "anthropic:key", "context_overflow", now_ms=NOW)
