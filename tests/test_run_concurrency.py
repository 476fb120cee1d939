"""``Runtime.run`` under concurrency: the global cap, one turn per session, priorities,
timeouts and aborts that free their lanes, and sessions found by key.

A ``ProbeProvider`` (tests/run_support.py) serves the model calls: it records each call's
session, prompt and context and counts the calls in flight, and its responses wait on gates
the test opens, so every interleaving here is exact rather than timed.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.abort import AbortController
from openclaw_runtime.providers.fake import FakeRequest, FakeResponse, delay, gate, text
from openclaw_runtime.runner.request import RunResult
from tests.run_support import (
    ProbeProvider,
    RunLog,
    event_problems,
    last_user_text,
    probe_config,
    result_problems,
    transcript_problems,
)

pytestmark = pytest.mark.anyio


def make_runtime(tmp_path: Path, probe: ProbeProvider, **agent: Any) -> Runtime:
    return Runtime(
        probe_config(tmp_path / "state", **agent),
        plugins=[probe.plugin()],
        load_entrypoints=False,
    )


def lane_stats(runtime: Runtime) -> dict[str, Any]:
    stats = getattr(runtime.lanes, "stats", None)
    return {} if stats is None else dict(stats())


def assert_well_formed(result: RunResult, log: RunLog) -> None:
    assert result_problems(result) == []
    assert event_problems(log.events, result) == []


async def test_many_sessions_run_in_parallel_up_to_the_global_cap(tmp_path: Path) -> None:
    release = anyio.Event()

    def respond(request: FakeRequest) -> FakeResponse:
        return FakeResponse([gate(release), text(f"answer to {last_user_text(request)}")])

    probe = ProbeProvider(respond)
    results: dict[int, RunResult] = {}
    logs = {n: RunLog(f"run {n}") for n in range(30)}

    async with make_runtime(tmp_path, probe, max_concurrent=8) as runtime:

        async def one(n: int) -> None:
            results[n] = await runtime.run(
                f"question {n}", session_id=f"par-{n:02d}", on_event=logs[n]
            )

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for n in range(30):
                    tg.start_soon(one, n)
                # every call blocks at the gate: the cap is the only thing that stops a 9th
                await probe.wait_in_flight(8)
                await anyio.sleep(0.2)
                assert probe.in_flight == 8
                assert len(probe.calls) == 8
                waiting = [n for n, log in logs.items() if not log.has("attempt_start")]
                assert len(waiting) == 22
                assert all(logs[n].has("lane_wait", kind="global") for n in waiting)
                release.set()

        assert lane_stats(runtime) == {}

    assert sorted(results) == list(range(30))
    for n, result in results.items():
        assert_well_formed(result, logs[n])
        assert result.ok, result.outcome
        assert result.text == f"answer to question {n}"
        assert result.session_id == f"par-{n:02d}"
    assert len(probe.calls) == 30
    assert probe.max_in_flight == 8  # capped, and really overlapping
    assert {call.session_id for call in probe.calls} == {f"par-{n:02d}" for n in range(30)}
    # 22 runs queued behind the cap and say so in their lane events
    queued = [
        n
        for n, log in logs.items()
        if any(e.kind == "global" and e.waited_ms > 50 for e in log.of("lane_acquired"))
    ]
    assert len(queued) == 22


async def test_one_session_runs_its_turns_one_at_a_time_in_arrival_order(tmp_path: Path) -> None:
    release = anyio.Event()

    def respond(request: FakeRequest) -> FakeResponse:
        return FakeResponse(
            [gate(release), delay(0.01), text(f"answer to {last_user_text(request)}")]
        )

    probe = ProbeProvider(respond)
    results: dict[int, RunResult] = {}
    logs = {n: RunLog(f"turn {n}") for n in range(5)}

    async with make_runtime(tmp_path, probe, max_concurrent=8) as runtime:

        async def turn(n: int) -> None:
            results[n] = await runtime.run(f"turn {n}", session_id="shared", on_event=logs[n])

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for n in range(5):
                    tg.start_soon(turn, n)
                    # queue them in a known order: each is waiting before the next starts
                    await logs[n].wait_for("lane_wait", kind="session")
                await probe.wait_in_flight(1)
                await anyio.sleep(0.05)
                assert probe.in_flight == 1  # the other four wait in the session lane
                assert [log.has("lane_acquired", kind="session") for log in logs.values()] == [
                    True,
                    False,
                    False,
                    False,
                    False,
                ]
                release.set()
        assert lane_stats(runtime) == {}

        session = await runtime.session_store.open("shared", repair=False)
        branch = session.get_branch()

    for n, result in results.items():
        assert_well_formed(result, logs[n])
        assert result.ok, result.outcome
        assert result.text == f"answer to turn {n}"
    assert probe.max_in_flight == 1
    calls = probe.calls
    assert [call.prompt for call in calls] == [f"turn {n}" for n in range(5)]
    for before, after in itertools.pairwise(calls):
        assert before.ended is not None and before.ended <= after.started  # no overlap
    # each turn saw every earlier turn, question and answer, in order
    for n, call in enumerate(calls):
        expected: list[tuple[str, str]] = []
        for m in range(n):
            expected += [("user", f"turn {m}"), ("assistant", f"answer to turn {m}")]
        expected.append(("user", f"turn {n}"))
        assert call.context_texts == expected
    pairs = [
        (e["message"]["role"], e["message"]["content"])
        for e in branch
        if e.get("type") == "message"
    ]
    assert [role for role, _ in pairs] == ["user", "assistant"] * 5
    assert [c for role, c in pairs if role == "user"] == [f"turn {n}" for n in range(5)]
    assert transcript_problems(branch) == []


async def test_foreground_runs_take_the_global_lane_before_background_runs(tmp_path: Path) -> None:
    release = anyio.Event()

    def respond(request: FakeRequest) -> FakeResponse:
        steps: list[Any] = [gate(release)] if last_user_text(request) == "long" else []
        return FakeResponse([*steps, text(f"answer to {last_user_text(request)}")])

    probe = ProbeProvider(respond)
    timeline: list[tuple[str, Any]] = []
    logs = {name: RunLog(name, timeline) for name in ("long", "cron", "user")}
    results: dict[str, RunResult] = {}

    async with make_runtime(tmp_path, probe, max_concurrent=1) as runtime:

        async def run(name: str, trigger: str) -> None:
            results[name] = await runtime.run(
                name, session_id=f"prio-{name}", trigger=trigger, on_event=logs[name]
            )

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "long", "user")
                await probe.wait_in_flight(1)  # the long run holds the only global slot
                tg.start_soon(run, "cron", "cron")
                await logs["cron"].wait_for("lane_wait", kind="global")
                tg.start_soon(run, "user", "user")
                await logs["user"].wait_for("lane_wait", kind="global")
                await anyio.sleep(0.05)
                assert len(probe.calls) == 1
                release.set()
        assert lane_stats(runtime) == {}

    for name, result in results.items():
        assert_well_formed(result, logs[name])
        assert result.ok, (name, result.outcome)
    # the foreground run overtook the background run that queued before it
    assert [call.prompt for call in probe.calls] == ["long", "user", "cron"]
    acquired = [
        label
        for label, event in timeline
        if event.type == "lane_acquired" and event.kind == "global"
    ]
    assert acquired == ["long", "user", "cron"]
    waits = {
        name: next(e for e in log.of("lane_wait") if e.kind == "global")
        for name, log in logs.items()
    }
    assert waits["cron"].priority == "background"
    assert waits["user"].priority == "foreground"
    assert waits["long"].priority == "foreground"
    waited = {
        name: next(e.waited_ms for e in log.of("lane_acquired") if e.kind == "global")
        for name, log in logs.items()
    }
    assert waited["long"] < 50
    assert waited["cron"] > waited["user"] > 40
    assert all(log.of("lane_acquired")[0].kind == "session" for log in logs.values())


async def test_attempt_timeout_ends_a_hanging_run_and_frees_its_session(tmp_path: Path) -> None:
    def respond(request: FakeRequest) -> FakeResponse:
        prompt = last_user_text(request)
        if "hang" in prompt:
            return FakeResponse([delay(60), text("too late")])
        return FakeResponse([text(f"answer to {prompt}")])

    probe = ProbeProvider(respond)
    hang_log, next_log = RunLog("hang"), RunLog("next")
    results: dict[str, RunResult] = {}
    finished: dict[str, float] = {}

    async with make_runtime(tmp_path, probe) as runtime:

        async def run(name: str, prompt: str, log: RunLog, timeout_s: float) -> None:
            results[name] = await runtime.run(
                prompt, session_id="stuck", timeout_s=timeout_s, on_event=log
            )
            finished[name] = time.monotonic()

        started = time.monotonic()
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "hang", "please hang", hang_log, 0.3)
                await probe.wait_in_flight(1)
                tg.start_soon(run, "next", "and then?", next_log, 5)
                await next_log.wait_for("lane_wait", kind="session")
        assert lane_stats(runtime) == {}

        session = await runtime.session_store.open("stuck", repair=False)
        branch = session.get_branch()

    hung = results["hang"]
    assert_well_formed(hung, hang_log)
    assert hung.outcome.status == "timeout"
    assert hung.outcome.reason == "hard_timeout"
    assert hung.error is not None and hung.error.kind == "timeout"
    assert finished["hang"] - started < 2.5
    assert all(e.timed_out for e in hang_log.of("attempt_end"))

    after = results["next"]
    assert_well_formed(after, next_log)
    assert after.ok, after.outcome
    assert after.text == "answer to and then?"
    assert finished["next"] >= finished["hang"]
    # the waiting run only got the session once the timed-out run let go of it
    assert next_log.of("lane_acquired")[0].waited_ms > 200
    assert transcript_problems(branch) == []
    last = [e["message"] for e in branch if e.get("type") == "message"][-2:]
    assert [m["role"] for m in last] == ["user", "assistant"]
    assert last[1]["stopReason"] == "stop"


async def test_abort_ends_a_streaming_run_promptly_and_releases_its_session(tmp_path: Path) -> None:
    def respond(request: FakeRequest) -> FakeResponse:
        prompt = last_user_text(request)
        if prompt == "tell me everything":
            return FakeResponse([text("Once upon a time "), delay(60), text("the end")])
        return FakeResponse([text(f"answer to {prompt}")])

    probe = ProbeProvider(respond)
    controller = AbortController()
    log = RunLog("aborted")

    async with make_runtime(tmp_path, probe) as runtime:
        result: RunResult | None = None

        async def run() -> None:
            nonlocal result
            result = await runtime.run(
                "tell me everything",
                session_id="chatty",
                abort_signal=controller.signal,
                on_event=log,
            )

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await log.wait_for("message_update")  # the model is streaming
                await probe.changes.until(lambda: probe.in_flight == 1)
                aborted_at = time.monotonic()
                controller.abort()
        ended = time.monotonic() - aborted_at
        assert lane_stats(runtime) == {}

        with anyio.fail_after(5):
            next_log = RunLog("next")
            following = await runtime.run("still there?", session_id="chatty", on_event=next_log)

        session = await runtime.session_store.open("chatty", repair=False)
        branch = session.get_branch()

    assert result is not None
    assert ended < 1.0
    assert_well_formed(result, log)
    assert result.outcome.reason == "aborted"
    assert result.outcome.status == "error"
    assert result.error is not None and result.error.kind == "aborted"
    assert len(log.of("attempt_start")) == 1  # an abort is not retried

    assert_well_formed(following, next_log)
    assert following.ok, following.outcome
    assert following.text == "answer to still there?"

    messages = [e["message"] for e in branch if e.get("type") == "message"]
    roles = [m["role"] for m in messages]
    aborted_at_index = roles.index("assistant")
    aborted = messages[aborted_at_index]
    assert aborted["stopReason"] == "aborted"
    assert "Once upon a time" in str(aborted["content"])
    # only the hidden interruption note may sit between the aborted turn and the next prompt
    between = messages[aborted_at_index + 1 : roles.index("user", aborted_at_index)]
    assert all(m["role"] == "custom" for m in between)
    assert messages[-2]["content"] == "still there?"
    assert messages[-1]["stopReason"] == "stop"
    assert transcript_problems(branch) == []
    # the follow-up request saw the aborted turn's transcript, not a dangling one
    assert probe.calls[-1].prompt == "still there?"


async def test_concurrent_runs_of_one_session_key_share_one_session(tmp_path: Path) -> None:
    release = anyio.Event()

    def respond(request: FakeRequest) -> FakeResponse:
        return FakeResponse([gate(release), text(f"answer to {last_user_text(request)}")])

    probe = ProbeProvider(respond)
    results: dict[int, RunResult] = {}
    logs = {n: RunLog(f"key {n}") for n in range(2)}

    async with make_runtime(tmp_path, probe) as runtime:

        async def run(n: int) -> None:
            results[n] = await runtime.run(
                f"message {n}", session_key="telegram:4711", on_event=logs[n]
            )

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, 0)
                await logs[0].wait_for("lane_acquired", kind="session")
                tg.start_soon(run, 1)
                await logs[1].wait_for("lane_wait", kind="session")
                release.set()
        bound = await runtime.session_index.lookup_id("telegram:4711")

    for n, result in results.items():
        assert_well_formed(result, logs[n])
        assert result.ok, result.outcome
        assert result.session_key == "telegram:4711"
    assert results[0].session_id == results[1].session_id == bound
