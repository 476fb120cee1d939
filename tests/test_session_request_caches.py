"""A kept-open session's turns convert and measure only what is new, and send the same requests.

The converter (``convert_to_llm``) and the mid-turn precheck's token sum used to start over at
every attempt: each turn of a kept-open session converted and measured its whole history at
its first request, and a tool result the sanitizer stripped again at the next request made
them start over once more (``benchmarks/session_turns.py``: a 3-call turn at ≈ 2,400 messages
cost ≈ 4× one at ≈ 100). They are kept with the session now (``session_converter``, the
projection memo's token sum) and reuse the leading messages a request shares with the
previous one. What the provider receives must not change: the same request bodies, turn by
turn, as runs whose caches start empty at every attempt (asyncio and trio, memory and durable
stores).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.agent import convert as convert_module
from openclaw_runtime.agent.convert import PrefixConverter
from openclaw_runtime.context import guard as guard_module
from openclaw_runtime.context.guard import ProjectionMemo
from openclaw_runtime.messages import ThinkingContent
from openclaw_runtime.providers import openai_request
from openclaw_runtime.providers.request_memo import RequestMemo
from openclaw_runtime.runner import attempt as attempt_module
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from openclaw_runtime.testing.random_tool_loops import count_conversions
from openclaw_runtime.transcript import run_transcript_sanitizers
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from tests.run_support import mock_openai_config, mock_openai_server, read

pytestmark = pytest.mark.anyio

TURNS = 6
CALLS = 3


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with mock_openai_server() as running:
        yield running


class Counted:
    """How many messages were converted and measured, per turn."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.converted = 0
        self.measured = 0
        real_convert = convert_module.convert_agent_message_to_llm

        def convert(message: Any) -> Any:
            self.converted += 1
            return real_convert(message)

        monkeypatch.setattr(convert_module, "convert_agent_message_to_llm", convert)
        for name in ("estimate_message_token_pressure", "estimate_new_message_token_pressure"):
            monkeypatch.setattr(guard_module, name, self._measuring(getattr(guard_module, name)))

    def _measuring(self, real: Any) -> Any:
        def estimate(message: Any) -> int:
            self.measured += 1
            return int(real(message))

        return estimate


class Turns(NamedTuple):
    """What ``_turns`` saw: each turn's request bodies, how many messages each turn converted
    and measured (with ``counted``), and the session's history at the end."""

    bodies: list[list[Any]]
    work: list[tuple[int, int]]
    history: list[Any]


async def _turns(
    state_dir: Path,
    server: FaultInjectingOpenAIServer,
    *,
    memory: bool,
    counted: Counted | None = None,
    reasoning: bool | None = None,
) -> Turns:
    """``TURNS`` tool-loop turns on one kept-open session. With ``reasoning`` the model
    thinks before every call and answer, and the configuration marks it as reasoning or
    not."""
    config = mock_openai_config(state_dir, server)
    if reasoning is not None:
        config["models"][0]["reasoning"] = reasoning
    thought: dict[str, Any] = {}
    runtime = Runtime(config, load_entrypoints=False, memory=memory)
    bodies: list[list[Any]] = []
    work: list[tuple[int, int]] = []
    try:
        for turn in range(TURNS):
            for n in range(CALLS):
                if reasoning is not None:
                    thought = {"reasoning": f"plan {n}"}
                call = ("read", {"path": f"t{turn}f{n}.txt"})
                server.enqueue(Reply(tool_calls=[call], **thought))
            if reasoning is not None:
                thought = {"reasoning": "so"}
            server.enqueue(Reply(text=f"answer {turn}", **thought))
            start = len(server.requests)
            before = (counted.converted, counted.measured) if counted else (0, 0)
            result = await runtime.run(f"read them {turn}", session_id="kept", tools=[read])
            assert result.ok, result.error
            bodies.append([request.body for request in server.requests[start:]])
            if counted:
                work.append((counted.converted - before[0], counted.measured - before[1]))
        session = await runtime.checkout_session("kept", cwd=str(state_dir))
        history = session.build_session_context().messages
        await runtime.checkin_session(session)
    finally:
        await runtime.aclose()
    return Turns(bodies, work, history)


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
async def test_a_kept_open_sessions_turns_convert_and_measure_what_is_new(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    memory: bool,
) -> None:
    counted = Counted(monkeypatch)
    bodies, work, _ = await _turns(tmp_path / "kept", server, memory=memory, counted=counted)
    history = 0
    for turn, (converted, measured) in enumerate(work):
        # a turn adds a prompt, CALLS tool groups and an answer; its requests convert and
        # measure those and the previous turn's messages (models the session made of the
        # kernel's, other objects), never the whole history again
        added = 1 + 2 * CALLS + 1
        if turn >= 2:
            assert converted <= 2 * added + CALLS, (turn, converted, history)
            assert measured <= 2 * added + 2 * CALLS, (turn, measured, history)
        history += added
    assert history > 2 * (2 * added + 2 * CALLS)  # the bound is below the history's size

    # the same turns with every attempt's caches starting empty: the same requests
    monkeypatch.setattr(attempt_module, "session_converter", lambda session: PrefixConverter())
    monkeypatch.setattr(attempt_module, "session_projection_memo", lambda session: ProjectionMemo())
    server.reset()
    fresh = (await _turns(tmp_path / "fresh", server, memory=memory)).bodies
    assert bodies == fresh
    assert [len(turn) for turn in bodies] == [CALLS + 1] * TURNS


