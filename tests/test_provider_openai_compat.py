"""The OpenAI-compatible provider against a real local HTTP server, on asyncio and trio."""

from __future__ import annotations

import socket

import anyio
import pytest

from openclaw_runtime import Runtime, tool
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
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.testing import HANG, Pause, ScriptedReply

pytestmark = pytest.mark.anyio


def chunk(delta=None, finish=None, **extra):
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-test"}
    body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    body.update(extra)
    return body


def usage(prompt=100, completion=20, cached=40):
    return {
        "id": "chatcmpl-1",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


HELLO = [
    chunk({"role": "assistant", "content": "Hello"}),
    chunk({"content": " world"}),
    chunk(finish="stop"),
]


@pytest.fixture
def model(local_http_server):
    return Model(
        id="gpt-test",
        api="openai-completions",
        provider="local",
        base_url=local_http_server.base_url + "/v1",
        cost=ModelCost(input=2.0, output=8.0, cache_read=0.5),
        reasoning=True,
        input=["text", "image"],
    )


@pytest.fixture
async def provider():
    instance = OpenAICompatProvider()
    yield instance
    await instance.aclose()


def request(text="hi", **kw):
    return Context("be brief", [UserMessage(content=text)], kw.get("tools", []))


async def run(provider, model, context=None, **options):
    stream = provider.stream_fn(model, context or request(), StreamOptions(**options))
    events = [event async for event in stream]
    return events, await stream.result()


# --------------------------------------------------------------------------- success paths


async def test_streams_text_with_pings_usage_and_no_done(provider, model, local_http_server):
    reply = ScriptedReply.sse([*HELLO, usage()], done=False)  # no [DONE] terminator
    reply.body[:0] = [b": OPENROUTER PROCESSING\n\n", b": ping\r\n\r\n"]
    local_http_server.enqueue(reply)
    events, message = await run(provider, model)
    assert [e.type for e in events] == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert message.text() == "Hello world"
    assert message.stop_reason == "stop"
    assert message.response_id == "chatcmpl-1"
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (60, 40, 20)
    assert message.usage.cost.total == pytest.approx((60 * 2 + 40 * 0.5 + 20 * 8) / 1e6)


async def test_request_body_and_headers(provider, model, local_http_server):
    local_http_server.enqueue(ScriptedReply.sse(HELLO))
    history = [
        UserMessage(
            content=[TextContent(text="look"), ImageContent(data="aGk=", mime_type="image/png")]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="hmm"),
                TextContent(text="calling"),
                ToolCall(id="call_1", name="lookup", arguments={"q": "x"}),
            ],
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            tool_call_id="call_1", tool_name="lookup", content=[TextContent(text="42")]
        ),
        AssistantMessage(content=[], stop_reason="error", error_message="boom"),
        UserMessage(content="and?"),
    ]
    tools = [
        Tool(
            "lookup", "Look things up.", {"type": "object", "properties": {"q": {"type": "string"}}}
        )
    ]
    await run(
        provider,
        model,
        Context("system text", history, tools),
        api_key="sk-test-secret",
        max_tokens=256,
        temperature=0.2,
        reasoning="high",
        headers={"x-extra": "1"},
    )
    sent = local_http_server.requests[0]
    assert sent.method == "POST"
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test-secret"
    assert sent.headers["x-extra"] == "1"
    body = sent.json()
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 256
    assert body["temperature"] == 0.2
    assert body["reasoning_effort"] == "high"
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look things up.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "system text"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            ],
        },
        {
            "role": "assistant",
            "content": "calling",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q":"x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        {"role": "user", "content": "and?"},  # the failed assistant turn is not replayed
    ]


async def test_api_key_from_environment_and_missing_key(model, local_http_server):
    remote = model.model_copy(
        update={"base_url": "https://models.example.invalid/v1", "provider": "acme"}
    )
    provider = OpenAICompatProvider(env={})
    _, message = await run(provider, remote)
    assert message.stop_reason == "error"
    assert message.error_message == "No API key found for provider: acme"
    assert local_http_server.requests == []

    local_http_server.enqueue(ScriptedReply.sse(HELLO))
    with_env = OpenAICompatProvider(env={"LOCAL_API_KEY": "sk-from-env"})
    await run(with_env, model)
    assert local_http_server.requests[0].headers["authorization"] == "Bearer sk-from-env"
    await with_env.aclose()


