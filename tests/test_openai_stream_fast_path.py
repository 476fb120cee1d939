"""The Chat Completions hot paths give what the full walk gives.

``ChatCompletionStreamState.apply`` answers a plain content delta without the full walk
(``chunk``), and ``SSEDecoder.feed_data`` answers whole one-line ``data:`` events with one split;
both must stay invisible: the same events, in the same order, with the same content and the
same final message and usage, on a table of chunk shapes and of byte streams. Over real HTTP,
a read holding many events still hands each ``text_delta`` out with the partial message exactly
as far as that delta (a chunk is applied when its event is asked for, never ahead).
"""

from __future__ import annotations

import dataclasses
import gzip
from contextlib import aclosing
from typing import Any

import httpx
import orjson
import pytest

from openclaw_runtime.events import TextDelta, to_jsonable
from openclaw_runtime.llm import Context, Model, ModelCost, StreamOptions
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.providers.http import body_reader, stream_chunks
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.providers.openai_stream import ChatCompletionStreamState
from openclaw_runtime.providers.sse import SSEDecoder
from openclaw_runtime.testing import ScriptedReply
from openclaw_runtime.testing.openai_server import Fault
from openclaw_runtime.testing.server import sse_body

MODEL = Model(
    id="gpt-test",
    api="openai-completions",
    provider="local",
    base_url="http://127.0.0.1:9/v1",
    cost=ModelCost(input=2.0, output=8.0, cache_read=0.5),
)


def chunk(delta: Any = None, finish: Any = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk"}
    body["choices"] = [
        {"index": 0, "delta": {} if delta is None else delta, "finish_reason": finish}
    ]
    body.update(extra)
    return body


USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}

#: shapes after a first chunk that opened the text block and set the response id
SHAPES: dict[str, Any] = {
    "plain content": chunk({"content": " more"}),
    "content, usage null (stream_options)": chunk({"content": " more"}, usage=None),
    "content, logprobs null": {
        "id": "chatcmpl-1",
        "choices": [
            {"index": 0, "delta": {"content": "x"}, "finish_reason": None, "logprobs": None}
        ],
    },
    "empty content": chunk({"content": ""}),
    "content null": chunk({"content": None}),
    "role only": chunk({"role": "assistant"}),
    "role and content": chunk({"role": "assistant", "content": "again"}),
    "empty delta": chunk({}),
    "content with finish": chunk({"content": "end"}, finish="stop"),
    "content with empty finish": chunk({"content": "end"}, finish=""),
    "content with usage": chunk({"content": "end"}, usage=USAGE),
    "content with usage in the choice": {
        "id": "chatcmpl-1",
        "choices": [{"index": 0, "delta": {"content": "u"}, "finish_reason": None, "usage": USAGE}],
    },
    "content with error null": chunk({"content": "e"}, error=None),
    "error object": {"error": {"message": "overloaded", "code": 529}},
    "content with an error object": chunk({"content": "e"}, error={"message": "overloaded"}),
    "reasoning_content": chunk({"reasoning_content": "thinking"}),
    "reasoning": chunk({"reasoning": "thinking"}),
    "reasoning with content": chunk({"reasoning": "hmm", "content": "said"}),
    "refusal": chunk({"refusal": "I can't"}),
    "content and refusal": chunk({"content": "a", "refusal": "b"}),
    "refusal null": chunk({"content": "a", "refusal": None}),
    "tool call start": chunk(
        {
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
            ]
        }
    ),
    "tool call arguments": chunk(
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1}'}}]}
    ),
    "content beside tool calls": chunk(
        {"content": "x", "tool_calls": [{"index": 0, "id": "c", "function": {"name": "g"}}]}
    ),
    "content parts list": chunk({"content": [{"type": "text", "text": "part"}]}),
    "content not a string": chunk({"content": 5}),
    "message instead of delta": {
        "id": "chatcmpl-1",
        "choices": [{"index": 0, "message": {"content": "whole"}, "finish_reason": "stop"}],
    },
    "finish only": chunk(finish="stop"),
    "finish length": chunk(finish="length"),
    "usage only": {"id": "chatcmpl-1", "choices": [], "usage": USAGE},
    "no choices key": {"id": "chatcmpl-1"},
    "choices not a list": {"id": "chatcmpl-1", "choices": "abc"},
    "choice not a dict": {"id": "chatcmpl-1", "choices": [3]},
    "delta not a dict": {"id": "chatcmpl-1", "choices": [{"delta": "text"}]},
    "not an object": [1, 2],
}
FIRST = chunk({"role": "assistant", "content": "Hi"})
#: what follows the shape: with a finish, and without (so a shape's own finish decides)
TAILS = {
    "finished": [chunk({"content": " tail"}), chunk(finish="stop")],
    "cut": [chunk({"content": " tail"})],
}
TAIL = TAILS["finished"]  # no usage chunk: a shape may carry usage


