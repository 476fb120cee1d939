"""The kernel converts only what a request added: the same messages as converting everything.

``PrefixConverter`` (the default ``convert_to_llm`` of one loop run) keeps the previous
request's converted prefix. Random histories that grow, shrink and have messages replaced are
converted both ways at every step; a tool loop sends the provider what a full conversion gives
at every request (asyncio and trio).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from openclaw_runtime.agent import AgentContext, AgentLoopConfig, run_agent_loop
from openclaw_runtime.agent.convert import PrefixConverter
from openclaw_runtime.agent.tools import AgentTool
from openclaw_runtime.agent.types import default_convert_to_llm
from openclaw_runtime.messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.testing import EventRecorder, FakeProvider, fake_model, tool_call

MODEL = fake_model()


def dumped(messages: list[Any]) -> list[Any]:
    return [(type(m).__name__, m.model_dump(mode="json")) for m in messages]


def _message(rng: random.Random, n: int) -> Any:
    kind = rng.choice(["user", "assistant", "result", "custom", "compaction", "branch", "other"])
    if kind == "user":
        return UserMessage(content=f"u{n}", timestamp=n)
    if kind == "assistant":
        return AssistantMessage(content=[ToolCall(id=f"c{n}", name="read")], timestamp=n)
    if kind == "result":
        return ToolResultMessage(tool_call_id=f"c{n}", tool_name="read", timestamp=n)
    if kind == "custom":
        content: Any = f"note {n}" if rng.random() < 0.5 else [TextContent(text=f"n{n}")]
        return CustomMessage(custom_type="note", content=content, timestamp=n)
    if kind == "compaction":
        return CompactionSummaryMessage(summary=f"s{n}", tokens_before=1, timestamp=n)
    if kind == "branch":
        return BranchSummaryMessage(summary=f"b{n}", from_id="x", timestamp=n)
    return {"role": "bashExecution", "n": n}  # providers never see it: dropped


@pytest.mark.parametrize("seed", range(20))
def test_prefix_conversion_equals_converting_everything(seed: int) -> None:
    rng = random.Random(seed)
    convert = PrefixConverter()
    history: list[Any] = []
    for step in range(60):
        action = rng.random()
        if action < 0.7 or not history:
            history = [*history, *(_message(rng, step * 10 + i) for i in range(rng.randint(1, 3)))]
        elif action < 0.8:  # a message of the prefix replaced by another object
            index = rng.randrange(len(history))
            history = [*history]
            history[index] = _message(rng, step * 10)
        elif action < 0.9:  # the history got shorter (compaction, a new attempt)
            history = history[: rng.randrange(len(history))]
        # else: the very same messages again (a retried request)
        got = convert(list(history))
        assert dumped(got) == dumped(default_convert_to_llm(history)), f"seed {seed}, {step}"
        got.clear()  # the caller's list is its own: the kept prefix does not change


def test_converted_custom_messages_are_kept_across_requests() -> None:
    note = CustomMessage(custom_type="note", content="remember", timestamp=5)
    convert = PrefixConverter()
    first = convert([note])
    second = convert([note, UserMessage(content="go", timestamp=6)])
    assert first[0] is second[0]  # converted once, the same user message at every request
    assert dumped(second[:1]) == dumped(default_convert_to_llm([note]))


@pytest.mark.anyio
async def test_a_tool_loop_sends_what_a_full_conversion_gives() -> None:
    async def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        return f"read {args.get('path')}"

    read = AgentTool(
        name="read",
        description="read a file",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
        execute=execute,
    )
    provider = FakeProvider()
    for n in range(4):
        provider.reply(tool_call("read", {"path": f"f{n}"}, id=f"c{n}"))
    provider.reply("done")
    before = [
        CompactionSummaryMessage(summary="before", tokens_before=1, timestamp=1),
        CustomMessage(custom_type="note", content="hidden note", timestamp=2),
    ]
    context = AgentContext("", list(before), [read])
    messages = await run_agent_loop(
        [UserMessage(content="go", timestamp=3)],
        context,
        AgentLoopConfig(model=MODEL),
        EventRecorder(),
        stream_fn=provider,
    )
    assert [m.role for m in messages].count("toolResult") == 4
    history = [*before, *messages]
    assert len(provider.history) == 5
    for request in provider.history:
        sent = request.context.messages
        assert dumped(sent) == dumped(default_convert_to_llm(history)[: len(sent)])
    # the last request sent the whole history but the final answer
    assert len(provider.history[-1].context.messages) == len(default_convert_to_llm(history)) - 1


def test_a_replaced_message_converts_from_there_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request whose history differs from the previous one's at position k (a fresh copy
    of a recent tool result) converts the messages from k on, not the whole history."""
    from openclaw_runtime.agent import convert as convert_module

    converted: list[Any] = []
    real = convert_module.convert_agent_message_to_llm

    def counting(message: Any) -> Any:
        converted.append(message)
        return real(message)

    monkeypatch.setattr(convert_module, "convert_agent_message_to_llm", counting)
    rng = random.Random(7)
    history = [_message(rng, n) for n in range(40)]
    convert = PrefixConverter()
    convert(history)
    assert len(converted) == 40
    for k in (39, 30, 5, 0):
        converted.clear()
        history = [*history[:k], _message(rng, 100 + k), *history[k + 1 :], _message(rng, 200 + k)]
        got = convert(history)
        assert converted == history[k:], k
        assert dumped(got) == dumped(default_convert_to_llm(history)), k
    converted.clear()
    shorter = history[:12]
    assert dumped(convert(shorter)) == dumped(default_convert_to_llm(shorter))
    assert converted == []  # a shorter history of the same objects converts nothing
