"""Closing a repaired stream finishes under cancellation.

A run's stream is the runtime's repaired stream (its repairers, a plugin's behind the guard)
with the tag splitter on top; closing it closes every layer under a shielded cancel scope.
Closed in a cancelled scope — after its first event or after ``done`` — it still closes the
provider to the end (a provider releases its HTTP response there), on asyncio and trio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from openclaw_runtime.containment import PluginGuard
from openclaw_runtime.events import AssistantMessageEvent, Done, Start
from openclaw_runtime.llm import Context, Model, StreamOptions, Tool
from openclaw_runtime.messages import AssistantMessage, TextContent
from openclaw_runtime.repair import PlainTextToolCallRepairer, apply_stream_repairers
from openclaw_runtime.repair.compose import guard_stream_repairer
from openclaw_runtime.reply import with_reply_tag_splitting
from openclaw_runtime.testing import fake_model

pytestmark = pytest.mark.anyio


class _SlowCloseProvider:
    """A provider stream whose close takes several event-loop steps (an HTTP release)."""

    def __init__(self, events: list[AssistantMessageEvent], closed: list[str]) -> None:
        self._events = list(events)
        self._closed = closed

    def __aiter__(self) -> _SlowCloseProvider:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        if not self._events:
            raise StopAsyncIteration
        return self._events.pop(0)

    async def aclose(self) -> None:
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        self._closed.append("provider")


async def _identity(
    events: AsyncIterator[AssistantMessageEvent], context: Context
) -> AsyncIterator[AssistantMessageEvent]:
    try:
        async for event in events:
            yield event
    finally:
        await anyio.lowlevel.checkpoint()  # a plugin stage whose cleanup awaits


async def read_until_cancelled(response: Any, stop_after: str) -> list[str]:
    """Read ``response`` until an event of type ``stop_after``, cancel the enclosing scope
    there and close the stream inside the cancelled scope; the event types seen."""
    seen: list[str] = []
    with anyio.fail_after(10):
        with anyio.CancelScope() as scope:
            try:
                async for event in response:
                    seen.append(event.type)
                    if event.type == stop_after:
                        scope.cancel()
                        break
            finally:
                await response.aclose()
    return seen


def _run_like_stream_fn(closed: list[str]) -> Any:
    message = AssistantMessage(
        content=[TextContent(text="hello")], api="fake", provider="fake", model="m"
    )

    def provider(model: Model, context: Context, options: StreamOptions) -> Any:
        return _SlowCloseProvider([Start(message), Done("stop", message)], closed)

    guard = PluginGuard()
    stages = [
        guard_stream_repairer(PlainTextToolCallRepairer(), guard=guard, plugin=None, name="p"),
        guard_stream_repairer(_identity, guard=guard, plugin="plug", name="i"),
    ]
    return with_reply_tag_splitting(apply_stream_repairers(provider, stages))


@pytest.mark.parametrize("stop_after", ["start", "done"])
async def test_a_run_like_stream_closes_its_provider_in_a_cancelled_scope(
    stop_after: str,
) -> None:
    closed: list[str] = []
    stream_fn = _run_like_stream_fn(closed)
    context = Context(tools=[Tool("read", "read a file")])
    seen = await read_until_cancelled(stream_fn(fake_model(), context, StreamOptions()), stop_after)
    assert seen[-1] == stop_after
    assert closed == ["provider"]
