"""Terminal outcomes and their stickiness (spec §11.5, seed 000 §4.4)."""

from __future__ import annotations

import itertools

import pytest

from openclaw_runtime.runner.attempt_terminal import (
    ATTEMPT_ABORT_SOURCE_RANK,
    ATTEMPT_TERMINAL_KIND_RANK,
    ATTEMPT_TIMEOUT_PHASE_RANK,
    ATTEMPT_TIMEOUT_SOURCE_RANK,
    AgentRunAttemptFailure,
    AgentRunAttemptTerminal,
    build_agent_run_terminal_outcome_from_attempt,
    merge_agent_run_attempt_terminal,
    normalize_agent_run_attempt_terminal,
    project_agent_run_attempt_terminal,
    set_agent_run_attempt_terminal_failure,
)
from openclaw_runtime.runner.outcome import (
    AGENT_RUN_TERMINAL_RETRY_GRACE_MS,
    LIVENESS_STATES,
    AgentRunTerminalOutcome,
    build_agent_run_terminal_outcome,
    build_agent_run_terminal_outcome_from_lifecycle_event,
    build_agent_run_terminal_outcome_from_wait_result,
    classify_agent_run_terminal_outcome,
    is_definitive_run_lifecycle,
    is_sticky_agent_run_terminal_outcome,
    merge_agent_run_terminal_outcome,
    merge_run_cleanup_outcome,
    resolve_replay_invalid_flag,
    resolve_run_liveness_state,
)

build = build_agent_run_terminal_outcome
merge = merge_agent_run_terminal_outcome


def test_constants_and_rank_tables():
    assert AGENT_RUN_TERMINAL_RETRY_GRACE_MS == 15_000
    assert LIVENESS_STATES == ("working", "blocked", "paused", "abandoned")
    assert sorted(ATTEMPT_TERMINAL_KIND_RANK, key=ATTEMPT_TERMINAL_KIND_RANK.get) == [
        "ok",
        "failed",
        "aborted",
        "timeout",
    ]
    assert sorted(ATTEMPT_TIMEOUT_PHASE_RANK, key=ATTEMPT_TIMEOUT_PHASE_RANK.get) == [
        "prompt",
        "tool_execution",
        "compaction",
    ]
    assert sorted(ATTEMPT_TIMEOUT_SOURCE_RANK, key=ATTEMPT_TIMEOUT_SOURCE_RANK.get) == [
        "observation",
        "runtime",
        "idle",
        "run_budget",
        "external",
    ]
    assert sorted(ATTEMPT_ABORT_SOURCE_RANK, key=ATTEMPT_ABORT_SOURCE_RANK.get) == [
        "yield_cleanup",
        "runtime",
        "external",
    ]


@pytest.mark.parametrize(
    ("reason", "classification"),
    [
        ("completed", "success"),
        ("hard_timeout", "timeout"),
        ("timed_out", "timeout"),
        ("superseded", "cancellation"),
        ("cancelled", "cancellation"),
        ("aborted", "cancellation"),
        ("blocked", "failure"),
        ("abandoned", "failure"),
        ("failed", "failure"),
    ],
)
def test_classification(reason, classification):
    assert classify_agent_run_terminal_outcome(reason) == classification


def test_unknown_reason_is_named():
    with pytest.raises(ValueError, match="'weird'"):
        classify_agent_run_terminal_outcome("weird")


