"""``EventStream``: push and pull feeding, completion, results and failure."""

from __future__ import annotations

import anyio
import pytest

from openclaw_runtime import StreamError
from openclaw_runtime.events import AgentEnd, AgentStart, EventStream, MessageEnd, to_jsonable
from openclaw_runtime.messages import TextContent, UserMessage

pytestmark = pytest.mark.anyio


def numbers() -> EventStream[int, str]:
    return EventStream(lambda n: n < 0, lambda n: f"done at {n}")


async def test_push_mode_delivers_the_completion_event_and_drops_later_ones():
    stream = numbers()
    for n in (1, 2, -1, 3):
        stream.push(n)
    assert [n async for n in stream] == [1, 2, -1]
    assert await stream.result() == "done at -1"


async def test_consumer_waits_for_a_producer_task():
    stream = numbers()
    seen = []

    async def produce():
        for n in (1, 2, 3):
            await anyio.sleep(0.001)
            stream.push(n)
        stream.push(-9)

    async def wait_result():
        seen.append(await stream.result())

    async with anyio.create_task_group() as tg:
        tg.start_soon(produce)
        tg.start_soon(wait_result)
        seen.extend([n async for n in stream])
    assert sorted(seen, key=str) == sorted([1, 2, 3, -9, "done at -9"], key=str)


async def test_end_without_completion_event():
    stream = numbers()
    stream.push(1)
    stream.end("explicit")
    assert [n async for n in stream] == [1]
    assert await stream.result() == "explicit"
    empty = numbers()
    empty.end()
    with pytest.raises(StreamError, match="without a completion event"):
        await empty.result()


async def test_fail_makes_result_raise():
    stream = numbers()
    stream.push(1)
    stream.fail(ValueError("provider exploded"))
    assert [n async for n in stream] == [1]
    with pytest.raises(ValueError, match="provider exploded"):
        await stream.result()


async def test_pull_mode_drives_an_async_generator_lazily():
    pulled = []

    async def source():
        for n in (1, 2, -5, 99):
            pulled.append(n)
            yield n

    stream = EventStream(lambda n: n < 0, lambda n: n * 10, source=source())
    assert await stream.__anext__() == 1
    assert pulled == [1]  # nothing is read ahead of the consumer
    assert await stream.result() == -50  # drives the source to completion, buffering events
    assert [n async for n in stream] == [2, -5]
    assert pulled == [1, 2, -5]  # the source is not read past its completion event


async def test_pull_mode_source_failure_and_close():
    closed = []

    async def source():
        try:
            yield 1
            raise ConnectionError("reset by peer")
        finally:
            closed.append(True)

    stream = numbers()
    stream = EventStream(lambda n: n < 0, str, source=source())
    assert [n async for n in stream] == [1]
    with pytest.raises(ConnectionError, match="reset by peer"):
        await stream.result()
    assert closed == [True]

    async def endless():
        try:
            while True:
                yield 1
        finally:
            closed.append("endless")

    stream = EventStream(lambda n: n < 0, str, source=endless())
    assert await stream.__anext__() == 1
    await stream.aclose()
    assert closed[-1] == "endless"
    assert [n async for n in stream] == []


def test_events_render_as_json():
    message = UserMessage(content=[TextContent(text="hi")], timestamp=1)
    assert MessageEnd(message).to_dict() == {
        "type": "message_end",
        "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1},
    }
    assert AgentStart().to_dict() == {"type": "agent_start"}
    assert to_jsonable(AgentEnd([message]))["messages"][0]["role"] == "user"
