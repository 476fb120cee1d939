"""The Gemini provider against a real local HTTP server, on asyncio and trio.

The server answers ``streamGenerateContent?alt=sse`` the way Gemini does: one
``GenerateContentResponse`` per ``data:`` frame, ``\\r\\n\\r\\n`` frame ends, cumulative
``usageMetadata``, thought parts, signature-only parts and whole function calls. Chunk
boundaries: every two-piece split of a rich stream is swept through the decoder in process,
and every byte position of a compact stream is swept over real HTTP.
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
import orjson
import pytest
from openclaw_runtime_google import (
    GOOGLE_GENERATIVE_AI_API,
    GeminiProvider,
    GeminiStreamDecoder,
    build_request_body,
    map_finish_reason,
    resolve_thinking_config,
    stream_url,
)
from openclaw_runtime_google._replay import FAILED_ASSISTANT_REPLAY_TEXT, MISSING_TOOL_RESULT_TEXT
from openclaw_runtime_google._request import convert_messages, is_valid_thought_signature
from openclaw_runtime_google._stream import (
    EMPTY_RESPONSE_ERROR,
    GOOGLE_INCOMPLETE_FRAME_ERROR,
    GOOGLE_STREAM_INCOMPLETE_ERROR,
    MALFORMED_FRAME_ERROR,
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
from openclaw_runtime.testing import HANG, Pause, ScriptedReply

pytestmark = pytest.mark.anyio

SIG_A = "c2lnbmF0dXJlLWE="  # valid base64 thought signatures
SIG_B = "c2lnbmF0dXJlLWI="


# --------------------------------------------------------------------------- wire helpers


def response(parts=None, finish=None, usage=None, **extra) -> dict[str, Any]:
    """One ``GenerateContentResponse`` chunk."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts or []}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1",
    }
    if usage:
        body["usageMetadata"] = usage
    body.update(extra)
    return body


def usage(prompt=100, candidates=20, thoughts=0, cached=0, total=None):
    meta = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": total or prompt + candidates + thoughts,
    }
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    if cached:
        meta["cachedContentTokenCount"] = cached
    return meta


def text(value: str, signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"text": value}
    if signature:
        part["thoughtSignature"] = signature
    return part


def thought(value: str, signature: str | None = None) -> dict[str, Any]:
    return {**text(value, signature), "thought": True}


def call(
    name: str, args: dict[str, Any], signature: str | None = None, call_id: str | None = None
) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if call_id:
        part["functionCall"]["id"] = call_id
    if signature:
        part["thoughtSignature"] = signature
    return part


def sse(*chunks: Any) -> bytes:
    """Gemini frames: ``data: <json>`` ended by a blank line, with CRLF line ends."""
    return b"".join(
        b"data: " + (c if isinstance(c, bytes) else orjson.dumps(c)) + b"\r\n\r\n" for c in chunks
    )


def reply(body: bytes, *, chunk: int | None = None) -> ScriptedReply:
    pieces: list[Any] = (
        [body[i : i + chunk] for i in range(0, len(body), chunk)] if chunk else [body]
    )
    return ScriptedReply(200, {"content-type": "text/event-stream"}, pieces)


