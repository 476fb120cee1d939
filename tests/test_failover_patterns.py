"""The pattern groups of spec §1.7 and the 402 rules of §1.6, row by row."""

from __future__ import annotations

import pytest

from openclaw_runtime.failover import FailoverReason
from openclaw_runtime.failover.matchers import (
    classify_failover_reason_from_402_text,
    classify_failover_reason_from_code,
    classify_legacy_provider_specific_error,
    classify_oauth_refresh_failure_reason,
    inspect_tls_certificate_error,
    is_auth_error_message,
    is_auth_permanent_error_message,
    is_billing_error_message,
    is_cli_session_expired_error_message,
    is_format_error_message,
    is_model_not_found_error_message,
    is_overloaded_error_message,
    is_periodic_usage_limit_error_message,
    is_pre_dispatch_tool_call_rejection_message,
    is_provider_completed_error_finish_reason_message,
    is_provider_request_size_ceiling_error,
    is_rate_limit_error_message,
    is_replay_invalid_error_message,
    is_server_error_message,
    is_timeout_error_message,
    is_unsupported_image_input_error_message,
)
from openclaw_runtime.failover.text import js_regex


def rows(predicate, true: list[str], false: list[str]):
    return [(predicate, text, True) for text in true] + [(predicate, text, False) for text in false]


RATE_LIMIT = rows(
    is_rate_limit_error_message,
    [
        "Rate limit exceeded",
        "rate_limit",
        "429 Too Many Requests",
        "  429",
        "HTTP 429",
        "status code: 429",
        'response: {"status": 429}',
        '{"code":429,"message":"slow"}',
        "Error 429 - rate limited",
        "429: resource has been exhausted",
        "429 quota exceeded",
        "too many concurrent requests",
        "ThrottlingException: Rate exceeded",
        "request throttled",
        "concurrency limit was reached",
        "model_cooldown: cooling down",
        "You exceeded your current quota",
        "RESOURCE-EXHAUSTED",
        "quota_exceeded",
        "ChatGPT usage limit hit",
        "TPM exceeded",
        "tokens per minute",
        "Too many tokens per day",
        "请求过于频繁",
        "调用频率超限",
        "频率限制",
        "配额不足",
        "额度已用尽",
    ],
    [
        "request id req-4291 failed",
        "model gpt-5.5-preview-0429 not found",
        '{"code":1311,"message":"The model you requested is not available in your current plan"}',
        '{"code":1113,"message":"invalid api endpoint or credentials"}',
        "[1305][该模型当前访问量过大，请您稍后再试]",
        "throttle",
        "concurrency limit",
        "",
    ],
)

OVERLOADED = rows(
    is_overloaded_error_message,
    [
        "overloaded_error",
        '{"type": "overloaded_error"}',
        "Engine Overloaded",
        "Selected model is at capacity",
        "model at capacity",
        "503 service unavailable",
        "service_unavailable",
        "service temporarily unavailable",
        "experiencing high demand",
        "high load",
        "服务过载",
        "当前负载过高",
        "访问量过大",
    ],
    ["service is currently unavailable", "the model is not available", "capacity planning"],
)

SERVER_ERROR = rows(
    is_server_error_message,
    [
        "status: internal server error",
        "Proxy notice: Status: Internal Server Error; code:500",
        "provider failed (HTTP 500): upstream apiKey is empty",
        "Internal Server Error",
        "internal_error",
        "bad gateway",
        "upstream connect error",
        "connection reset by peer",
        "An error occurred while processing your request",
        "系统繁忙",
    ],
    [
        "Proxy notice: Status: Internal Server Error",
        "503 service unavailable",
        "HTTP 429",
        "",
    ],
)

TIMEOUT = rows(
    is_timeout_error_message,
    [
        "Request timeout",
        "timed out",
        "context deadline exceeded",
        "got status: INTERNAL code:500",
        '{"status":"INTERNAL","code":500}',
        "Connection error.",
        "fetch failed",
        "socket hang up",
        "stream disconnected before completion: eof",
        "premature close of server response while trying to fetch https://x",
        "Anthropic stream ended before message_stop",
        "Stream ended without finish_reason",
        "Responses stream ended with unresolved tool calls",
        "Google SSE stream ended with an incomplete frame.",
        "ECONNREFUSED",
        "read ECONNRESET",
        "EAI_AGAIN",
        "write EPIPE",
        "without sending chunks",
        "Provider finish_reason: network_error",
        "unhandled stop reason: abort",
        "reason: malformed_response",
        "The operation was aborted",
        "stream closed",
        "terminated",
        "stream_read_error",
        "UND_ERR_HEADER",
        "Request failed",
        "request failed after repeated internal retries",
        "LLM request failed.",
        "网络错误",
        "请求超时",
    ],
    [
        "Provider finish_reason: error",
        "stop reason: error",
        "opencode-go stream ended without a terminal event",
        "Ollama API stream ended without a final response",
        "The process was terminated by the user",
        "LLM request failed: provider rejected the request schema",
        "503 service unavailable",
        "stream disconnected",
        "Proxy notice: Status: Internal Server Error",
    ],
)

