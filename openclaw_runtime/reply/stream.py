"""The tag splitter as a stream transformer: reasoning tags become thinking blocks as they stream.

``split_reply_tag_events`` wraps a provider's assistant-message events. Text deltas run through
a ``ReplyTagSplitter`` (one per message); what it calls reasoning is re-emitted as
``thinking_start``/``thinking_delta``/``thinking_end`` on a thinking block, the reply as
``text_*`` events on a text block, so everything downstream (the kernel's ``message_update``
events the CLI prints, the transcript, the reply payloads, ``RunResult.text``) sees reasoning
only as thinking content. Native thinking and tool-call blocks pass through, re-indexed onto
the rewritten message.

The message the events carry (``partial``) is one ``AssistantMessage`` the transformer owns and
grows in place. ``done``/``error`` carry the provider's final message with its content split in
one go (``split_message_tags``) — the same blocks the deltas built, because the splitter's
output does not depend on chunking, and still right when a provider sends text it never
streamed. Thinking blocks are not replayed to providers, so reasoning a model wrote inline is
not fed back to it as if it were the visible answer.

``with_reply_tag_splitting(stream_fn)`` gives a ``StreamFn`` whose stream is split this way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..events import (
    AssistantMessageEvent,
    Done,
    Error,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..llm import Context, StreamFn
from ..messages import AssistantMessage, TextContent, ThinkingContent
from ..repair.compose import extend_stream_repairers
from .tag_free import splits_to_itself
from .tags import ReplyTagSplitter, Segment

__all__ = [
    "INLINE_TAGS_SIGNATURE",
    "split_message_tags",
    "split_reply_tag_events",
    "with_reply_tag_splitting",
]

#: ``thinking_signature`` of a thinking block split out of text. Like the OpenAI-compatible
#: provider's ``reasoning_content``, it names where the reasoning came from: the block is
#: complete reasoning (recovery treats unsigned thinking as a malformed block), and a turn
#: with this reasoning and no answer is the "reasoning only" case the runner retries.
INLINE_TAGS_SIGNATURE = "inline_tags"

_PASSTHROUGH_START = (ThinkingStart, ToolCallStart)
_PASSTHROUGH = (
    ThinkingStart,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallStart,
    ToolCallDelta,
    ToolCallEnd,
)


class _Rebuilder:
    """Builds the rewritten content of one message from provider blocks and split segments."""

    def __init__(self, out: AssistantMessage, *, enforce_final_tag: bool) -> None:
        self.out = out
        self.splitter = ReplyTagSplitter(enforce_final_tag=enforce_final_tag)
        self.index_map: dict[int, int] = {}
        self.current: tuple[str, int] | None = None  # (kind, out index) of the open split block

    def segments(self, segments: Sequence[Segment]) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        out = self.out
        for segment in segments:
            if self.current is None or self.current[0] != segment.kind:
                events.extend(self.close())
                index = len(out.content)
                if segment.kind == "text":
                    out.content.append(TextContent(text=""))
                    events.append(TextStart(index, out))
                else:
                    out.content.append(
                        ThinkingContent(thinking="", thinking_signature=INLINE_TAGS_SIGNATURE)
                    )
                    events.append(ThinkingStart(index, out))
                self.current = (segment.kind, index)
            index = self.current[1]
            block = out.content[index]
            if isinstance(block, TextContent):
                block.text += segment.text
                events.append(TextDelta(index, segment.text, out))
            elif isinstance(block, ThinkingContent):
                block.thinking += segment.text
                events.append(ThinkingDelta(index, segment.text, out))
        return events

    def close(self) -> list[AssistantMessageEvent]:
        if self.current is None:
            return []
        _, index = self.current
        self.current = None
        block = self.out.content[index]
        if isinstance(block, TextContent):
            return [TextEnd(index, block.text, self.out)]
        if isinstance(block, ThinkingContent):
            return [ThinkingEnd(index, block.thinking, self.out)]
        return []

    def end_text_block(self) -> list[AssistantMessageEvent]:
        return self.segments(self.splitter.flush()) + self.close()

    def passthrough_block(self, provider_index: int, block: Any) -> int:
        self.index_map[provider_index] = len(self.out.content)
        self.out.content.append(block)
        return self.index_map[provider_index]


def split_message_tags(
    message: AssistantMessage, *, enforce_final_tag: bool = False
) -> AssistantMessage:
    """``message`` with the tags of its text blocks split into thinking and text blocks
    (a copy; the message itself when nothing changes)."""
    if splits_to_itself(message, enforce_final_tag=enforce_final_tag):
        return message  # a plain reply: nothing to split (and no text block: nothing at all)
    rebuilder = _Rebuilder(
        message.model_copy(update={"content": []}), enforce_final_tag=enforce_final_tag
    )
    for index, block in enumerate(message.content):
        if isinstance(block, TextContent):
            rebuilder.segments(rebuilder.splitter.feed(block.text))
            rebuilder.end_text_block()
        else:
            rebuilder.passthrough_block(index, block)
    rebuilt = rebuilder.out
    if rebuilt.content == message.content:
        return message
    return rebuilt


def _reindexed(event: Any, index: int, out: AssistantMessage) -> AssistantMessageEvent:
    if isinstance(event, ThinkingStart):
        return ThinkingStart(index, out)
    if isinstance(event, ThinkingDelta):
        return ThinkingDelta(index, event.delta, out)
    if isinstance(event, ThinkingEnd):
        return ThinkingEnd(index, event.content, out)
    if isinstance(event, ToolCallStart):
        return ToolCallStart(index, out)
    if isinstance(event, ToolCallDelta):
        return ToolCallDelta(index, event.delta, out)
    if isinstance(event, ToolCallEnd):
        return ToolCallEnd(index, event.tool_call, out)
    raise TypeError(f"not a block event: {type(event).__name__}")


class ReplyTagSplitStage:
    """``split_reply_tag_events`` on one stream, fed event by event (a ``repair.stages``
    stage: the generator is this, driven by ``async for``)."""

    __slots__ = ("enforce_final_tag", "rebuilder")
    stops_at_terminal = False  # it passes whatever follows ``done`` / ``error``

    def __init__(self, enforce_final_tag: bool = False) -> None:
        self.enforce_final_tag = enforce_final_tag
        self.rebuilder: _Rebuilder | None = None

    def feed(self, event: AssistantMessageEvent) -> list[AssistantMessageEvent]:
        """The events to emit for ``event``."""
        rebuilder = self.rebuilder
        if isinstance(event, Start):
            out = event.partial.model_copy(update={"content": []})
            self.rebuilder = _Rebuilder(out, enforce_final_tag=self.enforce_final_tag)
            return [Start(out)]
        if isinstance(event, Done):
            pending = rebuilder.end_text_block() if rebuilder is not None else []
            pending.append(
                Done(
                    event.reason,
                    split_message_tags(event.message, enforce_final_tag=self.enforce_final_tag),
                )
            )
            return pending
        if isinstance(event, Error):
            pending = rebuilder.end_text_block() if rebuilder is not None else []
            pending.append(
                Error(
                    event.reason,
                    split_message_tags(event.error, enforce_final_tag=self.enforce_final_tag),
                )
            )
            return pending
        if rebuilder is None:
            return [event]
        if isinstance(event, TextStart):
            return []  # a block opens when the splitter has something for it
        if isinstance(event, TextDelta):
            return rebuilder.segments(rebuilder.splitter.feed(event.delta))
        if isinstance(event, TextEnd):
            return rebuilder.end_text_block()
        if isinstance(event, _PASSTHROUGH):
            pending = []
            if isinstance(event, _PASSTHROUGH_START):
                pending = rebuilder.end_text_block()
                block = event.partial.content[event.content_index]
                rebuilder.passthrough_block(event.content_index, block)
            index = rebuilder.index_map.get(event.content_index)
            if index is None:  # a block we never saw start: keep it visible
                block = event.partial.content[event.content_index]
                index = rebuilder.passthrough_block(event.content_index, block)
            pending.append(_reindexed(event, index, rebuilder.out))
            return pending
        return [event]

    def flush(self) -> list[AssistantMessageEvent]:
        """Nothing: at the input's end the generator just ends (what is held stays held)."""
        return []