def google_error(
    code: int, message: str, status: str, details: list[Any] | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details is not None:
        error["details"] = details
    return {"error": error}


HELLO = sse(
    response([text("Hello")]), response([text(" world")]), response([text("")], "STOP", usage())
)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def model(local_http_server):
    return Model(
        id="gemini-2.5-flash",
        api=GOOGLE_GENERATIVE_AI_API,
        provider="google",
        base_url=local_http_server.base_url,
        reasoning=True,
        input=["text", "image"],
        cost=ModelCost(input=0.3, output=2.5, cache_read=0.075),
    )


@pytest.fixture
async def provider():
    instance = GeminiProvider(env={})
    yield instance
    await instance.aclose()


def request(prompt="hi", tools=()):
    return Context("be brief", [UserMessage(content=prompt)], list(tools))


async def run(provider, model, context=None, **options):
    stream_ = provider.stream_fn(model, context or request(), StreamOptions(**options))
    events = [event async for event in stream_]
    return events, await stream_.result()


def snapshot(message: AssistantMessage) -> dict[str, Any]:
    data = message.to_dict()
    data.pop("timestamp")
    return data


# --------------------------------------------------------------------------- success paths


async def test_streams_thoughts_text_and_a_signed_function_call(provider, model, local_http_server):
    body = sse(
        response(
            [thought("Let me "), thought("check.", SIG_A)], usage=usage(prompt=120, candidates=0)
        ),
        response([text("Checking")]),
        response([text(" now."), call("get_weather", {"city": "Lisbon"}, SIG_B)]),
        response([], "STOP", usage(prompt=120, candidates=30, thoughts=50, cached=20)),
    )
    local_http_server.enqueue(reply(body))
    events, message = await run(provider, model)
    assert [e.type for e in events] == [
        "start",
        "thinking_start", "thinking_delta", "thinking_delta", "thinking_end",
        "text_start", "text_delta", "text_delta", "text_end",
        "toolcall_start", "toolcall_delta", "toolcall_end",
        "done",
    ]  # fmt: skip
    thinking, answer, tool_call = message.content
    assert (thinking.thinking, thinking.thinking_signature) == ("Let me check.", SIG_A)
    assert (answer.text, answer.text_signature) == ("Checking now.", None)
    assert (tool_call.name, tool_call.arguments, tool_call.thought_signature) == (
        "get_weather",
        {"city": "Lisbon"},
        SIG_B,
    )
    assert tool_call.id.startswith("get_weather_")
    assert message.stop_reason == "toolUse"
    assert message.response_id == "resp-1"
    assert message.response_model is None  # same model as requested
    used = message.usage
    assert (used.input, used.output, used.cache_read, used.cache_write) == (100, 80, 20, 0)
    assert used.total_tokens == 200
    assert used.cost.total == pytest.approx((100 * 0.3 + 80 * 2.5 + 20 * 0.075) / 1e6)
    assert used.context_usage == {"state": "available", "promptTokens": 120, "totalTokens": 200}


async def test_signature_only_parts_sign_what_came_before(provider, model, local_http_server):
    body = sse(
        response([text("Answer")]),
        response([text("", SIG_A)]),  # the usual last chunk: a signature and no text
        response([call("f", {}), {"thoughtSignature": SIG_A}]),  # not the first part: ignored
        response([{"thoughtSignature": SIG_B}], "STOP"),  # first part of its chunk: signs the call
    )
    local_http_server.enqueue(reply(body))
    _, message = await run(provider, model)
    answer, function = message.content
    assert (answer.text, answer.text_signature) == ("Answer", SIG_A)
    assert function.thought_signature == SIG_B


async def test_a_differently_signed_part_starts_a_new_block(provider, model, local_http_server):
    body = sse(
        response([text("one", SIG_A)]),
        response([text(" more")]),
        response([text("two", SIG_B)], "STOP"),
    )
    local_http_server.enqueue(reply(body))
    _, message = await run(provider, model)
    assert [(b.text, b.text_signature) for b in message.content] == [
        ("one more", SIG_A),
        ("two", SIG_B),
    ]


async def test_function_call_ids_provided_missing_and_repeated(provider, model, local_http_server):
    body = sse(
        response(
            [
                call("f", {"n": 1}, call_id="call-1"),
                call("f", {"n": 2}, call_id="call-1"),
                call("g", {}),
            ],
            "STOP",
        ),
    )
    local_http_server.enqueue(reply(body))
    _, message = await run(provider, model)
    ids = [c.id for c in message.tool_calls()]
    assert ids[0] == "call-1"
    assert ids[1] != "call-1" and ids[1].startswith("f_")
    assert ids[2].startswith("g_")
    assert len(set(ids)) == 3
    assert [c.arguments for c in message.tool_calls()] == [{"n": 1}, {"n": 2}, {}]


async def test_request_body_and_headers(provider, model, local_http_server):
    local_http_server.enqueue(reply(HELLO))
    same = {"provider": "google", "api": GOOGLE_GENERATIVE_AI_API, "model": "gemini-2.5-flash"}
    history = [
        UserMessage(
            content=[TextContent(text="look"), ImageContent(data="aGk=", mime_type="image/png")]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="plan", thinking_signature=SIG_A),
                TextContent(text="calling", text_signature="not base64!"),
                ToolCall(id="c1", name="lookup", arguments={"q": "x"}, thought_signature=SIG_B),
            ],
            stop_reason="toolUse",
            **same,
        ),
        ToolResultMessage(
            tool_call_id="c1",
            tool_name="lookup",
            content=[TextContent(text="42"), ImageContent(data="aW1n", mime_type="image/jpeg")],
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="foreign", thinking_signature=SIG_A),
                ToolCall(id="c2", name="lookup", arguments={}, thought_signature=SIG_B),
            ],
            stop_reason="toolUse",
            provider="anthropic",
            api="anthropic-messages",
            model="claude-x",
        ),
        ToolResultMessage(
            tool_call_id="c2", tool_name="lookup", content=[TextContent(text="bad")], is_error=True
        ),
        UserMessage(content="   "),
        UserMessage(content="and?"),
    ]
    tools = [
        Tool(
            "lookup",
            "Look things up.",
            {
                "type": "object",
                "properties": {
                    "q": {"type": "string", "minLength": 1},
                    "mode": {
                        "anyOf": [
                            {"const": "a", "type": "string"},
                            {"const": "b", "type": "string"},
                        ]
                    },
                },
                "required": ["q"],
                "additionalProperties": False,
            },
        )
    ]
    await run(
        provider,
        model,
        Context("system text", history, tools),
        api_key="AIza-test-secret",
        reasoning="high",
        max_tokens=2048,
        temperature=0.3,
        stop=["END"],
        extra={"tool_choice": "auto"},
    )
    sent = local_http_server.requests[0]
    assert (sent.method, sent.path) == (
        "POST",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
    )
    assert provider.url(model).endswith(":streamGenerateContent?alt=sse")
    assert sent.headers["x-goog-api-key"] == "AIza-test-secret"
    assert "authorization" not in sent.headers
    assert sent.json() == {
        "systemInstruction": {"parts": [{"text": "system text"}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "lookup",
                        "description": "Look things up.",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "q": {"type": "string"},
                                "mode": {"type": "string", "enum": ["a", "b"]},
                            },
                            "required": ["q"],
                        },
                    }
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {
            "temperature": 0.3,
            "maxOutputTokens": 2048,
            "stopSequences": ["END"],
            "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 24576},
        },
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "look"},
                    {"inlineData": {"mimeType": "image/png", "data": "aGk="}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"thought": True, "text": "plan", "thoughtSignature": SIG_A},
                    {"text": "calling"},  # an invalid signature is not replayed
                    {
                        "functionCall": {"name": "lookup", "args": {"q": "x"}},
                        "thoughtSignature": SIG_B,
                    },
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "lookup", "response": {"output": "42"}}}],
            },
            # Gemini 2.5 cannot take images inside functionResponse: they follow the results
            {
                "role": "user",
                "parts": [
                    {"text": "Tool result image:"},
                    {"inlineData": {"mimeType": "image/jpeg", "data": "aW1n"}},
                ],
            },
            {
                "role": "model",
                "parts": [{"text": "foreign"}, {"functionCall": {"name": "lookup", "args": {}}}],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "lookup", "response": {"error": "bad"}}}],
            },
            {"role": "user", "parts": [{"text": "and?"}]},
        ],
    }


