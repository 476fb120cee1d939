"""The Google plugin keeps the classifier and provider contracts (through a real runtime)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openclaw_runtime_google import GOOGLE_GENERATIVE_AI_API
from openclaw_runtime_google import plugin as google_plugin

from openclaw_runtime.failover import FailoverReason, FailoverSignal
from openclaw_runtime.llm import Model
from openclaw_runtime.testing import FailoverClassifierContract, ProviderContract, ScriptedReply


class TestGoogleClassifierContract(FailoverClassifierContract):
    provider = "google"
    cases = (
        (
            FailoverSignal(
                provider="google",
                code="UNAVAILABLE",
                message="The service is currently unavailable.",
            ),
            FailoverReason.OVERLOADED,
        ),
        (FailoverSignal(provider="gemini-cli", code="UNAVAILABLE"), FailoverReason.OVERLOADED),
        (
            FailoverSignal(provider="google-gemini-cli", code="DEADLINE_EXCEEDED"),
            FailoverReason.TIMEOUT,
        ),
    )

    @pytest.fixture
    def failover_plugin(self) -> Any:
        return google_plugin


def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body = {"candidates": [candidate], "modelVersion": "gemini-contract", "responseId": "r1"}
    return b"data: " + json.dumps(body).encode() + b"\r\n\r\n"


HELLO = chunk([{"text": "Hello"}]) + chunk([{"text": " there"}]) + chunk([{"text": ""}], "STOP")


class TestGoogleProviderContract(ProviderContract):
    @pytest.fixture
    def provider_plugin(self) -> Any:
        return google_plugin

    @pytest.fixture
    def provider_model(self, local_http_server) -> Model:
        local_http_server.enqueue(
            ScriptedReply(200, {"content-type": "text/event-stream"}, [HELLO])
        )
        return Model(
            id="gemini-contract",
            api=GOOGLE_GENERATIVE_AI_API,
            provider="google",
            base_url=local_http_server.base_url,
        )
