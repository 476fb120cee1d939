"""The Google failover classifier keeps the classifier contract (through a real runtime)."""

from __future__ import annotations

from typing import Any

import pytest
from openclaw_runtime_google import plugin as google_plugin

from openclaw_runtime.failover import FailoverReason, FailoverSignal
from openclaw_runtime.testing import FailoverClassifierContract


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
