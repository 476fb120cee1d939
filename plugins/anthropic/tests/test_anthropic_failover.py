"""The Anthropic failure dialect, exercised through the plugin manager."""

from __future__ import annotations

import pytest
from openclaw_runtime_anthropic import plugin as anthropic_plugin
from openclaw_runtime_anthropic._failover import (
    classify_anthropic_failover_descriptor,
    is_claude_cli_auth_error,
)

from openclaw_runtime import Runtime
from openclaw_runtime.failover import (
    FailoverClassification,
    FailoverSignal,
    classify_failover_signal,
)


@pytest.fixture
def runtime(runtime_factory):
    return runtime_factory(plugins=[("anthropic", anthropic_plugin)])


def reason(name):
    return FailoverClassification.of(name)


OVERRIDES = [
    # Anthropic descriptors beat the generic tables
    (
        FailoverSignal(provider="anthropic", error_type="rate_limit_error", message="boom"),
        None,
        "rate_limit",
    ),
    (
        FailoverSignal(
            provider="anthropic", error_type="api_error", message="Internal server error"
        ),
        "timeout",
        "server_error",
    ),
    (FailoverSignal(provider="Anthropic", code="RATE_LIMIT_ERROR"), None, "rate_limit"),
    # an ambiguous 401 keeps the provider's own verdict
    (
        FailoverSignal(provider="anthropic", status=401, error_type="api_error"),
        "auth",
        "server_error",
    ),
    # Claude CLI texts
    (
        FailoverSignal(provider="claude-cli", message="Not logged in · Please run /login"),
        None,
        "auth",
    ),
    (
        FailoverSignal(
            provider="claude-cli",
            message="Failed to authenticate: OAuth session expired and could not be refreshed",
        ),
        "session_expired",
        "auth",
    ),
    (
        FailoverSignal(provider="claude-cli", message="You've hit your session limit · resets 5pm"),
        None,
        "rate_limit",
    ),
    (
        FailoverSignal(provider="claude-cli", message="You’ve hit your limit · resets 5pm"),
        None,
        "rate_limit",
    ),
    (
        FailoverSignal(provider="claude-cli", message="You have hit your limit · resets 5pm"),
        None,
        "rate_limit",
    ),
]


@pytest.mark.parametrize(("signal", "generic", "expected"), OVERRIDES, ids=lambda v: repr(v)[:60])
def test_plugin_overrides_generic_answer(runtime, signal, generic, expected):
    assert classify_failover_signal(signal) == (None if generic is None else reason(generic))
    classification, plugin = runtime.hooks.classify_failover(signal)
    assert classification == reason(expected)
    assert plugin == "anthropic"


@pytest.mark.parametrize(
    "signal",
    [
        FailoverSignal(provider="openai", error_type="rate_limit_error", message="boom"),
        FailoverSignal(provider="custom-cli", message="Not logged in · Please run /login"),
        FailoverSignal(provider="codex-cli", message="You've hit your session limit"),
        FailoverSignal(message="Not logged in · Please run /login"),
    ],
)
def test_plugin_abstains_for_other_providers(runtime, signal):
    classification, plugin = runtime.hooks.classify_failover(signal)
    assert plugin != "anthropic"
    assert classification == classify_failover_signal(signal)


def test_generic_rows_still_apply_to_anthropic(runtime):
    signal = FailoverSignal(provider="anthropic", status=529, message="Overloaded")
    assert runtime.hooks.classify_failover(signal) == (reason("overloaded"), "anthropic")
    signal = FailoverSignal(
        provider="anthropic", message="prompt is too long: 210000 tokens > 200000"
    )
    classification, _ = runtime.hooks.classify_failover(signal)
    assert classification == FailoverClassification.context_overflow()


def test_entry_point_plugin_answers_through_a_real_runtime():
    runtime = Runtime(allow=["anthropic"], on_load_failure="raise")
    try:
        signal = FailoverSignal(provider="claude-cli", message="Not logged in · Please run /login")
        assert runtime.hooks.classify_failover(signal) == (reason("auth"), "anthropic")
    finally:
        runtime.close()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("rate_limit_error", "rate_limit"),
        (" API_ERROR ", "server_error"),
        ("overloaded_error", None),
        (None, None),
    ],
)
def test_descriptor_table(value, expected):
    assert classify_anthropic_failover_descriptor(value) == expected


@pytest.mark.parametrize(
    ("raw", "provider", "expected"),
    [
        ("Not logged in · Please run /login", "claude-cli", True),
        ("not logged in·please run /login now", " Claude-CLI ", True),
        ("Not logged in · Please run /login", "anthropic", False),
        ("Not logged in", "claude-cli", False),
    ],
)
def test_claude_cli_auth_texts(raw, provider, expected):
    assert is_claude_cli_auth_error(raw, provider) is expected
