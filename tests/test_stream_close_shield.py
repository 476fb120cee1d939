"""Closing a repaired stream finishes under cancellation, with one shield for nested closes.

``repair.shield.ShieldedClose`` enters a shielded cancel scope only when no close of the
task is shielded already. These tests check what that must keep: a close nested in another
still cannot be cancelled, a close after a shielded stretch is shielded again, and a stream
built like a run's (the runtime's guarded repairers, then the tag splitter on top) closed in
a cancelled scope still closes its provider to the end — on asyncio and trio.
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
from openclaw_runtime.repair.shield import ShieldedClose
from openclaw_runtime.reply import with_reply_tag_splitting
from openclaw_runtime.testing import fake_model

pytestmark = pytest.mark.anyio


async def test_nested_and_later_ShieldedCloses_are_not_cancelled() -> None:
    reached: list[str] = []
    with anyio.CancelScope() as outer:
        outer.cancel()
        with ShieldedClose():
            await anyio.lowlevel.checkpoint()
            with ShieldedClose():
                await anyio.lowlevel.checkpoint()
                reached.append("nested")
            await anyio.lowlevel.checkpoint()
            reached.append("after nested")
        with ShieldedClose():  # the mark was reset: a scope of its own again
            await anyio.lowlevel.checkpoint()
            reached.append("second")
        await anyio.lowlevel.checkpoint()
        reached.append("unshielded")  # pragma: no cover - cancelled just above
    assert reached == ["nested", "after nested", "second"]


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
    seen: list[str] = []
    with anyio.fail_after(10):
        with anyio.CancelScope() as scope:
            response = stream_fn(fake_model(), context, StreamOptions())
            try:
                async for event in response:
                    seen.append(event.type)
                    if event.type == stop_after:
                        scope.cancel()
                        break
            finally:
                await response.aclose()
    assert seen[-1] == stop_after
    assert closed == ["provider"]
