"""OpenAI OAuth WHAM probe (spec §3.4), against a real local HTTP server."""

from __future__ import annotations

import logging

import pytest

from openclaw_runtime.auth import (
    AuthProfile,
    AuthProfileStoreState,
    InMemoryAuthProfileStore,
    mark_auth_profile_failure,
    resolve_profiles_unavailable_reason,
)
from openclaw_runtime.auth.wham import WhamProbe, interpret_wham_usage
from openclaw_runtime.testing import ScriptedReply

pytestmark = pytest.mark.anyio

NOW = 1_700_000_000_000
TOKEN = "codex-access-token-SECRET"
HOUR = 3_600_000


def codex(**overrides) -> AuthProfile:
    fields = {
        "id": "openai:default",
        "provider": "openai",
        "mode": "oauth",
        "credential": TOKEN,
        "refresh": "refresh-token",
        "expires": NOW + HOUR,
        "account_id": "acct_test_123",
    }
    fields.update(overrides)
    return AuthProfile(**fields)


def probe_for(server) -> WhamProbe:
    return WhamProbe(url=server.base_url + "/backend-api/wham/usage", version="1.2.3")


async def fail(server, *, reason="rate_limit", usage=None, model=None, profile=None):
    store = InMemoryAuthProfileStore(
        AuthProfileStoreState.of([profile or codex()], usage_stats=usage or {})
    )
    entry = await mark_auth_profile_failure(
        store, "openai:default", reason, model_id=model, now_ms=NOW, wham_probe=probe_for(server)
    )
    return store, entry


@pytest.mark.parametrize(
    ("body", "cooldown_ms", "blocked_ms"),
    [
        (
            {"rate_limit": {"limit_reached": False, "primary_window": {"used_percent": 45}}},
            15_000,
            None,
        ),
        (
            {
                "rate_limit": {
                    "limit_reached": True,
                    "primary_window": {"used_percent": 100, "reset_after_seconds": 7_200},
                }
            },
            None,
            7_200_000,
        ),
        (
            {
                "rate_limit": {
                    "limit_reached": True,
                    "primary_window": {"used_percent": 100, "reset_after_seconds": 7_200},
                    "secondary_window": {"used_percent": 85, "reset_after_seconds": 201_600},
                }
            },
            None,
            7_200_000,
        ),
        (
            {
                "rate_limit": {
                    "limit_reached": True,
                    "primary_window": {"used_percent": 90, "reset_after_seconds": 7_200},
                    "secondary_window": {"used_percent": 100, "reset_after_seconds": 28_800},
                }
            },
            None,
            28_800_000,
        ),
    ],
    ids=["burst", "personal-rolling", "team-rolling", "team-weekly"],
)
async def test_wham_answers_map_to_cooldowns_and_blocks(
    local_http_server, body, cooldown_ms, blocked_ms
):
    local_http_server.enqueue(ScriptedReply.json(200, body))
    _, entry = await fail(local_http_server)

    [request] = local_http_server.requests
    assert request.method == "GET" and request.path == "/backend-api/wham/usage"
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["chatgpt-account-id"] == "acct_test_123"
    assert headers["originator"] == "openclaw"
    assert headers["user-agent"] == "openclaw/1.2.3"
    assert entry.last_probe_at == NOW
    if blocked_ms is None:
        assert entry.cooldown_until == NOW + cooldown_ms
    else:
        assert entry.blocked_until == NOW + blocked_ms
        assert entry.blocked_reason == "subscription_limit" and entry.blocked_source == "wham"
        assert entry.cooldown_until is None


@pytest.mark.parametrize(
    ("status", "ms", "reason", "classification"),
    [
        (401, 12 * HOUR, "auth", "wham_token_expired"),
        (403, 24 * HOUR, "auth_permanent", "wham_account_dead"),
    ],
)
async def test_auth_statuses_become_profile_wide_auth_cooldowns(
    local_http_server, caplog, status, ms, reason, classification
):
    local_http_server.enqueue(ScriptedReply.json(status, {}))
    with caplog.at_level(logging.DEBUG):
        store, entry = await fail(local_http_server, model="gpt-5.6-luna")
    assert entry.cooldown_until == NOW + ms
    assert entry.cooldown_reason == reason
    assert entry.cooldown_classification == classification
    assert entry.cooldown_model is None
    state = await store.load()
    assert (
        resolve_profiles_unavailable_reason(store=state, profile_ids=["openai:default"], now_ms=NOW)
        == reason
    )
    assert "classified auth profile" in caplog.text
    assert TOKEN not in caplog.text


