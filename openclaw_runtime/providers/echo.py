"""The ``echo`` provider: answers with the last user message. Offline smoke tests and demos."""

from __future__ import annotations

from collections.abc import AsyncIterator

from ..events import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Done,
    Error,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
)
from ..llm import Context, Model, StreamOptions
from ..messages import AssistantMessage, TextContent, UserMessage

__all__ = ["ECHO_MODEL", "echo_stream_fn"]

ECHO_MODEL = Model(
    id="echo",
    name="Echo (offline)",
    api="echo",
    provider="echo",
    context_window=1_000_000,
    max_tokens=100_000,
)


def echo_stream_fn(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Stream ``"echo: <last user text>"`` word by word."""
    return AssistantMessageEventStream(_echo(model, context, options))


async def _echo(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
    yield Start(message)
    last = next((m for m in reversed(context.messages) if isinstance(m, UserMessage)), None)
    reply = "echo: " + (last.text() if last is not None else "")
    block = TextContent(text="")
    message.content.append(block)
    yield TextStart(0, message)
    for word in reply.split(" "):
        if options.signal is not None and options.signal.aborted:
            message.stop_reason = "aborted"
            message.error_message = "Request was aborted"
            yield Error("aborted", message)
            return
        piece = word if not block.text else " " + word
        block.text += piece
        yield TextDelta(0, piece, message)
    yield TextEnd(0, block.text, message)
    yield Done("stop", message)