async def test_gemini_3_gets_thinking_levels_and_images_inside_function_responses(
    provider, model, local_http_server
):
    gemini3 = model.model_copy(update={"id": "gemini-3-flash-preview"})
    local_http_server.enqueue(reply(HELLO))
    history = [
        UserMessage(content="q"),
        AssistantMessage(
            content=[ToolCall(id="c", name="shot")],
            stop_reason="toolUse",
            provider="google",
            api=GOOGLE_GENERATIVE_AI_API,
            model="gemini-3-flash-preview",
        ),
        ToolResultMessage(
            tool_call_id="c",
            tool_name="shot",
            content=[ImageContent(data="aW1n", mime_type="image/png")],
        ),
    ]
    await run(provider, gemini3, Context("", history, []), reasoning="low")
    body = local_http_server.requests[0].json()
    assert body["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "LOW"}
    }
    assert "systemInstruction" not in body
    assert body["contents"][-1] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "name": "shot",
                    "response": {"output": "(see attached image)"},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": "aW1n"}}],
                }
            }
        ],
    }


async def test_api_key_from_environment_and_missing_key(model, local_http_server):
    remote = model.model_copy(update={"base_url": "https://gemini.example.invalid"})
    _, message = await run(GeminiProvider(env={}), remote)
    assert (message.stop_reason, message.error_message) == (
        "error",
        "No API key found for provider: google",
    )
    assert local_http_server.requests == []

    local_http_server.enqueue(reply(HELLO))
    with_env = GeminiProvider(env={"GEMINI_API_KEY": "AIza-from-env"})
    await run(with_env, model)
    assert local_http_server.requests[0].headers["x-goog-api-key"] == "AIza-from-env"
    await with_env.aclose()


