"""The Anthropic plugin keeps the classifier and provider contracts (through a real runtime)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openclaw_runtime_anthropic import ANTHROPIC_MESSAGES_API
from openclaw_runtime_anthropic import plugin as anthropic_plugin

from openclaw_runtime.failover import FailoverReason, FailoverSignal
from openclaw_runtime.llm import Model
from openclaw_runtime.testing import FailoverClassifierContract, ProviderContract, ScriptedReply


class TestAnthropicClassifierContract(FailoverClassifierContract):
    provider = "anthropic"
    cases = (
        (
            FailoverSignal(provider="anthropic", error_type="rate_limit_error", message="boom"),
            FailoverReason.RATE_LIMIT,
        ),
        (
            FailoverSignal(
                provider="anthropic", error_type="api_error", message="Internal server error"
            ),
            FailoverReason.SERVER_ERROR,
        ),
        (
            FailoverSignal(provider="claude-cli", message="Not logged in · Please run /login"),
            FailoverReason.AUTH,
        ),
    )

    @pytest.fixture
    def failover_plugin(self) -> Any:
        return anthropic_plugin


def sse_frame(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


HELLO = b"".join(
    [
        sse_frame(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-contract",
                    "stop_reason": None,
                    "usage": {"input_tokens": 5, "output_tokens": 1},
                },
            },
        ),
        sse_frame(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        sse_frame(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hello"},
            },
        ),
        sse_frame(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": " there"},
            },
        ),
        sse_frame("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse_frame(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2},
            },
        ),
        sse_frame("message_stop", {"type": "message_stop"}),
    ]
)


class TestAnthropicProviderContract(ProviderContract):
    @pytest.fixture
    def provider_plugin(self) -> Any:
        return anthropic_plugin

    @pytest.fixture
    def provider_model(self, local_http_server) -> Model:
        local_http_server.enqueue(
            ScriptedReply(200, {"content-type": "text/event-stream"}, [HELLO])
        )
        return Model(
            id="claude-contract",
            api=ANTHROPIC_MESSAGES_API,
            provider="anthropic",
            base_url=local_http_server.base_url,
        )
