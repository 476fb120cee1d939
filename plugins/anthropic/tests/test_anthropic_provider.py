"""The Anthropic Messages provider against a real local HTTP server, on asyncio and trio.

The server speaks the Messages API's SSE dialect (``event:`` + ``data:`` frames, pings,
comments, error frames); the helpers below build realistic event sequences. Chunk
boundaries: every two-piece split of a rich stream (thinking + signature, redacted thinking,
multi-byte text, tool call) is swept through the decoder in process, and every byte position
of a compact stream is swept over real HTTP.
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
import orjson
import pytest
from openclaw_runtime_anthropic import (
    ANTHROPIC_MESSAGES_API,
    AnthropicProvider,
    AnthropicStreamDecoder,
    messages_url,
)
from openclaw_runtime_anthropic._replay import (
    FAILED_ASSISTANT_REPLAY_TEXT,
    MISSING_TOOL_RESULT_TEXT,
    prepare_replay_messages,
)
from openclaw_runtime_anthropic._request import (
    OMITTED_REASONING_TEXT,
    SYSTEM_PROMPT_CACHE_BOUNDARY,
    apply_cache_control_to_messages,
    build_beta_header,
    build_system_blocks,
    convert_messages,
    is_anthropic_public_endpoint,
    resolve_cache_control,
)
from openclaw_runtime_anthropic._stream import (
    ANTHROPIC_STREAM_INCOMPLETE_ERROR,
    EMPTY_RESPONSE_ERROR,
    MALFORMED_FRAME_ERROR,
    map_anthropic_stop_reason,
)
from openclaw_runtime_anthropic._thinking import (
    adjust_max_tokens_for_thinking,
    resolve_anthropic_thinking_effort,
    resolve_thinking_plan,
)

from openclaw_runtime import tool
from openclaw_runtime.abort import AbortController
from openclaw_runtime.agent import Agent
from openclaw_runtime.llm import Context, Model, ModelCost, StreamOptions, Tool
from openclaw_runtime.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.providers.builder import MALFORMED_TOOL_ARGUMENTS
from openclaw_runtime.testing import HANG, Pause, ScriptedReply

pytestmark = pytest.mark.anyio

EPHEMERAL = {"type": "ephemeral"}


# --------------------------------------------------------------------------- wire helpers


def frame(name: str, data: Any) -> bytes:
    """One SSE frame as the Messages API writes it: ``event:`` line, ``data:`` line."""
    return f"event: {name}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"


def message_start(
    input_tokens=25, output_tokens=1, cache_read=0, cache_write=0, model="claude-test"
):
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }
    message = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return frame("message_start", {"type": "message_start", "message": message})


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return frame(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def block_delta(index: int, delta: dict[str, Any]) -> bytes:
    return frame(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


def block_stop(index: int) -> bytes:
    return frame("content_block_stop", {"type": "content_block_stop", "index": index})


def text_block(index: int, *pieces: str) -> bytes:
    deltas = [block_delta(index, {"type": "text_delta", "text": p}) for p in pieces]
    return block_start(index, {"type": "text", "text": ""}) + b"".join(deltas) + block_stop(index)


def thinking_block(index: int, *pieces: str, signature: str = "EqQBCgIYAhIM") -> bytes:
    deltas = [block_delta(index, {"type": "thinking_delta", "thinking": p}) for p in pieces]
    signed = block_delta(index, {"type": "signature_delta", "signature": signature})
    return (
        block_start(index, {"type": "thinking", "thinking": ""})
        + b"".join(deltas)
        + signed
        + block_stop(index)
    )


def tool_block(index: int, call_id: str, name: str, *json_pieces: str) -> bytes:
    start = block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}})
    deltas = [
        block_delta(index, {"type": "input_json_delta", "partial_json": p}) for p in json_pieces
    ]
    return start + b"".join(deltas) + block_stop(index)


def message_delta(stop_reason="end_turn", output_tokens=15, **extra):
    delta = {"stop_reason": stop_reason, "stop_sequence": None, **extra}
    return frame(
        "message_delta",
        {"type": "message_delta", "delta": delta, "usage": {"output_tokens": output_tokens}},
    )


def message_stop() -> bytes:
    return frame("message_stop", {"type": "message_stop"})


PING = frame("ping", {"type": "ping"})


def stream(*parts: bytes) -> bytes:
    return b"".join(parts)


def reply(body: bytes, *, chunk: int | None = None) -> ScriptedReply:
    pieces: list[Any] = (
        [body[i : i + chunk] for i in range(0, len(body), chunk)] if chunk else [body]
    )
    return ScriptedReply(200, {"content-type": "text/event-stream"}, pieces)


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011"}


HELLO = stream(
    message_start(), PING, text_block(0, "Hello", " world"), message_delta(), message_stop()
)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def model(local_http_server):
    return Model(
        id="claude-test",
        api=ANTHROPIC_MESSAGES_API,
        provider="anthropic",
        base_url=local_http_server.base_url,
        reasoning=True,
        input=["text", "image"],
        cost=ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75),
        max_tokens=8192,
    )


@pytest.fixture
async def provider():
    instance = AnthropicProvider(env={})
    yield instance
    await instance.aclose()


def request(text="hi", tools=()):
    return Context("be brief", [UserMessage(content=text)], list(tools))


async def run(provider, model, context=None, **options):
    stream_ = provider.stream_fn(model, context or request(), StreamOptions(**options))
    events = [event async for event in stream_]
    return events, await stream_.result()


def snapshot(message: AssistantMessage) -> dict[str, Any]:
    data = message.to_dict()
    data.pop("timestamp")
    return data


# --------------------------------------------------------------------------- success paths


async def test_streams_thinking_text_and_a_tool_call(provider, model, local_http_server):
    body = stream(
        b": keep-alive comment\n\n",
        message_start(input_tokens=100, cache_read=40, cache_write=10),
        PING,
        thinking_block(0, "Let me ", "check.", signature="sig-part-1"),
        text_block(1, "Checking", " the weather."),
        PING,
        tool_block(2, "toolu_01", "get_weather", '{"city": ', '"Lisbon"}'),
        message_delta("tool_use", output_tokens=50),
        message_stop(),
    )
    local_http_server.enqueue(reply(body))
    events, message = await run(provider, model)
    assert [e.type for e in events] == [
        "start",
        "thinking_start", "thinking_delta", "thinking_delta", "thinking_end",
        "text_start", "text_delta", "text_delta", "text_end",
        "toolcall_start", "toolcall_delta", "toolcall_delta", "toolcall_end",
        "done",
    ]  # fmt: skip
    thought, text, call = message.content
    assert (thought.thinking, thought.thinking_signature) == ("Let me check.", "sig-part-1")
    assert text.text == "Checking the weather."
    assert (call.id, call.name, call.arguments) == ("toolu_01", "get_weather", {"city": "Lisbon"})
    assert message.stop_reason == "toolUse"
    assert (message.response_id, message.response_model) == ("msg_01", "claude-test")
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (100, 50, 40, 10)
    assert usage.total_tokens == 200
    assert usage.cost.total == pytest.approx((100 * 3 + 50 * 15 + 40 * 0.3 + 10 * 3.75) / 1e6)
    assert usage.context_usage == {"state": "available", "promptTokens": 150, "totalTokens": 200}


async def test_signature_deltas_accumulate_and_redacted_thinking_is_kept(
    provider, model, local_http_server
):
    body = stream(
        message_start(),
        block_start(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
        block_stop(0),
        block_start(1, {"type": "thinking", "thinking": ""}),
        block_delta(1, {"type": "thinking_delta", "thinking": "hmm"}),
        block_delta(1, {"type": "signature_delta", "signature": "abc"}),
        block_delta(1, {"type": "signature_delta", "signature": "def"}),
        block_stop(1),
        block_start(2, {"type": "thinking", "thinking": ""}),  # display omitted: signature only
        block_delta(2, {"type": "signature_delta", "signature": "only-sig"}),
        block_stop(2),
        text_block(3, "ok"),
        message_delta(),
        message_stop(),
    )
    local_http_server.enqueue(reply(body))
    _, message = await run(provider, model)
    redacted, signed, signature_only, text = message.content
    assert (redacted.redacted, redacted.thinking_signature) == (True, "EmwKAhgBEgy3va3pzix")
    assert (signed.thinking, signed.thinking_signature) == ("hmm", "abcdef")
    assert (signature_only.thinking, signature_only.thinking_signature) == ("", "only-sig")
    assert text.text == "ok"


async def test_request_body_and_headers(provider, model, local_http_server):
    local_http_server.enqueue(reply(HELLO))
    same = {"provider": "anthropic", "api": ANTHROPIC_MESSAGES_API, "model": "claude-test"}
    history = [
        UserMessage(
            content=[TextContent(text="look"), ImageContent(data="aGk=", mime_type="image/png")]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="plan", thinking_signature="sig-1"),
                TextContent(text="calling"),
                ToolCall(id="toolu_1", name="lookup", arguments={"q": "x"}),
            ],
            stop_reason="toolUse",
            **same,
        ),
        ToolResultMessage(
            tool_call_id="toolu_1", tool_name="lookup", content=[TextContent(text="42")]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="", thinking_signature="opaque", redacted=True),
                TextContent(text="It is 42."),
            ],
            **same,
        ),
        UserMessage(content="and?"),
        AssistantMessage(content=[TextContent(text="partial answer")], stop_reason="error", **same),
        UserMessage(content="retry"),
        AssistantMessage(
            content=[
                ThinkingContent(
                    thinking="foreign thoughts", thinking_signature="reasoning_content"
                ),
                TextContent(text="foreign answer"),
            ],
            provider="openai",
            api="openai-completions",
            model="gpt-test",
        ),
        UserMessage(content="last"),
    ]
    tools = [
        Tool(
            "lookup",
            "Look things up.",
            {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        )
    ]
    system = "You are helpful." + SYSTEM_PROMPT_CACHE_BOUNDARY + "Today is Monday."
    await run(
        provider,
        model,
        Context(system, history, tools),
        api_key="sk-ant-test-secret",
        max_tokens=1000,
        temperature=0.5,
        reasoning="high",
        stop=["END"],
        headers={"x-extra": "1"},
        metadata={"user_id": "user-7"},
    )
    sent = local_http_server.requests[0]
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.headers["x-api-key"] == "sk-ant-test-secret"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["x-extra"] == "1"
    body = sent.json()
    assert body == {
        "model": "claude-test",
        "stream": True,
        "max_tokens": 8192,  # 1000 visible + budget, capped by the model
        "thinking": {"type": "enabled", "budget_tokens": 7168},  # temperature dropped
        "stop_sequences": ["END"],
        "metadata": {"user_id": "user-7"},
        "system": [
            {"type": "text", "text": "You are helpful.", "cache_control": EPHEMERAL},
            {"type": "text", "text": "Today is Monday."},
        ],
        "tools": [
            {
                "name": "lookup",
                "description": "Look things up.",
                "input_schema": {
                    "type": "object",
                    "properties": {"q": {"type": "string"}},
                    "required": ["q"],
                },
                "eager_input_streaming": True,
                "cache_control": EPHEMERAL,
            }
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "plan", "signature": "sig-1"},
                    {"type": "text", "text": "calling"},
                    {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "42",
                        "is_error": False,
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "text", "text": "It is 42."},
                ],
            },
            {"role": "user", "content": "and?"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": FAILED_ASSISTANT_REPLAY_TEXT}],
            },
            {"role": "user", "content": "retry"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "foreign thoughts"},
                    {"type": "text", "text": "foreign answer"},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "text", "text": "last", "cache_control": EPHEMERAL}],
            },
        ],
    }
    assert "sk-ant-test-secret" not in repr(StreamOptions(api_key="sk-ant-test-secret"))


async def test_thinking_off_disables_it_and_keeps_temperature(provider, model, local_http_server):
    local_http_server.enqueue(reply(HELLO))
    await run(provider, model, temperature=0.2, max_tokens=500, extra={"cache_retention": "none"})
    body = local_http_server.requests[0].json()
    assert body["thinking"] == {"type": "disabled"}
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 500
    assert body["system"] == [{"type": "text", "text": "be brief"}]  # no cache marker
    assert body["messages"] == [{"role": "user", "content": "hi"}]


async def test_adaptive_thinking_models_send_an_effort(provider, model, local_http_server):
    adaptive = model.model_copy(update={"id": "claude-opus-4-6"})
    local_http_server.enqueue(reply(HELLO))
    await run(provider, adaptive, reasoning="medium")
    sent = local_http_server.requests[0]
    body = sent.json()
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "medium"}
    assert "anthropic-beta" not in sent.headers  # interleaved thinking is built in


async def test_api_key_from_environment_and_missing_key(model, local_http_server):
    remote = model.model_copy(update={"base_url": "https://anthropic.example.invalid"})
    provider = AnthropicProvider(env={})
    _, message = await run(provider, remote)
    assert (message.stop_reason, message.error_message) == (
        "error",
        "No API key found for provider: anthropic",
    )
    assert local_http_server.requests == []

    local_http_server.enqueue(reply(HELLO))
    with_env = AnthropicProvider(env={"ANTHROPIC_API_KEY": "sk-ant-from-env"})
    await run(with_env, model)
    assert local_http_server.requests[0].headers["x-api-key"] == "sk-ant-from-env"
    await with_env.aclose()


@pytest.mark.parametrize(
    ("stop_reason", "details", "expected"),
    [
        ("end_turn", None, ("stop", None)),
        ("stop_sequence", None, ("stop", None)),
        ("pause_turn", None, ("stop", None)),
        ("max_tokens", None, ("length", None)),
        ("tool_use", None, ("toolUse", None)),
        ("refusal", None, ("error", "Anthropic refusal.")),
        (
            "refusal",
            {"category": "cyber", "explanation": "Declined."},
            ("error", "Anthropic refusal (category: cyber): Declined."),
        ),
        ("refusal", {"category": "  "}, ("error", "Anthropic refusal.")),
        ("sensitive", None, ("error", "An unknown error occurred")),
        ("brand_new_reason", None, ("error", "Unhandled stop reason: brand_new_reason")),
        (None, None, ("stop", None)),
    ],
)
def test_map_anthropic_stop_reason(stop_reason, details, expected):
    assert map_anthropic_stop_reason(stop_reason, details) == expected


async def test_stop_reasons_over_http(provider, model, local_http_server):
    local_http_server.enqueue(
        reply(
            stream(
                message_start(), text_block(0, "cut"), message_delta("max_tokens"), message_stop()
            )
        ),
        reply(
            stream(
                message_start(),
                text_block(0, "I can't"),
                message_delta("refusal", stop_details={"category": "bio", "explanation": "No."}),
                message_stop(),
            )
        ),
    )
    _, message = await run(provider, model)
    assert (message.stop_reason, message.text()) == ("length", "cut")
    _, message = await run(provider, model)
    assert message.stop_reason == "error"
    assert message.error_message == "Anthropic refusal (category: bio): No."
    assert message.error_code == "refusal"
    assert message.text() == "I can't"


# --------------------------------------------------------------------------- chunk boundaries

RICH = stream(
    b": OPENROUTER PROCESSING\n\n",
    message_start(input_tokens=12, cache_read=3),
    block_start(0, {"type": "redacted_thinking", "data": "RED4CTED"}),
    block_stop(0),
    thinking_block(1, "Pensé ", "en €", signature="c2lnbmF0dXJl"),
    PING,
    text_block(2, "Olá, ", "mundo 🌍"),
    tool_block(3, "toolu_9", "f", '{"a": ', '[1, "ü"]}'),
    message_delta("tool_use", output_tokens=30),
    message_stop(),
)


def decode(chunks: list[bytes], model: Model) -> tuple[list[str], dict[str, Any]]:
    decoder = AnthropicStreamDecoder(model)
    out: list[Any] = []
    for chunk in chunks:
        decoder.feed(chunk, out)
    decoder.close(out)
    final = out[-1]
    message = final.message if final.type == "done" else final.error
    return [e.type for e in out], snapshot(message)


def test_every_two_piece_split_of_a_rich_stream_decodes_identically(model):
    expected = decode([RICH], model)
    assert expected[1]["stopReason"] == "toolUse"
    assert [b["type"] for b in expected[1]["content"]] == [
        "thinking",
        "thinking",
        "text",
        "toolCall",
    ]
    assert expected[1]["content"][2]["text"] == "Olá, mundo 🌍"
    for cut in range(1, len(RICH)):
        assert decode([RICH[:cut], RICH[cut:]], model) == expected, f"cut at byte {cut}"
    assert decode([RICH[i : i + 1] for i in range(len(RICH))], model) == expected
    crlf = RICH.replace(b"\n", b"\r\n")
    assert decode([crlf[i : i + 3] for i in range(0, len(crlf), 3)], model) == expected


COMPACT = stream(
    message_start(),
    text_block(0, "héllo"),
    tool_block(1, "toolu_1", "f", '{"a":1}'),
    message_delta("tool_use"),
    message_stop(),
)


async def test_every_byte_boundary_over_http(provider, model, local_http_server):
    for cut in range(1, len(COMPACT)):
        local_http_server.enqueue(ScriptedReply(body=[COMPACT[:cut], Pause(0.0005), COMPACT[cut:]]))
        _, message = await run(provider, model)
        observed = (
            message.text(),
            [c.arguments for c in message.tool_calls()],
            message.stop_reason,
        )
        assert observed == ("héllo", [{"a": 1}], "toolUse"), f"cut at byte {cut}"


async def test_one_byte_writes(provider, model, local_http_server):
    local_http_server.enqueue(reply(HELLO, chunk=1))
    _, message = await run(provider, model)
    assert message.text() == "Hello world"


async def test_gzip_compressed_stream(provider, model, local_http_server):
    """The shared HTTP side reads decoded bytes: a server honouring our accept-encoding may
    gzip its stream (issue 9 §3)."""
    import gzip

    raw = gzip.compress(HELLO)
    local_http_server.enqueue(
        ScriptedReply(
            200,
            {"content-type": "text/event-stream", "content-encoding": "gzip"},
            [raw[i : i + 11] for i in range(0, len(raw), 11)],
        )
    )
    _, message = await run(provider, model, api_key="sk-ant-test")
    assert (message.stop_reason, message.text()) == ("stop", "Hello world")


async def test_a_200_html_page_says_what_came_back(provider, model, local_http_server):
    """Not "empty response": the shared HTTP side names the page (issue 9 §3)."""
    page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    local_http_server.enqueue(ScriptedReply(200, {"content-type": "text/html"}, [page]))
    _, message = await run(provider, model, api_key="sk-ant-test")
    assert message.stop_reason == "error"
    assert message.error_message == (
        "HTTP 200 without an event stream: got text/html from "
        f"{local_http_server.base_url}/v1/messages: 502 Bad Gateway"
    )
    assert message.error_type == "upstream_error"


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (
            ScriptedReply.json(401, error_body("authentication_error", "invalid x-api-key")),
            {
                "error_message": "401 invalid x-api-key",
                "error_status": 401,
                "error_type": "authentication_error",
            },
        ),
        (
            ScriptedReply.json(
                403, error_body("permission_error", "Your API key does not have permission")
            ),
            {"error_status": 403, "error_type": "permission_error"},
        ),
        (
            ScriptedReply.json(404, error_body("not_found_error", "model: claude-nope")),
            {"error_message": "404 model: claude-nope", "error_type": "not_found_error"},
        ),
        (
            ScriptedReply.text(408, "request timeout"),
            {"error_message": "408 request timeout", "error_status": 408},
        ),
        (
            ScriptedReply.json(
                429,
                error_body(
                    "rate_limit_error",
                    "Number of request tokens has exceeded your per-minute rate limit",
                ),
                {"retry-after": "17", "anthropic-ratelimit-tokens-remaining": "0"},
            ),
            {
                "error_status": 429,
                "error_type": "rate_limit_error",
                "error_retry_after_ms": 17000.0,
            },
        ),
        (
            ScriptedReply.json(500, error_body("api_error", "Internal server error")),
            {"error_message": "500 Internal server error", "error_type": "api_error"},
        ),
        (
            ScriptedReply.text(
                502,
                "<html><head><title>502 Bad Gateway</title></head><body><center>cloudflare</center></body></html>",
                "text/html",
            ),
            {
                "error_status": 502,
                "error_message": "502 <html><head><title>502 Bad Gateway</title></head><body><center>cloudflare</center></body></html>",
            },
        ),
        (
            ScriptedReply.text(503, "upstream connect error"),
            {"error_message": "503 upstream connect error"},
        ),
        (
            ScriptedReply.json(529, error_body("overloaded_error", "Overloaded")),
            {
                "error_message": "529 Overloaded",
                "error_type": "overloaded_error",
                "error_status": 529,
            },
        ),
        (
            ScriptedReply(413, {}, []),
            {"error_message": "413 status code (no body)", "error_status": 413},
        ),
    ],
)
async def test_http_errors_become_error_messages_with_facts(
    provider, model, local_http_server, response, expected
):
    local_http_server.enqueue(response)
    events, message = await run(provider, model)
    assert [e.type for e in events] == ["start", "error"]
    assert message.stop_reason == "error"
    assert message.error_output_started is False
    for name, value in expected.items():
        assert getattr(message, name) == value, name
    if response.body:
        assert message.error_body == response.body[0].decode()


async def test_overloaded_error_event_mid_stream(provider, model, local_http_server):
    body = stream(
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "Partial"}),
        frame(
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    )
    local_http_server.enqueue(ScriptedReply(body=[body, HANG]))  # the client must hang up itself
    with anyio.fail_after(10):
        events, message = await run(provider, model)
    assert events[-1].type == "error"
    assert message.stop_reason == "error"
    assert message.error_message == "Overloaded"
    assert message.error_type == "overloaded_error"
    assert message.error_status is None
    assert message.error_output_started is True
    assert message.text() == "Partial"
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


@pytest.mark.parametrize(
    ("body", "error", "kept_text"),
    [
        pytest.param(b"", EMPTY_RESPONSE_ERROR, "", id="empty-200"),
        pytest.param(b": ping\n\n: ping\n\n", EMPTY_RESPONSE_ERROR, "", id="only-comments"),
        pytest.param(
            HELLO[: HELLO.index(b"world") + 2],
            ANTHROPIC_STREAM_INCOMPLETE_ERROR,
            "Hello",
            id="cut-mid-event",
        ),
        pytest.param(
            stream(message_start(), text_block(0, "Hello")),
            ANTHROPIC_STREAM_INCOMPLETE_ERROR,
            "Hello",
            id="no-message-stop",
        ),
        pytest.param(
            stream(
                message_start(),
                block_start(0, {"type": "text", "text": ""}),
                message_delta(),
                message_stop(),
            ),
            ANTHROPIC_STREAM_INCOMPLETE_ERROR,
            "",
            id="block-never-stopped",
        ),
        pytest.param(
            stream(text_block(0, "x"), message_delta(), message_stop()),
            ANTHROPIC_STREAM_INCOMPLETE_ERROR,
            "x",
            id="no-message-start",
        ),
        pytest.param(
            message_start() + b"event: content_block_start\ndata: {not json}\n\n",
            MALFORMED_FRAME_ERROR,
            "",
            id="malformed-frame",
        ),
    ],
)
async def test_empty_truncated_and_malformed_streams(
    provider, model, local_http_server, body, error, kept_text
):
    local_http_server.enqueue(ScriptedReply(body=[body] if body else []))
    events, message = await run(provider, model)
    assert events[-1].type == "error"
    assert (message.stop_reason, message.error_message) == ("error", error)
    assert message.text() == kept_text
    assert message.error_output_started is bool(kept_text)


async def test_message_stop_may_be_optional_for_proxies(provider, model, local_http_server):
    lenient = model.model_copy(update={"compat": {"require_message_stop": False}})
    body = stream(message_start(), text_block(0, "done"), message_delta("end_turn"))
    local_http_server.enqueue(reply(body), reply(body))
    _, message = await run(provider, lenient)
    assert (message.stop_reason, message.text()) == ("stop", "done")
    _, message = await run(provider, model)
    assert message.error_message == ANTHROPIC_STREAM_INCOMPLETE_ERROR


async def test_malformed_tool_arguments(provider, model, local_http_server):
    body = stream(
        message_start(),
        tool_block(0, "toolu_1", "f", '{"a": 1,,'),
        message_delta("tool_use"),
        message_stop(),
    )
    local_http_server.enqueue(reply(body))
    _, message = await run(provider, model)
    assert (message.stop_reason, message.error_message) == ("error", MALFORMED_TOOL_ARGUMENTS)


async def test_hung_server_hits_the_idle_timeout(provider, model, local_http_server):
    local_http_server.enqueue(
        ScriptedReply(
            body=[
                stream(
                    message_start(),
                    block_start(0, {"type": "text", "text": ""}),
                    block_delta(0, {"type": "text_delta", "text": "slow"}),
                ),
                HANG,
            ]
        )
    )
    with anyio.fail_after(10):
        _, message = await run(provider, model, idle_timeout=0.2)
    assert message.stop_reason == "error"
    assert message.error_message == "Stream idle timeout: no data received for 0.2s (timed out)"
    assert message.text() == "slow"
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


async def test_a_server_that_keeps_the_connection_open_after_message_stop(model, local_http_server):
    provider = AnthropicProvider(env={}, drain_timeout=0.05)
    local_http_server.enqueue(ScriptedReply(body=[HELLO, b"event: ping\ndata: {}\n\n", HANG]))
    with anyio.fail_after(10):
        events, message = await run(provider, model, idle_timeout=30)
    await provider.aclose()
    assert events[-1].type == "done"
    assert (message.stop_reason, message.text()) == ("stop", "Hello world")
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


async def test_the_api_key_never_appears_in_errors_or_events(provider, model, local_http_server):
    secret = "sk-ant-api03-very-secret"
    local_http_server.enqueue(
        ScriptedReply.json(401, error_body("authentication_error", "invalid x-api-key"))
    )
    events, message = await run(provider, model, api_key=secret)
    assert secret not in message.to_json()
    assert all(secret not in str(event.to_dict()) for event in events)
    assert secret not in repr(provider)


async def test_abort_mid_stream_closes_the_connection(provider, model, local_http_server):
    local_http_server.enqueue(
        ScriptedReply(
            body=[
                stream(
                    message_start(),
                    block_start(0, {"type": "text", "text": ""}),
                    block_delta(0, {"type": "text_delta", "text": "start"}),
                ),
                HANG,
            ]
        )
    )
    controller = AbortController()
    stream_ = provider.stream_fn(model, request(), StreamOptions(signal=controller.signal))
    with anyio.fail_after(10):
        async for event in stream_:
            if event.type == "text_delta":
                controller.abort()
        message = await stream_.result()
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.text() == "start"
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


async def test_abort_before_the_request(provider, model, local_http_server):
    controller = AbortController()
    controller.abort()
    events, message = await run(provider, model, signal=controller.signal)
    assert [e.type for e in events] == ["start", "error"]
    assert message.stop_reason == "aborted"
    assert local_http_server.requests == []


async def test_connection_refused(provider, model):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    closed = model.model_copy(update={"base_url": f"http://127.0.0.1:{port}"})
    _, message = await run(provider, closed, connect_timeout=2)
    assert message.stop_reason == "error"
    assert message.error_message.startswith("Connection error: ")
    assert message.error_status is None


async def test_no_exception_escapes_stream_fn(provider, model, local_http_server):
    def broken_hook(body, model):
        raise RuntimeError("payload hook exploded")

    _, message = await run(provider, model, on_payload=broken_hook)
    assert (message.stop_reason, message.error_message) == (
        "error",
        "RuntimeError: payload hook exploded",
    )
    assert local_http_server.requests == []


# --------------------------------------------------------------------------- pure policy tables


@pytest.mark.parametrize(
    ("base", "model_max", "level", "budgets", "expected"),
    [
        (None, 64000, "high", None, (64000, 16384)),
        (4096, 64000, "high", None, (20480, 16384)),
        (4096, 64000, "minimal", None, (5120, 1024)),
        (4096, 64000, "low", None, (6144, 2048)),
        (4096, 64000, "medium", None, (12288, 8192)),
        (4096, 64000, "xhigh", None, (20480, 16384)),
        (4096, 64000, "max", None, (36864, 32768)),
        (8192, 8192, "high", None, (8192, 7168)),  # budget cannot fit: 1024 left for output
        (1000, 1500, "high", None, (1500, 476)),
        (1000, 900, "high", None, (900, 0)),
        (4096, 64000, "high", {"high": 3000}, (7096, 3000)),
    ],
)
def test_adjust_max_tokens_for_thinking(base, model_max, level, budgets, expected):
    assert adjust_max_tokens_for_thinking(base, model_max, level, budgets) == expected


def claude(model_id="claude-sonnet-4-5", **fields):
    values = {
        "id": model_id,
        "api": ANTHROPIC_MESSAGES_API,
        "provider": "anthropic",
        "reasoning": True,
    }
    values.update(fields)
    return Model(**values)


@pytest.mark.parametrize(
    ("model", "reasoning", "max_tokens", "enabled", "plan_max", "budget", "effort"),
    [
        (claude(max_tokens=64000), None, None, False, 64000, None, None),
        (claude(max_tokens=64000), "off", 2000, False, 2000, None, None),
        (claude(max_tokens=64000), "high", None, True, 64000, 16384, None),
        (claude(max_tokens=64000), "low", 4000, True, 6048, 2048, None),
        (claude(max_tokens=8192), "high", 100000, True, 8192, 7168, None),
        (claude(max_tokens=1500), "high", None, False, 1500, None, None),  # 476 < 1024
        (claude("claude-opus-4-6", max_tokens=32000), "high", None, True, 32000, None, "high"),
        (claude("claude-opus-4-6"), "minimal", None, True, 8192, None, "low"),
        (claude("claude-opus-4-6"), "xhigh", None, True, 8192, None, "high"),
        (claude("claude-opus-4-7"), "xhigh", None, True, 8192, None, "xhigh"),
        (claude("claude-sonnet-4-6"), "max", None, True, 8192, None, "max"),
        (claude("anthropic/claude-sonnet-4.6"), "medium", None, True, 8192, None, "medium"),
        (
            claude("my-claude", compat={"adaptive_thinking": True}),
            "high",
            None,
            True,
            8192,
            None,
            "high",
        ),
    ],
)
def test_resolve_thinking_plan(model, reasoning, max_tokens, enabled, plan_max, budget, effort):
    plan = resolve_thinking_plan(model, reasoning, max_tokens)
    assert (plan.enabled, plan.max_tokens, plan.budget_tokens, plan.effort) == (
        enabled,
        plan_max,
        budget,
        effort,
    )
    if plan.budget_tokens is not None:
        assert 1024 <= plan.budget_tokens < plan.max_tokens


@pytest.mark.parametrize(
    ("level", "model_id", "effort"),
    [
        ("minimal", "claude-opus-4-6", "low"),
        ("low", "claude-opus-4-6", "low"),
        ("medium", "claude-opus-4-6", "medium"),
        ("high", "claude-opus-4-6", "high"),
        ("xhigh", "claude-opus-4-6", "high"),
        ("xhigh", "claude-opus-4-8", "xhigh"),
        ("max", "claude-opus-4-6", "max"),
        ("max", "claude-3-7-sonnet", "high"),
        (None, "claude-opus-4-6", "high"),
    ],
)
def test_resolve_anthropic_thinking_effort(level, model_id, effort):
    assert resolve_anthropic_thinking_effort(claude(model_id), level) == effort


@pytest.mark.parametrize(
    ("model", "retention", "env", "expected"),
    [
        (claude(), None, {}, {"type": "ephemeral"}),
        (claude(), "short", {}, {"type": "ephemeral"}),
        (claude(), "long", {}, {"type": "ephemeral", "ttl": "1h"}),
        (claude(), None, {"OPENCLAW_CACHE_RETENTION": "long"}, {"type": "ephemeral", "ttl": "1h"}),
        (claude(), "none", {"OPENCLAW_CACHE_RETENTION": "long"}, None),
        (claude(provider="fireworks"), "long", {}, {"type": "ephemeral"}),
    ],
)
def test_resolve_cache_control(model, retention, env, expected):
    assert resolve_cache_control(model, retention, env) == expected


@pytest.mark.parametrize(
    ("prompt", "cache", "expected"),
    [
        ("", EPHEMERAL, None),
        ("plain", None, [{"type": "text", "text": "plain"}]),
        ("plain", EPHEMERAL, [{"type": "text", "text": "plain", "cache_control": EPHEMERAL}]),
        (
            "stable  " + SYSTEM_PROMPT_CACHE_BOUNDARY + "  dynamic",
            EPHEMERAL,
            [
                {"type": "text", "text": "stable", "cache_control": EPHEMERAL},
                {"type": "text", "text": "dynamic"},
            ],
        ),
        ("a" + SYSTEM_PROMPT_CACHE_BOUNDARY + "b", None, [{"type": "text", "text": "a\nb"}]),
        (
            SYSTEM_PROMPT_CACHE_BOUNDARY + "only dynamic",
            EPHEMERAL,
            [{"type": "text", "text": "only dynamic"}],
        ),
    ],
)
def test_build_system_blocks(prompt, cache, expected):
    assert build_system_blocks(prompt, cache) == expected


def tool_result(call_id="t1"):
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok", "is_error": False}


@pytest.mark.parametrize(
    ("messages", "limit", "expected"),
    [
        ([], 4, []),
        ([{"role": "user", "content": "hi"}], 0, [{"role": "user", "content": "hi"}]),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
            ],
            2,
            [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "hi", "cache_control": EPHEMERAL}],
                },
                {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
            ],
        ),
        (  # the deepest user text and the latest tool result both get a marker
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": []},
                {"role": "user", "content": [tool_result()]},
            ],
            2,
            [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "q", "cache_control": EPHEMERAL}],
                },
                {"role": "assistant", "content": []},
                {"role": "user", "content": [{**tool_result(), "cache_control": EPHEMERAL}]},
            ],
        ),
        (  # one marker left: the tool result wins
            [{"role": "user", "content": "q"}, {"role": "user", "content": [tool_result()]}],
            1,
            [
                {"role": "user", "content": "q"},
                {"role": "user", "content": [{**tool_result(), "cache_control": EPHEMERAL}]},
            ],
        ),
        (  # only tool results anywhere
            [{"role": "user", "content": [tool_result("a"), tool_result("b")]}],
            3,
            [
                {
                    "role": "user",
                    "content": [tool_result("a"), {**tool_result("b"), "cache_control": EPHEMERAL}],
                }
            ],
        ),
    ],
)
def test_apply_cache_control_to_messages(messages, limit, expected):
    apply_cache_control_to_messages(messages, EPHEMERAL, limit)
    assert messages == expected


SAME = {"provider": "anthropic", "api": ANTHROPIC_MESSAGES_API, "model": "claude-sonnet-4-5"}


def roles(messages):
    return [(m.role, getattr(m, "tool_call_id", None)) for m in messages]


def test_prepare_replay_synthesizes_missing_results_and_drops_orphans():
    history = [
        UserMessage(content="go"),
        AssistantMessage(
            content=[ToolCall(id="a", name="f"), ToolCall(id=" b ", name="g")],
            stop_reason="toolUse",
            **SAME,
        ),
        ToolResultMessage(tool_call_id="b", tool_name="g", content=[TextContent(text="B")]),
        ToolResultMessage(tool_call_id="b", tool_name="g", content=[TextContent(text="dup")]),
        ToolResultMessage(tool_call_id="zzz", tool_name="h", content=[TextContent(text="orphan")]),
        UserMessage(content="next"),
    ]
    replayed = prepare_replay_messages(history, claude())
    assert roles(replayed) == [
        ("user", None),
        ("assistant", None),
        ("toolResult", "b"),
        ("toolResult", "a"),
        ("user", None),
    ]
    synthetic = replayed[3]
    assert (synthetic.is_error, synthetic.text(), synthetic.tool_name) == (
        True,
        MISSING_TOOL_RESULT_TEXT,
        "f",
    )
    assert replayed[1].content[1].id == "b"
    assert history[1].content[1].id == " b "  # the input is not mutated


@pytest.mark.parametrize(
    ("failed", "replayed_as"),
    [
        (AssistantMessage(content=[], stop_reason="error", **SAME), None),
        (AssistantMessage(content=[TextContent(text="  ")], stop_reason="aborted", **SAME), None),
        (
            AssistantMessage(
                content=[TextContent(text="[assistant turn failed before producing content]")],
                stop_reason="error",
                **SAME,
            ),
            None,
        ),
        (
            AssistantMessage(
                content=[TextContent(text="half an answer")], stop_reason="error", **SAME
            ),
            FAILED_ASSISTANT_REPLAY_TEXT,
        ),
        (
            AssistantMessage(
                content=[TextContent(text="x"), ToolCall(id="c", name="f")],
                stop_reason="aborted",
                **SAME,
            ),
            None,
        ),
    ],
)
def test_failed_turns_are_dropped_or_marked(failed, replayed_as):
    replayed = prepare_replay_messages(
        [UserMessage(content="q"), failed, UserMessage(content="again")], claude()
    )
    if replayed_as is None:
        assert [m.role for m in replayed] == ["user", "user"]
    else:
        assert replayed[1].text() == replayed_as


def test_images_become_notes_for_text_only_models():
    text_only = claude(input=["text"])
    history = [
        UserMessage(
            content=[
                TextContent(text="see"),
                ImageContent(data="aGk=", mime_type="image/png"),
                ImageContent(data="aGk=", mime_type="image/png"),
            ]
        ),
    ]
    converted = convert_messages(history, text_only)
    assert converted == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "text", "text": "(image omitted: model does not support images)"},
            ],
        }
    ]


def test_tool_results_merge_into_one_user_turn_with_following_user_text():
    history = [
        UserMessage(content="q"),
        AssistantMessage(
            content=[ToolCall(id="call.1", name="f"), ToolCall(id="c2", name="g")],
            stop_reason="toolUse",
            **SAME,
        ),
        ToolResultMessage(tool_call_id="call.1", tool_name="f", content=[], is_error=True),
        ToolResultMessage(
            tool_call_id="c2",
            tool_name="g",
            content=[ImageContent(data="aGk=", mime_type="image/jpeg")],
        ),
        UserMessage(content="steer"),
    ]
    converted = convert_messages(history, claude(input=["text", "image"]))
    assert converted[1]["content"][0]["id"] == "call1"  # OpenClaw's strict id: alphanumerics
    assert converted[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "call1",
                "content": "[tool error with no output]",
                "is_error": True,
            },
            {
                "type": "tool_result",
                "tool_use_id": "c2",
                "content": [
                    {"type": "text", "text": "(see attached image)"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/jpeg", "data": "aGk="},
                    },
                ],
                "is_error": False,
            },
            {"type": "text", "text": "steer"},
        ],
    }
    assert len(converted) == 3


def test_thinking_off_omits_old_thinking_but_keeps_the_active_tool_turn():
    history = [
        UserMessage(content="q"),
        AssistantMessage(
            content=[ThinkingContent(thinking="old", thinking_signature="s0")], **SAME
        ),
        UserMessage(content="do it"),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="plan", thinking_signature="s1"),
                ToolCall(id="t", name="f"),
            ],
            stop_reason="toolUse",
            **SAME,
        ),
        ToolResultMessage(tool_call_id="t", tool_name="f", content=[TextContent(text="r")]),
    ]
    converted = convert_messages(history, claude(), replay_thinking=False)
    assert converted[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": OMITTED_REASONING_TEXT}],
    }
    assert converted[3]["content"][0] == {"type": "thinking", "thinking": "plan", "signature": "s1"}


def test_unsigned_thinking_is_replayed_as_text():
    history = [
        UserMessage(content="q"),
        AssistantMessage(content=[ThinkingContent(thinking="aborted thoughts")], **SAME),
    ]
    assert convert_messages(history, claude())[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "aborted thoughts"}],
    }


@pytest.mark.parametrize(
    ("base_url", "public"),
    [
        ("", True),
        ("https://api.anthropic.com", True),
        ("https://API.anthropic.com/v1", True),
        ("http://127.0.0.1:9", False),
        ("https://proxy.example/anthropic", False),
    ],
)
def test_is_anthropic_public_endpoint(base_url, public):
    assert is_anthropic_public_endpoint(base_url) is public


@pytest.mark.parametrize(
    ("base_url", "url"),
    [
        ("", "https://api.anthropic.com/v1/messages"),
        ("https://api.anthropic.com/", "https://api.anthropic.com/v1/messages"),
        ("https://proxy.example/v1", "https://proxy.example/v1/messages"),
        ("http://127.0.0.1:8080/anthropic", "http://127.0.0.1:8080/anthropic/v1/messages"),
    ],
)
def test_messages_url(base_url, url):
    assert messages_url(base_url) == url


@pytest.mark.parametrize(
    ("model", "tools", "extra", "expected"),
    [
        (claude(), [], {}, "interleaved-thinking-2025-05-14"),
        (claude(), [Tool("f", "")], {}, "interleaved-thinking-2025-05-14"),
        (
            claude(provider="fireworks"),
            [Tool("f", "")],
            {},
            "fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14",
        ),
        (claude(), [], {"interleaved_thinking": False}, None),
        (claude("claude-opus-4-6"), [], {}, None),
    ],
)
def test_build_beta_header(model, tools, extra, expected):
    assert build_beta_header(model, Context("", [], tools), StreamOptions(extra=extra)) == expected


# --------------------------------------------------------------------------- end to end


@tool
async def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21°C, sunny"


async def test_agent_run_with_thinking_and_a_tool_over_real_http(model, local_http_server):
    first = stream(
        message_start(model="claude-test"),
        thinking_block(0, "Need the weather tool.", signature="c2lnLTE="),
        tool_block(1, "toolu_w", "get_weather", '{"city": "Lis', 'bon"}'),
        message_delta("tool_use", output_tokens=40),
        message_stop(),
    )
    second = stream(
        message_start(input_tokens=300),
        thinking_block(0, "Answer now.", signature="c2lnLTI="),
        text_block(1, "It is 21°C and sunny in Lisbon."),
        message_delta("end_turn", output_tokens=12),
        message_stop(),
    )
    local_http_server.enqueue(reply(first, chunk=17), reply(second, chunk=29))
    provider = AnthropicProvider(env={})
    agent = Agent(
        model=model, stream_fn=provider.stream_fn, tools=[get_weather], thinking_level="high"
    )
    await agent.prompt("Weather in Lisbon?")
    await provider.aclose()

    transcript = agent.state.messages
    assert [m.role for m in transcript] == ["user", "assistant", "toolResult", "assistant"]
    assert transcript[1].stop_reason == "toolUse"
    assert transcript[2].text() == "Lisbon: 21°C, sunny"
    assert transcript[3].text() == "It is 21°C and sunny in Lisbon."
    assert transcript[3].content[0].thinking_signature == "c2lnLTI="

    first_body, second_body = (r.json() for r in local_http_server.requests)
    assert first_body["thinking"]["type"] == "enabled"
    assert first_body["tools"][0]["name"] == "get_weather"
    assert second_body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Need the weather tool.", "signature": "c2lnLTE="},
            {
                "type": "tool_use",
                "id": "toolu_w",
                "name": "get_weather",
                "input": {"city": "Lisbon"},
            },
        ],
    }
    assert second_body["messages"][2]["content"][0]["tool_use_id"] == "toolu_w"
    assert second_body["messages"][2]["content"][0]["content"] == "Lisbon: 21°C, sunny"
    assert second_body["messages"][2]["content"][0]["cache_control"] == EPHEMERAL


async def test_agent_sees_provider_failures_as_error_messages(model, local_http_server):
    local_http_server.enqueue(
        ScriptedReply.json(529, error_body("overloaded_error", "Overloaded"), {"retry-after": "3"})
    )
    provider = AnthropicProvider(env={})
    agent = Agent(model=model, stream_fn=provider.stream_fn)
    await agent.prompt("hi")
    await provider.aclose()
    failure = agent.state.messages[-1]
    assert (
        failure.stop_reason,
        failure.error_status,
        failure.error_type,
        failure.error_retry_after_ms,
    ) == (
        "error",
        529,
        "overloaded_error",
        3000.0,
    )