@pytest.mark.parametrize(
    ("reason", "message", "expected"),
    [
        ("STOP", None, ("stop", None)),
        ("MAX_TOKENS", None, ("length", None)),
        ("SAFETY", None, ("error", "Google generation stopped (SAFETY)")),
        ("SAFETY", " Blocked. ", ("error", "Google generation stopped (SAFETY): Blocked.")),
        ("RECITATION", None, ("error", "Google generation stopped (RECITATION)")),
        ("PROHIBITED_CONTENT", None, ("error", "Google generation stopped (PROHIBITED_CONTENT)")),
        (
            "MALFORMED_FUNCTION_CALL",
            "bad call",
            ("error", "Google generation stopped (MALFORMED_FUNCTION_CALL): bad call"),
        ),
        ("OTHER", None, ("error", "Google generation stopped (OTHER)")),
        ("BRAND_NEW", None, ("error", "Unhandled stop reason: BRAND_NEW")),
    ],
)
def test_map_finish_reason(reason, message, expected):
    assert map_finish_reason(reason, message) == expected


async def test_finish_reasons_and_blocked_prompts_over_http(provider, model, local_http_server):
    local_http_server.enqueue(
        reply(sse(response([text("cut")], "MAX_TOKENS"))),
        reply(
            sse(
                response([text("Once upon")]),
                {"candidates": [{"finishReason": "SAFETY", "finishMessage": "unsafe", "index": 0}]},
            )
        ),
        reply(
            sse(
                {
                    "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                    "usageMetadata": usage(candidates=0),
                }
            )
        ),
        reply(sse(response([text("a")], "FINISH_REASON_UNSPECIFIED"))),
    )
    _, message = await run(provider, model)
    assert (message.stop_reason, message.text()) == ("length", "cut")
    _, message = await run(provider, model)
    assert (message.stop_reason, message.error_message) == (
        "error",
        "Google generation stopped (SAFETY): unsafe",
    )
    assert (message.error_code, message.error_type) == ("SAFETY", "google_generation_failed")
    assert (message.text(), message.error_output_started) == ("Once upon", True)
    _, message = await run(provider, model)
    assert message.error_message == "Google prompt blocked (PROHIBITED_CONTENT)"
    assert (message.error_code, message.error_type) == (
        "PROHIBITED_CONTENT",
        "google_prompt_blocked",
    )
    _, message = await run(provider, model)  # an unspecified reason is not terminal
    assert message.error_message == GOOGLE_STREAM_INCOMPLETE_ERROR
    assert (message.error_code, message.error_type) == (
        "STREAM_INCOMPLETE",
        "google_incomplete_stream",
    )


# --------------------------------------------------------------------------- chunk boundaries

RICH = sse(
    response([thought("Pensé "), thought("en €", SIG_A)], usage=usage(candidates=0)),
    response([text("Olá, "), text("mundo 🌍")]),
    response([text("", SIG_B)]),
    response([call("f", {"a": [1, "ü"]}, SIG_A, call_id="fc-1")]),
    response([], "STOP", usage(candidates=9, thoughts=4)),
)


def decode(chunks: list[bytes], model: Model) -> tuple[list[str], dict[str, Any]]:
    decoder = GeminiStreamDecoder(model)
    out: list[Any] = []
    for chunk in chunks:
        decoder.feed(chunk, out)
    decoder.close(out)
    final = out[-1]
    return [e.type for e in out], snapshot(final.message if final.type == "done" else final.error)


def test_every_two_piece_split_of_a_rich_stream_decodes_identically(model):
    expected = decode([RICH], model)
    content = expected[1]["content"]
    assert expected[1]["stopReason"] == "toolUse"
    assert [b["type"] for b in content] == ["thinking", "text", "toolCall"]
    assert (content[1]["text"], content[1]["textSignature"]) == ("Olá, mundo 🌍", SIG_B)
    for cut in range(1, len(RICH)):
        assert decode([RICH[:cut], RICH[cut:]], model) == expected, f"cut at byte {cut}"
    assert decode([RICH[i : i + 1] for i in range(len(RICH))], model) == expected
    lf_only = RICH.replace(b"\r\n", b"\n")
    assert decode([lf_only[i : i + 5] for i in range(0, len(lf_only), 5)], model) == expected


COMPACT = sse(response([text("héllo")]), response([call("f", {"a": 1}, call_id="c")], "STOP"))


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