@pytest.mark.parametrize(
    ("kwargs", "reason", "status"),
    [
        ({"status": "timeout", "timeout_phase": "preflight"}, "hard_timeout", "timeout"),
        ({"status": "timeout", "timeout_phase": "provider"}, "hard_timeout", "timeout"),
        ({"status": "timeout", "timeout_phase": "post_turn"}, "hard_timeout", "timeout"),
        ({"status": "timeout", "timeout_phase": "queue"}, "timed_out", "timeout"),
        ({"status": "timeout", "timeout_phase": "gateway_draining"}, "timed_out", "timeout"),
        ({"status": "timeout"}, "timed_out", "timeout"),
        ({"status": "timeout", "provider_started": True}, "hard_timeout", "timeout"),
        ({"status": "timeout", "timeout_phase": " provider "}, "hard_timeout", "timeout"),
        ({"status": "timeout", "timeout_phase": "bogus"}, "timed_out", "timeout"),
        # provider reach alone is not a timeout
        ({"status": "ok", "provider_started": True}, "completed", "ok"),
        ({"status": "error", "provider_started": True}, "failed", "error"),
        # attribution outranks everything, even an ok end event and blocked liveness
        ({"status": "ok", "timeout_phase": "provider"}, "hard_timeout", "timeout"),
        (
            {"status": "error", "liveness_state": "blocked", "timeout_phase": "provider"},
            "hard_timeout",
            "timeout",
        ),
        # cancellation
        (
            {"status": "timeout", "stop_reason": "rpc", "timeout_phase": "queue"},
            "cancelled",
            "error",
        ),
        ({"status": "timeout", "stop_reason": "stop"}, "cancelled", "error"),
        ({"status": "error", "stop_reason": "rpc"}, "cancelled", "error"),
        ({"status": "ok", "stop_reason": "stop"}, "completed", "ok"),  # a normal finish
        (
            {"status": "timeout", "stop_reason": "restart", "provider_started": True},
            "cancelled",
            "error",
        ),
        (
            {"status": "timeout", "stop_reason": "restart", "timeout_phase": "provider"},
            "hard_timeout",
            "timeout",
        ),
        ({"status": "error", "stop_reason": "superseded"}, "superseded", "error"),
        ({"status": "error", "stop_reason": "aborted"}, "aborted", "error"),
        ({"status": "error", "liveness_state": "blocked"}, "blocked", "error"),
        ({"status": "error", "liveness_state": "BLOCKED"}, "blocked", "error"),
        ({"status": "ok", "liveness_state": "abandoned"}, "abandoned", "error"),
        (
            {"status": "error", "stop_reason": "stop", "liveness_state": "abandoned"},
            "cancelled",
            "error",
        ),
        ({"status": "error"}, "failed", "error"),
        ({"status": "ok"}, "completed", "ok"),
    ],
)
def test_build_reason_and_status(kwargs, reason, status):
    outcome = build(**kwargs)
    assert (outcome.reason, outcome.status) == (reason, status)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"status": "error", "stop_reason": "aborted"}, "agent run aborted"),
        (
            {"status": "error", "liveness_state": "blocked"},
            "Agent run blocked before producing a usable result.",
        ),
        (
            {"status": "ok", "liveness_state": "abandoned"},
            "Agent run ended before producing a complete result.",
        ),
        ({"status": "error", "liveness_state": "blocked", "error": "  quota  "}, "quota"),
        ({"status": "timeout", "timeout_phase": "provider", "error": "timed out"}, "timed out"),
        ({"status": "error", "error": "   "}, None),
        ({"status": "error", "stop_reason": "rpc"}, None),
    ],
)
def test_build_error_text(kwargs, error):
    assert build(**kwargs).error == error


def test_to_dict_and_timestamps():
    outcome = build(
        "ok", stop_reason="stop", provider_started=True, started_at=10, ended_at=float("nan")
    )
    assert outcome.to_dict() == {
        "reason": "completed",
        "status": "ok",
        "stopReason": "stop",
        "providerStarted": True,
        "startedAt": 10,
    }