BILLING = rows(
    is_billing_error_message,
    [
        "status: 402",
        "error code 402",
        "http 402",
        "got a 402 from the API",
        "returned 402",
        '{"status":402,"type":"error"}',
        '{"code":402,"message":"payment required"}',
        '{"error":{"code":402,"message":"billing hard limit reached"}}',
        "402 Payment Required",
        "Payment required",
        "insufficient credits",
        "You have used all available credits",
        "monthly spending limit",
        "insufficient_quota",
        "FreeUsageLimitError",
        "available balance too low",
        "out of budget",
        "Your credit balance is too low",
        "visit plans & billing",
        "Insufficient MBT balance",
        "insufficient usd or diem balance",
        "requires more credits",
        "You're out of extra usage",
        "Extra usage is required for long context requests.",
        "账户余额不足",
        "欠费",
        '{"error":{"code":"InvalidSubscription"}}',
        "Your account does not have a valid CodingPlan subscription",
        '{"code":1311,"message":"x"}',
        "Your current subscription plan does not include access to this model",
        "The model you requested is not available in your current plan",
        "Billing error: please upgrade",
        "error: insufficient credit - purchase more",
    ],
    [
        "Fixed issue CHE-402 in the latest release",
        "Error code 403 was returned, not 402-related",
        "402 items found in the database",
        "subsystem A returned 402 records after retry",
        "insufficient to reconcile the final balance",
        "Billing error: try later",
        "## Billing\nplans & billing\n## Credits\ninsufficient credits",
        '{"code":1113,"message":"invalid api endpoint or credentials"}',
        "",
    ],
)

AUTH_PERMANENT = rows(
    is_auth_permanent_error_message,
    [
        "API key revoked",
        "apikey_deactivated",
        "api_key deleted",
        "deactivated_workspace",
        "Your key has been disabled",
        "This key has been revoked",
        "account has been deactivated",
        "model not allowed for this organization",
    ],
    ["invalid api key", "key revoked soon", ""],
)

AUTH = rows(
    is_auth_error_message,
    [
        "invalid api key",
        "invalid_api_key",
        "API key not valid. Please pass a valid API key.",
        "api key is invalid",
        "could not validate the provided credentials",
        "permission_error",
        "Incorrect API key provided",
        "invalid token",
        "authentication failed",
        "please re-authenticate",
        "unauthorized",
        "403 Forbidden",
        "access denied",
        "insufficient permissions",
        "missing scopes: model.request",
        "token has expired",
        "session expired",
        "HTTP 401",
        "no credentials found",
        "no api key found",
        "failed to decode the id token",
        '{"code":1113,"message":"invalid api endpoint or credentials"}',
        "认证失败",
        "apikey 无效",
        "CE-011 当前AK 违规请求",
        "禁止访问 当前 ak",
        "ce-011",
    ],
    [
        "API key invalidation policy updated",
        "INVALID API KEYSTORE configuration",
        "Request contains an invalid argument.",
        "[1305][该模型当前访问量过大，请您稍后再试]",
        "error 4011",
        "",
    ],
)

FORMAT = rows(
    is_format_error_message,
    [
        "String should match pattern '^[a-zA-Z0-9_-]+$'",
        "messages.1.content.1.tool_use.id: invalid",
        "unexpected tool_use_id",
        "Invalid request format",
        "tool call id was abc but must be alphanumeric",
        "This model does not support assistant message prefill",
        "conversation must end with a user message",
        "agent harness codex does not support model: provider is not one of openai",
    ],
    ["rate limit exceeded", "invalid argument", ""],
)

FINISH_REASON_ERROR = rows(
    is_provider_completed_error_finish_reason_message,
    [
        "Provider finish_reason: error",
        "finish_reason: error",
        "stop reason: error",
        "Unhandled stop reason: error",
        "reason:error",
    ],
    ["Provider finish_reason: network_error", "finish_reason: abort", "stop reason: errors"],
)

PERIODIC = rows(
    is_periodic_usage_limit_error_message,
    [
        "Weekly/Monthly Limit Exhausted",
        "daily limit reached",
        "monthly usage limit exceeded",
        "weekly limits",
        "Daily/weekly/monthly limit",
    ],
    ["daily-limit reached", "hourly limit reached", "monthlylimit"],
)

