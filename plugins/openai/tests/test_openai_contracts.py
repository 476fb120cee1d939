"""The OpenAI failover classifier keeps the classifier contract (through a real runtime)."""

from __future__ import annotations

from typing import Any

import pytest
from openclaw_runtime_openai import plugin as openai_plugin

from openclaw_runtime.failover import FailoverReason, FailoverSignal
from openclaw_runtime.testing import FailoverClassifierContract

QUOTA = "You exceeded your current quota, please check your plan and billing details."


class TestOpenAIClassifierContract(FailoverClassifierContract):
    provider = "openai"
    cases = (
        (
            FailoverSignal(provider="openai", status=429, code="insufficient_quota", message=QUOTA),
            FailoverReason.BILLING,
        ),
        (
            FailoverSignal(provider="openai-codex", code="server_error", message="oops"),
            FailoverReason.SERVER_ERROR,
        ),
    )

    @pytest.fixture
    def failover_plugin(self) -> Any:
        return openai_plugin