def test_bad_status_is_named():
    with pytest.raises(ValueError, match="'pending'"):
        build("pending")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("wait", "reason"),
    [
        (None, None),
        ({"status": "pending"}, None),
        ({}, None),
        ({"status": "ok"}, "completed"),
        ({"status": "error", "stopReason": "auth-revoked"}, "aborted"),
        (
            {"status": "error", "stopReason": "auth-revoked", "livenessState": "abandoned"},
            "aborted",
        ),
        ({"status": "error", "stopReason": "auth-revoked", "livenessState": "blocked"}, "blocked"),
        (
            {"status": "error", "stopReason": "auth-revoked", "timeoutPhase": "provider"},
            "hard_timeout",
        ),
        ({"status": "timeout", "timeoutPhase": "queue", "endedAt": 5}, "timed_out"),
    ],
)
def test_from_wait_result(wait, reason):
    outcome = build_agent_run_terminal_outcome_from_wait_result(wait)
    assert (outcome.reason if outcome else None) == reason


@pytest.mark.parametrize(
    ("phase", "data", "reason", "stop"),
    [
        ("end", {"aborted": True}, "aborted", "aborted"),
        (
            "end",
            {"aborted": True, "stopReason": "timeout", "timeoutPhase": "provider"},
            "hard_timeout",
            "timeout",
        ),
        ("error", {"error": "provider failed"}, "failed", None),
        ("end", {"status": "cancelled", "stopReason": "relay-closed"}, "cancelled", "relay-closed"),
        (
            "end",
            {"aborted": True, "status": "superseded", "stopReason": "superseded"},
            "superseded",
            "superseded",
        ),
        ("end", {}, "completed", None),
        ("end", {"status": "timed_out"}, "timed_out", None),
    ],
)
def test_from_lifecycle_event(phase, data, reason, stop):
    outcome = build_agent_run_terminal_outcome_from_lifecycle_event(phase, data)
    assert outcome.reason == reason
    assert outcome.stop_reason == stop


@pytest.mark.parametrize(
    ("phase", "data", "definitive"),
    [
        ("error", {"error": "provider failed"}, False),
        ("error", {"error": "preparation failed", "executionSettled": True}, True),
        ("error", {"error": "provider failed", "executionSettled": False}, False),
        ("error", {"error": "provider failed", "fallbackExhaustedFailure": True}, True),
        ("error", {"livenessState": "blocked"}, True),
        ("error", {"livenessState": "abandoned"}, True),
        ("error", {"aborted": True}, True),
        ("error", {"timeoutPhase": "provider"}, True),
        ("end", {}, True),
        ("start", {"executionSettled": True}, False),
        ("finishing", {"executionSettled": True}, False),
    ],
)
def test_definitive_lifecycle(phase, data, definitive):
    assert is_definitive_run_lifecycle(phase, data) is definitive


@pytest.mark.parametrize(
    ("outcome", "sticky"),
    [
        (build("timeout", timeout_phase="provider"), True),
        (build("error", stop_reason="rpc"), True),
        (build("error", stop_reason="superseded"), True),
        (build("timeout"), False),
        (build("error", stop_reason="aborted"), False),
        (build("error"), False),
        (None, False),
    ],
)
def test_sticky(outcome, sticky):
    assert is_sticky_agent_run_terminal_outcome(outcome) is sticky


HARD_200 = build("timeout", timeout_phase="provider", ended_at=200)


