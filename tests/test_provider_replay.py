"""The replay transform (``providers.replay``) copies only the messages it changes.

It copied every assistant turn and tool result it kept, so converting a long history for
Anthropic or Gemini made a pydantic copy per message: most of the time a 10,000-message
body took (≈ 94 → 63 ms for Claude, 65 → 45 ms for Gemini; ``benchmarks/provider_body.py``).
A message replayed as it is now is the input's own object; one the transform changes is a
copy, and the input is never changed.
"""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.llm import Model
from openclaw_runtime.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.providers.replay import prepare_replay_messages
from openclaw_runtime.testing.random_tool_loops import RandomToolLoop

CLAUDE = Model(
    id="claude-opus-4-6",
    api="anthropic-messages",
    provider="anthropic",
    base_url="http://127.0.0.1:9",
    context_window=200_000,
    max_tokens=8192,
    input=["text", "image"],
)
TEXT_ONLY = CLAUDE.model_copy(update={"input": ["text"]})
OWN = {"api": CLAUDE.api, "provider": CLAUDE.provider, "model": CLAUDE.id}
OTHER = {"api": "openai-completions", "provider": "openai", "model": "gpt-4o"}
IMAGE = ImageContent(data="aGk=", mime_type="image/png")


def _turn(*blocks: Any, origin: dict[str, str] = OWN, stop: str = "toolUse") -> AssistantMessage:
    return AssistantMessage(content=list(blocks), stop_reason=stop, **origin)  # type: ignore[arg-type]


def _result(call_id: str, *blocks: Any) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="read", content=list(blocks or [TextContent(text="ok")])
    )


SIGNED = ThinkingContent(thinking="plan", thinking_signature="c2ln")


@pytest.mark.parametrize(
    ("model", "message", "kept"),
    [
        (CLAUDE, UserMessage(content="hello"), True),
        (CLAUDE, UserMessage(content=[TextContent(text="see"), IMAGE]), True),
        (TEXT_ONLY, UserMessage(content=[TextContent(text="plain")]), True),
        (TEXT_ONLY, UserMessage(content=[TextContent(text="see"), IMAGE]), False),  # a note
        (CLAUDE, _turn(SIGNED, ToolCall(id="toolu_1", name="read")), True),  # its own turn
        (CLAUDE, _turn(TextContent(text="done"), stop="stop"), True),
        (CLAUDE, _turn(SIGNED, origin=OTHER, stop="stop"), False),  # thinking becomes text
        (CLAUDE, _turn(TextContent(text="done"), origin=OTHER, stop="stop"), False),
        (CLAUDE, _turn(ToolCall(id=" toolu_1 ", name="read")), False),  # the id trimmed
        (CLAUDE, _turn(TextContent(text="half"), stop="error"), False),  # the failure marker
    ],
)
def test_a_message_replayed_as_it_is_is_not_copied(model: Model, message: Any, kept: bool) -> None:
    before = message.model_dump()
    replayed = prepare_replay_messages([message], model)
    assert (replayed[0] is message) is kept
    assert message.model_dump() == before  # the input never changes


@pytest.mark.parametrize(
    ("model", "result", "kept"),
    [
        (CLAUDE, _result("toolu_1"), True),
        (CLAUDE, _result("toolu_1", TextContent(text="shot"), IMAGE), True),
        (TEXT_ONLY, _result("toolu_1", TextContent(text="shot"), IMAGE), False),  # a note
        (CLAUDE, _result(" toolu_1 "), False),  # the id trimmed, as its call's
    ],
)
def test_a_result_replayed_as_it_is_is_not_copied(model: Model, result: Any, kept: bool) -> None:
    before = result.model_dump()
    history = [UserMessage(content="go"), _turn(ToolCall(id="toolu_1", name="read")), result]
    replayed = prepare_replay_messages(history, model)[2]
    assert isinstance(replayed, ToolResultMessage) and replayed.tool_call_id == "toolu_1"
    assert (replayed is result) is kept
    assert result.model_dump() == before


@pytest.mark.parametrize("model", [CLAUDE, TEXT_ONLY], ids=["images", "text only"])
@pytest.mark.parametrize("seed", range(10))
def test_random_histories_replay_without_changing_their_input(model: Model, seed: int) -> None:
    """Random conversations (other models' turns, failed turns, missing, stray and late
    results, images): the input is the same after the transform, the messages it returns
    as they are keep their order, and most are (the model's own turns, their results)."""
    loop = RandomToolLoop(seed, CLAUDE)
    for _ in range(60):
        loop.step()
    messages = list(loop.messages)
    before = [message.model_dump() for message in messages]
    replayed = prepare_replay_messages(messages, model)
    assert [message.model_dump() for message in messages] == before
    position = {id(message): index for index, message in enumerate(messages)}
    kept = [position[id(message)] for message in replayed if id(message) in position]
    assert kept == sorted(set(kept))  # in order, each once
    assert len(kept) >= len(replayed) // 2, (len(kept), len(replayed))
