"""classify_failover_signal: the signal procedure, the message order and the status mapping.

Rows follow OpenClaw's classification corpus (reference snapshot 0e5672e9) and spec §1.2–1.4.
"""

from __future__ import annotations

import pytest

from openclaw_runtime.failover import (
    FailoverClassification,
    FailoverReason,
    FailoverSignal,
    classify_failover_reason,
    classify_failover_signal,
)
from openclaw_runtime.failover.api_errors import (
    extract_leading_http_status,
    infer_signal_status,
    is_generic_provider_internal_error,
    is_unclassified_no_body_http_signal,
    parse_api_error_info,
)
from openclaw_runtime.failover.classify import ProviderFailoverOwner
from openclaw_runtime.failover.http_status import classify_failover_classification_from_http_status
from openclaw_runtime.failover.message_rules import merge_message_and_detail_classification
from openclaw_runtime.failover.signals import (
    extract_failover_signal_details,
    signal_from_assistant_message,
)
from openclaw_runtime.messages import AssistantMessage

OVERFLOW = FailoverClassification.context_overflow()


def reason(name: str) -> FailoverClassification:
    return FailoverClassification.of(name)


def sig(message: str | None = None, **fields) -> dict:
    out = dict(fields)
    if message is not None:
        out["message"] = message
    return out


# --------------------------------------------------------------------------- the corpus