def _pipeline_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many messages each run of the whole sanitizer pipeline got (the incremental
    sanitizer's ``full``), appended as they run."""
    seen: list[int] = []

    def counting(messages: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        seen.append(len(messages))
        return run_transcript_sanitizers(messages, *args, **kwargs)

    monkeypatch.setitem(IncrementalSanitizer.run.__kwdefaults__, "full", counting)
    return seen


def _full_pipeline_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request sanitized by the whole pipeline over the whole history (no cache)."""

    def full_every_time(
        self: IncrementalSanitizer, messages: Any, policy: Any, sanitizers: Any, **kw: Any
    ) -> list[Any]:
        return run_transcript_sanitizers(list(messages), policy, sanitizers)

    monkeypatch.setattr(IncrementalSanitizer, "run", full_every_time)


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
async def test_a_provider_naming_every_call_call_0_keeps_the_sanitizer_caches(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    memory: bool,
) -> None:
    """Some OpenAI-compatible servers number their calls afresh in every response, so every
    call of a session is ``call_0``. The sanitizer's caches used to give up on a part that
    named an id of the part they held, so every request ran the whole pipeline over the
    whole session (quadratic in a tool loop, ``benchmarks/tool_loop.py --ids per-turn``).
    Now a turn's requests run it over nothing, and send what the full pipeline makes.

    The provider's request memo converted every request's whole history for them (each
    ``call_0``'s id depends on all the earlier ones). Once a unit is not clean it keeps the
    id rule's state at a request's end and at its last prompt, and goes on from there: a
    loop's request converts its own group, a turn's first the previous turn and its prompt
    (the state kept before the prompt), once the states reach back to a turn's prompt."""
    monkeypatch.setattr(server, "_next_call_id", lambda: "call_0")
    seen = _pipeline_runs(monkeypatch)
    sizes = count_conversions(monkeypatch, openai_request)
    bodies = (await _turns(tmp_path / "kept", server, memory=memory)).bodies
    # every call of the session is call_0 (the requests make them unique for the provider)
    sent = [call["id"] for m in bodies[-1][-1]["messages"] for call in m.get("tool_calls", ())]
    assert len(sent) == TURNS * CALLS and sent[0] == "call_0", sent
    assert seen == [], seen  # clean turns: no stage ran for any request
    # the first turns set the states up (a whole conversion keeps them once a unit was not
    # clean: the second call_0); from the fourth turn on, a turn's first request converts
    # the previous turn, its prompt, that prompt alone (checking the cut); a later one its
    # group. No request converts more than two turns.
    turn_size = 2 * CALLS + 2
    steady = [turn_size, 1, 1, *[2] * CALLS] * (TURNS - 3)
    assert sizes[-len(steady) :] == steady, sizes
    assert max(sizes) <= 2 * turn_size, sizes

    # the same turns through the whole pipeline at every request: the same requests
    _full_pipeline_every_time(monkeypatch)
    server.reset()
    fresh = (await _turns(tmp_path / "fresh", server, memory=memory)).bodies
    assert bodies == fresh


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
async def test_a_reasoning_models_thinking_turns_keep_the_sanitizer_caches(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    memory: bool,
) -> None:
    """A reasoning model on OpenAI-compatible replay thinks before every call and answer.
    No stage touches its thinking blocks under that policy, so its turns are clean: a
    turn's requests run no stage (they ran the pipeline over the part after the cache's
    boundary at every request before), and send what the full pipeline makes."""
    seen = _pipeline_runs(monkeypatch)
    bodies, _, history = await _turns(tmp_path / "kept", server, memory=memory, reasoning=True)
    thinks = [
        m
        for m in history
        if m.role == "assistant" and any(isinstance(b, ThinkingContent) for b in m.content)
    ]
    assert len(thinks) == TURNS * (CALLS + 1)  # every turn thought (and was kept)
    assert seen == [], seen
    _full_pipeline_every_time(monkeypatch)
    server.reset()
    fresh = (await _turns(tmp_path / "fresh", server, memory=memory, reasoning=True)).bodies
    assert fresh == bodies


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
async def test_a_model_not_marked_reasoning_drops_its_thinking_without_whole_turn_passes(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    memory: bool,
) -> None:
    """A server that sends reasoning for a model the configuration does not mark as
    reasoning: OpenAI-compatible replay drops every turn's thinking but the tool loop's first
    turn's. Those turns were never clean, and each dropped turn came back as a copy, so every
    request ran the pipeline over the whole turn (quadratic in the loop). Now only a turn's
    first requests run it (over the previous turn and the prompt), and the requests are the
    ones the full pipeline makes."""
    seen = _pipeline_runs(monkeypatch)
    bodies = (await _turns(tmp_path / "kept", server, memory=memory, reasoning=False)).bodies
    turn_size = 2 * CALLS + 2
    assert len(seen) <= 2 * TURNS and max(seen, default=0) <= 2 * turn_size, seen
    _full_pipeline_every_time(monkeypatch)
    server.reset()
    fresh = (await _turns(tmp_path / "fresh", server, memory=memory, reasoning=False)).bodies
    assert fresh == bodies


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
async def test_a_turns_requests_convert_only_what_is_new(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    memory: bool,
) -> None:
    """The OpenAI-compatible provider converted the whole history into Chat Completions
    messages at every request. Through its request memo a turn's requests convert what is
    new since the previous turn's start, and send what converting everything sends."""
    sizes = count_conversions(monkeypatch, openai_request)
    bodies = (await _turns(tmp_path / "kept", server, memory=memory)).bodies
    # a turn's first request converts the previous turn (the session's copies of it) and its
    # prompt, then that prompt alone (where the next turn may start over); each later request
    # its group alone. The history before the previous turn is never converted again.
    previous_and_prompt = 2 * CALLS + 2 + 1
    first = [1, *[2] * CALLS]
    assert sizes == first + [previous_and_prompt, 1, *[2] * CALLS] * (TURNS - 1), sizes

    # the same turns converting the whole history at every request: the same requests
    monkeypatch.setattr(RequestMemo, "convert", lambda self, m, key, c: c.whole(m)[0])
    server.reset()
    assert (await _turns(tmp_path / "whole", server, memory=memory)).bodies == bodies


SESSIONS = 10  #: more open sessions than the eight conversations the memo used to keep


async def _sessions_taking_turns(
    state_dir: Path, server: FaultInjectingOpenAIServer, *, memory: bool, turns: int = 3
) -> list[list[Any]]:
    """``SESSIONS`` kept-open sessions taking turns (one call, then an answer) on one
    runtime: each run's request bodies (the runtime closed at the end)."""
    runtime = Runtime(mock_openai_config(state_dir, server), load_entrypoints=False, memory=memory)
    runs: list[list[Any]] = []
    try:
        for turn in range(turns):
            for n in range(SESSIONS):
                server.enqueue(Reply(tool_calls=[("read", {"path": f"s{n}t{turn}.txt"})]))
                server.enqueue(Reply(text=f"answer {turn}"))
                start = len(server.requests)
                result = await runtime.run(f"read {turn}", session_id=f"s{n}", tools=[read])
                assert result.ok, result.error
                runs.append([request.body for request in server.requests[start:]])
    finally:
        await runtime.aclose()
    return runs


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
async def test_more_open_sessions_than_eight_each_convert_only_what_is_new(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    memory: bool,
) -> None:
    """A service's open sessions take turns on one provider. The provider's request memo
    kept the eight conversations used last, so with ten taking turns every request of a
    turn after the first converted the session's whole history. Each open session's
    conversation is kept now, for as long as the session holds its history: the runtime
    closed, none is left."""
    sizes = count_conversions(monkeypatch, openai_request)
    per_run: list[list[int]] = []
    real_run = Runtime.run

    async def counted_run(self: Runtime, *args: Any, **kwargs: Any) -> Any:
        before = len(sizes)
        try:
            return await real_run(self, *args, **kwargs)
        finally:
            per_run.append(sizes[before:])

    monkeypatch.setattr(Runtime, "run", counted_run)
    memos: list[RequestMemo] = []
    real_init = RequestMemo.__init__

    def recorded(self: RequestMemo, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        memos.append(self)

    monkeypatch.setattr(RequestMemo, "__init__", recorded)
    bodies = await _sessions_taking_turns(tmp_path / "kept", server, memory=memory)
    # the first turn: the prompt, then the group; later: the previous turn (the session's
    # copies) and the prompt, the prompt alone (for the next turn's cut), the group
    assert per_run == [[1, 2]] * SESSIONS + [[5, 1, 2]] * (2 * SESSIONS), per_run
    assert len(memos) == 1
    gc.collect()
    assert len(memos[0]) == 0  # the sessions closed: their conversations went with them

    # the same runs converting everything at every request: the same requests
    monkeypatch.setattr(RequestMemo, "convert", lambda self, m, key, c: c.whole(m)[0])
    server.reset()
    assert await _sessions_taking_turns(tmp_path / "whole", server, memory=memory) == bodies