MISC = [
    *rows(
        is_cli_session_expired_error_message,
        [
            "Session not found",
            "conversation does not exist",
            "No conversation found with session ID: abc",
            "no such session",
            "invalid session",
            "conversation id not found",
            "session expired",
        ],
        ["session limit reached", "sessions not found"],
    ),
    *rows(
        is_model_not_found_error_message,
        [
            "No endpoints found for missing/model.",
            "router not found",
            "Unknown model: x",
            "The model gpt-4 was retired last week",
            "llama3:8b was retired at 2026-01-01 00:00:00 +0000 UTC (ref: x)",
            "model_not_found",
            "The model `x` does not exist",
            "404 page not found",
            "not_found_error",
            "not supported model",
            "The 'gpt-5' model is not supported when using Codex with a ChatGPT account.",
            "model: gpt-x not found",
            "models/gemini-9 is not found for API version v1",
            "selected model not-found",
            "This model is deprecated, please upgrade to v2",
            "stealth model gone, find it here",
            "foo is not a valid model ID",
            "invalid model",
        ],
        [
            "The model is not available. Please try again later.",
            "invalid model reference",
            "page not found",
            "",
        ],
    ),
    *rows(
        is_replay_invalid_error_message,
        [
            "previous_response_id resp_1 not found",
            "tool_use.input: field required",
            "400 Incorrect role information",
            "messages: roles must alternate between user and assistant",
            "Input item ID does not belong to this connection",
            "thinking block signature is invalid",
            "Invalid `signature` in `thinking` block",
        ],
        ["invalid signature", "thinking is disabled"],
    ),
    *rows(
        is_unsupported_image_input_error_message,
        [
            "This model does not support image inputs",
            "unsupported image input",
            "No endpoints found that support image input",
        ],
        ["No endpoints found for model", "image too big"],
    ),
    *rows(
        is_pre_dispatch_tool_call_rejection_message,
        [
            "Provider completed tool call with malformed JSON arguments",
            "Provider completed stream with an incomplete tool call",
            "Provider returned an incomplete or malformed tool call",
            "Mistral completed tool call has invalid JSON arguments",
            "Responses stream completed tool call with invalid JSON arguments",
        ],
        [
            "provider completed tool call with malformed JSON arguments",
            " Provider returned an incomplete or malformed tool call",
        ],
    ),
]

ALL_ROWS = [
    *RATE_LIMIT,
    *OVERLOADED,
    *SERVER_ERROR,
    *TIMEOUT,
    *BILLING,
    *AUTH_PERMANENT,
    *AUTH,
    *FORMAT,
    *FINISH_REASON_ERROR,
    *PERIODIC,
    *MISC,
]


@pytest.mark.parametrize(
    ("predicate", "text", "expected"),
    ALL_ROWS,
    ids=[f"{p.__name__}:{t[:40]!r}" for p, t, _ in ALL_ROWS],
)
def test_pattern_row(predicate, text, expected):
    assert predicate(text) is expected