CORPUS = [
    # transient transport failures
    (sig("Bedrock stream ended before messageStop", provider="amazon-bedrock"), reason("timeout")),
    (sig("Anthropic stream ended before message_stop", provider="anthropic"), reason("timeout")),
    (sig("Google stream ended before a terminal finish reason"), reason("timeout")),
    (sig("Mistral stream ended without a terminal finish reason"), reason("timeout")),
    (sig("Stream ended without finish_reason", provider="opencode-go"), reason("timeout")),
    (sig("OpenAI Responses stream ended before a terminal response event"), reason("timeout")),
    (sig("Proxy stream ended before terminal event"), reason("timeout")),
    (sig("deadline exceeded"), reason("timeout")),
    (sig("request ended without sending any chunks"), reason("timeout")),
    (sig("Connection error."), reason("timeout")),
    (sig("fetch failed"), reason("timeout")),
    (sig("network error: ECONNREFUSED"), reason("timeout")),
    (sig("dial tcp: lookup api.example.com: no such host (ENOTFOUND)"), reason("timeout")),
    (sig("temporary dns failure EAI_AGAIN"), reason("timeout")),
    (
        sig(
            "An error occurred while processing your request. You can retry your request, or "
            "contact us through our help center at help.openai.com if the error persists. Please "
            "include the request ID synthetic-provider-request-001 in your message.",
            provider="openai",
        ),
        reason("timeout"),
    ),
    (sig("An unknown error occurred"), reason("timeout")),
    (sig("HTTP 410 Gone"), reason("timeout")),
    (sig("Unhandled stop reason: MALFORMED_RESPONSE", provider="google"), reason("timeout")),
    (sig("The operation was aborted"), reason("timeout")),
    (sig("stream was aborted"), reason("timeout")),
    (sig("Error: connect ETIMEDOUT 10.0.0.1:443"), reason("timeout")),
    (sig("Error: connect EHOSTUNREACH 10.0.0.1:443"), reason("timeout")),
    (sig("Error: write EPIPE"), reason("timeout")),
    (sig("Provider finish_reason: network_error"), reason("timeout")),
    (sig("Error: UND_ERR_SOCKET other side closed"), reason("timeout")),
    (sig("UND_ERR_CONNECT_TIMEOUT"), reason("timeout")),
    (sig("Request failed after repeated internal retries."), reason("timeout")),
    (
        sig(
            "provider=google model=gemini-3.1-flash-lite-preview got status: INTERNAL upstream "
            "failure code:500"
        ),
        reason("timeout"),
    ),
    (sig('{"type":"api_error","message":"unknown error, 520 (1000)"}'), reason("timeout")),
    (
        sig(
            '{"type":"error","error":{"type":"api_error","message":"An unexpected error '
            'occurred while processing the response"}}',
            provider="anthropic",
        ),
        reason("timeout"),
    ),
    (
        sig(
            "LLM error 1234: 网络错误，错误id：202603281427587491f4467f1c4712，请联系客服。 "
            "(request_id: 202603281427587491f4467f1c4712)",
            provider="zai",
        ),
        reason("timeout"),
    ),
    (sig("网络异常，请稍后重试"), reason("timeout")),
    (sig("服务繁忙，请稍后再试"), reason("timeout")),
    (sig("系统错误，请稍后重试"), reason("timeout")),
    (sig("499 Client Closed Request"), reason("timeout")),
    (sig("504 Gateway Timeout"), reason("timeout")),
    (sig("Unhandled stop reason: abort"), reason("timeout")),
    (sig("stream was closed"), reason("timeout")),
    (sig("Error: connect ESOCKETTIMEDOUT 10.0.0.1:443"), reason("timeout")),
    (sig("Error: read ENETRESET"), reason("timeout")),
    (sig("Error: connect EHOSTDOWN 192.168.1.1:443"), reason("timeout")),
    (sig("Unhandled stop reason: network_error", provider="zai"), reason("timeout")),
    (sig("Provider finish_reason: abort"), reason("timeout")),
    (sig("Provider finish_reason: malformed_response"), reason("timeout")),
    (sig("terminated"), reason("timeout")),
    (sig("stream_read_error"), reason("timeout")),
    (sig("UND_ERR_HEADERS_TIMEOUT"), reason("timeout")),
    (sig("UND_ERR_BODY_TIMEOUT"), reason("timeout")),
    (sig("UND_ERR_ABORTED"), reason("timeout")),
    (sig("UND_ERR_REQ_CONTENT_LENGTH_MISMATCH"), reason("timeout")),
    (sig("Request failed"), reason("timeout")),
    (
        sig('{"type":"error","error":{"type":"api_error","message":"Internal server error"}}'),
        reason("timeout"),
    ),
    (
        sig(
            '{"error":{"code":"1234","message":"网络错误，错误id：abc123，请联系客服。"},'
            '"request_id":"abc123"}',
            provider="zai",
        ),
        reason("timeout"),
    ),
    (sig("连接超时"), reason("timeout")),
    (sig("请求超时，请重试"), reason("timeout")),
    (sig("服务暂时不可用"), reason("timeout")),
    (sig("连接错误"), reason("timeout")),
    (sig("内部错误"), reason("timeout")),
    (sig("服务器错误"), reason("timeout")),
    (sig("服务器内部错误"), reason("timeout")),
    (sig("系统繁忙"), reason("timeout")),
    (sig("系统异常"), reason("timeout")),
    (sig("524 status code (no body)"), reason("timeout")),
    (sig("provider body timed out 50"), reason("timeout")),
    (
        sig("An error occurred while processing your request. You can retry your request."),
        reason("timeout"),
    ),
    (sig("Azure OpenAI API error (502): Bad gateway from upstream"), reason("timeout")),
    (sig("Provider API error (504): gateway timeout"), reason("timeout")),
    (sig("Provider finish_reason: network_error", provider="openrouter"), reason("timeout")),
    # server errors and outages
    (
        sig(
            "521 <!DOCTYPE html><html><head><title>Web server is down</title></head><body>"
            "Cloudflare</body></html>"
        ),
        reason("server_error"),
    ),
    (
        sig(
            "<!doctype html><html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad "
            "Gateway</h1><p>cloudflare-nginx</p></body></html>",
            status=502,
        ),
        reason("server_error"),
    ),
    (
        sig(
            "<!doctype html><html><head><title>503</title></head><body><h1>Service Unavailable</h1>"
            "<p>Please try again. Rate limit exceeded.</p></body></html>",
            status=503,
        ),
        reason("server_error"),
    ),
    (sig("Provider API error (503)", status=503), reason("server_error")),
    (sig("500 Internal Server Error"), reason("server_error")),
    (sig("502 Bad Gateway"), reason("server_error")),
    (sig("503 Internal Database Error"), reason("server_error")),
    (sig("HTTP 500 temporary provider response"), reason("server_error")),
    (sig("503: temporary provider response"), reason("server_error")),
    (
        sig(
            'Codex error: {"type":"error","error":{"type":"server_error","code":"server_error",'
            '"message":"An error occurred while processing your request."},"sequence_number":2}',
            provider="openai",
        ),
        reason("server_error"),
    ),
    (sig("Provider finish_reason: error"), reason("server_error")),
    (sig("finish_reason: error"), reason("server_error")),
    (sig("stop reason: error"), reason("server_error")),
    (sig("Unhandled stop reason: error"), reason("server_error")),
    (sig("503 Service Unavailable"), reason("overloaded")),
    (sig("LLM error: service unavailable"), reason("overloaded")),
    (
        sig(
            '{"type":"error","error":{"type":"api_error","message":"Service temporarily '
            'unavailable"}}'
        ),
        reason("overloaded"),
    ),
    (sig("503 billing service unavailable; please retry your request"), reason("overloaded")),
    (sig("503 subscription service unavailable while checking quota"), reason("overloaded")),
    (sig("503 Service Unavailable; Retry-After: 120 seconds"), reason("overloaded")),
    (sig("Mistral API error (503): service temporarily unavailable"), reason("overloaded")),
    # nothing known
    (
        sig(
            "OpenAI API error (500): 500 The server had an error while processing your request. "
            "Sorry about that!",
            provider="openai",
        ),
        None,
    ),
    (sig("OpenClaw transport error: malformed_streaming_fragment"), None),
    (sig("Ollama API stream ended without a final response", provider="ollama"), None),
    (sig("The model is not available. Please try again later."), None),
    (sig("request id req-4291 failed"), None),
    (sig("Failed to download gemma4:e2b: pull stream ended before success"), None),
    (sig("opencode-go stream ended without a terminal event"), None),
    (sig("SSE stream ended before next event"), None),
    (sig("Proxy notice: Status: Internal Server Error"), None),
    (
        sig(
            "Google Generative AI API error (400): Request contains an invalid argument. "
            "[code=INVALID_ARGUMENT]"
        ),
        None,
    ),
    # auth
    (
        sig(
            "<!doctype html><html><head><title>403 Forbidden</title></head><body>Enable "
            "JavaScript and cookies to continue.<p>Please stand by, while we are checking your "
            "browser...</p></body></html>",
            status=403,
        ),
        reason("auth"),
    ),
    (sig("403 Forbidden: insufficient permissions"), reason("auth")),
    (
        sig(
            "unexpected status 401 Unauthorized: Missing bearer or basic authentication in "
            "header, url: https://api.openai.com/v1/responses",
            status=401,
        ),
        reason("auth"),
    ),
    (sig("invalid_api_key", provider="demo-provider"), reason("auth")),
    (
        sig(
            "Google Generative AI API error (400): API key not valid. Please pass a valid API "
            "key. [code=INVALID_ARGUMENT]"
        ),
        reason("auth"),
    ),
    # missing models and expired sessions
    (
        sig("model_is_deactivated: this model has been deactivated", provider="groq"),
        reason("model_not_found"),
    ),
    (sig("No endpoints found for missing/model.", status=404), reason("model_not_found")),
    (sig("Mistral API error (404): model not found"), reason("model_not_found")),
    (sig("model gpt-5.5-preview-0429 not found"), reason("model_not_found")),
    (sig("model model-x-500-preview not found"), reason("model_not_found")),
    (sig("Unknown model: openai/gpt-5.3-codex"), reason("model_not_found")),
    (sig("HTTP 410: session not found"), reason("session_expired")),
    (
        sig("No conversation found with session ID: abc123", provider="claude-cli"),
        reason("session_expired"),
    ),
    # rate limits
    (
        sig(
            "Rate limit reached for gpt-4.1-mini in organization org_test on requests per min. "
            "Limit: 3.000000 / min. Current: 3.000000 / min.",
            provider="openai",
        ),
        reason("rate_limit"),
    ),
    (
        sig("RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota)."),
        reason("rate_limit"),
    ),
    (
        sig("429 Too Many Requests: Too many requests were sent in a given timeframe."),
        reason("rate_limit"),
    ),
    (sig("model_cooldown: All credentials for model gpt-5 are cooling down"), reason("rate_limit")),
    (sig("You have hit your ChatGPT usage limit (plus plan)"), reason("rate_limit")),
    (sig("AWS Bedrock: Too many tokens per day. Please try again tomorrow."), reason("rate_limit")),
    (
        sig(
            "LLM error 1310: Weekly/Monthly Limit Exhausted. Your limit will reset at 2026-03-06 "
            "22:19:54 (request_id: 20260303141547610b7f574d1b44cb)"
        ),
        reason("rate_limit"),
    ),
    (
        sig(
            "402 You have reached your subscription quota limit. Please wait for automatic quota "
            "refresh in the rolling time window, upgrade to a higher plan, or use a Pay-As-You-Go "
            "API Key for unlimited access."
        ),
        reason("rate_limit"),
    ),
    (sig("请求过于频繁，请稍后重试"), reason("rate_limit")),
    (sig("调用频率超限"), reason("rate_limit")),
    (sig("配额已用尽"), reason("rate_limit")),
    (sig("额度不足，请充值"), reason("rate_limit")),
    (sig("rate limit exceeded"), reason("rate_limit")),
    (
        sig(
            '429 status code (exceeded limit)\n{"code":1305,"message":"The service may be '
            'temporarily overloaded, please try again later."}'
        ),
        reason("rate_limit"),
    ),
    (sig("ThrottlingException: Too many requests"), reason("rate_limit")),
    (sig("ThrottlingException: Too many concurrent requests"), reason("rate_limit")),
    (sig("ThrottlingException: Rate exceeded"), reason("rate_limit")),
    (sig("throttling disabled for this account"), reason("rate_limit")),
    (sig("concurrency limit has been reached"), reason("rate_limit")),
    (sig("concurrency limit breached"), reason("rate_limit")),
    (sig("workers_ai gateway error: quota limit exceeded"), reason("rate_limit")),
    (
        sig('429 {"error":{"type":"rate_limit_error","message":"Rate limit exceeded"}}'),
        reason("rate_limit"),
    ),
    (sig("429 temporary provider response"), reason("rate_limit")),
    (sig("ResourceExhausted: Worker local total request limit reached"), reason("rate_limit")),
    (sig("resource exhausted"), reason("rate_limit")),
    (sig("quota_exceeded"), reason("rate_limit")),
    (
        sig("429 You exceeded your daily request limit. Please try again in 24 hours."),
        reason("rate_limit"),
    ),
    (
        sig(
            "OpenAI API error (429): RESOURCE_EXHAUSTED: Quota exceeded for requests per minute; "
            "please retry your request"
        ),
        reason("rate_limit"),
    ),
    (
        sig(
            "Rate limit exceeded",
            status=429,
            errorType="rate_limit_exceeded",
            provider="openrouter",
        ),
        reason("rate_limit"),
    ),
    (
        sig('429 {"code":"Some resource has been exhausted","error":"Rate limit exceeded"}'),
        reason("rate_limit"),
    ),
    (
        sig("request reached organization TPD rate limit, current: 1506556, limit: 1500000"),
        reason("rate_limit"),
    ),
    (sig("Monthly spend limit reached.", status=402), reason("rate_limit")),
    (sig("Weekly usage limit exhausted."), reason("rate_limit")),
    (sig("Daily limit reached, resets tomorrow."), reason("rate_limit")),
    (sig("Organization spending limit exceeded.", status=402), reason("rate_limit")),
    (sig("Workspace spend limit reached.", status=402), reason("rate_limit")),
    (sig("Organization limit exceeded for this billing period.", status=402), reason("rate_limit")),
    (
        sig(
            "402 Payment Required: Monthly spend limit reached. Please visit your billing settings."
        ),
        reason("rate_limit"),
    ),
    (sig("HTTP 402 Payment Required: rate limit exceeded"), reason("rate_limit")),
    (sig("LLM error: weekly/monthly limit reached"), reason("rate_limit")),
    (sig("LLM error: daily limit exceeded"), reason("rate_limit")),
    (sig("Monthly usage limit reached"), reason("rate_limit")),
    (sig("rate limit reached; Retry-After: 90 minutes"), reason("rate_limit")),
    (
        sig(
            "429 <!doctype html><html><head><title>429 Too Many Requests</title></head><body>"
            "<h1>Too Many Requests</h1><p>Rate limit exceeded.</p></body></html>"
        ),
        reason("rate_limit"),
    ),
    (sig("429 Too Many Requests", provider="xai"), reason("rate_limit")),
    (sig("429 Too Many Requests: model overloaded"), reason("rate_limit")),
    (sig("429 insufficient_quota"), reason("billing")),
    # overloaded
    (
        sig(
            '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},'
            '"request_id":"req_test"}'
        ),
        reason("overloaded"),
    ),
    (
        sig(
            "503 Engine Overloaded: The server is experiencing a high volume of requests and is "
            "temporarily overloaded."
        ),
        reason("overloaded"),
    ),
    (
        sig("This model is currently experiencing high demand. Please try again later."),
        reason("overloaded"),
    ),
    (sig("service unavailable due to capacity limits"), reason("overloaded")),
    (
        sig(
            '{"error":{"code":503,"message":"The model is overloaded. Please try later","status":"UNAVAILABLE"}}'
        ),
        reason("overloaded"),
    ),
    (sig("529 API is busy"), reason("overloaded")),
    (sig("529 Please try again"), reason("overloaded")),
    (sig("服务过载，请稍后重试"), reason("overloaded")),
    (sig("当前负载过高"), reason("overloaded")),
    (sig("Selected model is at capacity. Please try a different model."), reason("overloaded")),
    (sig("[1305][该模型当前访问量过大，请您稍后再试]", provider="zai"), reason("overloaded")),
    (sig("ModelNotReadyException: model is not ready"), reason("overloaded")),
    (sig("overloaded_error"), reason("overloaded")),
    # billing
    (
        sig(
            '{"error":{"code":"InvalidSubscription","message":"Your account does not have a valid '
            'CodingPlan subscription, or your subscription has expired."}}'
        ),
        reason("billing"),
    ),
    # context overflow
    (sig("request_too_large"), OVERFLOW),
    (sig("Request exceeds the maximum size"), OVERFLOW),
    (sig("context length exceeded"), OVERFLOW),
    (sig("Maximum context length"), OVERFLOW),
    (sig("prompt is too long: 208423 tokens > 200000 maximum"), OVERFLOW),
    (sig("Context overflow: Summarization failed"), OVERFLOW),
    (sig("413 Request Entity Too Large"), OVERFLOW),
    (
        sig(
            '400 {"type":"error","error":{"type":"invalid_request_error","message":"Request size '
            'exceeds model context window"}}'
        ),
        OVERFLOW,
    ),
    (sig("Request size exceeds model context window", errorType="invalid_request_error"), OVERFLOW),
    (
        sig(
            "error, status code: 400, message: Invalid request: Your request exceeded model token "
            "limit: 262144 (requested: 291351)"
        ),
        OVERFLOW,
    ),
    (
        sig("input length and max_tokens exceed context limit (i.e 156321 + 48384 > 200000)"),
        OVERFLOW,
    ),
    (sig("This request exceeds the model's maximum context length"), OVERFLOW),
    (sig("LLM request rejected: max_tokens would exceed context window"), OVERFLOW),
    (sig("input length would exceed context budget for this model"), OVERFLOW),
    (sig("input length 14295 tokens exceeds the model limit"), OVERFLOW),
    (sig("Unhandled stop reason: model_context_window_exceeded"), OVERFLOW),
    (sig("错误：上下文过长，请减少输入"), OVERFLOW),
    (sig("请压缩上下文后重试"), OVERFLOW),
    (sig("HTTP 404: INVALID_ARGUMENT: input exceeds the maximum number of tokens"), OVERFLOW),
    (sig("ValidationException: The input is too long for the model"), OVERFLOW),
    (
        sig("ValidationException: Input token count exceeds the maximum number of input tokens"),
        OVERFLOW,
    ),
    (sig("ModelStreamErrorException: Input is too long for this model"), OVERFLOW),
    (sig("ollama error: context length exceeded, too many tokens"), OVERFLOW),
    (sig("total tokens exceeds the model's maximum limit of 4096"), OVERFLOW),
    (sig("500 Context size has been exceeded."), OVERFLOW),
    (
        sig(
            "400 request (66202 tokens) exceeds the available context size (65536 tokens), try increasing it"
        ),
        OVERFLOW,
    ),
    (
        sig(
            "prompt (8500 tokens) exceeds the available context size (8192 tokens), try increasing it"
        ),
        OVERFLOW,
    ),
    (
        sig("400 Prompt has 256468 tokens, but the configured context size is 256000 tokens"),
        OVERFLOW,
    ),
    (
        sig(
            "Codex ran out of room in the model's context window. Start a new thread or clear "
            "earlier history before retrying."
        ),
        OVERFLOW,
    ),
    (sig("上下文长度超出模型最大限制"), OVERFLOW),
    (sig("超出最大上下文长度"), OVERFLOW),
    (sig('Context overflow: Summarization failed: 400 {"message":"prompt is too long"}'), OVERFLOW),
    (sig("input is too long for model gpt-5.4"), OVERFLOW),
    (sig("400 Your input exceeds the context window of this model"), OVERFLOW),
    (sig("413 status code (no body)"), OVERFLOW),
]