async def test_one_byte_writes_with_comment_pings(provider, model, local_http_server):
    local_http_server.enqueue(
        reply(b": ping\r\n\r\n" + HELLO + b": trailing comment\r\n\r\n", chunk=1)
    )
    _, message = await run(provider, model)
    assert (message.text(), message.stop_reason) == ("Hello world", "stop")


# --------------------------------------------------------------------------- failures

RETRY_INFO = [
    {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{"quotaMetric": "generate_content_free_tier_requests"}],
    },
    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "39s"},
]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            ScriptedReply.json(
                400,
                google_error(
                    400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT"
                ),
            ),
            {
                "error_message": "400 API key not valid. Please pass a valid API key.",
                "error_code": "INVALID_ARGUMENT",
            },
        ),
        (
            ScriptedReply.json(
                401,
                google_error(
                    401, "Request had invalid authentication credentials.", "UNAUTHENTICATED"
                ),
            ),
            {"error_status": 401, "error_code": "UNAUTHENTICATED"},
        ),
        (
            ScriptedReply.json(
                403,
                google_error(403, "Permission denied on resource project.", "PERMISSION_DENIED"),
            ),
            {"error_status": 403, "error_code": "PERMISSION_DENIED"},
        ),
        (
            ScriptedReply.json(
                404,
                google_error(
                    404, "models/gemini-nope is not found for API version v1beta", "NOT_FOUND"
                ),
            ),
            {
                "error_message": "404 models/gemini-nope is not found for API version v1beta",
                "error_code": "NOT_FOUND",
            },
        ),
        (
            ScriptedReply.text(408, "Request Timeout"),
            {"error_message": "408 Request Timeout", "error_status": 408},
        ),
        (
            ScriptedReply.json(
                429,
                google_error(
                    429, "You exceeded your current quota.", "RESOURCE_EXHAUSTED", RETRY_INFO
                ),
            ),
            {
                "error_status": 429,
                "error_code": "RESOURCE_EXHAUSTED",
                "error_retry_after_ms": 39000.0,
            },
        ),
        (
            ScriptedReply.json(
                429,
                google_error(429, "Quota exceeded.", "RESOURCE_EXHAUSTED"),
                {"retry-after": "7"},
            ),
            {"error_retry_after_ms": 7000.0},
        ),
        (
            ScriptedReply.json(
                500, google_error(500, "An internal error has occurred.", "INTERNAL")
            ),
            {"error_message": "500 An internal error has occurred.", "error_code": "INTERNAL"},
        ),
        (
            ScriptedReply.text(
                502,
                "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>",
                "text/html",
            ),
            {
                "error_status": 502,
                "error_message": "502 <!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>",
            },
        ),
        (
            ScriptedReply.json(
                503,
                google_error(
                    503, "The model is overloaded. Please try again later.", "UNAVAILABLE"
                ),
            ),
            {
                "error_message": "503 The model is overloaded. Please try again later.",
                "error_code": "UNAVAILABLE",
            },
        ),
        (
            ScriptedReply.text(529, "overloaded"),
            {"error_message": "529 overloaded", "error_status": 529},
        ),
        (ScriptedReply(500, {}, []), {"error_message": "500 status code (no body)"}),
    ],
)
async def test_http_errors_become_error_messages_with_facts(
    provider, model, local_http_server, answer, expected
):
    local_http_server.enqueue(answer)
    events, message = await run(provider, model)
    assert [e.type for e in events] == ["start", "error"]
    assert (message.stop_reason, message.error_output_started) == ("error", False)
    for name, value in expected.items():
        assert getattr(message, name) == value, name
    if answer.body:
        assert message.error_body == answer.body[0].decode()


async def test_error_frame_mid_stream(provider, model, local_http_server):
    body = sse(
        response([text("Partial")]), google_error(503, "The model is overloaded.", "UNAVAILABLE")
    )
    local_http_server.enqueue(ScriptedReply(body=[body, HANG]))
    with anyio.fail_after(10):
        _, message = await run(provider, model)
    assert message.stop_reason == "error"
    assert message.error_message == "503 The model is overloaded."
    assert (message.error_status, message.error_code) == (503, "UNAVAILABLE")
    assert (message.text(), message.error_output_started) == ("Partial", True)
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