def test_billing_survives_long_payloads():
    long = '{"error":{"code":402,"message":"payment required","details":"' + "x" * 700 + '"}}'
    assert is_billing_error_message(long)
    not_billing = "Quarterly report: subsystem A returned 402 records after retry. " + "x" * 700
    assert not is_billing_error_message(not_billing)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("402 Payment Required", FailoverReason.BILLING),
        ("402 payment required: insufficient credits", FailoverReason.BILLING),
        ("HTTP 402: add more credits", FailoverReason.BILLING),
        ('{"status": 402, "message": "upgrade your plan, limit hit"}', FailoverReason.BILLING),
        (
            "402 Payment Required: Monthly spend limit reached. Visit billing.",
            FailoverReason.RATE_LIMIT,
        ),
        ("HTTP 402 Payment Required: rate limit exceeded", FailoverReason.RATE_LIMIT),
        ("402 daily usage limit, try again tomorrow", FailoverReason.RATE_LIMIT),
        ("402 organization limit exceeded for this billing period", FailoverReason.RATE_LIMIT),
        ("402 weekly limit, resets monday", FailoverReason.RATE_LIMIT),
        (
            "402 You have reached your subscription quota limit. Please wait for automatic quota refresh",
            FailoverReason.RATE_LIMIT,
        ),
        ("402 You have used up your points", FailoverReason.BILLING),
        ("402 no available asset for api access", FailoverReason.BILLING),
        ("got a 402 while calling", FailoverReason.BILLING),
        ("error code: 402", FailoverReason.BILLING),
        # a bare leading 402 needs a known signal
        ("402 something unrelated", None),
        ("402 items found", None),
        ("402 top up your account", FailoverReason.BILLING),
        ("not 402 at all", None),
    ],
)
def test_402_text_rules(raw, expected):
    assert classify_failover_reason_from_402_text(raw) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "413 Request too large on tokens per minute (TPM): Limit 8000, Requested 8098, please",
            True,
        ),
        ("429 on tokens per minute (TPM): Limit 8000, Used 7500, Requested 1000, try again", False),
        (
            "429 on requests per minute (RPM): Limit 30, Used 30. Also tokens per minute (TPM) Requested 5000",
            False,
        ),
        (
            "429 on requests per minute (RPM): Limit 30, Requested 1. Also on tokens per minute (TPM): "
            "Limit 8000, Requested 8098.",
            True,
        ),
        ("TPM: limit 8,000 requested 8,001", True),
        ("413 Request too large: Limit 8000, Requested 8098", False),
        ("tokens per minute (TPM): Limit 8000, please reduce", False),
        (None, False),
    ],
)
def test_provider_request_size_ceiling(message, expected):
    assert is_provider_request_size_ceiling_error(message) is expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("resource_exhausted", FailoverReason.RATE_LIMIT),
        (" Throttling_Exception ", FailoverReason.RATE_LIMIT),
        ("too_many_requests", FailoverReason.RATE_LIMIT),
        ("overloaded", FailoverReason.OVERLOADED),
        ("deactivated_workspace", FailoverReason.AUTH_PERMANENT),
        ("unknown_parameter", FailoverReason.FORMAT),
        ("econnaborted", FailoverReason.TIMEOUT),
        ("EPROTO", FailoverReason.TIMEOUT),
        ("ERR_SSL_WRONG_VERSION_NUMBER", FailoverReason.TIMEOUT),
        ("invalid_request_error", None),
        ("", None),
        (None, None),
    ],
)
def test_code_table(code, expected):
    assert classify_failover_reason_from_code(code) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("workers_ai gateway: quota limit exceeded", FailoverReason.RATE_LIMIT),
        ("ModelNotReadyException", FailoverReason.OVERLOADED),
        ("model_deactivated", FailoverReason.MODEL_NOT_FOUND),
        ("model has been deactivated", FailoverReason.MODEL_NOT_FOUND),
        ("quota limit exceeded", None),
    ],
)
def test_legacy_provider_patterns(message, expected):
    assert classify_legacy_provider_specific_error(message) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("OAuth token refresh failed for openai: refresh_token_reused", "refresh_token_reused"),
        ("OAuth token refresh failed: invalid_grant", "invalid_grant"),
        ("access token could not be refreshed; sign in again", "sign_in_again"),
        ("OAuth token refresh failed: invalid refresh token", "invalid_refresh_token"),
        ("OAuth token refresh failed: token expired or revoked", "revoked"),
        ("Failed to authenticate. API Error: 401", "revoked"),
        ("OAuth token refresh failed: network down", None),
        ("invalid_grant", None),
    ],
)
def test_oauth_refresh_failure_reason(message, expected):
    assert classify_oauth_refresh_failure_reason(message) == expected


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        ("CERT_HAS_EXPIRED", None, "certificate_invalid"),
        ("err_tls_cert_altname_invalid", None, "hostname_mismatch"),
        (None, "Hostname/IP does not match certificate's altnames", "hostname_mismatch"),
        (None, "Host: api.x.com. is not in the cert's altnames", "hostname_mismatch"),
        (None, "self-signed certificate", "certificate_invalid"),
        (None, "unable to get local issuer certificate", "certificate_invalid"),
        ("ECONNRESET", "socket hang up", None),
        (None, "   ", None),
    ],
)
def test_tls_certificate_inspection(code, message, expected):
    assert inspect_tls_certificate_error(code, message) == expected


@pytest.mark.parametrize(
    ("source", "text", "matches"),
    [
        # \b and \w are ASCII as in JavaScript: CJK characters are word boundaries
        (r"\btpm\b", "超出tpm限制", True),
        (r"\binsufficient\s+\w+\s+balance\b", "insufficient 余额 balance", False),
        # \s includes the no-break space and ideographic space
        (r"rate\slimit", "rate\u00a0limit", True),
        (r"rate\slimit", "rate\u3000limit", True),
        # . stops at line terminators, $ is the end of input only
        (r"a.b", "a\nb", False),
        (r"a.b", "a\u2028b", False),
        (r"^terminated$", "terminated\n", False),
        (r"[\s\S]*x", "\n\nx", True),
    ],
)
def test_js_regex_semantics(source, text, matches):
    assert (js_regex(source, "i").search(text) is not None) is matches
