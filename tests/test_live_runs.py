"""The live-run verbs of ``Runtime`` end to end over real HTTP (issue 15 §1), on asyncio and
trio: ``steer`` lands at the next turn boundary, ``follow_up`` revives the run, both queues
are one-at-a-time by default, ``abort_run`` keeps the partial answer as an aborted message,
``is_run_active`` / ``is_run_streaming`` / ``wait_for_run_end`` answer as OpenClaw's twins,
and a steered message survives a profile rotation and a model fallback, once.

The fault server's ``"hold"`` fault pauses a stream mid-answer until the test releases it, so
every verb is called while the run is provably inside its model call (no sleeps).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.messages import AssistantMessage, UserMessage
from openclaw_runtime.runner.live import LiveMessageResult
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer, Reply
from tests.test_run_recovery import (
    KEYS,
    Recorder,
    assert_lifecycle,
    branch_messages,
    build_runtime,
    file_entries,
    get_weather,
    seed_history,
)

pytestmark = pytest.mark.anyio

STEER = "also check the CI config"


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as running:
        yield running


@pytest.fixture
async def make_runtime(tmp_path: Path) -> Any:
    made: list[Runtime] = []

    def factory(server: FaultInjectingOpenAIServer, **options: Any) -> Runtime:
        runtime = build_runtime(tmp_path, server, **options)
        made.append(runtime)
        return runtime

    yield factory
    for runtime in made:
        await runtime.aclose()


async def held(server: FaultInjectingOpenAIServer, count: int = 1) -> None:
    """Wait until ``count`` streams paused at a hold fault."""
    assert await anyio.to_thread.run_sync(server.wait_for_held, count, 10.0)


def user_texts(request: Any) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "user"]


def texts_of(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.role, m.text()) for m in messages if isinstance(m, UserMessage | AssistantMessage)]


class Streamed:
    """An ``on_event`` that notes when the answer has visible text (set ``text_seen``),
    passing every event on to ``then``."""

    def __init__(self, then: Any = None) -> None:
        self.then = then
        self.text_seen = anyio.Event()

    def __call__(self, event: Any) -> None:
        if event.type == "message_update" and event.message.text():
            self.text_seen.set()
        if self.then is not None:
            self.then(event)


class RunInBackground:
    """Start ``runtime.run`` in a task group and keep its result."""

    def __init__(self) -> None:
        self.result: Any = None

    async def __call__(self, runtime: Runtime, prompt: str, **options: Any) -> None:
        self.result = await runtime.run(prompt, **options)


# --------------------------------------------------------------------------- steer


async def test_steer_lands_at_the_next_turn_boundary_of_the_running_turn(
    server: FaultInjectingOpenAIServer, make_runtime: Any
) -> None:
    runtime = make_runtime(server)
    server.inject(Fault(kind="hold", model="main", after_chunks=2))
    run, recorder = RunInBackground(), Recorder()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run(runtime, "write a poem", session_key="chat:1", on_event=recorder))
        await held(server)
        assert runtime.is_run_active(session_key="chat:1")
        assert runtime.is_run_streaming(session_key="chat:1")
        answer = await runtime.steer(STEER, session_key="chat:1")
        assert answer and answer.reason == "queued"
        assert answer.session_id == runtime.active_runs()[0]["sessionId"]
        server.release_holds()
    result = run.result
    assert result.ok, result.error
    assert [user_texts(r) for r in server.requests] == [["write a poem"], ["write a poem", STEER]]
    # the held answer finished first; the steer followed it, then the model answered it
    assert texts_of(await branch_messages(runtime, result.session_id)) == [
        ("user", "write a poem"),
        ("assistant", "You said: write a poem"),
        ("user", STEER),
        ("assistant", f"You said: {STEER}"),
    ]
    assert result.text.endswith(f"You said: {STEER}")
    assert_lifecycle(recorder)
    # the run is over: nothing reaches it any more, and nothing is kept
    assert not runtime.is_run_active(session_key="chat:1")
    late = await runtime.steer("too late", session_key="chat:1")
    assert late == LiveMessageResult(False, "no_active_run", result.session_id)
    assert not late


async def test_steering_after_tool_calls_goes_before_the_next_model_call(
    server: FaultInjectingOpenAIServer, make_runtime: Any
) -> None:
    runtime = make_runtime(server)
    # the first answer is a tool call, held mid-stream
    server.enqueue(Reply(tool_calls=[("get_weather", {"city": "Oslo"})], model="main"))
    server.inject(Fault(kind="hold", model="main", after_chunks=1))
    run = RunInBackground()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run(runtime, "weather?", session_id="s-tools", tools=[get_weather]))
        await held(server)
        assert (await runtime.steer("in Celsius please", session_id="s-tools")).accepted
        server.release_holds()
    assert run.result.ok, run.result.error
    second = server.requests[1].body["messages"]
    # the tool result first (the batch finished), then the steer, then the model is asked
    assert [m["role"] for m in second[1:]] == ["user", "assistant", "tool", "user"]
    assert second[-1]["content"] == "in Celsius please"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("mode", "calls", "sent"),
    [
        ("one-at-a-time", 3, ["start", "first", "second"]),
        # both at one boundary: two user turns in a row, merged by the replay validation
        ("all", 2, ["start", "first\nsecond"]),
    ],
)
async def test_steering_queue_is_one_at_a_time_by_default(
    server: FaultInjectingOpenAIServer, make_runtime: Any, mode: str, calls: int, sent: list[str]
) -> None:
    runtime = make_runtime(server, agent={"steering_mode": mode})
    server.inject(Fault(kind="hold", model="main", after_chunks=2))
    run = RunInBackground()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run(runtime, "start", session_id="s-modes"))
        await held(server)
        assert (await runtime.steer("first", session_id="s-modes")).accepted
        assert (await runtime.steer("second", session_id="s-modes")).accepted
        server.release_holds()
    assert run.result.ok
    assert len(server.requests) == calls
    assert user_texts(server.requests[-1]) == sent  # each once, in order


# --------------------------------------------------------------------------- follow-up


async def test_follow_up_revives_the_run_when_it_would_end(
    server: FaultInjectingOpenAIServer, make_runtime: Any
) -> None:
    runtime = make_runtime(server)
    server.inject(Fault(kind="hold", model="main", after_chunks=2))
    run = RunInBackground()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run(runtime, "draft it", session_key="chat:f"))
        await held(server)
        first = await runtime.follow_up("now shorten it", session_key="chat:f")
        second = await runtime.follow_up("and sign it", session_key="chat:f")
        assert first.accepted and second.accepted
        server.release_holds()
    result = run.result
    assert result.ok
    # one-at-a-time: each follow-up revived the run once more
    assert [user_texts(r)[-1] for r in server.requests] == [
        "draft it",
        "now shorten it",
        "and sign it",
    ]
    roles = [role for role, _ in texts_of(await branch_messages(runtime, result.session_id))]
    assert roles == ["user", "assistant"] * 3


# --------------------------------------------------------------------------- abort, wait


async def test_abort_run_keeps_the_partial_answer_as_an_aborted_message(
    server: FaultInjectingOpenAIServer, make_runtime: Any
) -> None:
    runtime = make_runtime(server)
    server.inject(Fault(kind="hold", model="main", after_chunks=3))
    run, recorder = RunInBackground(), Recorder()
    streamed = Streamed(recorder)
    prompt = "tell me a long story about lighthouses"
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run(runtime, prompt, session_key="chat:a", on_event=streamed))
        await held(server)
        await streamed.text_seen.wait()  # the client has read what the server sent
        # still running after a short wait: the stream is held
        assert not await runtime.wait_for_run_end(session_key="chat:a", timeout_s=0.05)
        assert await runtime.abort_run(session_key="chat:a")
        assert await runtime.wait_for_run_end(session_key="chat:a", timeout_s=10)
    result = run.result
    assert not result.ok and result.outcome.reason == "aborted"
    assert result.error is not None and result.error.kind == "aborted"
    assert_lifecycle(recorder)
    messages = await branch_messages(runtime, result.session_id)
    aborted = messages[1]
    assert isinstance(aborted, AssistantMessage) and aborted.stop_reason == "aborted"
    # the two content chunks that were streamed before the hold are kept
    partial = aborted.text()
    full = f"You said: {prompt}"
    assert partial and full.startswith(partial) and partial != full
    assert len(server.requests) == 1 and server.wait_for_disconnects(1)
    # nothing is active any more
    assert not await runtime.abort_run(session_key="chat:a")
    assert await runtime.wait_for_run_end(session_key="chat:a")
    # the aborted turn does not break the session: the next run continues it
    after = await runtime.run("shorter then", session_key="chat:a")
    assert after.ok, after.error


async def test_verbs_without_a_run_answer_like_openclaw(
    server: FaultInjectingOpenAIServer, make_runtime: Any
) -> None:
    runtime = make_runtime(server)
    assert not runtime.is_run_active(session_id="nobody")
    assert not runtime.is_run_streaming(session_key="k")
    assert await runtime.wait_for_run_end(session_id="nobody", timeout_s=0)
    assert not await runtime.abort_run(session_id="nobody")
    refused = await runtime.follow_up("hello?", session_id="nobody")
    assert refused == LiveMessageResult(False, "no_active_run", "nobody")
    with pytest.raises(ValueError, match="session_key"):
        await runtime.steer("x")
    with pytest.raises(ValueError, match="empty"):
        await runtime.steer("   ", session_id="s")
    with pytest.raises(TypeError, match="str"):
        await runtime.steer(42, session_id="s")
    with pytest.raises(ValueError, match="session_id"):
        runtime.is_run_active(session_id="")
    assert server.requests == []


async def test_a_compacting_run_refuses_steers_and_takes_follow_ups(make_runtime: Any) -> None:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as server:
        # the run's model plans with a 16 000-token window: the history is compacted before
        # the prompt is sent, by the summarizer "mini" whose first answer is held
        runtime = make_runtime(server, window=16_000, agent={"compaction_model": "backup/mini"})
        await seed_history(runtime, "s-compact", turns=6, size=8_000)
        server.inject(Fault(kind="hold", model="mini", after_chunks=1))
        run, recorder = RunInBackground(), Recorder()
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run(runtime, "go on", session_id="s-compact", on_event=recorder))
            await held(server)
            assert recorder.of("compaction_start")
            assert runtime.is_run_active(session_id="s-compact")
            assert not runtime.is_run_streaming(session_id="s-compact")
            steer = await runtime.steer("ignored?", session_id="s-compact")
            assert steer == LiveMessageResult(False, "compacting", "s-compact")
            assert (await runtime.follow_up("then summarize", session_id="s-compact")).accepted
            server.release_holds()
        assert run.result.ok, run.result.error
        answers = [r for r in server.requests if r.model == "main"]
        assert [user_texts(r)[-1] for r in answers] == ["go on", "then summarize"]
        assert not any("ignored?" in str(r.body) for r in server.requests)


# --------------------------------------------------------------------------- failover


@pytest.mark.parametrize("recovery", ["rotate_profile", "fallback_model"])
async def test_a_steered_message_survives_a_failover_once(
    server: FaultInjectingOpenAIServer, make_runtime: Any, recovery: str
) -> None:
    keys = ("key-a", "key-b") if recovery == "rotate_profile" else ("key-a",)
    runtime = make_runtime(server, keys=keys, fallbacks=("backup/mini",))
    # the first answer is held (the steer arrives), then the call that carries the steer fails
    server.inject(
        Fault(kind="hold", model="main", after_chunks=2),
        Fault(kind="server_error", model="main", times=1),
    )
    if recovery == "fallback_model":
        server.inject(Fault(kind="overloaded", model="main", times=5))
    run, recorder = RunInBackground(), Recorder()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run(runtime, "write a poem", session_id="s-fo", on_event=recorder))
        await held(server)
        assert (await runtime.steer(STEER, session_id="s-fo")).accepted
        server.release_holds()
    result = run.result
    assert result.ok, result.error
    failed = [r for r in server.requests if r.status != 200]
    assert failed and all(user_texts(r) == ["write a poem", STEER] for r in failed)
    last = server.requests[-1]
    assert last.status == 200 and user_texts(last) == ["write a poem", STEER]  # once
    if recovery == "rotate_profile":
        assert recorder.of("profile_rotated") and result.model == "main"
    else:
        assert result.model == "mini"
    # in the transcript once, and the active branch reads as one conversation
    steered = [
        e
        for e in file_entries(result.session_file)
        if e.get("type") == "message" and e["message"]["role"] == "user"
    ]
    assert [json.dumps(e["message"]["content"]).count(STEER) for e in steered] == [0, 1]
    assert [role for role, _ in texts_of(await branch_messages(runtime, "s-fo"))] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


# --------------------------------------------------------------------------- another runtime


async def test_steer_from_another_runtime_on_the_same_state_dir_reaches_the_run(
    server: FaultInjectingOpenAIServer, make_runtime: Any
) -> None:
    worker, other = make_runtime(server), make_runtime(server)
    server.inject(Fault(kind="hold", model="main", after_chunks=2))
    run = RunInBackground()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run(worker, "write a poem", session_key="chat:x"))
        await held(server)
        assert not other.is_run_active(session_key="chat:x")  # local question, local answer
        answer = await other.steer(STEER, session_key="chat:x")
        assert answer.accepted and answer.reason == "queued_remote"
        server.release_holds()
    assert run.result.ok
    assert user_texts(server.requests[-1]) == ["write a poem", STEER]
    # once the run ended the inbox has no owner: refused
    late = await other.steer("late", session_key="chat:x")
    assert late.reason == "no_active_run"


# --------------------------------------------------------------------------- the README example

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_live_example() -> str:
    text = README.read_text(encoding="utf-8")
    marker = text.index("<!-- live-run example:")
    start = text.index("```python\n", marker) + len("```python\n")
    return text[start : text.index("```", start)]


async def test_the_readme_steering_example_runs(
    server: FaultInjectingOpenAIServer, make_runtime: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = make_runtime(server)
    server.inject(Fault(kind="hold", model="main", after_chunks=2))
    namespace: dict[str, Any] = {}
    exec(compile(readme_live_example(), str(README), "exec"), namespace)

    async def release_when_held() -> None:
        await held(server)
        server.release_holds()

    async with anyio.create_task_group() as tg:
        tg.start_soon(release_when_held)
        text = await namespace["review_with_a_late_remark"](runtime)
    assert capsys.readouterr().out.strip() == "True queued"
    assert STEER in text
    sent = [user_texts(r) for r in server.requests]
    assert sum(STEER in u for users in sent[-1:] for u in users) == 1