async def test_reasoning_fields_become_thinking(provider, model, local_http_server):
    local_http_server.enqueue(
        ScriptedReply.sse(
            [
                chunk({"reasoning_content": "Let me "}),
                chunk({"reasoning_content": "think."}),
                chunk({"content": "Answer."}),
                chunk(finish="stop"),
            ]
        )
    )
    events, message = await run(provider, model)
    thinking, answer = message.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "Let me think."
    assert thinking.thinking_signature == "reasoning_content"
    assert answer.text == "Answer."
    kinds = [e.type for e in events]
    assert kinds.index("thinking_end") < kinds.index("text_start")

    local_http_server.enqueue(
        ScriptedReply.sse([chunk({"reasoning": "hmm"}), chunk({"content": "ok"}, "stop")])
    )
    _, message = await run(provider, model)
    assert message.content[0].thinking_signature == "reasoning"


async def test_tool_call_deltas_with_repeated_metadata(provider, model, local_http_server):
    def call(index, args, name="get_weather", call_id=None):
        entry = {"index": index, "type": "function", "function": {"name": name, "arguments": args}}
        entry["id"] = call_id or f"call_{index}"
        return {"tool_calls": [entry]}

    local_http_server.enqueue(
        ScriptedReply.sse(
            [
                chunk({"content": "Checking."}),
                chunk(call(0, "")),
                chunk(call(0, '{"ci')),
                chunk(call(1, '{"city": "Pa')),
                chunk(call(0, 'ty": "Lisbon"}')),
                chunk(call(1, 'ris"}')),
                chunk(finish="tool_calls"),
                usage(),
            ],
            chunk=5,
        )
    )
    events, message = await run(provider, model)
    calls = message.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_0", "get_weather", {"city": "Lisbon"}),
        ("call_1", "get_weather", {"city": "Paris"}),
    ]
    assert message.stop_reason == "toolUse"
    assert [e.type for e in events].count("toolcall_start") == 2
    assert "".join(
        e.delta for e in events if e.type == "toolcall_delta" and e.content_index == 1
    ) == ('{"city": "Lisbon"}')


async def test_stop_with_tool_calls_is_tool_use(provider, model, local_http_server):
    tool_call = {
        "index": 0,
        "id": "c",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    local_http_server.enqueue(ScriptedReply.sse([chunk({"tool_calls": [tool_call]}, "stop")]))
    _, message = await run(provider, model)
    assert message.stop_reason == "toolUse"


async def test_every_byte_boundary_over_http(provider, model, local_http_server):
    raw = ScriptedReply.sse(
        [
            chunk({"content": "héllo"}),
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c", "function": {"name": "f", "arguments": '{"a":1}'}}
                    ]
                },
                "tool_calls",
            ),
        ]
    ).body[0]
    expected = None
    for cut in range(1, len(raw)):
        local_http_server.enqueue(ScriptedReply(body=[raw[:cut], Pause(0.0005), raw[cut:]]))
        _, message = await run(provider, model)
        snapshot = (
            message.text(),
            [c.arguments for c in message.tool_calls()],
            message.stop_reason,
        )
        expected = expected or snapshot
        assert snapshot == ("héllo", [{"a": 1}], "toolUse"), f"cut at byte {cut}"


