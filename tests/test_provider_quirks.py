"""Real provider quirks, over real local HTTP, on asyncio and trio: a gzip-compressed stream,
a 200 whose body is not an event stream, a refused connection and a name that cannot resolve,
and the non-streaming diagnostic after an empty stream."""

from __future__ import annotations

import gzip
import random
import socket

import orjson
import pytest

from openclaw_runtime.failover import classify_failover_signal, signal_from_assistant_message
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.providers.empty_stream import (
    DIAGNOSTIC_NOTE,
    LARGE_PROMPT_TOKENS,
    diagnostic_request_body,
    should_diagnose_empty_stream,
)
from openclaw_runtime.providers.errors import (
    describe_body_briefly,
    is_network_error_message,
    public_url,
)
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.testing import ScriptedReply
from openclaw_runtime.testing.server import sse_body

pytestmark = pytest.mark.anyio


def chunk(delta=None, finish=None):
    return {
        "id": "chatcmpl-q",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }


HELLO = [
    chunk({"role": "assistant", "content": "Hello"}),
    chunk({"content": " world"}),
    chunk(finish="stop"),
]


@pytest.fixture
def model(local_http_server):
    return Model(
        id="m",
        api="openai-completions",
        provider="local",
        base_url=local_http_server.base_url + "/v1",
    )


@pytest.fixture
async def provider():
    instance = OpenAICompatProvider()
    yield instance
    await instance.aclose()


async def run(provider, model, text="hi", **options):
    context = Context("be brief", [UserMessage(content=text)], [])
    stream = provider.stream_fn(model, context, StreamOptions(**options))
    events = [event async for event in stream]
    return events, await stream.result()


def reason_of(message):
    classification = classify_failover_signal(signal_from_assistant_message(message))
    if classification is None:
        return None
    return (
        classification.kind if classification.kind == "context_overflow" else classification.reason
    )


# --------------------------------------------------------------------------- gzip


async def test_gzip_compressed_stream_is_decoded(provider, model, local_http_server):
    raw = gzip.compress(sse_body(HELLO))
    pieces = [raw[i : i + 7] for i in range(0, len(raw), 7)]  # compressed bytes in small writes
    local_http_server.enqueue(
        ScriptedReply(
            headers={"content-type": "text/event-stream", "content-encoding": "gzip"},
            body=pieces,
        )
    )
    events, message = await run(provider, model)
    assert message.stop_reason == "stop", message.error_message
    assert message.text() == "Hello world"
    assert "text_delta" in [e.type for e in events]
    # we advertise gzip, so a server may use it
    assert "gzip" in local_http_server.requests[0].headers["accept-encoding"]


async def test_gzip_compressed_error_body_is_decoded(provider, model, local_http_server):
    body = orjson.dumps({"error": {"message": "Rate limit reached", "type": "requests"}})
    local_http_server.enqueue(
        ScriptedReply(
            429,
            {"content-type": "application/json", "content-encoding": "gzip"},
            [gzip.compress(body)],
        )
    )
    _, message = await run(provider, model)
    assert message.error_message == "429 Rate limit reached"
    assert message.error_body == body.decode()


# --------------------------------------------------------------------------- not an event stream

NGINX_502 = (
    b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>body{}</style></head>"
    b"<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
)


@pytest.mark.parametrize(
    ("content_type", "body", "says", "reason"),
    [
        ("text/html", NGINX_502, "got text/html from {url}: 502 Bad Gateway", "timeout"),
        (
            "text/html; charset=utf-8",
            b"<html><body><h1>Welcome to nginx!</h1><p>It works.</p></body></html>",
            "got text/html from {url}: Welcome to nginx! It works.",
            "server_error",
        ),
        (
            "application/json",
            b'{"hello":"world"}',
            'got application/json from {url}: {"hello":"world"}',
            "server_error",
        ),
        (
            "application/octet-stream",
            bytes(random.Random(9).randrange(256) for _ in range(3000)),
            "got application/octet-stream from {url}: 3000 bytes of binary data",
            "server_error",
        ),
        (
            "text/event-stream",
            b"upstream connect error or disconnect/reset before headers",
            "got text/event-stream from {url}: upstream connect error",
            "timeout",
        ),
    ],
)
async def test_a_200_that_is_not_an_event_stream_is_one_clear_error(
    provider, model, local_http_server, content_type, body, says, reason
):
    local_http_server.enqueue(ScriptedReply(200, {"content-type": content_type}, [body]))
    events, message = await run(provider, model)
    url = model.base_url + "/chat/completions"
    assert events[-1].type == "error"
    assert message.stop_reason == "error"
    assert says.replace("{url}", url) in message.error_message
    assert "empty response" not in message.error_message
    # classified, so the runner never re-sends it as a silent "empty response"
    assert reason_of(message) == reason


