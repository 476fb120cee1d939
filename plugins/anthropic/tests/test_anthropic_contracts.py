"""The Anthropic failover classifier keeps the classifier contract (through a real runtime)."""

from __future__ import annotations

from typing import Any

import pytest
from openclaw_runtime_anthropic import plugin as anthropic_plugin

from openclaw_runtime.failover import FailoverReason, FailoverSignal
from openclaw_runtime.testing import FailoverClassifierContract


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
