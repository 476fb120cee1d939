"""The transcript data model reads and writes OpenClaw's format exactly."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from openclaw_runtime.messages import (
    AssistantMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    OpaqueContent,
    OpaqueMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    dump_messages,
    load_message,
    load_messages,
)

USAGE = {
    "input": 1200,
    "output": 85,
    "cacheRead": 1000,
    "cacheWrite": 0,
    "totalTokens": 2285,
    "cost": {
        "input": 0.0036,
        "output": 0.001275,
        "cacheRead": 0.0003,
        "cacheWrite": 0,
        "total": 0.005175,
    },
}

ROUND_TRIP_CASES = {
    "user with string content": {"role": "user", "content": "hello", "timestamp": 1714000000000},
    "user with text and image": {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        ],
        "timestamp": 1714000000001,
    },
    "assistant with thinking and a tool call": {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "need a tool", "thinkingSignature": "sig=="},
            {"type": "text", "text": "Let me look."},
            {"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": "a.txt"}},
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "responseId": "msg_01",
        "usage": USAGE,
        "stopReason": "toolUse",
        "timestamp": 1714000000002,
    },
    "failed assistant with error facts": {
        "role": "assistant",
        "content": [],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-4o",
        "usage": USAGE,
        "stopReason": "error",
        "errorMessage": "429 Too Many Requests",
        "errorStatus": 429,
        "errorCode": "rate_limit_exceeded",
        "errorType": "requests",
        "errorRetryAfterMs": 20000,
        "timestamp": 1714000000003,
    },
    "redacted thinking": {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "", "thinkingSignature": "opaque", "redacted": True}
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "m",
        "usage": USAGE,
        "stopReason": "stop",
        "timestamp": 1,
    },
    "tool result with details": {
        "role": "toolResult",
        "toolCallId": "toolu_1",
        "toolName": "read",
        "content": [{"type": "text", "text": "file body"}],
        "details": {"bytes": 9, "truncated": False},
        "isError": False,
        "timestamp": 1714000000004,
    },
    "hidden custom message": {
        "role": "custom",
        "customType": "openclaw:turn-aborted",
        "content": "<turn_aborted>...</turn_aborted>",
        "display": False,
        "timestamp": 1714000000005,
    },
    "compaction summary with string timestamp": {
        "role": "compactionSummary",
        "summary": "we talked",
        "tokensBefore": 120000,
        "timestamp": "2026-01-02T03:04:05.000Z",
    },
    "unknown role kept verbatim": {
        "role": "bashExecution",
        "command": "ls",
        "output": "a\nb",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": 9,
    },
    "unknown fields, blocks and explicit nulls survive": {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "hi", "textSignature": '{"v":1}', "vendorFlag": True},
            {"type": "video", "url": "https://example.invalid/v.mp4"},
        ],
        "api": "x",
        "provider": "y",
        "model": "z",
        "usage": {**USAGE, "cacheWrite1h": 5, "contextUsage": {"state": "unavailable"}},
        "stopReason": "stop",
        "errorMessage": None,
        "diagnostics": [{"kind": "retry"}],
        "timestamp": 10,
    },
}


@pytest.mark.parametrize("case", sorted(ROUND_TRIP_CASES))
def test_round_trip_is_exact(case):
    data = ROUND_TRIP_CASES[case]
    message = load_message(data)
    assert message.to_dict() == data
    # byte-stable: JSON written twice is identical, and parses back to the same dict
    once = message.to_json()
    assert load_message(once).to_json() == once
    assert json.loads(once) == data


def test_load_message_picks_the_right_types():
    messages = load_messages([ROUND_TRIP_CASES[c] for c in sorted(ROUND_TRIP_CASES)])
    kinds = {type(m).__name__ for m in messages}
    assert kinds == {
        "AssistantMessage",
        "CompactionSummaryMessage",
        "CustomMessage",
        "OpaqueMessage",
        "ToolResultMessage",
        "UserMessage",
    }
    weird = load_message(ROUND_TRIP_CASES["unknown fields, blocks and explicit nulls survive"])
    assert isinstance(weird.content[1], OpaqueContent)
    assert isinstance(load_message(ROUND_TRIP_CASES["unknown role kept verbatim"]), OpaqueMessage)
    assert isinstance(
        load_message(ROUND_TRIP_CASES["compaction summary with string timestamp"]),
        CompactionSummaryMessage,
    )


def test_constructed_messages_write_openclaw_field_names():
    message = AssistantMessage(
        content=[TextContent(text="x"), ToolCall(id="c", name="n", arguments={"a": 1})],
        api="a",
        provider="p",
        model="m",
        stop_reason="toolUse",
        timestamp=5,
    )
    data = message.to_dict()
    assert data["stopReason"] == "toolUse"
    assert data["usage"]["totalTokens"] == 0
    assert "errorMessage" not in data  # unset optional fields stay absent
    assert "responseId" not in data
    result = ToolResultMessage(tool_call_id="c", tool_name="n", content=[], timestamp=6)
    assert result.to_dict() == {
        "role": "toolResult",
        "toolCallId": "c",
        "toolName": "n",
        "content": [],
        "isError": False,
        "timestamp": 6,
    }


def test_snake_and_camel_case_are_both_accepted():
    a = ToolResultMessage.model_validate({"toolCallId": "1", "toolName": "t", "isError": True})
    b = ToolResultMessage(tool_call_id="1", tool_name="t", is_error=True)
    assert (a.tool_call_id, a.is_error) == (b.tool_call_id, b.is_error)


def test_bad_input_names_the_field():
    with pytest.raises(ValidationError, match=r"stopReason"):
        load_message({"role": "assistant", "content": [], "stopReason": "exploded"})
    with pytest.raises(ValidationError, match=r"toolCallId"):
        load_message({"role": "toolResult", "toolName": "x"})


def test_helpers():
    user = UserMessage(
        content=[
            TextContent(text="a"),
            ImageContent(data="x", mime_type="image/png"),
            TextContent(text="b"),
        ]
    )
    assert user.text() == "a\nb"
    custom = CustomMessage(custom_type="t", content="c")
    assert dump_messages([custom])[0]["customType"] == "t"
    assistant = AssistantMessage(
        content=[ToolCall(id="1", name="a"), TextContent(text="t"), ToolCall(id="2", name="b")]
    )
    assert [c.id for c in assistant.tool_calls()] == ["1", "2"]
