"""Lane names, lane timeouts and queue priority (spec §11.3, seed 000 §4.2)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from openclaw_runtime.runner.lane_policy import (
    DEFAULT_AGENT_TIMEOUT_MS,
    EMBEDDED_RUN_LANE_HEARTBEAT_MS,
    EMBEDDED_RUN_LANE_TIMEOUT_GRACE_MS,
    MAX_TIMER_TIMEOUT_MS,
    add_timer_timeout_grace_ms,
    is_main_session_restart_recovery_input_provenance,
    resolve_embedded_run_global_lane,
    resolve_embedded_run_lane_timeout_ms,
    resolve_embedded_run_session_lane_policy,
    resolve_embedded_run_session_queue_priority,
    resolve_embedded_session_lane,
    resolve_global_lane,
    resolve_session_lane,
)

DEFAULT_LANE_TIMEOUT = DEFAULT_AGENT_TIMEOUT_MS + EMBEDDED_RUN_LANE_TIMEOUT_GRACE_MS


def test_constants():
    assert EMBEDDED_RUN_LANE_TIMEOUT_GRACE_MS == 30_000
    assert EMBEDDED_RUN_LANE_HEARTBEAT_MS == 15_000
    assert DEFAULT_AGENT_TIMEOUT_MS == 172_800_000
    assert MAX_TIMER_TIMEOUT_MS == 2_147_000_000


@pytest.mark.parametrize(
    ("key", "lane"),
    [
        ("abc123", "session:abc123"),
        ("session:abc123", "session:abc123"),  # idempotent
        ("", "session:main"),
        ("   ", "session:main"),
        ("  abc  ", "session:abc"),
        ("agent:main:main", "session:agent:main:main"),
    ],
)
def test_session_lane(key, lane):
    assert resolve_session_lane(key) == lane
    assert resolve_embedded_session_lane(key) == lane


def test_session_lane_rejects_non_strings():
    with pytest.raises(TypeError, match="session key"):
        resolve_session_lane(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("lane", "resolved"),
    [
        (None, "main"),
        ("", "main"),
        ("  ", "main"),
        ("cron", "cron-nested"),  # the cron job holds the cron slot: avoid the deadlock
        (" cron ", "cron-nested"),
        ("subagent", "subagent"),
        ("custom", "custom"),
        ("nested", "nested"),
    ],
)
def test_global_lane(lane, resolved):
    assert resolve_global_lane(lane) == resolved


@pytest.mark.parametrize(("heartbeat", "lane"), [(True, "cron-nested"), (False, "main")])
def test_embedded_run_global_lane(heartbeat, lane):
    assert resolve_embedded_run_global_lane(is_heartbeat=heartbeat) == lane


@pytest.mark.parametrize(
    ("timeout", "lane_timeout"),
    [
        (60_000, 90_000),
        (60_000.9, 90_000),  # floored
        (1, 30_001),
        (DEFAULT_AGENT_TIMEOUT_MS + 60_000, DEFAULT_AGENT_TIMEOUT_MS + 90_000),
        (MAX_TIMER_TIMEOUT_MS - 1, MAX_TIMER_TIMEOUT_MS),  # grace clamped to the timer bound
        (MAX_TIMER_TIMEOUT_MS - 30_000, MAX_TIMER_TIMEOUT_MS),
        (0, DEFAULT_LANE_TIMEOUT),  # unusable input
        (-1, DEFAULT_LANE_TIMEOUT),
        (math.nan, DEFAULT_LANE_TIMEOUT),
        (math.inf, DEFAULT_LANE_TIMEOUT),
        (None, DEFAULT_LANE_TIMEOUT),
        (MAX_TIMER_TIMEOUT_MS, DEFAULT_LANE_TIMEOUT),  # "no timeout" keeps the 48 h backstop
        (MAX_TIMER_TIMEOUT_MS * 2, DEFAULT_LANE_TIMEOUT),
    ],
)
def test_lane_timeout(timeout, lane_timeout):
    assert resolve_embedded_run_lane_timeout_ms(timeout) == lane_timeout


@pytest.mark.parametrize(
    ("timeout", "grace", "result"),
    [
        (1_000, 5_000, 6_000),
        (1_000.7, 0, 1_000),
        (0, 0, 1),  # at least 1
        (MAX_TIMER_TIMEOUT_MS, 5_000, MAX_TIMER_TIMEOUT_MS),
        (math.nan, 5_000, None),
        (1_000, math.inf, None),
    ],
)
def test_add_timer_timeout_grace(timeout, grace, result):
    assert add_timer_timeout_grace_ms(timeout, grace) == result


RESTART = {"kind": "internal_system", "sourceTool": "main_session_restart_recovery"}
INTER = {"kind": "inter_session", "sourceTool": "sessions_send"}


@pytest.mark.parametrize(
    ("trigger", "provenance", "priority", "resumable"),
    [
        ("user", None, "foreground", True),
        ("manual", None, "foreground", True),
        ("cron", None, "background", False),
        ("heartbeat", None, "background", False),
        ("memory", None, "background", False),
        ("overflow", None, "background", False),
        (None, None, "normal", False),
        ("webhook", None, "normal", False),
        ("event", None, "normal", False),
        ("user", RESTART, "background", False),  # restart recovery yields and cannot resume
        ("user", INTER, "background", True),  # inter-session yields to humans but resumes
        ("cron", INTER, "background", False),
        (
            "user",
            {"kind": "internal_system", "sourceTool": "Main_Session_Restart_Recovery"},
            "background",
            False,
        ),
        ("user", {"kind": "internal_system", "sourceTool": "other"}, "foreground", True),
        ("user", {"kind": "external_user"}, "foreground", True),
        ("user", SimpleNamespace(kind="inter_session", source_tool=None), "background", True),
    ],
)
def test_session_lane_policy(trigger, provenance, priority, resumable):
    policy = resolve_embedded_run_session_lane_policy(trigger, provenance)
    assert policy.priority == priority
    assert policy.can_resume_across_rotation is resumable
    assert resolve_embedded_run_session_queue_priority(trigger, provenance) == priority


def test_restart_recovery_provenance():
    assert is_main_session_restart_recovery_input_provenance(RESTART)
    assert not is_main_session_restart_recovery_input_provenance(INTER)
    assert not is_main_session_restart_recovery_input_provenance(None)
    assert not is_main_session_restart_recovery_input_provenance(
        {"kind": "inter_session", "sourceTool": "main_session_restart_recovery"}
    )


def test_bad_trigger_is_named():
    with pytest.raises(TypeError, match="trigger"):
        resolve_embedded_run_session_lane_policy(3)  # type: ignore[arg-type]