async def test_one_byte_writes(provider, model, local_http_server):
    local_http_server.enqueue(ScriptedReply.sse(HELLO, chunk=1))
    _, message = await run(provider, model)
    assert message.text() == "Hello world"


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            ScriptedReply.json(
                401,
                {
                    "error": {
                        "message": "Incorrect API key provided",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            ),
            {
                "error_message": "401 Incorrect API key provided",
                "error_status": 401,
                "error_code": "invalid_api_key",
                "error_type": "invalid_request_error",
            },
        ),
        (
            ScriptedReply.json(403, {"error": "Forbidden: region not supported"}),
            {"error_message": "403 Forbidden: region not supported", "error_status": 403},
        ),
        (
            ScriptedReply.json(404, {"detail": "Model 'nope' not found"}),
            {"error_message": "404 Model 'nope' not found", "error_status": 404},
        ),
        (
            ScriptedReply.text(408, "request timeout"),
            {"error_message": "408 request timeout", "error_status": 408},
        ),
        (
            ScriptedReply.json(
                429,
                {
                    "error": {
                        "message": "Rate limit reached for requests",
                        "type": "requests",
                        "code": "rate_limit_exceeded",
                    }
                },
                {"retry-after": "20"},
            ),
            {
                "error_message": "429 Rate limit reached for requests",
                "error_retry_after_ms": 20000.0,
                "error_code": "rate_limit_exceeded",
            },
        ),
        (
            ScriptedReply.json(
                429, {"error": {"message": "Slow down. Please try again in 1m30s."}}
            ),
            {"error_retry_after_ms": 90000.0},
        ),
        (
            ScriptedReply.json(429, {"error": {"message": "quota"}}, {"retry-after-ms": "1500"}),
            {"error_retry_after_ms": 1500.0},
        ),
        (
            ScriptedReply.json(
                500, {"error": {"message": "The server had an error", "type": "server_error"}}
            ),
            {"error_message": "500 The server had an error", "error_type": "server_error"},
        ),
        (
            ScriptedReply.text(
                502,
                "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
                "text/html",
            ),
            {
                "error_status": 502,
                "error_message": "502 <!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
            },
        ),
        (
            ScriptedReply.json(
                503,
                {
                    "error": {
                        "code": 503,
                        "message": "The model is overloaded.",
                        "status": "UNAVAILABLE",
                    }
                },
            ),
            {"error_message": "503 The model is overloaded.", "error_code": "UNAVAILABLE"},
        ),
        (
            ScriptedReply.json(
                529,
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
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
    provider, model, local_http_server, reply, expected
):
    local_http_server.enqueue(reply)
    events, message = await run(provider, model)
    assert [e.type for e in events] == ["start", "error"]
    assert message.stop_reason == "error"
    assert message.error_output_started is False
    for name, value in expected.items():
        assert getattr(message, name) == value, name
    if reply.body:
        assert message.error_body == reply.body[0].decode()


async def test_error_object_inside_a_200_stream(provider, model, local_http_server):
    local_http_server.enqueue(
        ScriptedReply.sse(
            [
                chunk({"content": "partial"}),
                {"error": {"code": 502, "message": "Upstream provider error: overloaded"}},
            ]
        )
    )
    _, message = await run(provider, model)
    assert message.stop_reason == "error"
    assert message.error_message == "502 Upstream provider error: overloaded"
    assert message.error_status == 502
    assert message.text() == "partial"
    assert message.error_output_started is True


@pytest.mark.parametrize(
    ("body", "message_text", "kept_text"),
    [
        ([], "Provider returned an empty response (HTTP 200 without any stream event)", ""),
        (
            [b'data: {"choices":[{"index":0,"delta":{"content":"half"}}]}\n\ndata: {"choi'],
            "Stream ended without finish_reason",
            "half",
        ),
        (
            [b"data: {not json}\n\n"],
            "Provider sent a malformed stream chunk (finish_reason: malformed_response): {not json}",
            "",
        ),
    ],
)
async def test_truncated_empty_and_malformed_streams(
    provider, model, local_http_server, body, message_text, kept_text
):
    local_http_server.enqueue(ScriptedReply(body=list(body)))
    events, message = await run(provider, model)
    assert events[-1].type == "error"
    assert message.error_message == message_text
    assert message.text() == kept_text


async def test_finish_reason_mapping(provider, model, local_http_server):
    local_http_server.enqueue(ScriptedReply.sse([chunk({"content": "cut"}, "length")]))
    _, message = await run(provider, model)
    assert message.stop_reason == "length"
    local_http_server.enqueue(ScriptedReply.sse([chunk({"content": "no"}, "content_filter")]))
    _, message = await run(provider, model)
    assert (message.stop_reason, message.error_message) == (
        "error",
        "Provider finish_reason: content_filter",
    )
    local_http_server.enqueue(ScriptedReply.sse([chunk({}, "error")]))
    _, message = await run(provider, model)
    assert message.error_message == "Provider finish_reason: error"


async def test_malformed_tool_arguments(provider, model, local_http_server):
    bad = {"index": 0, "id": "c", "function": {"name": "f", "arguments": '{"a": 1,,'}}
    local_http_server.enqueue(ScriptedReply.sse([chunk({"tool_calls": [bad]}, "tool_calls")]))
    _, message = await run(provider, model)
    assert (message.stop_reason, message.error_message) == ("error", MALFORMED_TOOL_ARGUMENTS)


async def test_hung_server_hits_the_idle_timeout(provider, model, local_http_server):
    local_http_server.enqueue(
        ScriptedReply(
            body=[b'data: {"choices":[{"index":0,"delta":{"content":"slow"}}]}\n\n', HANG]
        )
    )
    with anyio.fail_after(10):
        _, message = await run(provider, model, idle_timeout=0.2)
    assert message.stop_reason == "error"
    assert message.error_message == "Stream idle timeout: no data received for 0.2s (timed out)"
    assert message.text() == "slow"
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


async def test_abort_mid_stream_closes_the_connection(provider, model, local_http_server):
    local_http_server.enqueue(
        ScriptedReply(
            body=[b'data: {"choices":[{"index":0,"delta":{"content":"start"}}]}\n\n', HANG]
        )
    )
    controller = AbortController()
    stream = provider.stream_fn(model, request(), StreamOptions(signal=controller.signal))
    with anyio.fail_after(10):
        async for event in stream:
            if event.type == "text_delta":
                controller.abort()
        message = await stream.result()
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.text() == "start"
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


async def test_abort_before_the_response_starts(provider, model, local_http_server):
    controller = AbortController()
    controller.abort()
    _, message = await run(provider, model, signal=controller.signal)
    assert message.stop_reason == "aborted"
    assert local_http_server.requests == []


async def test_connection_refused(provider, model):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    closed = model.model_copy(update={"base_url": f"http://127.0.0.1:{port}/v1"})
    _, message = await run(provider, closed, connect_timeout=2)
    assert message.stop_reason == "error"
    assert message.error_message.startswith("Connection error: ")
    assert message.error_status is None


# --------------------------------------------------------------------------- end to end


@tool
async def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21°C, sunny"


async def test_agent_run_with_a_tool_over_real_http(model, local_http_server):
    call = {
        "index": 0,
        "id": "call_w",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'},
    }
    local_http_server.enqueue(
        ScriptedReply.sse([chunk({"tool_calls": [call]}), chunk(finish="tool_calls")], chunk=9),
        ScriptedReply.sse(
            [chunk({"content": "It is 21°C and sunny in Lisbon."}), chunk(finish="stop"), usage()]
        ),
    )
    runtime = Runtime({"models": [model.to_dict()]}, load_entrypoints=False)
    agent = runtime.create_agent(model="local/gpt-test", tools=[get_weather])
    await agent.prompt("Weather in Lisbon?")
    await runtime.aclose()

    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert agent.state.messages[2].text() == "Lisbon: 21°C, sunny"
    assert agent.state.messages[-1].text() == "It is 21°C and sunny in Lisbon."
    second = local_http_server.requests[1].json()["messages"]
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "call_w",
        "content": "Lisbon: 21°C, sunny",
    }
    assert second[-2]["tool_calls"][0]["function"]["name"] == "get_weather"


async def test_agent_sees_provider_failures_as_error_messages(model, local_http_server):
    local_http_server.enqueue(
        ScriptedReply.json(429, {"error": {"message": "Too many requests"}}, {"retry-after": "3"})
    )
    provider = OpenAICompatProvider()
    agent = Agent(model=model, stream_fn=provider.stream_fn)
    await agent.prompt("hi")
    await provider.aclose()
    failure = agent.state.messages[-1]
    assert (failure.stop_reason, failure.error_status, failure.error_retry_after_ms) == (
        "error",
        429,
        3000.0,
    )