@pytest.mark.parametrize(
    ("current", "incoming", "winner"),
    [
        (None, HARD_200, "incoming"),
        # cancellation is sticky over later completion
        (
            build("timeout", stop_reason="rpc", timeout_phase="queue", ended_at=100),
            build("ok", ended_at=200),
            "current",
        ),
        (
            build("timeout", stop_reason="restart", timeout_phase="gateway_draining", ended_at=100),
            build("ok", ended_at=200),
            "current",
        ),
        # hard timeout holds over late aborts and failures
        (HARD_200, build("error", stop_reason="aborted", ended_at=250), "current"),
        (HARD_200, build("error", error="late rejection", ended_at=260), "current"),
        # ...unless completion is proven at or before the timeout
        (HARD_200, build("ok", ended_at=190), "incoming"),
        (HARD_200, build("ok", ended_at=200), "incoming"),
        (HARD_200, build("ok", ended_at=201), "current"),
        (HARD_200, build("ok"), "current"),  # no timestamp, no proof
        (build("ok", ended_at=190), HARD_200, "current"),
        (build("ok", ended_at=210), HARD_200, "incoming"),
        # soft timeouts never overwrite execution failures, in either order
        (build("error", error="rate limit"), build("timeout", timeout_phase="queue"), "current"),
        (build("timeout", timeout_phase="queue"), build("error", error="rate limit"), "incoming"),
        (build("error", liveness_state="blocked"), build("timeout"), "current"),
        (build("timeout"), build("ok", liveness_state="abandoned"), "incoming"),
        # otherwise the newer observation wins
        (build("error"), build("ok"), "incoming"),
        (build("ok"), build("error"), "incoming"),
        (build("ok"), build("error", stop_reason="rpc"), "incoming"),
    ],
)
def test_merge(current, incoming, winner):
    merged = merge(current, incoming)
    assert merged is (current if winner == "current" else incoming)


CLEANUP_FAILED = build("error", error="lanes backend failed in hold")


@pytest.mark.parametrize(
    ("reached", "cleanup", "winner"),
    [
        # a late cleanup failure never downgrades a completion (plain merge would take it)
        (build("ok"), CLEANUP_FAILED, "reached"),
        (build("ok", ended_at=100), build("error", liveness_state="blocked"), "reached"),
        (build("ok"), build("error", liveness_state="abandoned"), "reached"),
        # sticky outcomes hold over the cleanup failure
        (build("error", stop_reason="rpc"), CLEANUP_FAILED, "reached"),
        (build("ok", stop_reason="superseded"), CLEANUP_FAILED, "reached"),
        (HARD_200, CLEANUP_FAILED, "reached"),
        # a cleanup timeout/cancellation is not a "failure": the ordinary merge decides
        (build("ok"), build("error", stop_reason="rpc"), "cleanup"),
        (build("ok", ended_at=300), HARD_200, "cleanup"),
        (build("ok", ended_at=100), HARD_200, "reached"),
        # after a failure or a soft timeout, the newer failure is the outcome (as before)
        (build("error", error="rate limit"), CLEANUP_FAILED, "cleanup"),
        (build("timeout", timeout_phase="queue"), CLEANUP_FAILED, "cleanup"),
        (build("error", stop_reason="aborted"), CLEANUP_FAILED, "cleanup"),
        # nothing reached: the cleanup failure is the outcome
        (None, CLEANUP_FAILED, "cleanup"),
    ],
)
def test_merge_run_cleanup_outcome(reached, cleanup, winner):
    merged = merge_run_cleanup_outcome(reached, cleanup)
    assert merged is (reached if winner == "reached" else cleanup)


def test_first_proven_sticky_outcome_wins_regardless_of_order():
    earlier_cancel = build("error", stop_reason="rpc", ended_at=190)
    later_cancel = build("error", stop_reason="restart", ended_at=210)
    simultaneous_cancel = build("error", stop_reason="rpc", ended_at=200)
    for a, b in [(HARD_200, earlier_cancel), (earlier_cancel, HARD_200)]:
        assert merge(a, b) is earlier_cancel
    for a, b in [(HARD_200, later_cancel), (later_cancel, HARD_200)]:
        assert merge(a, b) is HARD_200
    for a, b in [(HARD_200, simultaneous_cancel), (simultaneous_cancel, HARD_200)]:
        assert merge(a, b) is HARD_200  # explicit attribution wins a tie


def test_supersession_beats_generic_cancellation_in_either_order():
    superseded = build("error", stop_reason="superseded", ended_at=200)
    cancelled = build("error", stop_reason="rpc", ended_at=201)
    assert merge(superseded, cancelled) is superseded
    assert merge(cancelled, superseded) is superseded


