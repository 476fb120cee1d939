"""A finished run is freed by reference counting, not by the next cyclic GC (issue 13, runfix).

Two things kept a finished run — its callbacks, its session, the session's messages — alive:

* the attempt's ``AgentLoopConfig`` and the context guard installed on it point at each other
  (a reference cycle through every callback of the attempt, so through the run);
* the run's ``fault_scope`` put the run's bound method in a context variable, and asyncio
  keeps the context of every cancelled timer (each deadline a run's cancel scopes set) until
  the timer's due time — minutes for the lane timeouts.

With the cyclic GC switched off, a run over real HTTP (plain answer, a tool call, a provider
error; durable and memory mode; asyncio and trio) must leave neither its run object nor its
session behind once it returned and the runtime closed the session. The ``fault_scope`` table
checks the relay: faults inside the scope reach the listener, a copied context that outlives
the scope neither reaches nor keeps it.
"""

from __future__ import annotations

import contextvars
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.agent import tool
from openclaw_runtime.containment import PluginGuard, fault_scope
from openclaw_runtime.runner import run as run_module
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer, Reply
from tests.run_support import mock_openai_config


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as running:
        yield running


@tool
async def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _script(server: FaultInjectingOpenAIServer, scenario: str) -> None:
    if scenario == "text":
        server.enqueue(Reply(text="Paris.", model="main"))
    elif scenario == "tool call":
        server.enqueue(Reply(tool_calls=[("get_weather", {"city": "Paris"})], model="main"))
        server.enqueue(Reply(text="Sunny.", model="main"))
    else:  # a provider error the run surfaces (not retried: a bad request)
        server.inject(Fault("status", status=400, body={"error": {"message": "bad input"}}))


class _Tracked:
    """Weak references to the runs and sessions of a runtime's next runs."""

    def __init__(self, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs: list[weakref.ref[Any]] = []
        self.sessions: list[weakref.ref[Any]] = []
        services = runtime.services
        checkout = services.checkout_session
        original_init = run_module._Run.__init__

        def init(run: Any, *args: Any, **kwargs: Any) -> None:
            original_init(run, *args, **kwargs)
            self.runs.append(weakref.ref(run))

        async def tracked_checkout(session_id: str, *, cwd: str) -> Any:
            session = await checkout(session_id, cwd=cwd)
            self.sessions.append(weakref.ref(session))
            return session

        monkeypatch.setattr(run_module._Run, "__init__", init)
        monkeypatch.setattr(services, "checkout_session", tracked_checkout)

    def alive(self) -> list[str]:
        return [f"run {i}" for i, ref in enumerate(self.runs) if ref() is not None] + [
            f"session {i}" for i, ref in enumerate(self.sessions) if ref() is not None
        ]


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.anyio
@pytest.mark.parametrize("memory", [False, True], ids=["durable", "memory"])
@pytest.mark.parametrize("scenario", ["text", "tool call", "provider error"])
async def test_a_finished_run_and_its_session_are_freed_without_the_cyclic_gc(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    no_cyclic_gc: None,
    memory: bool,
    scenario: str,
) -> None:
    config = mock_openai_config(
        tmp_path / "state",
        server,
        timeout_seconds=30,
    )
    runtime = Runtime(config, memory=memory, load_entrypoints=False)
    runtime.max_open_sessions = 0  # the session is closed at the run's check-in
    try:
        tracked = _Tracked(runtime, monkeypatch)
        for turn in range(2):  # a fresh session, then a second turn on it
            _script(server, scenario)
            result = await runtime.run("weather in Paris?", session_id="s1", tools=[get_weather])
            assert result.ok == (scenario != "provider error"), result
            if scenario == "tool call":
                assert result.text == "Sunny."
            del result
            assert len(tracked.runs) == len(tracked.sessions) == turn + 1
            assert tracked.alive() == [], f"turn {turn}: left alive: {tracked.alive()}"
    finally:
        await runtime.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("memory", [False, True], ids=["durable", "memory"])
async def test_a_kept_open_session_outlives_its_run_but_the_run_does_not(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    no_cyclic_gc: None,
    memory: bool,
) -> None:
    """The default: the session stays open for its next turn (the runtime holds it), the run
    that used it is gone."""
    config = mock_openai_config(
        tmp_path / "state",
        server,
    )
    runtime = Runtime(config, memory=memory, load_entrypoints=False)
    try:
        tracked = _Tracked(runtime, monkeypatch)
        _script(server, "tool call")
        result = await runtime.run("weather in Paris?", session_id="s1", tools=[get_weather])
        assert result.ok, result
        del result
        assert tracked.runs[0]() is None
        assert tracked.sessions[0]() is not None
    finally:
        await runtime.aclose()


class _Listener:
    def __init__(self) -> None:
        self.faults: list[Any] = []

    def __call__(self, fault: Any) -> None:
        self.faults.append(fault)


# (name, raise a fault inside the scope, raise one from a context copied inside the scope
#  after the scope ended, faults the listener receives)
RELAY_TABLE: list[tuple[str, bool, bool, int]] = [
    ("no fault", False, False, 0),
    ("a fault inside", True, False, 1),
    ("a fault after the scope, from a copied context", False, True, 0),
    ("both", True, True, 1),
]


@pytest.mark.parametrize(("name", "inside", "after", "received"), RELAY_TABLE)
def test_fault_scope_relays_inside_and_lets_go_after(
    no_cyclic_gc: None, name: str, inside: bool, after: bool, received: int
) -> None:
    guard = PluginGuard()
    listener = _Listener()
    faults = listener.faults
    ref = weakref.ref(listener)
    with fault_scope(listener):
        copied = contextvars.copy_context()  # what a timer or a task keeps
        if inside:
            guard.fault("p", "on_agent_event", RuntimeError("boom"))
    del listener
    assert ref() is None, "a context copied inside the scope still holds the listener"
    if after:
        fault = copied.run(guard.fault, "p", "on_agent_event", RuntimeError("late"))
        assert fault.plugin == "p"  # recorded by the guard, handed to no run
    assert len(faults) == received
    assert all(f.error == "RuntimeError: boom" for f in faults)
