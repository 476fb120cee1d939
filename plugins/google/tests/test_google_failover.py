"""The Gemini failure dialect, exercised through the plugin manager."""

from __future__ import annotations

import pytest
from openclaw_runtime_google import plugin as google_plugin
from openclaw_runtime_google._failover import classify_google_failover_code

from openclaw_runtime.failover import (
    FailoverClassification,
    FailoverSignal,
    classify_failover_signal,
)


@pytest.fixture
def runtime(runtime_factory):
    return runtime_factory(plugins=[("google", google_plugin)])


def reason(name):
    return FailoverClassification.of(name)


OVERRIDES = [
    (
        FailoverSignal(
            provider="google", code="UNAVAILABLE", message="The service is currently unavailable."
        ),
        None,
        "overloaded",
    ),
    (
        FailoverSignal(
            provider="google",
            code="DEADLINE_EXCEEDED",
            message="Deadline expired before operation could complete.",
        ),
        "auth",
        "timeout",
    ),
    (
        FailoverSignal(
            provider="google-vertex", code="internal", message="Internal error encountered."
        ),
        None,
        "server_error",
    ),
    (FailoverSignal(provider="gemini-cli", code="UNAVAILABLE"), None, "overloaded"),
    (FailoverSignal(provider="google-gemini-cli", code="DEADLINE_EXCEEDED"), None, "timeout"),
]


@pytest.mark.parametrize(("signal", "generic", "expected"), OVERRIDES, ids=lambda v: repr(v)[:60])
def test_plugin_overrides_generic_answer(runtime, signal, generic, expected):
    assert classify_failover_signal(signal) == (None if generic is None else reason(generic))
    assert runtime.hooks.classify_failover(signal) == (reason(expected), "google")


@pytest.mark.parametrize(
    "signal",
    [
        FailoverSignal(provider="openai", code="UNAVAILABLE"),
        FailoverSignal(provider="anthropic", code="DEADLINE_EXCEEDED", message="Deadline expired"),
        FailoverSignal(code="INTERNAL"),
    ],
)
def test_plugin_abstains_for_other_providers(runtime, signal):
    classification, plugin = runtime.hooks.classify_failover(signal)
    assert plugin != "google"
    assert classification == classify_failover_signal(signal)


def test_core_rows_still_apply_to_google(runtime):
    signal = FailoverSignal(provider="google", code="RESOURCE_EXHAUSTED", message="quota")
    assert runtime.hooks.classify_failover(signal) == (reason("rate_limit"), "google")
    signal = FailoverSignal(
        provider="google", message="INVALID_ARGUMENT: input exceeds the maximum number of tokens"
    )
    assert runtime.hooks.classify_failover(signal)[0] == FailoverClassification.context_overflow()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("UNAVAILABLE", "overloaded"),
        (" deadline_exceeded ", "timeout"),
        ("INTERNAL", "server_error"),
        ("NOT_FOUND", None),
        (None, None),
    ],
)
def test_code_table(code, expected):
    assert classify_google_failover_code(code) == expected