async def test_a_json_error_object_in_a_200_body_is_the_providers_error(
    provider, model, local_http_server
):
    local_http_server.enqueue(
        ScriptedReply.json(
            200,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                }
            },
        )
    )
    _, message = await run(provider, model)
    assert message.error_message.startswith("400 the request exceeds the available context size")
    assert message.error_status == 400
    assert reason_of(message) == "context_overflow"


async def test_a_whole_completion_object_instead_of_a_stream_is_the_answer(
    provider, model, local_http_server
):
    local_http_server.enqueue(
        ScriptedReply.json(
            200,
            {
                "id": "chatcmpl-9",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "not streamed"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
            },
        )
    )
    _, message = await run(provider, model)
    assert (message.stop_reason, message.text()) == ("stop", "not streamed")
    assert message.usage.output == 2


async def test_pings_only_is_still_an_empty_response(provider, model, local_http_server):
    local_http_server.enqueue(ScriptedReply(body=[b": ping\n\n", b": ping\n\n"]))
    _, message = await run(provider, model)
    assert message.error_message == (
        "Provider returned an empty response (HTTP 200 without any stream event)"
    )


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (NGINX_502, "text/html", "502 Bad Gateway"),
        (
            b"<html><head><script>x()</script></head><body>Gone <b>fishing</b></body></html>",
            "",
            "Gone fishing",
        ),
        (b"<html><title> </title><body></body></html>", "text/html", "an HTML page without text"),
        (b"plain words\n\n  here", "text/plain", "plain words here"),
        (b"x" * 500, "text/plain", "x" * 199 + "…"),
        (b"\x00\x01\x02\xff" * 10, "", "40 bytes of binary data"),
        (b"   ", "text/plain", "an empty body"),
    ],
)
def test_describe_body_briefly(body, content_type, expected):
    assert describe_body_briefly(body, content_type) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://u:secret@h.example:8/v1/x?key=AIzaSECRET#frag", "http://h.example:8/v1/x"),
        ("https://api.example/v1/chat/completions", "https://api.example/v1/chat/completions"),
    ],
)
def test_public_url_drops_credentials_and_query(url, expected):
    assert public_url(url) == expected


# --------------------------------------------------------------------------- network


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_connection_refused_names_the_url_and_is_not_a_timeout(provider, model):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    _, message = await run(provider, model.model_copy(update={"base_url": url}), connect_timeout=5)
    assert message.stop_reason == "error"
    assert message.error_message == (
        f"Connection error: cannot reach {url}/chat/completions (connection refused)"
    )
    assert "timed out" not in message.error_message
    assert is_network_error_message(message.error_message)


async def test_unresolvable_host_names_the_host_and_url(provider, model):
    url = "http://openclaw-quirks-test.invalid:9/v1"  # .invalid never resolves (RFC 6761)
    remote = model.model_copy(update={"base_url": url})
    _, message = await run(provider, remote, connect_timeout=5, api_key="sk-test")
    assert message.error_message.startswith(
        f"Connection error: cannot resolve host 'openclaw-quirks-test.invalid' for {url}/chat/completions ("
    )
    assert is_network_error_message(message.error_message)