@pytest.mark.parametrize(
    ("reply", "reason", "expected_ms", "expected_reason"),
    [
        (ScriptedReply.json(500, {}), "rate_limit", 30_000, "rate_limit"),  # keeps local backoff
        (ScriptedReply.json(500, {}), "unknown", 5 * 60_000, "unknown"),  # HTTP error: 5 min
        (ScriptedReply.json(200, {"no": "rate_limit"}), "unknown", 30_000, "unknown"),
        (ScriptedReply.text(200, "not json"), "unknown", 30_000, "unknown"),
        (
            ScriptedReply.json(
                200,
                {"rate_limit": {"limit_reached": True, "primary_window": {"used_percent": 100}}},
            ),
            "rate_limit",
            30_000,
            "rate_limit",
        ),  # no reset reported: local exponential backoff
        (
            ScriptedReply.json(
                200,
                {
                    "rate_limit": {
                        "limit_reached": True,
                        "primary_window": {
                            "used_percent": 100,
                            "reset_after_seconds": 2**53 - 1,
                        },
                    }
                },
            ),
            "rate_limit",
            30_000,
            "rate_limit",
        ),  # unsafe reset value ignored
        (
            ScriptedReply.json(
                200,
                {
                    "rate_limit": {
                        "limit_reached": True,
                        "primary_window": {"used_percent": 100, "reset_at": 2**53 - 1},
                    }
                },
            ),
            "rate_limit",
            30_000,
            "rate_limit",
        ),
    ],
)
async def test_failed_or_unusable_probes_fall_back(
    local_http_server, reply, reason, expected_ms, expected_reason
):
    local_http_server.enqueue(reply)
    _, entry = await fail(local_http_server, reason=reason)
    assert entry.blocked_until is None
    assert entry.cooldown_until == NOW + expected_ms
    assert entry.cooldown_reason == expected_reason


async def test_unreachable_wham_falls_back_to_30s():
    store = InMemoryAuthProfileStore(profiles=[codex()])
    entry = await mark_auth_profile_failure(
        store,
        "openai:default",
        "unknown",
        now_ms=NOW,
        wham_probe=WhamProbe(url="http://127.0.0.1:9/backend-api/wham/usage"),
    )
    assert entry.cooldown_until == NOW + 30_000


async def test_a_longer_existing_cooldown_is_kept(local_http_server):
    local_http_server.enqueue(ScriptedReply.json(200, {"rate_limit": {"limit_reached": False}}))
    usage = {
        "openai:default": {
            "cooldownUntil": NOW + 6 * HOUR,
            "cooldownReason": "rate_limit",
            "errorCount": 2,
            "lastFailureAt": NOW - 1000,
        }
    }
    _, entry = await fail(local_http_server, usage=usage)
    assert entry.cooldown_until == NOW + 6 * HOUR


async def test_no_error_details_is_recorded_only_with_the_probe(local_http_server):
    local_http_server.enqueue(ScriptedReply.json(200, {"rate_limit": {"limit_reached": False}}))
    _, entry = await fail(local_http_server, reason="no_error_details")
    assert entry.cooldown_until == NOW + 15_000
    assert entry.failure_count("no_error_details") == 1


async def test_locally_expired_tokens_are_not_probed(local_http_server):
    _, entry = await fail(local_http_server, profile=codex(expires=NOW - 1))
    assert local_http_server.requests == []
    assert entry.cooldown_until == NOW + 30_000 and entry.cooldown_reason == "rate_limit"


async def test_non_openai_profiles_are_not_probed(local_http_server):
    _, entry = await fail(local_http_server, profile=codex(provider="anthropic"))
    assert local_http_server.requests == []
    assert entry.cooldown_until == NOW + 30_000


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "wham_probe_failed"),
        ({"rate_limit": None}, "wham_probe_failed"),
        ({"rate_limit": {"limit_reached": False}}, "wham_burst_contention"),
        ({"rate_limit": {"primary_window": {"reset_after_seconds": 60}}}, "wham_personal_rolling"),
        ({"rate_limit": {"primary_window": {"reset_after_seconds": 1.5}}}, "wham_probe_failed"),
        (
            {
                "rate_limit": {
                    "primary_window": {"used_percent": 50},
                    "secondary_window": {"used_percent": 50},
                }
            },
            "wham_probe_failed",
        ),
    ],
)
def test_interpret_wham_usage(data, reason):
    assert interpret_wham_usage(data, NOW).reason == reason


def test_reset_at_is_relative_to_now():
    data = {"rate_limit": {"primary_window": {"reset_at": (NOW + 60_000) // 1000}}}
    assert interpret_wham_usage(data, NOW).blocked_until == NOW + 60_000
