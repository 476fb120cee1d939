"""A runtime's agents get the registered stream repairers: text tool calls become real ones."""

from __future__ import annotations

import pytest

from openclaw_runtime import hookimpl, tool
from openclaw_runtime.messages import ToolCall, ToolResultMessage
from openclaw_runtime.testing import FakeProvider, FakeProviderPlugin, text

pytestmark = pytest.mark.anyio


@tool
async def lookup(query: str) -> str:
    """Look something up."""
    return f"result for {query}"


async def test_plain_text_tool_call_is_executed_through_the_runtime(runtime_factory):
    provider = FakeProvider()
    provider.reply(text('{"name": "lookup", "arguments": {"query": "otters"}}'))
    provider.reply("Otters hold hands while sleeping.")

    runtime = runtime_factory(plugins=[("fake-provider", FakeProviderPlugin(provider))])
    agent = runtime.create_agent(model="fake/fake-model", tools=[lookup])
    await agent.prompt("Tell me about otters")

    call_message = agent.state.messages[1]
    assert call_message.stop_reason == "toolUse"
    (call,) = [b for b in call_message.content if isinstance(b, ToolCall)]
    assert (call.name, call.arguments) == ("lookup", {"query": "otters"})
    result = agent.state.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.text() == "result for otters"
    assert agent.state.messages[-1].text() == "Otters hold hands while sleeping."


async def test_a_broken_format_registration_is_reported_not_fatal(runtime_factory):
    class Broken:
        @hookimpl
        def register_tool_call_formats(self, register):
            register("not-a-format", "just a string")

    runtime = runtime_factory(plugins=[("broken-formats", Broken())])
    agent = runtime.create_agent(model="echo")
    await agent.prompt("hi")
    assert agent.state.messages[-1].text() == "echo: hi"
    assert [(f.plugin, f.hook) for f in runtime.hooks.faults] == [
        ("broken-formats", "register_tool_call_formats")
    ]