@pytest.mark.parametrize(("signal", "expected"), CORPUS, ids=lambda v: repr(v)[:70])
def test_corpus_row(signal, expected):
    assert classify_failover_signal(signal) == expected


# --------------------------------------------------------------------------- signal-level rules


@pytest.mark.parametrize("status", [404, 500, 502])
def test_validation_code_keeps_format_behind_gateway_statuses(status):
    signal = {
        "status": status,
        "message": f"{status} Unknown parameter: 'logprobs'",
        "errorType": "invalid_request_error",
        "code": "unknown_parameter",
    }
    assert classify_failover_signal(signal) == reason("format")
    raw = f'{status} {{"error":{{"type":"invalid_request_error","message":"Unsupported parameter: logprobs"}}}}'
    assert classify_failover_reason(raw) == FailoverReason.FORMAT


@pytest.mark.parametrize(
    "parameter",
    [
        "timeout",
        "overloaded",
        "server_error",
        "rate_limit",
        "authentication",
        "context_length_exceeded",
    ],
)
def test_explicit_parameter_rejection_beats_message_patterns(parameter):
    import json

    error = {
        "type": "invalid_request_error",
        "code": "unknown_parameter",
        "message": f"Unsupported parameter: {parameter}",
    }
    signal = FailoverSignal(
        status=500,
        message=f"500 {error['message']}",
        error_type=error["type"],
        code=error["code"],
        details=(json.dumps(error),),
    )
    assert classify_failover_signal(signal) == reason("format")
    for separator in (" ", ": "):
        payload = json.dumps({"error": error}, separators=(",", ":"))
        assert classify_failover_reason(f"502{separator}{payload}") == FailoverReason.FORMAT


