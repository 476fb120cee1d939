"""The completion test an event stream skips for its per-token event.

``EventStream.__anext__`` pulls one event per token from its source and asks ``is_complete``
of each; ``_never_completes`` names the one type a subclass's streams carry most that cannot
complete them (``TextDelta`` for the LLM level, ``MessageUpdate`` for the agent level), and
pulling one skips the test. Skipping must change nothing: the type's ``type`` is a class
constant its instances cannot shadow, a subclass that says it is complete is still tested
(the skip is for the exact type), and every other event is tested as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest

from openclaw_runtime.events import (
    AgentEnd,
    AgentEventStream,
    AgentStart,
    AssistantMessageEventStream,
    Done,
    Error,
    Event,
    MessageUpdate,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ToolCallDelta,
    TurnEnd,
)
from openclaw_runtime.messages import AssistantMessage

pytestmark = pytest.mark.anyio

MESSAGE = AssistantMessage(api="x", provider="x", model="x")


class DeltaSayingDone(TextDelta):
    """A subclass whose ``type`` is a completing one: the exact-type skip must not cover it."""

    type = "done"
    message = MESSAGE  # what ``done`` hands to ``result()``


class UpdateSayingEnd(MessageUpdate):
    type = "agent_end"
    messages: ClassVar[list[str]] = ["from a subclass"]


def assistant_events() -> list[Event]:
    return [
        Start(MESSAGE),
        TextStart(0, MESSAGE),
        TextDelta(0, "a", MESSAGE),
        ThinkingDelta(0, "b", MESSAGE),
        ToolCallDelta(0, "{", MESSAGE),
        TextEnd(0, "a", MESSAGE),
    ]


async def source_of(events: list[Any], closed: list[bool]) -> AsyncIterator[Any]:
    try:
        for event in events:
            yield event
    finally:
        closed.append(True)


@pytest.mark.parametrize(
    ("stream_type", "plain"),
    [(AssistantMessageEventStream, TextDelta), (AgentEventStream, MessageUpdate)],
)
def test_the_skipped_type_can_never_complete_its_stream(stream_type: Any, plain: type) -> None:
    assert stream_type._never_completes is plain
    event = TextDelta(0, "x", MESSAGE) if plain is TextDelta else MessageUpdate(MESSAGE, None)
    stream = stream_type()
    assert stream._is_complete(event) is False
    with pytest.raises(AttributeError):  # slots: an instance cannot shadow its class's type
        event.type = "done"  # type: ignore[misc]


@pytest.mark.parametrize(
    "ending",
    [Done("stop", MESSAGE), Error("error", MESSAGE), DeltaSayingDone(0, "x", MESSAGE)],
    ids=["done", "error", "a TextDelta subclass saying done"],
)
async def test_an_assistant_stream_ends_where_it_did(ending: Event) -> None:
    closed: list[bool] = []
    after = [TextDelta(0, "never seen", MESSAGE)]
    stream = AssistantMessageEventStream(source_of([*assistant_events(), ending, *after], closed))
    seen = []
    async for event in stream:
        seen.append(event)
        if event is ending:
            assert closed == [True]  # the source was closed before the event was handed out
    assert seen == [*assistant_events(), ending]
    assert await stream.result() is MESSAGE


@pytest.mark.parametrize(
    "ending",
    [AgentEnd(["a"]), UpdateSayingEnd(MESSAGE, None)],
    ids=["agent_end", "a MessageUpdate subclass saying agent_end"],
)
async def test_an_agent_stream_ends_where_it_did(ending: Event) -> None:
    closed: list[bool] = []
    events = [AgentStart(), MessageUpdate(MESSAGE, None), TurnEnd(MESSAGE, []), ending]
    stream = AgentEventStream(source_of([*events, MessageUpdate(MESSAGE, None)], closed))
    assert [event async for event in stream] == events
    assert closed == [True]
    assert await stream.result() == ending.messages  # type: ignore[attr-defined]