@pytest.mark.parametrize(
    ("body", "error", "kept_text"),
    [
        pytest.param(b"", EMPTY_RESPONSE_ERROR, "", id="empty-200"),
        pytest.param(
            HELLO[: HELLO.index(b"world") + 2],
            GOOGLE_INCOMPLETE_FRAME_ERROR,
            "Hello",
            id="cut-mid-event",
        ),
        pytest.param(
            sse(response([text("Hello")])),
            GOOGLE_STREAM_INCOMPLETE_ERROR,
            "Hello",
            id="no-finish-reason",
        ),
        pytest.param(b"data: {oops\r\n\r\n", MALFORMED_FRAME_ERROR, "", id="malformed-frame"),
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


async def test_hung_server_hits_the_idle_timeout(provider, model, local_http_server):
    local_http_server.enqueue(ScriptedReply(body=[sse(response([text("slow")])), HANG]))
    with anyio.fail_after(10):
        _, message = await run(provider, model, idle_timeout=0.2)
    assert message.stop_reason == "error"
    assert message.error_message == "Stream idle timeout: no data received for 0.2s (timed out)"
    assert message.text() == "slow"
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


async def test_a_server_that_keeps_the_connection_open_after_the_finish_reason(
    model, local_http_server
):
    provider = GeminiProvider(env={}, drain_timeout=0.05)
    late_usage = sse({"usageMetadata": usage(prompt=7, candidates=3)})
    local_http_server.enqueue(ScriptedReply(body=[HELLO, late_usage, HANG]))
    with anyio.fail_after(10):
        events, message = await run(provider, model, idle_timeout=30)
    await provider.aclose()
    assert events[-1].type == "done"
    assert (message.stop_reason, message.text()) == ("stop", "Hello world")
    assert (message.usage.input, message.usage.output) == (7, 3)  # read while draining
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


async def test_the_api_key_never_appears_in_errors_or_events(provider, model, local_http_server):
    secret = "AIzaSy-very-secret"
    local_http_server.enqueue(
        ScriptedReply.json(400, google_error(400, "API key not valid.", "INVALID_ARGUMENT"))
    )
    events, message = await run(provider, model, api_key=secret)
    assert secret not in message.to_json()
    assert all(secret not in str(event.to_dict()) for event in events)
    assert secret not in provider.url(model)


async def test_abort_mid_stream_closes_the_connection(provider, model, local_http_server):
    local_http_server.enqueue(ScriptedReply(body=[sse(response([text("start")])), HANG]))
    controller = AbortController()
    stream_ = provider.stream_fn(model, request(), StreamOptions(signal=controller.signal))
    with anyio.fail_after(10):
        async for event in stream_:
            if event.type == "text_delta":
                controller.abort()
        message = await stream_.result()
    assert (message.stop_reason, message.error_message, message.text()) == (
        "aborted",
        "Request was aborted",
        "start",
    )
    assert await anyio.to_thread.run_sync(local_http_server.wait_for_disconnects, 1)


async def test_abort_before_the_request(provider, model, local_http_server):
    controller = AbortController()
    controller.abort()
    _, message = await run(provider, model, signal=controller.signal)
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


async def test_no_exception_escapes_stream_fn(provider, model, local_http_server):
    bad = Context(
        "", [UserMessage(content="x")], [Tool("t", "", {"type": "object", "properties": {}})]
    )
    bad.tools[0].parameters["properties"]["self"] = bad.tools[0].parameters  # a cyclic schema
    _, message = await run(provider, model, bad)
    assert message.stop_reason == "error"
    assert "circular reference" in message.error_message
    assert local_http_server.requests == []


# --------------------------------------------------------------------------- pure policy tables


def gemini(model_id="gemini-2.5-flash", **fields):
    values = {
        "id": model_id,
        "api": GOOGLE_GENERATIVE_AI_API,
        "provider": "google",
        "reasoning": True,
    }
    values.update(fields)
    return Model(**values)


@pytest.mark.parametrize(
    ("model", "reasoning", "budgets", "expected"),
    [
        (gemini(reasoning=False), "high", None, None),
        (gemini(), None, None, {"thinkingBudget": 0}),
        (gemini(), "off", None, {"thinkingBudget": 0}),
        (gemini(), "minimal", None, {"includeThoughts": True, "thinkingBudget": 128}),
        (gemini(), "low", None, {"includeThoughts": True, "thinkingBudget": 2048}),
        (gemini(), "medium", None, {"includeThoughts": True, "thinkingBudget": 8192}),
        (gemini(), "high", None, {"includeThoughts": True, "thinkingBudget": 24576}),
        (gemini(), "xhigh", None, {"includeThoughts": True, "thinkingBudget": 24576}),
        (gemini(), "max", None, {"includeThoughts": True, "thinkingBudget": 24576}),
        (
            gemini("gemini-2.5-flash-lite"),
            "minimal",
            None,
            {"includeThoughts": True, "thinkingBudget": 128},
        ),
        (
            gemini("gemini-2.5-pro"),
            "high",
            None,
            {"includeThoughts": True, "thinkingBudget": 32768},
        ),
        (
            gemini("gemini-2.5-pro"),
            "medium",
            {"medium": 5000},
            {"includeThoughts": True, "thinkingBudget": 5000},
        ),
        (gemini("gemini-exp-1206"), "high", None, {"includeThoughts": True, "thinkingBudget": -1}),
        (gemini("gemini-3-pro-preview"), None, None, {"thinkingLevel": "LOW"}),
        (
            gemini("gemini-3-pro-preview"),
            "minimal",
            None,
            {"includeThoughts": True, "thinkingLevel": "LOW"},
        ),
        (
            gemini("gemini-3-pro-preview"),
            "medium",
            None,
            {"includeThoughts": True, "thinkingLevel": "HIGH"},
        ),
        (
            gemini("gemini-3.1-pro"),
            "high",
            None,
            {"includeThoughts": True, "thinkingLevel": "HIGH"},
        ),
        (gemini("gemini-3-flash-preview"), "off", None, {"thinkingLevel": "MINIMAL"}),
        (
            gemini("gemini-3-flash-preview"),
            "medium",
            None,
            {"includeThoughts": True, "thinkingLevel": "MEDIUM"},
        ),
        (
            gemini("gemini-3-flash-preview"),
            "max",
            None,
            {"includeThoughts": True, "thinkingLevel": "HIGH"},
        ),
    ],
)
def test_resolve_thinking_config(model, reasoning, budgets, expected):
    assert resolve_thinking_config(model, reasoning, budgets) == expected


@pytest.mark.parametrize(
    ("base_url", "model_id", "url"),
    [
        (
            "",
            "gemini-2.5-flash",
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        ),
        (
            "https://generativelanguage.googleapis.com/v1beta",
            "models/gemini-2.5-pro",
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        ),
        (
            "https://proxy.example/google/v1/",
            "gemini-x",
            "https://proxy.example/google/v1/models/gemini-x:streamGenerateContent?alt=sse",
        ),
        (
            "http://127.0.0.1:9000",
            "tuned model",
            "http://127.0.0.1:9000/v1beta/models/tuned%20model:streamGenerateContent?alt=sse",
        ),
    ],
)
def test_stream_url(base_url, model_id, url):
    assert stream_url(base_url, model_id) == url


@pytest.mark.parametrize(
    ("signature", "valid"),
    [
        (SIG_A, True),
        ("abcd", True),
        ("abc", False),
        ("", False),
        (None, False),
        ("ab c", False),
        ("reasoning_content", False),
    ],
)
def test_only_base64_signatures_are_replayed(signature, valid):
    assert is_valid_thought_signature(signature) is valid


SAME = {"provider": "google", "api": GOOGLE_GENERATIVE_AI_API, "model": "gemini-2.5-flash"}


def test_replay_synthesizes_missing_results_drops_failed_turns_and_orphans():
    history = [
        UserMessage(content="go"),
        AssistantMessage(
            content=[ToolCall(id="a", name="f"), ToolCall(id="b", name="g")],
            stop_reason="toolUse",
            **SAME,
        ),
        ToolResultMessage(tool_call_id="b", tool_name="g", content=[TextContent(text="B")]),
        ToolResultMessage(tool_call_id="nope", tool_name="h", content=[TextContent(text="orphan")]),
        UserMessage(content="next"),
        AssistantMessage(content=[TextContent(text="half")], stop_reason="aborted", **SAME),
        AssistantMessage(content=[ToolCall(id="x", name="f")], stop_reason="error", **SAME),
        ToolResultMessage(tool_call_id="x", tool_name="f", content=[TextContent(text="late")]),
        UserMessage(content="again"),
    ]
    contents = convert_messages(history, gemini())
    assert contents == [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "f", "args": {}}},
                {"functionCall": {"name": "g", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "g", "response": {"output": "B"}}},
                {
                    "functionResponse": {
                        "name": "f",
                        "response": {"error": MISSING_TOOL_RESULT_TEXT},
                    }
                },
            ],
        },
        {"role": "user", "parts": [{"text": "next"}]},
        {"role": "model", "parts": [{"text": FAILED_ASSISTANT_REPLAY_TEXT}]},
        {"role": "user", "parts": [{"text": "again"}]},
    ]