@pytest.mark.parametrize(
    ("status", "expected"),
    [(401, "auth"), (402, "billing"), (429, "rate_limit"), (499, "timeout"), (529, "overloaded")],
)
def test_status_policy_wins_over_validation_code(status, expected):
    signal = {
        "status": status,
        "message": f"{status} Unknown parameter: 'logprobs'",
        "errorType": "invalid_request_error",
        "code": "unknown_parameter",
    }
    assert classify_failover_signal(signal) == reason(expected)


@pytest.mark.parametrize("status", [500, 502, 503, 505, 507, 520, 521, 523])
def test_untyped_5xx_is_server_error(status):
    assert classify_failover_signal({"status": status, "message": "upstream failure"}) == reason(
        "server_error"
    )


@pytest.mark.parametrize("status", [499, 504, 522, 524])
def test_gateway_timeout_statuses_stay_timeout(status):
    assert classify_failover_signal({"status": status, "message": "upstream failure"}) == reason(
        "timeout"
    )


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (502, "server_error"),
        (503, "server_error"),
        (521, "server_error"),
        (504, "timeout"),
        (529, "overloaded"),
    ],
)
def test_cdn_html_page_is_classified_by_status_only(status, expected):
    html = (
        f"{status} <!doctype html><html><head><title>{status}</title></head>"
        "<body>Cloudflare Overloaded rate limit</body></html>"
    )
    assert classify_failover_signal({"message": html}) == reason(expected)