@pytest.mark.parametrize(
    ("superseded_at", "expected"),
    [(190, "superseded"), (200, "hard_timeout"), (210, "hard_timeout")],
)
def test_first_hard_terminal_between_timeout_and_supersession(superseded_at, expected):
    superseded = build("error", stop_reason="superseded", ended_at=superseded_at)
    for a, b in [(HARD_200, superseded), (superseded, HARD_200)]:
        assert merge(a, b).reason == expected


# --------------------------------------------------------------------------- attempt terminal

OK = AgentRunAttemptTerminal.ok()
T = AgentRunAttemptTerminal.timeout
A = AgentRunAttemptTerminal.abort


def test_degraded_completion_survives_merging():
    warning = {"pendingStage": "onPartialReply", "elapsedMs": 120_000, "timeoutMs": 120_000}
    degraded = normalize_agent_run_attempt_terminal(settlement_warning=warning)
    assert degraded == AgentRunAttemptTerminal.ok(warning)
    for a, b in [(OK, degraded), (degraded, OK)]:
        projected = project_agent_run_attempt_terminal(merge_agent_run_attempt_terminal(a, b))
        assert projected.settlement_warning == warning
        assert not (projected.aborted or projected.failed or projected.interrupted)


@pytest.mark.parametrize(
    ("flags", "kind"),
    [
        ({"prompt_error": "provider failed"}, "failed"),
        ({"external_abort": True}, "aborted"),
        ({"timed_out": True}, "timeout"),
    ],
)
def test_interruptions_outrank_settlement_warnings(flags, kind):
    degraded = AgentRunAttemptTerminal.ok({"pendingStage": "checkpoint"})
    terminal = normalize_agent_run_attempt_terminal(
        settlement_warning=degraded.settlement_warning, **flags
    )
    assert terminal.kind == kind
    for a, b in [(terminal, degraded), (degraded, terminal)]:
        merged = merge_agent_run_attempt_terminal(a, b)
        assert merged.kind == kind
        assert project_agent_run_attempt_terminal(merged).settlement_warning is None


@pytest.mark.parametrize(
    ("current", "incoming", "expected"),
    [
        (A("external"), A("yield_cleanup"), A("external")),
        (A("runtime"), A("yield_cleanup"), A("runtime")),
        (A("yield_cleanup"), A("runtime"), A("runtime")),
        (T("prompt", "idle"), A("external"), T("prompt", "external", aborted=True)),
        (
            A("runtime"),
            T("compaction", "observation"),
            AgentRunAttemptTerminal("aborted", source="runtime", timeout_observation="compaction"),
        ),
        (T("prompt", "runtime"), T("compaction", "observation"), T("compaction", "runtime")),
        (
            T("tool_execution", "observation"),
            T("compaction", "observation"),
            T("compaction", "observation"),
        ),
        (
            T("compaction", "observation"),
            T("tool_execution", "observation"),
            T("compaction", "observation"),
        ),
        (T("prompt", "idle"), T("prompt", "run_budget"), T("prompt", "run_budget")),
        (
            T("prompt", "run_budget", aborted=True),
            T("compaction", "runtime"),
            T("compaction", "run_budget", aborted=True),
        ),
        (A("yield_cleanup"), T("prompt", "runtime"), T("prompt", "runtime")),  # no abort flag
        (OK, A("runtime"), A("runtime")),
        (A("runtime"), OK, A("runtime")),
    ],
)
def test_attempt_merge_table(current, incoming, expected):
    assert merge_agent_run_attempt_terminal(current, incoming) == expected


def test_failure_is_kept_under_stronger_interruptions():
    error = RuntimeError("provider failed while aborting")
    failed = merge_agent_run_attempt_terminal(OK, AgentRunAttemptTerminal.failed("prompt", error))
    aborted = merge_agent_run_attempt_terminal(failed, A("external"))
    timed_out = merge_agent_run_attempt_terminal(aborted, T("compaction", "run_budget"))
    assert timed_out == AgentRunAttemptTerminal(
        "timeout",
        phase="compaction",
        source="external",
        aborted=True,
        failure=AgentRunAttemptFailure("prompt", error),
    )


