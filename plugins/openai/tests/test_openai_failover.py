"""The OpenAI / Codex failure dialect, exercised through the plugin manager."""

from __future__ import annotations

import pytest
from openclaw_runtime_openai import plugin as openai_plugin
from openclaw_runtime_openai._failover import classify_openai_failover_code

from openclaw_runtime.failover import (
    FailoverClassification,
    FailoverSignal,
    classify_failover_signal,
)


@pytest.fixture
def runtime(runtime_factory):
    return runtime_factory(plugins=[("openai", openai_plugin)])


def reason(name):
    return FailoverClassification.of(name)


QUOTA = "You exceeded your current quota, please check your plan and billing details."

OVERRIDES = [
    (
        FailoverSignal(provider="openai", status=429, code="insufficient_quota", message=QUOTA),
        "rate_limit",
        "billing",
    ),
    (
        FailoverSignal(
            provider="openai-codex",
            code="server_error",
            message="The server had an error processing your request.",
        ),
        None,
        "server_error",
    ),
    (FailoverSignal(provider="azure-openai-responses", code="INSUFFICIENT_QUOTA"), None, "billing"),
]


@pytest.mark.parametrize(("signal", "generic", "expected"), OVERRIDES, ids=lambda v: repr(v)[:60])
def test_plugin_overrides_generic_answer(runtime, signal, generic, expected):
    assert classify_failover_signal(signal) == (None if generic is None else reason(generic))
    assert runtime.hooks.classify_failover(signal) == (reason(expected), "openai")


@pytest.mark.parametrize(
    "signal",
    [
        FailoverSignal(
            provider="qwen-token-plan", status=429, code="insufficient_quota", message=QUOTA
        ),
        FailoverSignal(provider="anthropic", code="server_error", message="oops"),
        FailoverSignal(code="server_error"),
    ],
)
def test_plugin_abstains_for_other_providers(runtime, signal):
    classification, plugin = runtime.hooks.classify_failover(signal)
    assert plugin != "openai"
    assert classification == classify_failover_signal(signal)


def test_codex_overflow_wording_is_core(runtime):
    signal = FailoverSignal(
        provider="openai-codex",
        message="Codex ran out of room in the model's context window. Start a new thread.",
    )
    assert runtime.hooks.classify_failover(signal)[0] == FailoverClassification.context_overflow()
    assert classify_failover_signal(signal) == FailoverClassification.context_overflow()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("server_error", "server_error"),
        ("INSUFFICIENT_QUOTA", "billing"),
        ("rate_limit_exceeded", None),
        (None, None),
    ],
)
def test_code_table(code, expected):
    assert classify_openai_failover_code(code) == expected
