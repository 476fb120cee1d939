"""Retry budgets and the retry-limit exit (spec §11.2, seed 001)."""

from __future__ import annotations

import pytest

from openclaw_runtime.runner import retry_limit as rl
from openclaw_runtime.runner.retry_limit import (
    RetryLimitResult,
    RunRetriesConfig,
    build_retry_limit_result,
    format_retry_limit_message,
    resolve_max_run_retry_iterations,
    resolve_next_same_model_rate_limit_retry_count,
    resolve_planning_only_retry_limit,
    resolve_same_model_rate_limit_retry_delay_ms,
)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_TIMEOUT_COMPACTION_ATTEMPTS", 2),
        ("MAX_OVERFLOW_COMPACTION_ATTEMPTS", 3),
        ("MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES", 1),
        ("MAX_SAME_MODEL_RATE_LIMIT_RETRIES", 3),
        ("MAX_EMPTY_ERROR_RETRIES", 3),
        ("MAX_MISSING_ASSISTANT_RETRIES", 1),
        ("DEFAULT_REASONING_ONLY_RETRY_LIMIT", 2),
        ("DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT", 1),
        ("DEFAULT_PLANNING_ONLY_RETRY_LIMIT", 1),
        ("COMPACTION_CONTINUATION_RETRY_LIMIT", 1),
        ("MAX_BEFORE_AGENT_FINALIZE_REVISIONS", 3),
        ("BASE_RUN_RETRY_ITERATIONS", 24),
        ("RUN_RETRY_ITERATIONS_PER_PROFILE", 8),
        ("MIN_RUN_RETRY_ITERATIONS", 32),
        ("MAX_RUN_RETRY_ITERATIONS", 160),
    ],
)
def test_constants(name, value):
    assert getattr(rl, name) == value


@pytest.mark.parametrize(
    ("profiles", "expected"),
    [
        (0, 32),  # max(1, 0) * 8 + 24 = 32
        (1, 32),
        (2, 40),
        (3, 48),
        (10, 104),
        (17, 160),  # 24 + 136
        (18, 160),  # clamped
        (1000, 160),
        (-5, 32),  # negative counts as one
    ],
)
def test_default_budget(profiles, expected):
    assert resolve_max_run_retry_iterations(profiles) == expected


@pytest.mark.parametrize(
    ("config", "profiles", "expected"),
    [
        ({"base": 10, "perProfile": 2, "min": 1, "max": 100}, 3, 16),
        ({"base": 0, "perProfile": 0, "min": 1, "max": 100}, 3, 1),  # base at least 1
        ({"base": 50, "perProfile": -4, "min": 1, "max": 100}, 3, 50),  # perProfile >= 0
        ({"min": 5, "max": 2}, 1, 5),  # max at least min
        ({"min": 0, "base": 1, "perProfile": 0}, 1, 1),  # min at least 1
        ({"max": 40}, 10, 40),
        ({"per_profile": 1, "base": 100, "max": 500}, 3, 103),  # snake_case accepted
        ({"agents": {"defaults": {"runRetries": {"base": 100}}}}, 1, 108),  # whole config
        ({"agents": {"defaults": {}}}, 1, 32),
        ({"base": None}, 2, 40),
        (RunRetriesConfig(base=1, per_profile=1, min=1, max=3), 9, 3),
    ],
)
def test_configured_budget(config, profiles, expected):
    assert resolve_max_run_retry_iterations(profiles, config) == expected


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"base": "10"}, "runRetries.base"),
        ({"perProfile": 1.5}, "runRetries.perProfile"),
        ({"maximum": 3}, "unknown runRetries key 'maximum'"),
        ({"agents": {"defaults": {"runRetries": 5}}}, "runRetries must be a mapping"),
    ],
)
def test_bad_config_is_named(config, match):
    with pytest.raises((ValueError, TypeError), match=match):
        resolve_max_run_retry_iterations(1, config)


def test_bad_profile_count_is_named():
    with pytest.raises(TypeError, match="profile_candidate_count"):
        resolve_max_run_retry_iterations("3")  # type: ignore[arg-type]


@pytest.mark.parametrize(("contract", "limit"), [(None, 1), ("default", 1), ("strict-agentic", 2)])
def test_planning_only_limit(contract, limit):
    assert resolve_planning_only_retry_limit(contract) == limit


@pytest.mark.parametrize(
    ("retries", "retry_after", "delay"),
    [
        (0, None, 10_000),
        (1, None, 20_000),
        (2, None, 30_000),
        (9, None, 60_000),  # capped
        (-3, None, 10_000),
        (0, 25, 25_000),  # Retry-After wins when longer
        (0, 0.2, 10_000),
        (0, 600, 60_000),  # Retry-After capped
        (0, float("nan"), 10_000),
    ],
)
def test_same_model_rate_limit_delay(retries, retry_after, delay):
    assert resolve_same_model_rate_limit_retry_delay_ms(retries, retry_after) == delay


@pytest.mark.parametrize(("retries", "retried", "nxt"), [(0, True, 1), (2, True, 3), (2, False, 0)])
def test_same_model_rate_limit_count(retries, retried, nxt):
    assert (
        resolve_next_same_model_rate_limit_retry_count(
            retries, retried_same_model_rate_limit=retried
        )
        == nxt
    )


def test_retry_limit_message():
    assert format_retry_limit_message(32, 32) == "Exceeded retry limit after 32 attempts (max=32)."


def test_retry_limit_payload_is_visible_blocked_and_keeps_replay_invalid():
    result = build_retry_limit_result(
        format_retry_limit_message(32, 32),
        duration_ms=1,
        agent_meta={"sessionId": "session-1", "provider": "anthropic", "model": "m"},
        replay_invalid=True,
        liveness_state="blocked",
    )
    assert isinstance(result, RetryLimitResult)
    (payload,) = result.payloads
    assert payload.is_error is True
    assert "repeated internal retries" in (payload.text or "")
    assert payload.has_content()
    data = result.to_dict()
    assert data["payloads"] == [
        {
            "text": "Request failed after repeated internal retries. "
            "Please try again, or use /new to start a fresh session.",
            "isError": True,
        }
    ]
    assert data["meta"] == {
        "durationMs": 1,
        "agentMeta": {"sessionId": "session-1", "provider": "anthropic", "model": "m"},
        "replayInvalid": True,
        "livenessState": "blocked",
        "error": {
            "kind": "retry_limit",
            "message": "Exceeded retry limit after 32 attempts (max=32).",
        },
    }


def test_retry_limit_meta_omits_unset_flags():
    meta = build_retry_limit_result("boom", duration_ms=5).to_dict()["meta"]
    assert "replayInvalid" not in meta
    assert "livenessState" not in meta
    assert meta["error"] == {"kind": "retry_limit", "message": "boom"}
