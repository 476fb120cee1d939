"""Table tests for ``classify_provider_runtime_failure_kind`` (OpenClaw's
``classifyProviderRuntimeFailureKind``), vectors from OpenClaw's classifier tests."""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.failover.reasons import FailoverSignal
from openclaw_runtime.failover.runtime_failure_kind import (
    PROVIDER_RUNTIME_FAILURE_KINDS,
    classify_provider_runtime_failure_kind,
)

_SCOPE_401 = (
    '401 {"type":"error","error":{"type":"permission_error",'
    '"message":"Missing scopes: api.responses.write"}}'
)

CASES: list[tuple[Any, str]] = [
    # missing OpenAI scopes
    ({"provider": "openai", "message": _SCOPE_401}, "auth_scope"),
    (
        {
            "provider": "openai",
            "message": '{"type":"error","error":{"type":"permission_error",'
            '"message":"Missing scopes: api.responses.write"},"code":401}',
        },
        "auth_scope",
    ),
    # OAuth refresh
    (
        "OAuth token refresh failed for openai: invalid_grant. Please try again or re-authenticate.",
        "auth_refresh",
    ),
    (
        "Your access token could not be refreshed because you have since logged out or signed in "
        "to another account. Please sign in again.",
        "auth_refresh",
    ),
    (
        "Your authentication session could not be refreshed automatically. Please log out and "
        "sign in again.",
        "auth_refresh",
    ),
    (
        "OAuth token refresh failed for openai: file lock timeout for "
        "/tmp/agent/auth-profiles.json. Please try again or re-authenticate.",
        "auth_refresh",
    ),
    (
        'OAuth refresh call "refreshProviderOAuthCredentialWithPlugin(openai)" exceeded hard '
        "timeout (120000ms)",
        "refresh_timeout",
    ),
    ("file lock timeout for /tmp/openclaw-oauth-refresh.lock", "refresh_contention"),
    (
        {
            "code": "refresh_contention",
            "message": "OAuth token refresh failed for openai: OAuth refresh failed "
            "(refresh_contention): another process is already refreshing openai.",
        },
        "refresh_contention",
    ),
    (
        "OpenAI Codex OAuth failed (callback_validation_failed): State mismatch",
        "callback_validation",
    ),
    ("OpenAI Codex OAuth failed (callback_timeout)", "callback_timeout"),
    # HTML pages
    ("403 <!DOCTYPE html><html><body>Access denied</body></html>", "auth_html"),
    ("401 <!DOCTYPE html><html><body>Unauthorized</body></html>", "auth_html"),
    (
        {"status": 502, "message": "<!DOCTYPE html><html><body>Bad gateway</body></html>"},
        "upstream_html",
    ),
    (
        {
            "status": 403,
            "message": "<html><body>Enable JavaScript and cookies to continue</body></html>",
        },
        "upstream_html",
    ),
    # transport
    ("407 Proxy Authentication Required", "proxy"),
    ("dial tcp: lookup api.example.com: no such host", "dns"),
    ("socket hang up", "timeout"),
    ("INVALID_REQUEST_ERROR: string should match pattern", "schema"),
    ("exec denied (allowlist-miss):", "sandbox_blocked"),
    ("tool_use.input: Field required", "replay_invalid"),
    ("401 input item ID does not belong to this connection", "replay_invalid"),
    (
        '{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.440:'
        ' Invalid `signature` in `thinking` block"}}',
        "replay_invalid",
    ),
    ("ValidationException: invalid signature on thinking block", "replay_invalid"),
    # reasons the failover classifier owns
    ("429 Too Many Requests: rate limit exceeded", "rate_limit"),
    ({"status": 404, "message": "The model `gpt-9` does not exist"}, "model_not_found"),
    ("503 Service Unavailable: overloaded", "timeout"),
    # a plain 401 with token wording
    ("401 Unauthorized: invalid api key", "auth_invalid_token"),
    # ambiguous
    ({}, "empty_response"),
    (FailoverSignal(), "empty_response"),
    ("Unknown error (no error details in response)", "no_error_details"),
    ("provider sent a strange opaque failure", "unclassified"),
]


@pytest.mark.parametrize(("signal", "kind"), CASES)
def test_runtime_failure_kind_table(signal: Any, kind: str) -> None:
    assert kind in PROVIDER_RUNTIME_FAILURE_KINDS
    assert classify_provider_runtime_failure_kind(signal) == kind


@pytest.mark.parametrize(
    ("signal", "not_kind"),
    [
        ({"provider": "anthropic", "message": _SCOPE_401}, "auth_scope"),
        (
            {
                "provider": "openai",
                "message": '403 {"type":"error","error":{"type":"permission_error",'
                '"message":"Insufficient permissions for this organization"}}',
            },
            "auth_scope",
        ),
        (
            "You've hit your usage limit. Upgrade to Plus to continue using Codex, try again "
            "after 11:34 AM.",
            "auth_refresh",
        ),
        ("ValidationException: signature present in thinking block", "replay_invalid"),
        ("Invalid signature", "replay_invalid"),
        (
            'Model-provider request.proxy/request.tls is not yet supported for api "ollama"',
            "proxy",
        ),
        # scope talk keeps a 401 out of the plain invalid-token copy
        ("401 Unauthorized: invalid token, missing scope model.request", "auth_invalid_token"),
    ],
)
def test_runtime_failure_kind_negatives(signal: Any, not_kind: str) -> None:
    assert classify_provider_runtime_failure_kind(signal) != not_kind


def test_structured_code_alone_is_not_an_empty_response() -> None:
    assert classify_provider_runtime_failure_kind({"code": "SERVER_ERROR"}) != "empty_response"


def test_bad_input_is_named() -> None:
    with pytest.raises(TypeError, match="not int"):
        classify_provider_runtime_failure_kind(42)  # type: ignore[arg-type]
