"""The reply package's smaller parts: the stream transformer over builder-made events, the
messaging-tool tracker, the block-reply observer, verbose lines, the usage line, settings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from openclaw_runtime.events import (
    AssistantMessageEvent,
    Event,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    TextDelta,
    TextEnd,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from openclaw_runtime.messages import (
    AssistantMessage,
    Cost,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from openclaw_runtime.providers.builder import MessageBuilder
from openclaw_runtime.providers.echo import ECHO_MODEL
from openclaw_runtime.reply import (
    INLINE_TAGS_SIGNATURE,
    MAX_TRACKED_SENDS,
    BlockChunking,
    MessagingToolTracker,
    ReplyStreamObserver,
    messaging_send_text,
    split_message_tags,
    split_reply_tag_events,
)
from openclaw_runtime.reply.settings import ReplySettings
from openclaw_runtime.reply.usage import format_usage_line
from openclaw_runtime.reply.verbose import FULL_RESULT_CHARS, verbose_tool_lines
from openclaw_runtime.runner.messaging_dedupe import is_messaging_tool_duplicate

pytestmark = pytest.mark.anyio

# --------------------------------------------------------------------------- stream transformer


def provider_events(
    deltas: Sequence[str], *, reasoning: str = "", call: bool = False
) -> list[AssistantMessageEvent]:
    """What a provider built with ``MessageBuilder`` emits: native reasoning, text deltas,
    an optional tool call, then ``done``."""
    builder = MessageBuilder(ECHO_MODEL)
    out: list[AssistantMessageEvent] = [builder.start()]
    if reasoning:
        builder.thinking(reasoning, out, signature="reasoning_content")
    for delta in deltas:
        builder.text(delta, out)
    if call:
        builder.tool_call_start(0, "call_1", "read", out)
        builder.tool_call_args(0, '{"path": "a.md"}', out)
    builder.finish("toolUse" if call else "stop", out)
    return out


async def transformed(events: list[AssistantMessageEvent]) -> list[AssistantMessageEvent]:
    async def source() -> AsyncIterator[AssistantMessageEvent]:
        for event in events:
            yield event

    return [event async for event in split_reply_tag_events(source())]


def check_indices(events: list[AssistantMessageEvent]) -> None:
    """Every block event points at a block of its kind in the message it carries."""
    kinds = {"text": TextContent, "thinking": ThinkingContent, "toolcall": ToolCall}
    for event in events:
        index = getattr(event, "content_index", None)
        if index is None:
            continue
        expected = kinds[event.type.rsplit("_", 1)[0]]
        assert isinstance(event.partial.content[index], expected), event  # type: ignore[attr-defined]


TAGGED = "<think>plan</think>The answer<think> (check)</think> is 4."


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, len(TAGGED)])
async def test_tag_events_become_thinking_events_at_any_delta_size(size: int) -> None:
    deltas = [TAGGED[i : i + size] for i in range(0, len(TAGGED), size)]
    events = await transformed(provider_events(deltas, reasoning="native", call=True))
    check_indices(events)
    text = "".join(e.delta for e in events if e.type == "text_delta")  # type: ignore[attr-defined]
    thinking = "".join(e.delta for e in events if e.type == "thinking_delta")  # type: ignore[attr-defined]
    assert text == "The answer is 4."
    assert thinking == "nativeplan (check)"
    done = events[-1]
    assert done.type == "done"
    final = done.message  # type: ignore[attr-defined]
    assert [type(b).__name__ for b in final.content] == [
        "ThinkingContent", "ThinkingContent", "TextContent", "ThinkingContent", "TextContent",
        "ToolCall",
    ]  # fmt: skip
    assert final.content[0].thinking_signature == "reasoning_content"  # native block kept
    assert final.content[1].thinking_signature == INLINE_TAGS_SIGNATURE
    assert final.text() == "The answer\n is 4."  # two text blocks, as the tags cut them
    assert final.tool_calls()[0].arguments == {"path": "a.md"}
    # the streamed partial ends up with the same blocks as the final message
    assert events[-2].partial.content == final.content  # type: ignore[attr-defined]


async def test_untagged_text_passes_with_the_same_content() -> None:
    source = provider_events(["Hello", " world"])
    events = await transformed(source)
    assert [e.type for e in events] == [e.type for e in source]
    assert events[-1].message is source[-1].message  # type: ignore[attr-defined]


def test_split_message_tags_on_a_finished_message() -> None:
    message = AssistantMessage(content=[TextContent(text="<think>r</think>Hi")])
    split = split_message_tags(message)
    assert split.content == [
        ThinkingContent(thinking="r", thinking_signature=INLINE_TAGS_SIGNATURE),
        TextContent(text="Hi"),
    ]
    assert message.content == [TextContent(text="<think>r</think>Hi")]  # not mutated
    assert split_message_tags(split) is split  # nothing left to split


# --------------------------------------------------------------------------- messaging sends

SENDS = [
    ("message", {"action": "send", "to": "x", "message": "Hi there"}, "Hi there"),
    ("message", {"action": "thread-reply", "message": "In thread"}, "In thread"),
    ("message", {"message": "No action given"}, "No action given"),
    ("message", {"action": "react", "message": "👍"}, None),
    ("message", {"action": "send", "message": "   "}, None),
    ("sessions_send", {"sessionKey": "k", "message": "Relay"}, "Relay"),
    ("Message", {"text": "Case and key"}, "Case and key"),
    ("read", {"message": "not a messaging tool"}, None),
    ("message", "not a mapping", None),
]


@pytest.mark.parametrize(("name", "args", "text"), SENDS)
def test_messaging_send_text(name: str, args: Any, text: str | None) -> None:
    assert messaging_send_text(name, args) == text


def test_only_successful_sends_are_committed_and_the_list_is_capped() -> None:
    tracker = MessagingToolTracker({"message", "notify"})
    tracker.tool_started("c1", "message", {"message": "first"})
    tracker.tool_started("c2", "notify", {"content": "second"})
    tracker.tool_started("c3", "read", {"path": "x"})
    assert tracker.sent_texts == [] and not tracker.did_send()  # pending is not sent
    tracker.tool_ended("c2", is_error=True)
    tracker.tool_ended("c1", is_error=False)
    tracker.tool_ended("c3", is_error=False)
    assert tracker.sent_texts == ["first"] and tracker.did_send()
    for n in range(MAX_TRACKED_SENDS + 5):
        tracker.tool_started(f"k{n}", "message", {"message": f"text {n}"})
        tracker.tool_ended(f"k{n}", is_error=False)
    assert len(tracker.sent_texts) == MAX_TRACKED_SENDS
    assert tracker.sent_texts[-1] == f"text {MAX_TRACKED_SENDS + 4}"


# --------------------------------------------------------------------------- block observer


def text_events(message: AssistantMessage, deltas: Sequence[str]) -> list[Event]:
    events: list[Event] = [MessageStart(message)]
    for delta in deltas:
        events.append(MessageUpdate(message, TextDelta(0, delta, message)))
    events.append(MessageUpdate(message, TextEnd(0, "".join(deltas), message)))
    events.append(MessageEnd(message))
    return events


async def test_observer_sends_blocks_as_they_complete_and_drops_repeats() -> None:
    sent: list[str] = []
    observer = ReplyStreamObserver(
        send=sent.append,
        chunking=BlockChunking(min_chars=1, max_chars=200, flush_on_paragraph=True),
        is_duplicate=is_messaging_tool_duplicate,
    )
    message = AssistantMessage()
    already = "This exact sentence was sent by the tool."
    await observer.observe(ToolExecutionStart("c1", "message", {"message": already}))
    await observer.observe(ToolExecutionEnd("c1", "message", "ok", False))
    deltas = ["First block", " here.\n", "\nSecond", " block.\n\n", already, "\n\nLast.  "]
    seen_at: list[int] = []
    for event in text_events(message, deltas):
        await observer.observe(event)
        seen_at.append(len(sent))
    assert sent == ["First block here.", "Second block.", "Last."]
    assert seen_at[2] == 0 and seen_at[3] == 1  # the first block left before the rest arrived
    # the same block twice in a row is sent once
    again = ReplyStreamObserver(send=sent.append, chunking=BlockChunking(min_chars=1))
    sent.clear()
    for event in text_events(message, ["Same."]) + text_events(message, ["Same."]):
        await again.observe(event)
    assert sent == ["Same."]


async def test_observer_without_send_only_tracks() -> None:
    observer = ReplyStreamObserver()
    assert observer.chunker is None
    for event in text_events(AssistantMessage(), ["a\n\nb"]):
        await observer.observe(event)
    assert observer.sent_blocks == []


# --------------------------------------------------------------------------- verbose, usage


def tool_turn(result_text: str, *, is_error: bool = False) -> list[Any]:
    call = ToolCall(id="c1", name="exec", arguments={"command": "ls -la\n--color"})
    return [
        AssistantMessage(content=[call], stop_reason="toolUse"),
        ToolResultMessage(
            tool_call_id="c1",
            tool_name="exec",
            content=[TextContent(text=result_text)],
            is_error=is_error,
        ),
    ]


def test_verbose_lines_by_mode() -> None:
    messages = tool_turn("total 3\nfile a")
    assert verbose_tool_lines(messages, "off") == []
    (on,) = verbose_tool_lines(messages, "on")
    assert (on.tool_name, on.meta, on.is_error) == ("exec", "ls -la", False)
    (full,) = verbose_tool_lines(messages, "full")
    assert full.meta == "ls -la → total 3…"
    (long,) = verbose_tool_lines(tool_turn("x" * 500, is_error=True), "full")
    assert long.meta == "ls -la → " + "x" * FULL_RESULT_CHARS + "…" and long.is_error


def test_usage_line() -> None:
    usage = Usage(input=120, output=48, cache_read=30, cache_write=0, total_tokens=198)
    assert format_usage_line(usage) == (
        "usage: 120 in · 48 out · 30 cache read · 0 cache write · 198 total"
    )
    usage.cost = Cost(total=0.00421)
    assert format_usage_line(usage).endswith(" · 198 total · $0.0042")


def test_reply_settings_validate_and_build_the_chunking() -> None:
    settings = ReplySettings(block_min_chars=10, block_max_chars=40, block_break="newline")
    assert settings.chunking() == BlockChunking(10, 40, "newline", True)
    for bad in ({"block_break": "word"}, {"verbose": "loud"}, {"block_min_chars": 0}, {"x": 1}):
        with pytest.raises(ValidationError):
            ReplySettings(**bad)  # type: ignore[arg-type]