def test_provider_typed_body_beats_5xx_mapping():
    signal = {
        "status": 502,
        "message": '{"error":{"type":"overloaded_error","message":"Overloaded"}}',
    }
    assert classify_failover_signal(signal) == reason("overloaded")


@pytest.mark.parametrize(
    ("signal", "expected"),
    [
        (
            {"status": 504, "message": "The model is not available. Please try again later."},
            "timeout",
        ),
        (
            {"status": 520, "message": "The model is not available. Please try again later."},
            "server_error",
        ),
        ({"errorType": "server_error", "message": "The model is not available."}, "server_error"),
        (
            {
                "message": "The model is not available.",
                "details": ['{"error":{"type":"overloaded_error","message":"Overloaded"}}'],
            },
            "overloaded",
        ),
        (
            {
                "status": 500,
                "message": '{"error":{"type":"server_error","message":"An error occurred while processing your request."}}',
            },
            "server_error",
        ),
    ],
)
def test_outage_evidence_stays_transient(signal, expected):
    assert classify_failover_signal(signal) == reason(expected)


@pytest.mark.parametrize(
    ("status", "expected"), [(503, "server_error"), (521, "server_error"), (529, "overloaded")]
)
def test_body_only_status_in_details(status, expected):
    signal = {
        "message": "Provider rejected request",
        "details": [f"{status} status code (no body)"],
    }
    assert classify_failover_signal(signal) == reason(expected)


