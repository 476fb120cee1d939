"""An attempt's spec keeps its run and its attempt loop, not bound methods of them (issue 13:
objects held per in-flight run), and a run with no listener shares one empty event-kind set.

The spec's ``run`` and ``recovery`` are the very objects whose methods it held before, so each
call reaches the same method; a bound method of either, held while the attempt waits, is one
GC-tracked object per callback per in-flight run.
"""

from __future__ import annotations

import inspect
import itertools
import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime.events import AssistantMessageEventStream, Done
from openclaw_runtime.messages import AssistantMessage, TextContent
from openclaw_runtime.runner import attempt_loop as attempt_loop_module
from openclaw_runtime.runner.attempt_loop import ModelAttemptLoop
from openclaw_runtime.runner.event_kinds import (
    ALL_EVENT_KINDS,
    NO_EVENT_KINDS,
    _AllKinds,
    declared_event_kinds,
    wanted_event_kinds,
)
from openclaw_runtime.runner.run_state import RunState

pytestmark = pytest.mark.anyio

MODEL = {
    "id": "m1",
    "api": "bench",
    "provider": "bench",
    "contextWindow": 128_000,
    "maxTokens": 1024,
}


def _runtime(tmp_path: Path, stream_fn: Any) -> Runtime:
    class Provider:
        @hookimpl
        def register_providers(self, register: Any) -> None:
            register("bench", stream_fn)

    config = {"state_dir": str(tmp_path), "models": [MODEL]}
    return Runtime(config, plugins=[("p", Provider())], load_entrypoints=False, env={}, memory=True)


def _answer(model: Any) -> Done:
    """The model's whole answer: one text block, "ok"."""
    message = AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        content=[TextContent(text="ok")],
        stop_reason="stop",
    )
    return Done("stop", message)


async def test_the_spec_holds_the_run_and_the_loop_not_their_bound_methods(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = anyio.Event()
    waiting = anyio.Event()
    specs: list[Any] = []
    original = attempt_loop_module.run_attempt

    def recording(spec: Any) -> Any:
        specs.append(spec)
        return original(spec)

    monkeypatch.setattr(attempt_loop_module, "run_attempt", recording)

    def stream(model: Any, context: Any, options: Any) -> Any:
        async def events() -> Any:
            waiting.set()
            await gate.wait()
            yield _answer(model)

        return AssistantMessageEventStream(events())

    runtime = _runtime(tmp_path, stream)
    results: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            results.append(await runtime.run("hi", session_id="s1", model="bench/m1"))

        tg.start_soon(run)
        await waiting.wait()
        (spec,) = specs
        assert isinstance(spec.run, RunState)
        assert isinstance(spec.recovery, ModelAttemptLoop)
        assert spec.recovery.run is spec.run
        owners = (spec.run, spec.recovery)
        held = sorted(
            name
            for name, value in vars(spec).items()
            if inspect.ismethod(value) and any(value.__self__ is o for o in owners)
        )
        # the history pipeline keeps these two anyway (``_Pipeline``): nothing to gain there
        assert held == ["on_sanitizer_error", "validate_turns"]
        # each call reaches the method the spec held before
        assert spec.run.current_session() is spec.session
        gate.set()
    (result,) = results
    assert result.ok
    assert result.payloads[0].text == "ok"


# --------------------------------------------------------------------------- event kinds


class _Listener:
    def __init__(self, kinds: Any) -> None:
        self.event_kinds = kinds

    def __call__(self, event: Any) -> None:
        pass


def _old_wanted(listeners: Any) -> frozenset[str]:
    """``wanted_event_kinds`` as it was (a new frozenset every time), the reference."""
    wanted: set[str] = set()
    for listener in listeners:
        kinds = declared_event_kinds(listener)
        if isinstance(kinds, _AllKinds):
            return ALL_EVENT_KINDS
        wanted |= kinds
    return frozenset(wanted)


KINDS = ["message_end", "tool_execution_start", "agent_end", "turn_start"]


@pytest.mark.parametrize("seed", range(40))
def test_wanted_kinds_equal_the_old_union(seed: int) -> None:
    rng = random.Random(seed)
    shapes: list[Any] = [(), [], None]
    for size in range(0, 3):
        shapes.extend(itertools.combinations(KINDS, size))
    listeners = [
        _Listener(rng.choice(shapes)) if rng.random() < 0.8 else (lambda event: None)
        for _ in range(rng.randint(0, 3))
    ]
    got, expected = wanted_event_kinds(listeners), _old_wanted(listeners)
    assert got == expected
    assert type(got) is type(expected)
    if not expected and expected is not ALL_EVENT_KINDS:
        assert got is NO_EVENT_KINDS
    assert "agent_end" not in NO_EVENT_KINDS
    assert not NO_EVENT_KINDS


def test_no_listener_shares_one_empty_set() -> None:
    assert wanted_event_kinds(()) is wanted_event_kinds([]) is NO_EVENT_KINDS


async def test_every_agent_event_is_preceded_by_the_runs_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempt beats the run's lanes at every event of the loop, then hands the event
    to the run, as when it held the two bound methods."""
    log: list[str] = []
    beat, emit = RunState.heartbeat, RunState.emit

    def counting_beat(self: RunState) -> None:
        log.append("beat")
        beat(self)

    async def logging_emit(self: RunState, event: Any) -> None:
        log.append(type(event).__name__)
        await emit(self, event)

    monkeypatch.setattr(RunState, "heartbeat", counting_beat)
    monkeypatch.setattr(RunState, "emit", logging_emit)

    def stream(model: Any, context: Any, options: Any) -> Any:
        async def events() -> Any:
            yield _answer(model)

        return AssistantMessageEventStream(events())

    runtime = _runtime(tmp_path, stream)
    seen: list[str] = []
    result = await runtime.run(
        "hi", session_id="s1", model="bench/m1", on_event=lambda e: seen.append(type(e).__name__)
    )
    assert result.ok
    agent_events = {"AgentStart", "TurnStart", "MessageStart", "MessageEnd", "TurnEnd"}
    assert agent_events <= set(log)
    for index, name in enumerate(log):
        if name in agent_events:
            assert log[index - 1] == "beat", (index, log)
