"""The streamed body's idle deadline and abort hook (``providers.body_watch``), end to end.

One idle deadline per stream (the transport's read timeout, re-armed by every read) and one
abort hook (a socket shutdown) replace a cancel scope per read; these tests pin the
behaviour that must not change: which limit fires and what it is called, and that an abort
wakes a read that is waiting for the server and closes the connection.
"""

from __future__ import annotations

import anyio
import pytest

from openclaw_runtime.abort import AbortController
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.providers.body_watch import body_timeout
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.testing import HANG, Pause, ScriptedReply

pytestmark = pytest.mark.anyio

FIRST = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"start"}}]}\n\n'


@pytest.mark.parametrize(
    ("idle", "read", "expected"),
    [
        (120.0, 600.0, (120.0, "idle")),  # the defaults: idle is the tighter limit
        (5.0, 5.0, (5.0, "idle")),  # a tie: the body is streaming, so it is the idle limit
        (900.0, 600.0, (600.0, "read")),  # the read limit is tighter and keeps its name
        (None, 600.0, (600.0, "read")),  # idle disabled: the read limit still applies
        (30.0, None, (30.0, "idle")),
        (None, None, (None, None)),  # no limit at all
    ],
)
def test_body_timeout_table(idle, read, expected):
    assert body_timeout(idle, read) == expected


@pytest.fixture
async def provider():
    instance = OpenAICompatProvider()
    yield instance
    await instance.aclose()


@pytest.fixture
def model(local_http_server):
    return Model(
        id="m", api="openai-completions", provider="local", base_url=local_http_server.base_url
    )


def context() -> Context:
    return Context("", [UserMessage(content="hi")])


async def test_abort_wakes_a_read_waiting_for_the_server(provider, model, local_http_server):
    local_http_server.enqueue(ScriptedReply(body=[FIRST, HANG]))
    controller = AbortController()
    stream = provider.stream_fn(model, context(), StreamOptions(signal=controller.signal))
    first_delta = anyio.Event()

    async def consume() -> None:
        async for event in stream:
            if event.type == "text_delta":
                first_delta.set()  # the consumer's next step is the read the server never answers

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await first_delta.wait()
            controller.abort()  # from another task, while that read waits
        message = await stream.result()
    assert (message.stop_reason, message.error_message) == ("aborted", "Request was aborted")
    assert message.text() == "start"
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


async def test_a_tighter_read_timeout_keeps_its_own_message(provider, model, local_http_server):
    local_http_server.enqueue(ScriptedReply(body=[FIRST, HANG]))
    options = StreamOptions(read_timeout=0.2, idle_timeout=30.0)
    with anyio.fail_after(10):
        message = await provider.stream_fn(model, context(), options).result()
    assert message.stop_reason == "error"
    assert message.error_message.startswith("Request timed out: ReadTimeout")
    assert message.text() == "start"


async def test_idle_deadline_is_reset_by_every_read(provider, model, local_http_server):
    """Each gap is shorter than the idle limit, the whole body much longer: no timeout."""
    deltas = [
        f'data: {{"id":"c","choices":[{{"index":0,"delta":{{"content":"{i}"}}}}]}}\n\n'.encode()
        for i in range(6)
    ]
    finish = b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    body: list = []
    for delta in deltas:
        body += [delta, Pause(0.25)]  # 1.5 s in all, each gap a quarter of the limit
    local_http_server.enqueue(ScriptedReply(body=[*body, finish, b"data: [DONE]\n\n"]))
    with anyio.fail_after(10):
        message = await provider.stream_fn(
            model, context(), StreamOptions(idle_timeout=1.0)
        ).result()
    assert (message.stop_reason, message.text()) == ("stop", "012345")