@pytest.mark.parametrize(
    ("signal", "expected"),
    [
        ({"code": "CERT_HAS_EXPIRED"}, "tls_certificate"),
        ({"code": "err_tls_cert_altname_invalid", "message": "boom"}, "tls_certificate"),
        ({"message": "unable to verify the first certificate"}, "tls_certificate"),
        ({"message": "Hostname/IP does not match certificate's altnames"}, "tls_certificate"),
        ({"message": "self signed certificate in certificate chain"}, "tls_certificate"),
        # a status means an HTTP answer came back: no TLS short-circuit
        ({"status": 502, "message": "certificate has expired"}, "server_error"),
    ],
)
def test_tls_certificate_short_circuit(signal, expected):
    assert classify_failover_signal(signal) == reason(expected)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("RESOURCE_EXHAUSTED", "rate_limit"),
        ("rate_limited", "rate_limit"),
        ("ThrottlingException", "rate_limit"),
        ("OVERLOADED_ERROR", "overloaded"),
        ("ECONNRESET", "timeout"),
        ("EHOSTDOWN", "timeout"),
        ("ERR_STREAM_PREMATURE_CLOSE", "timeout"),
        ("UND_ERR_SOCKET", "timeout"),
        ("UNKNOWN_PARAMETER", "format"),
        ("DEACTIVATED_WORKSPACE", "auth_permanent"),
    ],
)
def test_code_map(code, expected):
    assert classify_failover_signal({"code": code}) == reason(expected)


def test_deactivated_workspace_code_returns_immediately_even_with_429():
    signal = {"status": 429, "code": "deactivated_workspace", "message": "rate limit exceeded"}
    assert classify_failover_signal(signal) == reason("auth_permanent")


def test_code_in_json_body_is_read():
    message = '{"error":{"code":"overloaded","message":"try later"}}'
    assert classify_failover_signal({"message": message}) == reason("overloaded")


def test_unknown_code_without_message_is_no_opinion():
    assert classify_failover_signal({"code": "SOMETHING_ELSE"}) is None
    assert classify_failover_signal({}) is None
    assert classify_failover_signal({"status": 200}) is None


# --------------------------------------------------------------------------- merges of details


@pytest.mark.parametrize(
    ("message", "detail", "expected"),
    [
        (reason("rate_limit"), OVERFLOW, OVERFLOW),
        (OVERFLOW, reason("billing"), OVERFLOW),
        (reason("rate_limit"), reason("billing"), reason("billing")),
        (reason("format"), reason("auth"), reason("auth")),
        (reason("auth"), reason("format"), reason("auth")),
        (reason("timeout"), reason("billing"), reason("timeout")),
        (None, reason("billing"), reason("billing")),
        (reason("billing"), None, reason("billing")),
        (None, None, None),
    ],
)
def test_merge_message_and_detail(message, detail, expected):
    assert merge_message_and_detail_classification(message, detail) == expected


def test_billing_detail_beats_rate_limit_message():
    signal = {"message": "rate limit exceeded", "details": ["insufficient credits"]}
    assert classify_failover_signal(signal) == reason("billing")


def test_overflow_detail_beats_any_message():
    signal = {"message": "Provider error", "details": ["prompt is too long"]}
    assert classify_failover_signal(signal) == OVERFLOW


# --------------------------------------------------------------------------- HTTP status mapping


