"""``Runtime.run`` against a real OpenAI-compatible endpoint that fails a third of the time.

Twelve sessions talk to a ``FaultInjectingOpenAIServer`` at once, four turns each (in order
within a session), through two auth profiles and a fallback model, with tools on offer. The
server's seeded chaos hits about 35% of requests with every fault it knows: rate limits,
5xx, overloads, cut streams, hangs (after the headers: the idle timeout; before them: the
attempt timeout), empty and reasoning-only answers, context overflows. Whatever happens, every
run must end with one well-formed outcome and a balanced event lifecycle, never leak a key,
and leave a transcript the next turn can replay.
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.agent import tool
from openclaw_runtime.runner.events import AttemptEnd, AttemptStart, RunEnd, RunStart
from openclaw_runtime.runner.outcome import build_agent_run_terminal_outcome
from openclaw_runtime.runner.request import RunResult
from openclaw_runtime.testing import Fault, FaultInjectingOpenAIServer, KeyBehavior
from tests.run_support import (
    RunLog,
    event_problems,
    jsonl_problems,
    openai_config,
    pending_repairs,
    repair_backups,
    result_problems,
    transcript_problems,
)

pytestmark = pytest.mark.anyio

PROVIDER = "chaosai"
MODELS = {"m1": 32_000, "m2": 32_000}
KEYS = ("sk-chaos-alpha-5f1e0c9a7b3d4e21", "sk-chaos-bravo-9c2d7e4f1a0b8c63")
SESSIONS = 12
TURNS = 4
SEED = 20_240_611
#: Every fault kind the server has (``status`` as a 502, ``delay`` short).
CHAOS_FAULTS = (
    Fault("rate_limit", retry_after_s=0.1),
    Fault("overloaded"),
    Fault("server_error"),
    Fault("status", status=502),
    Fault("cut_stream", after_chunks=2),
    Fault("cut_stream", after_chunks=0),
    Fault("hang"),
    Fault("hang", before_headers=True),
    Fault("empty"),
    Fault("reasoning_only"),
    Fault("context_overflow"),
    Fault("delay", seconds=0.05),
)
PROMPTS = (
    "turn {turn}: tell me a story about Lyon",
    "turn {turn}: use lookup_weather for Paris",
    "turn {turn}: please add_numbers for me",
    "turn {turn}: hello again",
)


@tool
async def lookup_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
async def add_numbers(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@dataclass
class ChaosRun:
    session_id: str
    turn: int
    log: RunLog
    result: RunResult | None = None
    raised: BaseException | None = None


def runtime_for(state_dir: Path, server: FaultInjectingOpenAIServer, **agent: Any) -> Runtime:
    config = openai_config(
        state_dir,
        server.base_url,
        provider=PROVIDER,
        models=MODELS,
        keys=KEYS,
        fallbacks=["m2"],
        **agent,
    )
    runtime = Runtime(config, load_entrypoints=False)
    runtime.retry_backoff_scale = 0  # rate-limit backoffs do not sleep
    return runtime


def outcome_label(run: ChaosRun) -> str:
    if run.result is None:
        return f"raised {type(run.raised).__name__}"
    result = run.result
    kind = "" if result.error is None else f" ({result.error.kind})"
    return f"{result.outcome.status}/{result.outcome.reason}{kind}"


async def test_chaos_runs_keep_every_invariant(tmp_path: Path) -> None:
    runs: list[ChaosRun] = []
    server = FaultInjectingOpenAIServer(
        models=MODELS, keys={key: KeyBehavior.OK for key in KEYS}, chunk_chars=8
    )
    started = time.monotonic()
    with server:
        server.chaos(rate=0.35, kinds=CHAOS_FAULTS, seed=SEED)
        async with runtime_for(
            tmp_path / "state", server, max_concurrent=4, timeout_seconds=1.0
        ) as runtime:

            async def session(index: int) -> None:
                session_id = f"chaos-{index:02d}"
                for turn in range(TURNS):
                    run = ChaosRun(session_id, turn, RunLog(f"{session_id}#{turn}"))
                    runs.append(run)
                    prompt = PROMPTS[(index + turn) % len(PROMPTS)].format(turn=turn)
                    try:
                        run.result = await runtime.run(
                            prompt,
                            session_id=session_id,
                            tools=[lookup_weather, add_numbers],
                            trigger="user" if (index + turn) % 3 else "cron",
                            idle_timeout_s=0.3,
                            on_event=run.log,
                        )
                    except Exception as exc:  # a run must never raise: record it
                        run.raised = exc

            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    for index in range(SESSIONS):
                        tg.start_soon(session, index)
            lanes: dict[str, Any] = getattr(runtime.lanes, "stats", dict)()
            store = runtime.session_store
            session_files = {
                f"chaos-{index:02d}": store.path_for(f"chaos-{index:02d}")
                for index in range(SESSIONS)
            }
            branches = {
                session_id: (await store.open(session_id, repair=False)).get_branch()
                for session_id in session_files
            }
        served = server.requests
    elapsed = time.monotonic() - started

    problems: list[str] = []
    for run in runs:
        where = f"{run.session_id} turn {run.turn} [{outcome_label(run)}]"
        if run.result is None:
            problems.append(f"{where}: raised {run.raised!r}")
            continue
        if run.result.session_id != run.session_id:
            problems.append(f"{where}: ran in session {run.result.session_id}")
        for problem in result_problems(run.result):
            problems.append(f"{where}: {problem}")
        for problem in event_problems(run.log.events, run.result, KEYS):
            problems.append(f"{where}: {problem}")
    for session_id, path in session_files.items():
        for problem in jsonl_problems(path) + transcript_problems(branches[session_id]):
            problems.append(f"{session_id}: {problem}")
        # a file the store wrote never needs repair when opened again
        pending = pending_repairs(path)
        if pending:
            problems.append(f"{session_id}: opening it would repair {pending}")
    if lanes:
        problems.append(f"lanes still held or awaited after every run ended: {lanes}")

    distribution = collections.Counter(outcome_label(run) for run in runs)
    faults = collections.Counter(request.fault for request in served if request.chaos)
    summary = (
        f"{len(runs)} runs in {elapsed:.1f}s, {len(served)} requests; "
        f"outcomes {dict(distribution)}; chaos faults {dict(faults)}"
    )
    print(summary)
    assert not problems, "\n".join([summary, *problems])

    assert len(runs) == SESSIONS * TURNS
    assert sum(1 for run in runs if run.result is not None and run.result.ok) >= len(runs) // 2
    # the chaos really happened: most fault kinds were served, both keys and models used
    assert len(faults) >= 7, faults
    assert len({r.api_key_fingerprint for r in served if r.api_key_fingerprint}) == 2
    assert {r.model for r in served} == set(MODELS)
    assert any(r.outcome == "tool_call" for r in served)
    assert elapsed < 30


async def test_failed_attempts_leave_transcripts_that_load_without_repair(tmp_path: Path) -> None:
    with FaultInjectingOpenAIServer(models=MODELS) as server:
        async with runtime_for(tmp_path / "state", server) as runtime:
            server.inject(Fault("server_error"))
            first = await runtime.run("hello", session_id="repair-me")
            assert first.ok and first.attempts == 2  # 500, then the next profile answered
            path = runtime.session_store.path_for("repair-me")
            assert pending_repairs(path) == {}
            session = await runtime.session_store.open("repair-me")
            assert not session.repair_report.repaired
            assert repair_backups(path) == []


# --------------------------------------------------------------------------- the checkers


def _message(role: str, **fields: object) -> dict[str, object]:
    return {"type": "message", "id": f"e{id(fields)}", "message": {"role": role, **fields}}


def test_transcript_checker_flags_replays_after_failed_turns_and_stray_tool_results() -> None:
    call = {"type": "toolCall", "id": "c1", "name": "lookup_weather", "arguments": {}}
    good = [
        _message("user", content="hi"),
        _message("assistant", content=[], stopReason="error"),
        _message("user", content="hi"),
        _message("assistant", content=[call], stopReason="toolUse"),
        _message("toolResult", toolCallId="c1", content=[]),
        _message("assistant", content=[], stopReason="stop"),
    ]
    assert transcript_problems(good) == []
    replayed = [
        _message("user", content="hi"),
        _message("assistant", content=[], stopReason="aborted"),
        _message("custom", content="<turn_aborted>"),
        _message("assistant", content=[], stopReason="stop"),
    ]
    assert len(transcript_problems(replayed)) == 1
    stray = [
        _message("user", content="hi"),
        _message("assistant", content=[call], stopReason="toolUse"),
        _message("user", content="again"),
        _message("toolResult", toolCallId="c1", content=[]),
    ]
    assert len(transcript_problems(stray)) == 1


def test_event_checker_flags_unbalanced_lifecycles_and_leaked_keys() -> None:
    outcome = build_agent_run_terminal_outcome("ok")
    result = RunResult(
        run_id="r", session_id="s", session_key=None, session_file=None, outcome=outcome
    )
    start = RunStart("r", "s", None, PROVIDER, "m1", "user", "off")
    end = RunEnd("r", outcome.to_dict(), 1)
    attempt = AttemptStart(1, PROVIDER, "m1", "chaosai:p0", "off", "prompt", [])
    closed = AttemptEnd(1, PROVIDER, "m1", "chaosai:p0", "stop", 1.0)
    assert event_problems([start, attempt, closed, end], result, KEYS) == []
    assert len(event_problems([start, attempt, end], result, KEYS)) == 1
    assert len(event_problems([start, attempt, closed], result, KEYS)) == 1
    leaky = AttemptEnd(1, PROVIDER, "m1", None, "error", 1.0, error=f"bad key {KEYS[1]}")
    assert len(event_problems([start, leaky, end], result, KEYS)) == 2  # unopened + leaked
