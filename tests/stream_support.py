"""A provider's event stream built from a short description, for the stream-repair tests.

``provider_events(("text", ["Hel", "lo"]), ("call", ToolCall(...)), reason="toolUse")``
yields what a provider streams for those blocks: ``start``, each block's start, deltas and
end, into one mutable partial message, then ``done`` (or ``error`` with ``error=``; no
terminal event at all with ``reason=None``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from openclaw_runtime.events import (
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
from openclaw_runtime.messages import AssistantMessage, TextContent, ThinkingContent

__all__ = ["provider_events"]


def provider_events(
    *blocks: tuple[str, Any], reason: str | None = "stop", error: str | None = None
) -> Iterator[Any]:
    """``("text", [chunks])``, ``("thinking", [chunks])`` or ``("call", ToolCall)`` blocks as a
    provider streams them, ending with ``done`` for ``reason``, ``error`` for ``error``
    (``"aborted"`` makes it an aborted turn) or, with ``reason=None``, without an end."""
    message = AssistantMessage(api="fake", provider="fake", model="fake-model")
    yield Start(message)
    for index, (kind, value) in enumerate(blocks):
        if kind == "text":
            block = TextContent(text="")
            message.content.append(block)
            yield TextStart(index, message)
            for chunk in value:
                block.text += chunk
                yield TextDelta(index, chunk, message)
            yield TextEnd(index, block.text, message)
        elif kind == "thinking":
            thought = ThinkingContent(thinking="")
            message.content.append(thought)
            yield ThinkingStart(index, message)
            for chunk in value:
                thought.thinking += chunk
                yield ThinkingDelta(index, chunk, message)
            yield ThinkingEnd(index, thought.thinking, message)
        else:
            message.content.append(value)
            yield ToolCallStart(index, message)
            yield ToolCallDelta(index, "{}", message)
            yield ToolCallEnd(index, value, message)
    if error is not None:
        message.stop_reason = "aborted" if error == "aborted" else "error"
        message.error_message = error
        yield Error(message.stop_reason, message)
    elif reason is not None:
        message.stop_reason = reason  # type: ignore[assignment]
        yield Done(reason, message)  # type: ignore[arg-type]