@pytest.mark.parametrize(
    ("status", "message", "message_class", "explicit", "provider", "expected"),
    [
        (402, None, None, 402, None, reason("billing")),
        (
            402,
            "You have hit your daily usage limit, try again later",
            None,
            402,
            None,
            reason("rate_limit"),
        ),
        (402, "insufficient credits", None, 402, None, reason("billing")),
        (402, "402 no details", reason("format"), None, None, reason("format")),
        (402, "402 no details", None, 402, None, reason("billing")),
        (429, "insufficient credits", reason("billing"), 429, None, reason("billing")),
        (429, "insufficient account balance", reason("billing"), 429, None, reason("rate_limit")),
        (429, "insufficient account balance", None, 429, "xai", reason("billing")),
        (429, "insufficient account balance", None, 429, "moonshot-cn", reason("billing")),
        (
            429,
            '{"error":{"type":"insufficient_balance","message":"insufficient account balance"}}',
            None,
            429,
            None,
            reason("billing"),
        ),
        (429, "whatever", None, 429, None, reason("rate_limit")),
        (401, "key has been revoked", None, 401, None, reason("auth_permanent")),
        (403, "plan", reason("billing"), 403, None, reason("billing")),
        (403, "nope", OVERFLOW, 403, None, reason("auth")),
        (408, "x", OVERFLOW, 408, None, reason("timeout")),
        (410, "x", reason("session_expired"), 410, None, reason("session_expired")),
        (410, "x", reason("rate_limit"), 410, None, reason("timeout")),
        (410, "x", OVERFLOW, 410, None, reason("timeout")),
        (404, "x", reason("format"), 404, None, reason("format")),
        (404, "x", reason("rate_limit"), 404, None, reason("model_not_found")),
        (404, "x", OVERFLOW, 404, None, OVERFLOW),
        (529, "x", reason("rate_limit"), 529, None, reason("overloaded")),
        (500, "x", reason("format"), 500, None, reason("format")),
        (499, "x", reason("format"), 499, None, reason("timeout")),
        (503, "x", reason("overloaded"), 503, None, reason("overloaded")),
        (503, "x", reason("auth"), 503, None, reason("server_error")),
        (500, "x", OVERFLOW, 500, None, OVERFLOW),
        (400, "x", reason("rate_limit"), 400, None, reason("rate_limit")),
        (400, "x", reason("server_error"), 400, None, reason("format")),
        (400, "400 status code (no body)", None, 400, None, None),
        (422, "no body", None, 422, None, None),
        (400, "", None, 400, None, None),
        (400, "bad request shape", None, 400, None, reason("format")),
        (418, "teapot", OVERFLOW, 418, None, OVERFLOW),
        (418, "teapot", reason("auth"), 418, None, None),
        (None, "x", reason("auth"), None, None, None),
    ],
)
def test_http_status_mapping(status, message, message_class, explicit, provider, expected):
    got = classify_failover_classification_from_http_status(
        status, message, message_class, explicit, provider
    )
    assert got == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("429 Too Many Requests", (429, "Too Many Requests")),
        ("HTTP 410 Gone", (410, "Gone")),
        ("http502: upstream", (502, "upstream")),
        ("503", (503, "")),
        ("413 status code (no body)", (413, "status code (no body)")),
        ("999 nope", None),
        ("099 nope", None),
        ("4290 nope", None),
        ("request 429", None),
        ("OpenAI API error (500): x", None),
    ],
)
def test_extract_leading_http_status(raw, expected):
    got = extract_leading_http_status(raw)
    assert (None if got is None else (got.code, got.rest)) == expected


@pytest.mark.parametrize(
    ("signal", "expected"),
    [
        ({"message": "Error: 429 slow down"}, 429),
        ({"message": "error:503"}, 503),
        ({"status": 418, "message": "500 x"}, 418),
        ({"message": "nothing"}, None),
    ],
)
def test_infer_signal_status(signal, expected):
    assert infer_signal_status(signal) == expected


@pytest.mark.parametrize(
    ("signal", "expected"),
    [
        ({"status": 400}, True),
        ({"status": 400, "message": "no body response"}, True),
        ({"message": "422 status code (no body)"}, True),
        ({"status": 400, "message": "422 no body"}, False),
        ({"status": 400, "message": "bad shape"}, False),
        ({"status": 500}, False),
    ],
)
def test_unclassified_no_body_signal(signal, expected):
    assert is_unclassified_no_body_http_signal(signal) is expected


# --------------------------------------------------------------------------- parsing helpers


def test_parse_api_error_info_reads_nested_code_and_last_proxy_attempt():
    info = parse_api_error_info('400 {"error":{"code":"quota","message":"m"},"request_id":"r1"}')
    assert info is not None
    assert (info.http_code, info.type, info.code, info.message, info.request_id) == (
        "400",
        "quota",
        "quota",
        "m",
        "r1",
    )
    wrapped = (
        '{"error":{"message":"proxy","attempts":[{"details":{"error":{"type":"a"}}},'
        '{"details":{"error":{"type":"overloaded_error","message":"inner"}}}]}}'
    )
    info = parse_api_error_info(wrapped)
    assert info is not None and (info.type, info.message) == ("overloaded_error", "inner")
    assert parse_api_error_info("Codex error: not json") is None
    assert parse_api_error_info('{"hello":"world"}') is None
    assert parse_api_error_info('API error: {"type":"error"}') is not None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("An error occurred while processing your request. Request ID: req_abc1234567", True),
        ("An error occurred while processing your request. See help.openai.com", True),
        ("An error occurred while processing your request.", False),
    ],
)
def test_generic_provider_internal_error(raw, expected):
    assert is_generic_provider_internal_error(raw) is expected