def test_failure_absorbs_an_observation_in_either_order():
    error = RuntimeError("compaction failed")
    failed = AgentRunAttemptTerminal.failed("compaction", error)
    observed = T("compaction", "observation")
    expected = AgentRunAttemptTerminal(
        "failed",
        failure=AgentRunAttemptFailure("compaction", error),
        timeout_observation="compaction",
    )
    assert merge_agent_run_attempt_terminal(failed, observed) == expected
    assert merge_agent_run_attempt_terminal(observed, failed) == expected


def test_merge_converges_across_every_observation_order():
    error = RuntimeError("provider failed")
    facts = [
        AgentRunAttemptTerminal.failed("prompt", error),
        A("runtime"),
        T("compaction", "observation"),
        T("prompt", "runtime"),
    ]
    expected = AgentRunAttemptTerminal(
        "timeout",
        phase="compaction",
        source="runtime",
        aborted=True,
        failure=AgentRunAttemptFailure("prompt", error),
    )
    for order in itertools.permutations(facts):
        terminal = OK
        for fact in order:
            terminal = merge_agent_run_attempt_terminal(terminal, fact)
        assert terminal == expected


@pytest.mark.parametrize(
    ("terminal", "flags"),
    [
        (
            A("external"),
            {"aborted": True, "external_abort": True, "timed_out": False, "interrupted": True},
        ),
        (
            T("prompt", "run_budget", aborted=True),
            {
                "aborted": True,
                "external_abort": False,
                "timed_out": True,
                "timed_out_by_run_budget": True,
                "interrupted": True,
            },
        ),
        (
            T("compaction", "observation"),
            {
                "aborted": False,
                "timed_out": False,
                "timed_out_during_compaction": True,
                "interrupted": False,
            },
        ),
        (
            T("tool_execution", "observation"),
            {"timed_out": False, "timed_out_during_tool_execution": True},
        ),
        (
            T("tool_execution", "idle"),
            {"idle_timed_out": True, "timed_out": True, "timed_out_during_tool_execution": True},
        ),
        (A("yield_cleanup"), {"aborted": False, "cleanup_yield_aborted": True}),
        (
            AgentRunAttemptTerminal.failed("prompt", None),
            {
                "failed": True,
                "interrupted": False,
                "prompt_error": None,
                "prompt_error_source": "prompt",
            },
        ),
    ],
)
def test_projection(terminal, flags):
    projected = project_agent_run_attempt_terminal(terminal)
    for name, value in flags.items():
        assert getattr(projected, name) == value, name


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            {"timed_out": True, "idle_timed_out": True, "timed_out_by_run_budget": True},
            T("prompt", "run_budget"),
        ),
        ({"timed_out_by_run_budget": True}, T("prompt", "run_budget")),
        ({"external_abort": True}, A("external")),
        (
            {"aborted": True, "timed_out_during_compaction": True},
            AgentRunAttemptTerminal("aborted", source="runtime", timeout_observation="compaction"),
        ),
        (
            {"idle_timed_out": True, "timed_out_during_tool_execution": True},
            T("tool_execution", "idle"),
        ),
        ({}, OK),
    ],
)
def test_normalize_legacy_flags(flags, expected):
    assert normalize_agent_run_attempt_terminal(**flags) == expected


def test_normalize_shipped_harness_shape():
    error = RuntimeError("request timed out")
    terminal = normalize_agent_run_attempt_terminal(
        aborted=True,
        external_abort=True,
        prompt_error=error,
        prompt_error_source="prompt",
        timed_out=True,
        timed_out_during_compaction=True,
    )
    assert terminal == AgentRunAttemptTerminal(
        "timeout",
        phase="compaction",
        source="external",
        aborted=True,
        failure=AgentRunAttemptFailure("prompt", error),
    )


