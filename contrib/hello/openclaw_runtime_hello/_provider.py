"""A provider that greets: the smallest complete ``StreamFn``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from openclaw_runtime.events import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Done,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
)
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import AssistantMessage, TextContent, UserMessage

FORBIDDEN_WORD = "forbidden"
HELLO_MODEL = Model(id="greeter", api="hello", provider="hello", context_window=32_000)


def hello_stream_fn(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Answer ``Hello, <last user text>!``."""
    return AssistantMessageEventStream(_greet(model, context))


async def _greet(model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
    message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
    yield Start(message)
    last = next((m for m in reversed(context.messages) if isinstance(m, UserMessage)), None)
    greeting = f"Hello, {last.text().strip() if last else 'stranger'}!"
    block = TextContent(text=greeting)
    message.content.append(block)
    yield TextStart(0, message)
    yield TextDelta(0, greeting, message)
    yield TextEnd(0, greeting, message)
    yield Done("stop", message)
