"""An attempt that times out while a tool runs is a ``tool_execution`` timeout (OpenClaw spec
§2.1 stage ``assistant``, §11.5), end to end over real local HTTP on asyncio and trio.

The attempt's timer fires while the only tool blocks on an ``anyio.Event`` nobody sets. What
OpenClaw asks of that run, and what broke before: it rotated to the next auth profile (the
model's turn was re-run with another key, the ``timeout`` recorded against the first), and
the run ended as a ``hard_timeout`` attributed to the ``provider`` with the message "LLM
request timed out". Now the failover terminal is ``timeout``/``tool_execution``/``runtime``
(aborted), the policy says ``continue_normal`` (no rotation, no fallback), ``attempt_end``
names the phase, and the run ends ``timed_out`` with ``stopReason: timeout`` and no provider
phase. A timeout while the model answers keeps its old path (rotate, provider hard timeout).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.agent import tool
from openclaw_runtime.commands.timeline import describe_event
from openclaw_runtime.failover import AttemptTerminal, resolve_run_failover_decision
from openclaw_runtime.runner.events import AttemptEnd
from openclaw_runtime.runner.outcome import build_agent_run_terminal_outcome
from openclaw_runtime.runner.timeout_phase import (
    attempt_timeout_phase,
    run_timeout_fields,
    timed_out_attempt_terminal,
)
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer, Reply
from tests.run_support import RunLog, event_problems, jsonl_problems, openai_config

PROVIDER = "p"
#: long enough for the local server to answer before it even on a loaded machine (the tool must
#: be running when the time runs out); each end-to-end test waits it out once
TIMEOUT_S = 4


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"m1": 64_000, "m2": 64_000}) as running:
        yield running


def make_runtime(tmp_path: Path, base_url: str) -> Runtime:
    """Two auth profiles and a fallback model: a rotation or a fallback would show."""
    config = openai_config(
        tmp_path / "state",
        base_url,
        provider=PROVIDER,
        models={"m1": 64_000, "m2": 64_000},
        keys=("key-1", "key-2"),
        fallbacks=("m2",),
        timeout_seconds=TIMEOUT_S,
    )
    runtime = Runtime(config, load_entrypoints=False)
    runtime.retry_backoff_scale = 0
    return runtime


def transcript(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


@pytest.mark.anyio
async def test_a_timeout_while_a_tool_runs_is_a_tool_execution_timeout(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    started = anyio.Event()
    never = anyio.Event()
    cancelled: list[bool] = []

    @tool
    async def wait_for_approval(ticket: str) -> str:
        """Wait until someone approves the ticket."""
        started.set()
        try:
            await never.wait()
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise
        return "approved"

    server.enqueue(Reply(tool_calls=[("wait_for_approval", {"ticket": "T-1"})]))
    runtime = make_runtime(tmp_path, server.base_url)
    log = RunLog()
    try:
        result = await runtime.run(
            "get T-1 approved", session_id="tool-timeout", tools=[wait_for_approval], on_event=log
        )
    finally:
        await runtime.aclose()

    assert started.is_set() and cancelled == [True]
    # the run's outcome: a (soft) timeout, not a provider hard timeout
    outcome = result.outcome
    assert (outcome.status, outcome.reason) == ("timeout", "timed_out")
    assert outcome.timeout_phase is None and outcome.provider_started is None
    assert outcome.stop_reason == "timeout"
    assert not result.ok and result.error is not None and result.error.kind == "timeout"
    assert result.error.message == f"Tool execution timed out after {TIMEOUT_S}s (attempt timeout)"
    assert [p.is_error for p in result.payloads] == [True]
    (run_end,) = log.of("run_end")
    assert run_end.outcome == outcome.to_dict()
    assert "timeoutPhase" not in run_end.outcome and run_end.outcome["stopReason"] == "timeout"

    # no rotation, no fallback: one attempt, one request, the first profile and model
    (attempt_end,) = log.of("attempt_end")
    assert attempt_end.timed_out and attempt_end.timeout_phase == "tool_execution"
    assert [(d.action, d.reason) for d in log.of("attempt_decision")] == [("continue_normal", None)]
    assert not log.has("profile_rotated") and not log.has("retry_scheduled")
    assert [r.model for r in server.requests] == ["m1"]
    assert (result.model, result.auth_profile_id, result.attempts) == ("m1", f"{PROVIDER}:p0", 1)

    # the transcript: the call, its aborted result, the aborted turn and its marker — and no
    # rewound branch with a retried answer
    assert result.session_file is not None
    entries = transcript(result.session_file)
    assert [e["type"] for e in entries] == ["session", *["message"] * 5]
    user, call, tool_result, aborted, marker = (e["message"] for e in entries[1:])
    assert user == {"role": "user", "content": "get T-1 approved", "timestamp": user["timestamp"]}
    assert call["stopReason"] == "toolUse"
    assert [c["name"] for c in call["content"]] == ["wait_for_approval"]
    assert tool_result["role"] == "toolResult" and tool_result["isError"] is True
    assert tool_result["toolCallId"] == call["content"][0]["id"]
    assert aborted["role"] == "assistant" and aborted["stopReason"] == "aborted"
    assert aborted["errorMessage"] == result.error.message
    assert marker["role"] == "custom" and marker["customType"] == "openclaw:turn-aborted"
    assert jsonl_problems(Path(result.session_file)) == []
    assert event_problems(log.events, result) == []


@pytest.mark.anyio
async def test_a_timeout_while_the_model_answers_still_rotates_and_is_a_provider_timeout(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    server.inject(Fault("hang", model="m1", times=1))
    runtime = make_runtime(tmp_path, server.base_url)
    log = RunLog()
    try:
        result = await runtime.run("hello", session_id="model-timeout", on_event=log)
    finally:
        await runtime.aclose()
    first = log.of("attempt_end")[0]
    assert first.timed_out and first.timeout_phase == "prompt"
    assert first.error == f"LLM request timed out after {TIMEOUT_S}s (attempt timeout)"
    (rotated,) = log.of("profile_rotated")
    assert (rotated.from_profile, rotated.to_profile) == (f"{PROVIDER}:p0", f"{PROVIDER}:p1")
    assert result.ok and result.auth_profile_id == f"{PROVIDER}:p1"
    assert [a.timeout_phase for a in log.of("attempt_end")] == ["prompt", None]


# --------------------------------------------------------------------------- the policy


@pytest.mark.parametrize(
    ("during_tools", "idle", "expected"),
    [
        (False, False, AttemptTerminal("timeout", "prompt", "runtime", True)),
        (True, False, AttemptTerminal("timeout", "tool_execution", "runtime", True)),
        (False, True, AttemptTerminal("timeout", "prompt", "idle")),
        (True, True, AttemptTerminal("timeout", "tool_execution", "idle")),
    ],
)
def test_the_terminal_of_a_timed_out_attempt(
    during_tools: bool, idle: bool, expected: AttemptTerminal
) -> None:
    terminal = timed_out_attempt_terminal(
        timed_out_during_tool_execution=during_tools, idle_timed_out=idle
    )
    assert terminal == expected
    assert terminal.phase == attempt_timeout_phase(timed_out_during_tool_execution=during_tools)


def _decide(
    during_tools: bool, idle: bool, *, profile_rotated: bool, fallback: bool, failure: bool
) -> tuple[str, str | None]:
    decision = resolve_run_failover_decision(
        {
            "stage": "assistant",
            "terminal": timed_out_attempt_terminal(
                timed_out_during_tool_execution=during_tools, idle_timed_out=idle
            ),
            "fallbackConfigured": fallback,
            # the aborted turn's "timed out" error text classifies as a timeout failure
            "failoverFailure": failure,
            "failoverReason": "timeout" if failure else None,
            "profileRotated": profile_rotated,
        }
    )
    return decision.action, None if decision.reason is None else str(decision.reason)


@pytest.mark.parametrize(
    ("during_tools", "idle", "profile_rotated", "fallback", "failure", "expected"),
    [
        # a runtime timeout while a tool ran never rotates and never falls back
        (True, False, False, True, True, ("continue_normal", None)),
        (True, False, True, True, True, ("continue_normal", None)),
        (True, False, False, False, True, ("continue_normal", None)),
        (True, False, False, True, False, ("continue_normal", None)),
        # a runtime timeout while the model answered rotates, then falls back
        (False, False, False, True, True, ("rotate_profile", "timeout")),
        (False, False, True, True, True, ("fallback_model", "timeout")),
        (False, False, True, False, True, ("surface_error", "timeout")),
        (False, False, False, True, False, ("rotate_profile", None)),
        # an idle timeout is model silence whatever ran: it rotates in either phase
        (True, True, False, True, True, ("rotate_profile", "timeout")),
        (True, True, True, True, True, ("fallback_model", "timeout")),
        (False, True, False, True, True, ("rotate_profile", "timeout")),
    ],
)
def test_failover_decisions_by_timeout_phase(
    during_tools: bool,
    idle: bool,
    profile_rotated: bool,
    fallback: bool,
    failure: bool,
    expected: tuple[str, str | None],
) -> None:
    assert (
        _decide(
            during_tools, idle, profile_rotated=profile_rotated, fallback=fallback, failure=failure
        )
        == expected
    )


@pytest.mark.parametrize(
    ("phase", "timed_out", "reason", "to_dict"),
    [
        (
            "tool_execution",
            True,
            "timed_out",
            {"reason": "timed_out", "status": "timeout", "stopReason": "timeout"},
        ),
        (
            "prompt",
            True,
            "hard_timeout",
            {
                "reason": "hard_timeout",
                "status": "timeout",
                "timeoutPhase": "provider",
                "providerStarted": True,
            },
        ),
        # no phase recorded (as before this change): attributed to the provider
        (
            None,
            True,
            "hard_timeout",
            {
                "reason": "hard_timeout",
                "status": "timeout",
                "timeoutPhase": "provider",
                "providerStarted": True,
            },
        ),
        (
            None,
            False,
            "hard_timeout",
            {"reason": "hard_timeout", "status": "timeout", "timeoutPhase": "provider"},
        ),
    ],
)
def test_run_outcome_by_timeout_phase(
    phase: Any, timed_out: bool, reason: str, to_dict: dict[str, Any]
) -> None:
    fields = run_timeout_fields(phase, timed_out=timed_out)
    outcome = build_agent_run_terminal_outcome(
        "timeout",
        stop_reason=fields.stop_reason,
        timeout_phase=fields.timeout_phase,
        provider_started=fields.provider_started,
        # what the run would pass: a run with nothing to show is "blocked" where it applies
        liveness_state="blocked" if fields.liveness_applies else None,
    )
    assert outcome.reason == reason
    assert {k: v for k, v in outcome.to_dict().items() if k != "livenessState"} == to_dict


@pytest.mark.parametrize(
    ("phase", "idle", "line"),
    [
        ("tool_execution", False, "✗ attempt 1 timed out after 2.0 s while a tool ran"),
        ("prompt", False, "✗ attempt 1 timed out after 2.0 s"),
        (None, False, "✗ attempt 1 timed out after 2.0 s"),
        ("prompt", True, "✗ attempt 1 went idle after 2.0 s"),
        ("tool_execution", True, "✗ attempt 1 went idle after 2.0 s"),
    ],
)
def test_the_timeline_says_a_tool_ran_out_the_time(phase: Any, idle: bool, line: str) -> None:
    event = AttemptEnd(
        attempt=1,
        provider=PROVIDER,
        model="m1",
        auth_profile_id=None,
        stop_reason="aborted",
        duration_ms=2000.0,
        timed_out=True,
        idle_timed_out=idle,
        timeout_phase=phase,
    )
    assert describe_event(event) == line