def test_models_behind_the_gemini_api_that_need_call_ids_get_them():
    claude = gemini("claude-sonnet-4-5")
    history = [
        UserMessage(content="q"),
        AssistantMessage(
            content=[ToolCall(id="toolu|01", name="f")],
            stop_reason="toolUse",
            provider="google",
            api=GOOGLE_GENERATIVE_AI_API,
            model="claude-sonnet-4-5",
        ),
        ToolResultMessage(tool_call_id="toolu|01", tool_name="f", content=[TextContent(text="r")]),
    ]
    contents = convert_messages(history, claude)
    # OpenClaw's Gemini rule (strict): alphanumerics only, the call and its response alike
    assert contents[1]["parts"][0]["functionCall"]["id"] == "toolu01"
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "toolu01"


def test_json_schema_compat_sends_the_raw_schema():
    schema = {
        "type": "object",
        "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        "additionalProperties": False,
    }
    raw = gemini(compat={"tool_schema": "json_schema"})
    body = build_request_body(
        raw, Context("", [UserMessage(content="q")], [Tool("t", "d", schema)]), StreamOptions()
    )
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "t", "description": "d", "parametersJsonSchema": schema}
            ]
        }
    ]


def test_text_only_models_get_notes_instead_of_images():
    history = [UserMessage(content=[ImageContent(data="aGk=", mime_type="image/png")])]
    assert convert_messages(history, gemini(input=["text"])) == [
        {"role": "user", "parts": [{"text": "(image omitted: model does not support images)"}]}
    ]


