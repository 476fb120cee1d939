"""A tool batch with one call to run runs it in place (no task group, no task of its own);
with several, each still runs in its own task, concurrently (``test_agent_loop``)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from openclaw_runtime.agent import Agent, AgentTool
from openclaw_runtime.testing import EventRecorder, FakeProvider, fake_model, tool_call

pytestmark = pytest.mark.anyio


def task_recording_tool(name: str, seen: dict[str, int]) -> AgentTool:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        seen[call_id] = anyio.get_current_task().id
        return name

    return AgentTool(
        name=name,
        description=f"{name} tool",
        parameters={"type": "object", "properties": {}},
        execute=execute,
    )


async def run_batch(*calls: Any) -> tuple[dict[str, int], dict[str, int], EventRecorder]:
    provider = FakeProvider()
    provider.reply(*calls)
    provider.reply("done")
    in_tool: dict[str, int] = {}
    at_start: dict[str, int] = {}
    agent = Agent(
        model=fake_model(),
        stream_fn=provider,
        tools=[task_recording_tool("a", in_tool), task_recording_tool("b", in_tool)],
    )
    recorder = EventRecorder()
    agent.subscribe(recorder)

    def on_event(event: Any, _signal: Any) -> None:
        if event.type == "tool_execution_start":
            at_start[event.tool_call_id] = anyio.get_current_task().id

    agent.subscribe(on_event)
    with anyio.fail_after(10):
        await agent.prompt("go")
    return in_tool, at_start, recorder


async def test_one_call_runs_in_the_loops_own_task() -> None:
    in_tool, at_start, recorder = await run_batch(tool_call("a", {}, id="ca"))
    assert in_tool == at_start  # the task that announced it ran it
    assert [e.tool_name for e in recorder.of("tool_execution_end")] == ["a"]
    results = [
        e.message.tool_name for e in recorder.of("message_end") if e.message.role == "toolResult"
    ]
    assert results == ["a"]


async def test_two_calls_each_run_in_a_task_of_their_own() -> None:
    in_tool, at_start, recorder = await run_batch(
        tool_call("a", {}, id="ca"), tool_call("b", {}, id="cb")
    )
    assert set(in_tool) == {"ca", "cb"} and in_tool["ca"] != in_tool["cb"]
    assert at_start["ca"] not in in_tool.values()
    assert sorted(e.tool_name for e in recorder.of("tool_execution_end")) == ["a", "b"]
