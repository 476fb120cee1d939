"""The pure parts of the fault-injecting server: request reading, refusals, routing, replies."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from openclaw_runtime.testing.openai_server import KeyBehavior, Reply, estimate_prompt_tokens
from openclaw_runtime.testing.openai_server.brain import from_reply
from openclaw_runtime.testing.openai_server.faults import key_refusal, request_error
from openclaw_runtime.testing.openai_server.plans import ChatRequest, route

HELLO = [{"role": "user", "content": "hi"}]


def _request(body: Any) -> ChatRequest:
    return ChatRequest.parse(body if isinstance(body, bytes) else orjson.dumps(body))


def test_parse_reads_the_fields_the_pipeline_needs() -> None:
    tools = [{"type": "function", "function": {"name": "echo"}}]
    request = _request(
        {
            "model": "m",
            "messages": HELLO,
            "tools": tools,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    )
    assert (request.parsed, request.model, request.messages) == (True, "m", HELLO)
    assert (request.tools, request.stream, request.include_usage) == (tools, True, True)
    assert request.estimated_tokens == estimate_prompt_tokens(HELLO, tools)


@pytest.mark.parametrize("raw", [b"", b"{not json", b"[1, 2]"])
def test_parse_of_a_body_that_is_no_object(raw: bytes) -> None:
    request = ChatRequest.parse(raw)
    assert not request.parsed
    assert (request.messages, request.tools, request.estimated_tokens) == ([], [], 0)


@pytest.mark.parametrize(
    ("body", "models", "expected"),
    [
        (b"{not json", None, ("bad_request", 400, None)),
        ({"messages": HELLO}, None, ("bad_request", 400, "model")),
        ({"model": "", "messages": HELLO}, None, ("bad_request", 400, "model")),
        ({"model": "m"}, None, ("bad_request", 400, "messages")),
        ({"model": "m", "messages": []}, None, ("bad_request", 400, "messages")),
        ({"model": "m", "messages": "hi"}, None, ("bad_request", 400, "messages")),
        ({"model": "x", "messages": HELLO}, {"m": 10}, ("unknown_model", 404, None)),
        ({"model": "m", "messages": HELLO}, {"m": 10}, None),
        ({"model": "any", "messages": HELLO}, None, None),
    ],
)
def test_request_error(body: Any, models: dict[str, int] | None, expected: Any) -> None:
    refused = request_error(_request(body), models)
    if expected is None:
        assert refused is None
        return
    assert refused is not None
    outcome, status, payload = refused
    assert (outcome, status, payload["error"]["param"]) == expected


@pytest.mark.parametrize(
    ("behavior", "any_key", "api_key", "expected"),
    [
        (None, True, "sk-unknown", None),
        (None, True, None, None),
        (KeyBehavior.OK, False, "sk-ok", None),
        (None, False, None, ("unauthorized", 401, "invalid_api_key")),
        (None, False, "sk-unknown", ("unauthorized", 401, "invalid_api_key")),
        (KeyBehavior.INVALID, False, "sk-bad", ("unauthorized", 401, "invalid_api_key")),
        (KeyBehavior.RATE_LIMITED, False, "sk-rl", ("rate_limited", 429, "rate_limit_exceeded")),
        (KeyBehavior.BILLING, False, "sk-bill", ("billing", 429, "insufficient_quota")),
        (KeyBehavior.OVERLOADED, False, "sk-busy", ("overloaded", 503, "overloaded")),
    ],
)
def test_key_refusal(
    behavior: KeyBehavior | None, any_key: bool, api_key: str | None, expected: Any
) -> None:
    refused = key_refusal(behavior, any_key=any_key, api_key=api_key, fingerprint="fp")
    if expected is None:
        assert refused is None
        return
    assert refused is not None
    outcome, status, payload, _headers = refused
    assert (outcome, status, payload["error"]["code"]) == expected
    assert api_key is None or api_key not in orjson.dumps(payload).decode()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/chat/completions", "chat"),
        ("/chat/completions/", "chat"),
        ("/v1/models?x=1", "models"),
        ("/models", "models"),
        ("/v1/embeddings", None),
        ("/", None),
    ],
)
def test_route(path: str, expected: str | None) -> None:
    assert route(path) == expected


def test_a_reply_with_tool_calls_gets_fresh_ids_and_finishes_with_tool_calls() -> None:
    ids = iter(["call_7", "call_8"])
    reply = Reply(text="t", tool_calls=[("a", {"x": 1}), ("b", {})])
    completion = from_reply("m", reply, lambda: next(ids))
    assert completion.tool_calls == [("call_7", "a", '{"x":1}'), ("call_8", "b", "{}")]
    assert (completion.model, completion.text, completion.finish_reason) == ("m", "t", "tool_calls")
    assert from_reply("m", Reply(text="t"), lambda: "unused").finish_reason == "stop"
    assert from_reply("m", Reply(finish_reason="length"), lambda: "x").finish_reason == "length"