@pytest.mark.parametrize(
    ("text", "network"),
    [
        ("Connection error: cannot reach http://h/v1/chat/completions (connection refused)", True),
        (
            "Connection error: cannot resolve host 'h' for http://h/v1 (Name or service not known)",
            True,
        ),
        ("Connection error: timed out connecting to http://h/v1 (timed out)", False),
        ("Request timed out: ReadTimeout: ", False),
        ("stream disconnected before completion: peer closed", False),
        (None, False),
    ],
)
def test_is_network_error_message(text, network):
    assert is_network_error_message(text) is network


# --------------------------------------------------------------------------- empty-stream diagnostic


@pytest.mark.parametrize(
    ("kind", "tokens", "window", "done_before", "expected"),
    [
        (None, 100_000, 8_000, False, False),  # the stream had events: nothing to diagnose
        ("empty", 10, 128_000, False, False),  # a small prompt, known window: ordinary empty
        ("cut", 10, 128_000, False, False),
        ("empty", LARGE_PROMPT_TOKENS, 128_000, False, True),  # large for a local server
        ("cut", 5_000, 128_000, False, True),
        ("empty", 300, 500, False, True),  # above half of a tiny known window
        ("empty", 10, 0, False, True),  # window unknown
        ("empty", 5_000, 128_000, True, False),  # once per response
    ],
)
def test_should_diagnose_empty_stream(kind, tokens, window, done_before, expected):
    assert (
        should_diagnose_empty_stream(
            kind,
            estimated_prompt_tokens=tokens,
            context_window=window,
            already_diagnosed=done_before,
        )
        is expected
    )


def test_diagnostic_request_body():
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 4096,
        "tools": [],
    }
    assert diagnostic_request_body(body, "max_tokens") == {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "stream": False,
        "max_tokens": 1,
        "tools": [],
    }
    assert body["stream"] is True  # the original is untouched


LLAMA_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, you requested "
        "5000 tokens (4990 in the messages, 10 in the completion). Please reduce the length of "
        "the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


@pytest.mark.parametrize("cut", [False, True], ids=["empty-body", "cut-after-headers"])
async def test_empty_stream_with_a_large_prompt_asks_once_without_streaming(
    provider, model, local_http_server, cut
):
    first = ScriptedReply(body=[])
    if cut:
        # the headers promise a body that never comes: the connection closes right after them
        first = ScriptedReply(
            headers={"content-type": "text/event-stream", "content-length": "999"}, body=[]
        )
    local_http_server.enqueue(first, ScriptedReply.json(400, LLAMA_OVERFLOW))
    _, message = await run(provider, model, text="word " * 4_000)
    assert len(local_http_server.requests) == 2
    diagnostic = local_http_server.requests[1].json()
    assert diagnostic["stream"] is False and diagnostic["max_tokens"] == 1
    assert "stream_options" not in diagnostic
    assert diagnostic["messages"] == local_http_server.requests[0].json()["messages"]
    assert local_http_server.requests[1].headers["accept"] == "application/json"
    assert message.error_message.startswith(
        "400 This model's maximum context length is 2048 tokens"
    )
    assert message.error_message.endswith(DIAGNOSTIC_NOTE)
    assert message.error_status == 400
    assert reason_of(message) == "context_overflow"


async def test_empty_stream_with_a_small_prompt_is_an_ordinary_empty_response(
    provider, model, local_http_server
):
    local_http_server.enqueue(ScriptedReply(body=[]))
    _, message = await run(provider, model, text="hi")
    assert len(local_http_server.requests) == 1  # no diagnostic request
    assert message.error_message == (
        "Provider returned an empty response (HTTP 200 without any stream event)"
    )


async def test_diagnostic_that_succeeds_keeps_the_empty_response(
    provider, model, local_http_server
):
    local_http_server.enqueue(
        ScriptedReply(body=[]),
        ScriptedReply.json(
            200,
            {"choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": "length"}]},
        ),
    )
    _, message = await run(provider, model, text="word " * 4_000)
    assert len(local_http_server.requests) == 2
    assert message.error_message == (
        "Provider returned an empty response (HTTP 200 without any stream event)"
    )
