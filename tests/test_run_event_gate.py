"""A run's kernel builds only the optional events someone needs (issue 13, ev10): every
listener sees what it saw before.

Each scenario (a tool loop with streamed text, a provider error retried, an abort during a
tool, an attempt timeout during a tool, steering during a tool, a sanitizer plugin's fault)
runs with each combination of listeners (none, a callback wanting everything, callbacks with
declared kinds, an observing plugin, the block-reply observer alone or with a callback) twice:
on the old path (``RunState`` asks the kernel for every kind, as before the gate) and on the
new one. The callback's and the plugin's events, the block replies, the lanes' heartbeats,
the transcript and the ``RunResult`` must be the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime._markers import hookimpl
from openclaw_runtime.abort import AbortController
from openclaw_runtime.agent import tool
from openclaw_runtime.containment import PluginFault
from openclaw_runtime.events import Event
from openclaw_runtime.runner import run_state
from openclaw_runtime.runner.attempt import RECORDED_KINDS
from openclaw_runtime.runner.event_kinds import ALL_EVENT_KINDS
from openclaw_runtime.runner.request import RunRequest
from openclaw_runtime.testing import FakeError, FakeRequest, FakeResponse, event_label, text
from openclaw_runtime.testing import tool_call as call_step

from .run_support import ProbeProvider, probe_config

pytestmark = pytest.mark.anyio


def _label(event: Event) -> str:
    if event.type == "message_update":
        return f"message_update:{event.assistant_message_event.type}"  # type: ignore[attr-defined]
    label = event_label(event)
    for name in ("tool_name", "plugin", "hook"):
        value = getattr(event, name, None)
        if isinstance(value, str):
            label += f":{value}"
    return label


class _Callback:
    def __init__(self, log: list[str], kinds: frozenset[str] | None) -> None:
        self.log = log
        if kinds is not None:
            self.event_kinds = kinds

    def __call__(self, event: Event) -> None:
        self.log.append(_label(event))


class _Observer:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    @hookimpl
    def on_agent_event(self, event: Event, session_id: str | None) -> None:
        self.log.append(_label(event))


#: name → (callback kinds: None for no callback, ALL for no declaration; plugin; block replies)
LISTENERS: dict[str, tuple[Any, bool, bool]] = {
    "none": (None, False, False),
    "callback": (ALL_EVENT_KINDS, False, False),
    "callback_tools": (frozenset({"tool_execution_end", "run_end"}), False, False),
    "callback_updates": (frozenset({"message_update", "plugin_fault"}), False, False),
    "callback_starts": (frozenset({"turn_start", "message_start", "agent_start"}), False, False),
    "plugin": (None, True, False),
    "blocks": (None, False, True),
    "blocks_and_faults": (frozenset({"plugin_fault"}), False, True),
}


class _World:
    """What one run logs: the stream's own steps interleave with the listeners' events."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.plugin_log: list[str] = []
        self.blocks: list[str] = []
        self.beats = 0


def _tool_results(request: FakeRequest) -> int:
    return sum(1 for m in request.context.messages if getattr(m, "role", "") == "toolResult")


def _responder(world: _World, calls: int, error_second: bool = False) -> Callable[..., Any]:
    state = {"n": 0}

    def respond(request: FakeRequest) -> FakeResponse:
        state["n"] += 1
        world.log.append(f"request {state['n']}")
        if error_second and state["n"] == 2:  # after a tool ran
            return FakeResponse(error=FakeError("overloaded", status=529))
        done = _tool_results(request)
        if done < calls:
            return FakeResponse([text(f"step {done} of the work"), call_step("work", {"n": done})])
        return FakeResponse([text("All done.\n\nThe answer is here, in two blocks.")])

    return respond