def test_set_failure():
    error = RuntimeError("x")
    failed = AgentRunAttemptTerminal(
        "failed",
        failure=AgentRunAttemptFailure("compaction", error),
        timeout_observation="compaction",
    )
    replaced = set_agent_run_attempt_terminal_failure(
        failed, AgentRunAttemptFailure("prompt", error)
    )
    assert replaced.failure == AgentRunAttemptFailure("prompt", error)
    assert replaced.timeout_observation == "compaction"
    assert set_agent_run_attempt_terminal_failure(failed, None) == T("compaction", "observation")
    assert (
        set_agent_run_attempt_terminal_failure(
            AgentRunAttemptTerminal.failed("prompt", error), None
        )
        == OK
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kind": "weird"}, "kind"),
        ({"kind": "timeout", "phase": "queue", "source": "runtime"}, "phase"),
        ({"kind": "timeout", "phase": "prompt", "source": "observation"}, "observation"),
        ({"kind": "aborted", "source": "idle"}, "abort source"),
        ({"kind": "failed"}, "failure"),
    ],
)
def test_bad_attempt_terminal_is_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AgentRunAttemptTerminal(**kwargs)


@pytest.mark.parametrize(
    ("terminal", "kwargs", "reason", "status"),
    [
        (OK, {}, "completed", "ok"),
        (
            OK,
            {"assistant_stop_reason": "error", "assistant_error_message": "boom"},
            "failed",
            "error",
        ),
        (T("prompt", "idle"), {}, "hard_timeout", "timeout"),  # attributed to the provider
        (T("compaction", "runtime"), {}, "timed_out", "timeout"),  # unattributed
        (A("runtime"), {}, "aborted", "error"),
        (A("external"), {"abort_stop_reason": "rpc"}, "cancelled", "error"),
        (
            AgentRunAttemptTerminal.failed("prompt", "x"),
            {"restart_aborted": True},
            "cancelled",
            "error",
        ),
        (OK, {"abort_stop_reason": "superseded"}, "superseded", "error"),
    ],
)
def test_outcome_from_attempt(terminal, kwargs, reason, status):
    outcome = build_agent_run_terminal_outcome_from_attempt(terminal, **kwargs)
    assert (outcome.reason, outcome.status) == (reason, status)


def test_outcome_from_prompt_timeout_carries_provider_attribution():
    outcome = build_agent_run_terminal_outcome_from_attempt(T("prompt", "runtime"))
    assert outcome.timeout_phase == "provider"
    assert outcome.provider_started is True
    assert outcome.stop_reason is None
    assert isinstance(outcome, AgentRunTerminalOutcome)


# --------------------------------------------------------------------------- liveness


@pytest.mark.parametrize(
    ("kwargs", "state"),
    [
        ({"incomplete_turn_text": "⚠️ Agent couldn't generate a response."}, "abandoned"),
        ({"prompt_error_source": "compaction"}, "paused"),
        ({"timed_out_during_compaction": True}, "paused"),
        ({"aborted": True}, "blocked"),
        ({"timed_out": True}, "blocked"),
        ({"timed_out": True, "payload_count": 1}, "working"),
        ({"last_assistant_stop_reason": "error", "payload_count": 1}, "blocked"),
        ({}, "working"),
    ],
)
def test_liveness(kwargs, state):
    kwargs = {"payload_count": 0, "aborted": False, "timed_out": False, **kwargs}
    assert resolve_run_liveness_state(**kwargs) == state


@pytest.mark.parametrize(
    ("kwargs", "invalid"),
    [
        ({"replay_safe": True}, False),
        ({"replay_safe": False}, True),
        ({"replay_safe": True, "prompt_error_source": "compaction"}, True),
        ({"replay_safe": True, "timed_out_during_compaction": True}, True),
        ({"replay_safe": True, "incomplete_turn_text": "x"}, True),
    ],
)
def test_replay_invalid(kwargs, invalid):
    assert resolve_replay_invalid_flag(**kwargs) is invalid