# --------------------------------------------------------------------------- end to end


@tool
async def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21°C, sunny"


async def test_agent_run_with_thinking_and_a_tool_over_real_http(model, local_http_server):
    first = sse(
        response([thought("I should call the weather tool.", SIG_A)]),
        response(
            [call("get_weather", {"city": "Lisbon"}, SIG_B)],
            "STOP",
            usage(candidates=10, thoughts=20),
        ),
    )
    second = sse(
        response([thought("Done.")]),
        response([text("It is 21°C and sunny in Lisbon.")]),
        response([text("", SIG_A)], "STOP", usage(prompt=200, candidates=12)),
    )
    local_http_server.enqueue(reply(first, chunk=23), reply(second, chunk=31))
    provider = GeminiProvider(env={})
    agent = Agent(
        model=model, stream_fn=provider.stream_fn, tools=[get_weather], thinking_level="medium"
    )
    await agent.prompt("Weather in Lisbon?")
    await provider.aclose()

    transcript = agent.state.messages
    assert [m.role for m in transcript] == ["user", "assistant", "toolResult", "assistant"]
    assert transcript[2].text() == "Lisbon: 21°C, sunny"
    assert transcript[3].text() == "It is 21°C and sunny in Lisbon."
    assert transcript[3].usage.input == 200

    first_body, second_body = (r.json() for r in local_http_server.requests)
    assert first_body["generationConfig"]["thinkingConfig"] == {
        "includeThoughts": True,
        "thinkingBudget": 8192,
    }
    declaration = first_body["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "get_weather"
    assert declaration["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    assert second_body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "thought": True,
                    "text": "I should call the weather tool.",
                    "thoughtSignature": SIG_A,
                },
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Lisbon"}},
                    "thoughtSignature": SIG_B,
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"output": "Lisbon: 21°C, sunny"},
                    }
                }
            ],
        },
    ]


async def test_agent_sees_provider_failures_as_error_messages(model, local_http_server):
    local_http_server.enqueue(
        ScriptedReply.json(
            429, google_error(429, "Quota exceeded.", "RESOURCE_EXHAUSTED", RETRY_INFO)
        )
    )
    provider = GeminiProvider(env={})
    agent = Agent(model=model, stream_fn=provider.stream_fn)
    await agent.prompt("hi")
    await provider.aclose()
    failure = agent.state.messages[-1]
    assert (
        failure.stop_reason,
        failure.error_status,
        failure.error_code,
        failure.error_retry_after_ms,
    ) == (
        "error",
        429,
        "RESOURCE_EXHAUSTED",
        39000.0,
    )