async def _scenario(
    name: str, listeners: str, tmp_path: Path, world: _World, old_path: bool
) -> dict[str, Any]:
    callback_kinds, with_plugin, with_blocks = LISTENERS[listeners]
    controller = AbortController()
    release = anyio.Event()
    started = anyio.Event()
    agent: dict[str, Any] = {}
    plugins: list[Any] = []

    @tool
    async def work(n: int) -> str:
        """Do a piece of work."""
        world.log.append(f"tool {n}")
        if name == "abort" and n == 1:
            controller.abort()
        if name in ("steer", "timeout") and n == 0:
            started.set()
            await release.wait()
        return f"piece {n}"

    respond = _responder(world, calls=3, error_second=name == "provider_error")
    if name == "timeout":
        agent["timeout_seconds"] = 0.5
    if name == "fault":

        def broken(messages: list[Any], policy: Any) -> list[Any]:
            world.log.append("sanitizer raised")
            raise RuntimeError("sanitizer bug")

        class Sanitizers:
            @hookimpl
            def register_transcript_sanitizers(self, register: Any) -> None:
                register("broken", broken)

        plugins.append(("sanitizers", Sanitizers()))
    if with_plugin:
        plugins.append(("observer", _Observer(world.plugin_log)))
    provider = ProbeProvider(respond)
    runtime = Runtime(
        probe_config(tmp_path / ("old" if old_path else "new"), **agent),
        plugins=[("probe", provider.plugin()), *plugins],
        load_entrypoints=False,
        env={},
    )
    runtime.retry_backoff_scale = 0
    options: dict[str, Any] = {"session_id": "s1", "tools": [work]}
    if callback_kinds is not None:
        kinds = None if callback_kinds is ALL_EVENT_KINDS else callback_kinds
        options["on_event"] = _Callback(world.log, kinds)
    if with_blocks:
        options["block_streaming"] = True
        options["on_block_reply"] = lambda payload: world.blocks.append(payload.text)
    if name == "abort":
        options["abort_signal"] = controller.signal
    result: Any = None
    async with runtime:

        async def go() -> None:
            nonlocal result
            result = await runtime.run("start the work", **options)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(go)
                if name == "steer":
                    await started.wait()
                    assert (await runtime.steer("and be quick", session_id="s1")).accepted
                    release.set()
        raw = await anyio.Path(result.session_file).read_text()
        entries = [json.loads(line) for line in raw.splitlines() if line.strip()]
    return {
        "ok": result.ok,
        "text": result.text,
        "outcome": {
            k: v for k, v in result.outcome.to_dict().items() if k not in ("startedAt", "endedAt")
        },
        "payloads": [p.text for p in result.payloads],
        "attempts": result.attempts,
        "faults": [(f.plugin, f.hook) for f in result.faults],
        "error": None if result.error is None else str(result.error),
        "transcript": [_entry(e) for e in entries],
    }


def _entry(entry: dict[str, Any]) -> Any:
    message = entry.get("message") or {}
    content = message.get("content")
    if isinstance(content, list):
        content = [b.get("text") or b.get("name") for b in content]
    return (entry.get("type"), message.get("role"), message.get("stopReason"), repr(content))


async def _observed(
    name: str, listeners: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old_path: bool
) -> tuple[_World, dict[str, Any]]:
    world = _World()
    with monkeypatch.context() as patch:
        if old_path:  # the kernel builds every kind, as before the gate
            patch.setattr(run_state.RunState, "_listened_kinds", lambda self: ALL_EVENT_KINDS)
        beat = run_state.RunState.heartbeat

        def counted(self: run_state.RunState) -> None:
            world.beats += 1
            beat(self)

        patch.setattr(run_state.RunState, "heartbeat", counted)
        outcome = await _scenario(name, listeners, tmp_path, world, old_path)
    return world, outcome


SCENARIOS = ["tool_loop", "provider_error", "abort", "timeout", "steer", "fault"]


@pytest.mark.parametrize("listeners", sorted(LISTENERS))
@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_every_listener_sees_what_it_saw_before(
    scenario: str, listeners: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, old_outcome = await _observed(scenario, listeners, tmp_path, monkeypatch, True)
    new, outcome = await _observed(scenario, listeners, tmp_path, monkeypatch, False)
    assert new.log == old.log
    assert new.plugin_log == old.plugin_log
    assert new.blocks == old.blocks
    assert new.beats == old.beats
    assert outcome == old_outcome
    # the scenario did what it says
    assert any(line.startswith("tool ") for line in old.log), (old.log, old_outcome)
    if scenario == "timeout":
        assert "timed out" in str(old_outcome["outcome"]).lower() or not old_outcome["ok"]
    if scenario == "fault":
        assert old_outcome["faults"]
    if LISTENERS[listeners][2]:
        assert old.blocks


async def test_the_gate_needs_every_kind_while_a_fault_waits(tmp_path: Path) -> None:
    provider = ProbeProvider()
    runtime = Runtime(
        probe_config(tmp_path), plugins=[("probe", provider.plugin())], load_entrypoints=False
    )
    async with runtime:
        state = run_state.RunState(runtime, RunRequest(prompt="hi"), None)  # type: ignore[arg-type]
        assert state.needed_kinds == RECORDED_KINDS | state.reply_observer.observed_kinds
        assert "message_start" not in state.needed_kinds
        state.session_id = "s1"
        state._on_plugin_fault(PluginFault("p", "h", "boom", 0.0))
        assert state.needed_kinds is ALL_EVENT_KINDS
        await state.report_faults()
        assert "message_start" not in state.needed_kinds