def test_extract_failover_signal_details():
    body = '{"error":{"message":"Rate limit exceeded","type":"rate_limit_error","code":429}}'
    details = extract_failover_signal_details(body)
    assert details[0] == body
    assert details[1:] == ("Rate limit exceeded", "429", "rate_limit_error")
    assert extract_failover_signal_details(None, "", "  ") == ()
    assert extract_failover_signal_details(True, 1.0) == ("true", "1")
    assert len(extract_failover_signal_details(*[str(i) for i in range(20)])) == 12


# --------------------------------------------------------------------------- convenience APIs


@pytest.mark.parametrize(
    ("raw", "provider", "expected"),
    [
        ("Not logged in · Please run /login", None, None),
        ("Not logged in · Please run /login", "openai", None),
        (
            "Failed to authenticate: OAuth session expired and could not be refreshed",
            "custom-cli",
            FailoverReason.SESSION_EXPIRED,
        ),
        ("429 rate limit exceeded", None, FailoverReason.RATE_LIMIT),
        ("prompt is too long", None, FailoverReason.CONTEXT_OVERFLOW),
        (
            "OAuth token refresh failed for openai: invalid_grant",
            None,
            FailoverReason.AUTH_PERMANENT,
        ),
        ("OAuth token refresh failed for openai: try later", None, FailoverReason.AUTH),
        ("unknown error (no error details in response)", None, FailoverReason.NO_ERROR_DETAILS),
        ("The model does not support image input", None, FailoverReason.FORMAT),
        (
            "image dimensions exceed max allowed size for many-image requests: 2000 pixels",
            None,
            None,
        ),
        ("image exceeds 5 MB maximum", None, None),
        ("thinking block has an invalid signature", None, FailoverReason.FORMAT),
        ("previous_response_id not found", None, FailoverReason.FORMAT),
    ],
)
def test_classify_failover_reason(raw, provider, expected):
    assert classify_failover_reason(raw, provider=provider) == expected


def test_rejects_bad_signal_input_with_clear_error():
    with pytest.raises(TypeError, match="FailoverSignal or a mapping"):
        classify_failover_signal("429")  # type: ignore[arg-type]


def test_same_model_retry_is_false_for_a_bare_4xx_code():
    got = classify_failover_signal({"status": 400, "code": "RATE_LIMIT_EXCEEDED", "message": "no"})
    assert got == FailoverClassification.of("rate_limit", same_model_retry=False)
    # transient prose, a throttling exception, or a non-4xx status keep the plain reason
    prose = classify_failover_signal(
        {"status": 400, "code": "RATE_LIMIT_EXCEEDED", "message": "rate limit exceeded"}
    )
    assert prose == reason("rate_limit")
    throttled = classify_failover_signal({"status": 400, "code": "ThrottlingException"})
    assert throttled == reason("rate_limit")
    assert classify_failover_signal({"status": 503, "code": "OVERLOADED"}) == reason("overloaded")


# --------------------------------------------------------------------------- provider owners


def test_provider_owner_answer_is_authoritative_but_status_still_applies():
    owner = ProviderFailoverOwner(
        id="acme",
        classify_failover_reason=lambda ctx: "billing" if ctx.code == "PAY" else None,
    )
    signal = FailoverSignal(provider="acme", code="PAY", status=403, message="forbidden")
    assert classify_failover_signal(signal) == reason("auth")
    assert classify_failover_signal(signal, provider_owner=owner) == reason("billing")
    assert owner.classify(signal) == reason("billing")
    assert owner.classify(FailoverSignal(provider="other", code="PAY")) is None
    # a 429 still maps through the status table
    signal = FailoverSignal(provider="acme", code="PAY", status=429)
    assert owner.classify(signal) == reason("billing")


def test_provider_owner_overflow_matcher():
    owner = ProviderFailoverOwner(
        id="acme", matches_context_overflow_error=lambda ctx: "blob too big" in ctx.error_message
    )
    signal = FailoverSignal(provider="acme", message="request blob too big for model limit")
    assert owner.classify(signal) == OVERFLOW
    assert classify_failover_signal(signal) is None


# --------------------------------------------------------------------------- assistant messages


def test_signal_from_assistant_message():
    message = AssistantMessage(
        provider="openai",
        model="gpt-5",
        stop_reason="error",
        error_message="400 Bad Request",
        error_status=400,
        error_code="rate_limit_exceeded",
        error_type="requests",
        error_retry_after_ms=1500,
        error_body='{"error":{"message":"Rate limit reached","type":"requests"}}',
    )
    signal = signal_from_assistant_message(message)
    assert signal.status == 400
    assert signal.code == "rate_limit_exceeded"
    assert signal.error_type == "requests"
    assert signal.retry_after_ms == 1500.0
    assert (signal.provider, signal.model) == ("openai", "gpt-5")
    assert "Rate limit reached" in signal.details
    assert classify_failover_signal(signal) == reason("rate_limit")
    wire = signal_from_assistant_message(message.to_dict())
    assert wire == signal


def test_signal_from_assistant_message_without_error_facts():
    signal = signal_from_assistant_message(AssistantMessage(provider="", model=""))
    assert signal == FailoverSignal()