def scrub(value: Any) -> Any:
    """JSON data without the message's creation timestamp (two states, two clocks)."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def render(events: list[Any]) -> list[Any]:
    return [scrub(to_jsonable(event)) for event in events]


def with_fast_path(chunks: list[Any]) -> tuple[list[Any], Any, int]:
    """What ``apply`` (hot path included) makes of the chunks; also how often it was hot."""
    state = ChatCompletionStreamState(MODEL)
    events: list[Any] = render([state.builder.start()])
    hot = 0
    for item in chunks:
        out: list[Any] = []
        # a snapshot per event: the partial message is shared and keeps changing
        try:
            made = state.apply(orjson.dumps(item), out)
        except Exception as exc:  # a shape the full walk cannot read either
            return [*events, (type(exc).__name__, str(exc))], None, hot
        if made is not None:
            hot += 1
            events.extend(render([made]))
        events.extend(render(out))
        if state.failure is not None:
            break
    out = []
    state.end(out)
    return [*events, *render(out)], scrub(to_jsonable(state.builder.message)), hot


def with_full_walk(chunks: list[Any]) -> tuple[list[Any], Any]:
    state = ChatCompletionStreamState(MODEL)
    events: list[Any] = render([state.builder.start()])
    for item in chunks:
        out: list[Any] = []
        try:
            state.chunk(orjson.loads(orjson.dumps(item)), out)
        except Exception as exc:
            return [*events, (type(exc).__name__, str(exc))], None
        events.extend(render(out))
        if state.failure is not None:
            break
    out = []
    state.end(out)
    return [*events, *render(out)], scrub(to_jsonable(state.builder.message))


@pytest.mark.parametrize("tail", list(TAILS))
@pytest.mark.parametrize("name", list(SHAPES))
def test_every_chunk_shape_gives_the_full_walks_events(name: str, tail: str) -> None:
    chunks = [FIRST, SHAPES[name], SHAPES[name], *TAILS[tail]]
    fast_events, fast_message, _hot = with_fast_path(chunks)
    slow_events, slow_message = with_full_walk(chunks)
    assert fast_events == slow_events
    assert fast_message == slow_message


def test_an_id_that_comes_late_is_still_recorded() -> None:
    first = {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]}
    chunks = [first, chunk({"content": " there"}), *TAIL]
    fast_events, fast_message, _hot = with_fast_path(chunks)
    assert (fast_events, fast_message) == with_full_walk(chunks)
    assert fast_message["responseId"] == "chatcmpl-1"


def test_plain_deltas_take_the_hot_path() -> None:
    chunks = [FIRST, *(chunk({"content": f" {i}"}) for i in range(5)), *TAIL]
    events, message, hot = with_fast_path(chunks)
    assert hot == 6  # every plain delta after the first (which opens the block) and the tail's
    assert message["content"][0]["text"] == "Hi 0 1 2 3 4 tail"
    assert [e["type"] for e in events].count("text_delta") == 7


def test_the_hot_paths_text_delta_is_the_dataclasss_own() -> None:
    """``append_text`` fills a ``TextDelta`` without calling its ``__init__``: that is only the
    same event while the dataclass has these three fields and nothing run after them."""
    assert [f.name for f in dataclasses.fields(TextDelta)] == ["content_index", "delta", "partial"]
    assert not hasattr(TextDelta, "__post_init__")
    state = ChatCompletionStreamState(MODEL)
    state.builder.start()
    state.apply(orjson.dumps(FIRST), [])
    event = state.apply(orjson.dumps(chunk({"content": " more"})), [])
    assert type(event) is TextDelta
    assert event == TextDelta(0, " more", state.builder.message)
    assert event.to_dict() == TextDelta(0, " more", state.builder.message).to_dict()


def test_done_and_malformed_payloads_stop_the_state() -> None:
    state = ChatCompletionStreamState(MODEL)
    out: list[Any] = []
    assert state.apply(b"[DONE]", out) is None and state.done and not out
    state = ChatCompletionStreamState(MODEL)
    assert state.apply(b"{not json", out) is None
    assert state.failure is not None and "malformed stream chunk" in state.failure.message


# --------------------------------------------------------------------------- feed_data


STREAMS = {
    "one event": b'data: {"a":1}\n\n',
    "many events": b"".join(b"data: %d\n\n" % i for i in range(50)),
    "events and a partial one": b"data: 1\n\ndata: 2\n\ndata: 3",
    "a comment between": b"data: 1\n\n: ping\n\ndata: 2\n\n",
    "named event": b"data: 1\n\nevent: x\ndata: 2\n\ndata: 3\n\n",
    "ids": b"id: 4\ndata: 1\n\ndata: 2\n\n",
    "two data lines": b"data: a\ndata: b\n\ndata: c\n\n",
    "no space after the colon": b"data:1\n\ndata: 2\n\n",
    "empty data": b"data: \n\ndata: \n\n",
    "crlf": b"data: 1\r\n\r\ndata: 2\r\n\r\n",
    "lone cr": b"data: 1\r\rdata: 2\r\r",
    "extra blank lines": b"data: 1\n\n\n\ndata: 2\n\n\n",
    "data lookalike inside": b'data: {"t":"\\n\\ndata: x"}\n\n',
    "done": b"data: 1\n\ndata: [DONE]\n\n",
    "long unfinished tail": b"data: 1\n\n" + b"data: x\n" * 9000 + b"data: y",
    # reads the one-event check must refuse (one line break where ``\n\n`` should be, a CR)
    "a lone cr inside one event": b"data: 1\rdata: 2\n\ndata: 3\n\n",
    "a line then a lone cr": b"data: 1\n\rdata: 2\n\n",
    "cr in the payload's whitespace": b'data: {"a":\r1}\n\ndata: 2\n\n',
    "one event without the space": b"data:1\n\n",
}


def by_feed(pieces: list[bytes]) -> list[bytes]:
    decoder = SSEDecoder()
    found = [e.data for piece in pieces for e in decoder.feed(piece)]
    return found + [e.data for e in decoder.close()]


def by_feed_data(pieces: list[bytes]) -> list[bytes]:
    decoder = SSEDecoder()
    found = [data for piece in pieces for data in decoder.feed_data(piece)]
    return found + [e.data for e in decoder.close()]


@pytest.mark.parametrize("name", list(STREAMS))
def test_feed_data_equals_feed_whole_and_split_anywhere(name: str) -> None:
    raw = STREAMS[name]
    expected = by_feed([raw])
    assert by_feed_data([raw]) == expected
    step = max(1, len(raw) // 200)  # every cut for short streams, ~200 for the long one
    for cut in range(1, len(raw), step):
        assert by_feed_data([raw[:cut], raw[cut:]]) == expected, f"split at byte {cut}"
    per_event = [block + b"\n\n" for block in raw.split(b"\n\n")]
    assert by_feed_data(per_event) == by_feed(per_event)


def test_feed_data_keeps_the_unfinished_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed_data(b"data: 1\n\ndata: 2\n\ndata: {") == [b"1", b"2"]
    assert decoder.feed_data(b'"a": 3}\n\n') == [b'{"a": 3}']


# --------------------------------------------------------------------------- over real HTTP

pytestmark_http = pytest.mark.anyio


def text_deltas(count: int) -> list[dict[str, Any]]:
    return [
        chunk({"role": "assistant", "content": "w0 "}),
        *(chunk({"content": f"w{i} "}) for i in range(1, count)),
        chunk(finish="stop"),
        {"id": "chatcmpl-1", "choices": [], "usage": USAGE},
    ]


async def stream_events(base_url: str, *, coalesce: bool = True) -> tuple[list[Any], Any]:
    model = MODEL.model_copy(update={"base_url": base_url + "/v1"})
    provider = OpenAICompatProvider()
    try:
        stream = provider.stream_fn(
            model,
            Context("", [UserMessage(content="go")]),
            StreamOptions(api_key="k", coalesce_deltas=coalesce),
        )
        seen: list[Any] = []
        async for event in stream:
            if event.type == "text_delta":
                # the partial as it is when the event is handed out
                seen.append((event.delta, event.partial.content[event.content_index].text))
            else:
                seen.append(event.type)
        return seen, await stream.result()
    finally:
        await provider.aclose()


@pytestmark_http
@pytest.mark.parametrize("coalesce", [False, True], ids=["one event per chunk", "coalesced"])
@pytest.mark.parametrize("framing", ["one write", "a write per event", "gzip"])
async def test_partial_is_never_ahead_of_the_delta_in_hand(local_http_server, framing, coalesce):
    events = text_deltas(300)
    if framing == "one write":
        reply = ScriptedReply.sse(events)
    elif framing == "a write per event":
        parts: list[Any] = [sse_body([event], done=False) for event in events]
        reply = ScriptedReply(body=[*parts, b"data: [DONE]\n\n"])
    else:
        reply = ScriptedReply(
            headers={"content-type": "text/event-stream", "content-encoding": "gzip"},
            body=[gzip.compress(sse_body(events))],
        )
    local_http_server.enqueue(reply)
    seen, message = await stream_events(local_http_server.base_url, coalesce=coalesce)
    deltas = [item for item in seen if isinstance(item, tuple)]
    if coalesce:
        # the deltas of one read arrive merged: the same text, in fewer events when the
        # body came in one write (a write per event may still be read two at a time)
        assert "".join(d for d, _ in deltas) == "".join(f"w{i} " for i in range(300))
        assert framing == "a write per event" or len(deltas) < 300
    else:
        assert [d for d, _ in deltas] == [f"w{i} " for i in range(300)]  # one per chunk
    text = ""
    for delta, partial in deltas:
        text += delta
        assert partial == text  # exactly as far as this delta, though the read held them all
    assert seen[:2] == ["start", "text_start"] and seen[-2:] == ["text_end", "done"]
    assert message.text() == text and message.stop_reason == "stop"
    assert message.usage.input == 100 and message.usage.output == 20


@pytestmark_http
async def test_body_reader_decodes_or_passes_through(local_http_server):
    body = sse_body(text_deltas(3))
    local_http_server.enqueue(
        ScriptedReply(headers={"content-type": "text/event-stream"}, body=[body]),
        ScriptedReply(
            headers={"content-type": "text/event-stream", "content-encoding": "gzip"},
            body=[gzip.compress(body)],
        ),
    )
    async with httpx.AsyncClient() as client:
        for _ in range(2):
            url = local_http_server.base_url + "/v1/chat/completions"
            async with client.stream("POST", url, content=b"{}") as response:
                got = b"".join([part async for part in body_reader(response)])
            assert got == body
        # a body httpx already read is served from what it read
        response = httpx.Response(200, content=body)
        assert b"".join([part async for part in body_reader(response)]) == body


# --------------------------------------------------------------------------- the body reader


async def _drain(response: httpx.Response, **kw: Any) -> list[bytes]:
    async with aclosing(stream_chunks(response, None, 5.0, **kw)) as chunks:
        return [chunk async for chunk in chunks]


@pytestmark_http
@pytest.mark.parametrize("phase", ["streaming", "draining"])
@pytest.mark.parametrize("encoding", [None, "gzip"])
async def test_a_body_read_to_its_end_is_consumed_and_closed(local_http_server, encoding, phase):
    """What ``aiter_raw`` did and the direct read of ``response.stream`` must still do: mark
    the body consumed (a second read is refused) and close the response once it ends, in
    either of ``stream_chunks``' two loops (a message complete from the start drains)."""
    body = sse_body(text_deltas(3))
    headers = {"content-type": "text/event-stream"}
    if encoding:
        headers["content-encoding"] = encoding
    local_http_server.enqueue(
        ScriptedReply(headers=headers, body=[gzip.compress(body) if encoding else body])
    )
    async with httpx.AsyncClient() as client:
        url = local_http_server.base_url + "/v1/chat/completions"
        async with client.stream("POST", url, content=b"{}") as response:
            complete = (lambda: True) if phase == "draining" else None
            assert b"".join(await _drain(response, complete=complete)) == body
            assert response.is_stream_consumed and response.is_closed
            with pytest.raises(httpx.StreamConsumed):
                await response.aread()


@pytestmark_http
async def test_a_body_cut_mid_stream_raises_an_error_that_names_its_request(openai_server):
    openai_server.inject(Fault("cut_stream", after_chunks=2))
    async with httpx.AsyncClient() as client:
        url = openai_server.base_url + "/chat/completions"
        payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        async with client.stream("POST", url, json=payload) as response:
            assert response.status_code == 200
            with pytest.raises(httpx.RemoteProtocolError) as caught:
                await _drain(response)
    assert str(caught.value.request.url) == url