async def split_reply_tag_events(
    events: AsyncIterator[AssistantMessageEvent],
    context: Context | None = None,
    *,
    enforce_final_tag: bool = False,
) -> AsyncIterator[AssistantMessageEvent]:
    """The provider's ``events`` with inline reasoning tags turned into thinking blocks."""
    stage = ReplyTagSplitStage(enforce_final_tag)
    async for event in events:
        for out in stage.feed(event):
            yield out


class _TagSplitting:
    """``split_reply_tag_events`` as a stream transformer (one per ``enforce_final_tag``
    value, made once: every attempt wraps its stream function with it)."""

    __slots__ = ("enforce_final_tag",)

    def __init__(self, enforce_final_tag: bool) -> None:
        self.enforce_final_tag = enforce_final_tag

    def __call__(
        self, events: AsyncIterator[AssistantMessageEvent], context: Context
    ) -> AsyncIterator[AssistantMessageEvent]:
        return split_reply_tag_events(events, context, enforce_final_tag=self.enforce_final_tag)

    def open_stage(self, context: Context) -> ReplyTagSplitStage:
        """The splitter on one stream as a ``repair.stages`` stage."""
        return ReplyTagSplitStage(self.enforce_final_tag)


_SPLITTING = (_TagSplitting(False), _TagSplitting(True))


def with_reply_tag_splitting(stream_fn: StreamFn, *, enforce_final_tag: bool = False) -> StreamFn:
    """``stream_fn`` whose streams have their reasoning tags split out (see the module doc).

    The splitter yields nothing after its input ends or raises, so when ``stream_fn`` already
    runs stream repairers it joins their chain (``extend_stream_repairers``) rather than
    wrapping a second repaired stream around them."""
    return extend_stream_repairers(stream_fn, (_SPLITTING[bool(enforce_final_tag)],))
