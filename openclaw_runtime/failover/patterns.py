"""Pattern tables of OpenClaw's failure classifier (spec §1.3, §1.6, §1.7): pure data.

Each group is a tuple of compiled regexes and plain substrings; a message matches a group when
any entry matches its trimmed, lower-cased text (``text.matches_error_patterns``). This module
holds only the tables (long on purpose: it is data, the list of OpenClaw's wordings); the
predicates that read them (the snake_case twins of ``message-patterns.ts`` and
``classification-rules.ts``) live in ``matchers``, the JavaScript regex compiler in ``text``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .reasons import FailoverReason
from .text import ErrorPattern, js_regex

__all__ = [
    "AMBIGUOUS_AUTH_PATTERNS",
    "AUTH_PATTERNS",
    "AUTH_PERMANENT_PATTERNS",
    "BARE_LEADING_402_RE",
    "BILLING_402_HINTS",
    "BILLING_402_PLAN_HINTS",
    "BILLING_HARD_402_RE",
    "BILLING_HEAD_RE",
    "BILLING_HEAD_WORDS",
    "BILLING_PATTERNS",
    "CERTIFICATE_INVALID_CODES",
    "CERTIFICATE_INVALID_PATTERNS",
    "CJK_AUTH_PATTERNS",
    "CLI_SESSION_EXPIRED_RE",
    "COMMON_AUTH_PATTERNS",
    "DEPRECATED_RES",
    "ERROR_PATTERNS",
    "FAILOVER_CODE_REASONS",
    "FAILOVER_ERROR_TYPE_REASONS",
    "FAILOVER_TIMEOUT_ERROR_CODES",
    "FORMAT_PATTERNS",
    "GENERIC_UNKNOWN_STREAM_RE",
    "HOSTNAME_MISMATCH_CODES",
    "HOSTNAME_MISMATCH_PATTERNS",
    "HTTP_5XX_STATUS_RE",
    "INCOMPLETE_ASSISTANT_STREAM_RE",
    "INVALID_API_KEY_RE",
    "INVALID_MODEL_RE",
    "INVALID_MODEL_REFERENCE_RE",
    "LEADING_402_WRAPPER_RE",
    "LEGACY_PROVIDER_PATTERNS",
    "MARKDOWN_SECTION_RE",
    "MODEL_NOT_FOUND_ALWAYS",
    "MODEL_NOT_FOUND_PAIRS",
    "NOT_FOUND_RE",
    "NO_ENDPOINTS_RE",
    "OVERLOADED_PATTERNS",
    "PERIODIC_402_HINTS",
    "PERIODIC_USAGE_LIMIT_RE",
    "PRE_DISPATCH_TOOL_CALL_REJECTION_MESSAGES",
    "PROVIDER_COMPLETED_ERROR_FINISH_REASON_PATTERNS",
    "RATE_LIMIT_429_RE",
    "RATE_LIMIT_PATTERNS",
    "RAW_402_MARKER_RE",
    "REPLAY_INVALID_RE",
    "RETRYABLE_402_LIMIT_HINTS",
    "RETRYABLE_402_RETRY_HINTS",
    "RETRYABLE_402_SCOPED_HINTS",
    "RETRYABLE_402_SCOPED_RESULT_HINTS",
    "SERVER_ERROR_PATTERNS",
    "STATED_TOKEN_SIZES_RE",
    "STATUS_INTERNAL_SERVER_ERROR_RE",
    "STATUS_INTERNAL_SERVER_ERROR_WITH_500_RE",
    "STEALTH_RES",
    "SUPPORT_IMAGE_INPUT_RE",
    "TERMINATED_TRANSPORT_MESSAGE_RE",
    "THINKING_RE",
    "THINKING_SIGNATURE_RE",
    "TIMEOUT_PATTERNS",
    "TRANSIENT_NETWORK_CODES",
    "UNSUPPORTED_IMAGE_RES",
    "VALID_MODEL_ID_RE",
    "ZAI_AUTH_PATTERNS",
]


# --------------------------------------------------------------------------- stream contracts

#: First-party transports end an incomplete assistant stream with one of these texts.
INCOMPLETE_ASSISTANT_STREAM_RE = js_regex(
    r"^(?:[\w -]*stream ended (?:before (?:message_?stop|(?:a )?terminal (?:finish reason"
    r"|response event|event))|without (?:a terminal )?finish[_ ]reason)"
    r"|Responses stream ended with unresolved tool calls"
    r"|Google SSE stream ended with an incomplete frame)[.!]?$",
    "i",
)
#: Undici's bare transport message; anchored so mere mentions do not match.
TERMINATED_TRANSPORT_MESSAGE_RE = js_regex(r"^terminated$", "i")

#: Exact transport diagnostics for tool calls rejected before dispatch.
PRE_DISPATCH_TOOL_CALL_REJECTION_MESSAGES: frozenset[str] = frozenset(
    {
        "Provider completed tool call with malformed JSON arguments",
        "Provider completed stream with an incomplete tool call",
        "Provider returned an incomplete or malformed tool call",
        "Mistral completed tool call has invalid JSON arguments",
        "Responses stream completed tool call with invalid JSON arguments",
    }
)

PERIODIC_USAGE_LIMIT_RE = js_regex(
    r"\b(?:daily|weekly|monthly)(?:\/(?:daily|weekly|monthly))* (?:usage )?limit(?:s)?"
    r"(?: (?:exhausted|reached|exceeded))?\b",
    "i",
)

# A TPM clause that states both figures, in tokens, in one sentence (Groq's 413).
STATED_TOKEN_SIZES_RE = js_regex(
    r"(?:\btpm\b|tokens per minute)[^.\n]*?\blimit\s+([\d,]+)[^.\n]*?\brequested\s+([\d,]+)", "i"
)

# --------------------------------------------------------------------------- the pattern groups

RATE_LIMIT_429_RE = js_regex(
    r"^\s*429\b|\b(?:https?|status(?:[ _-]?code)?|response(?:[ _-]?code)?"
    r"|http(?:[ _-]?status)?)\b[\s:=#\"'(]{0,6}429\b|[\"'](?:status|code)[\"']\s*:\s*429\b"
    r"|\b429\b[\s:)\].,-]*(?:rate[_ -]?limit(?:ed|ing)?|too many requests"
    r"|resource has been exhausted|quota(?:\s+(?:exceeded|exhausted|depleted|reached))?)\b",
    "i",
)

RATE_LIMIT_PATTERNS: tuple[ErrorPattern, ...] = (
    js_regex(r"rate[_ ]limit|too many requests", "i"),
    RATE_LIMIT_429_RE,
    js_regex(r"too many (?:concurrent )?requests", "i"),
    js_regex(r"\bthrottl(?:ing[_]?exception|ing|ed)\b", "i"),
    js_regex(r"\bconcurrency limit\b.*\b(?:breached|reached)\b", "i"),
    "model_cooldown",
    "exceeded your current quota",
    js_regex(r"\bresource[_ -]?exhausted\b", "i"),
    js_regex(r"\bquota[_ -]?exceeded\b", "i"),
    "usage limit",
    js_regex(r"\btpm\b", "i"),
    "tokens per minute",
    "tokens per day",
    "请求过于频繁",
    "调用频率",
    "频率限制",
    "配额不足",
    "配额已用尽",
    "额度不足",
    "额度已用尽",
)

OVERLOADED_PATTERNS: tuple[ErrorPattern, ...] = (
    js_regex(r"overloaded_error|\"type\"\s*:\s*\"overloaded_error\"", "i"),
    "overloaded",
    js_regex(r"\b(?:selected\s+)?model\s+(?:is\s+)?at capacity\b", "i"),
    js_regex(r"\bservice(?:[_ ]temporarily)?[_ ]unavailable\b", "i"),
    "high demand",
    "high load",
    "服务过载",
    "当前负载过高",
    "访问量过大",
)

SERVER_ERROR_PATTERNS: tuple[ErrorPattern, ...] = (
    "an error occurred while processing",
    "internal server error",
    "internal_error",
    "server_error",
    "bad gateway",
    "gateway timeout",
    "upstream error",
    "upstream connect error",
    "connection reset",
    "内部错误",
    "服务器错误",
    "服务器内部错误",
    "系统错误",
    "系统繁忙",
    "系统异常",
)

TIMEOUT_PATTERNS: tuple[ErrorPattern, ...] = (
    "timeout",
    "timed out",
    "deadline exceeded",
    "context deadline exceeded",
    js_regex(r"^(?=[\s\S]*\bgot status:\s*internal\b)(?=[\s\S]*\bcode[\"']?\s*[:=]\s*500\b)", "i"),
    js_regex(
        r"^(?=[\s\S]*[\"']status[\"']\s*:\s*[\"']internal[\"'])"
        r"(?=[\s\S]*[\"']code[\"']\s*:\s*500\b)",
        "i",
    ),
    "connection error",
    "network error",
    "network request failed",
    "fetch failed",
    "socket hang up",
    js_regex(r"^stream disconnected before completion(?::[\s\S]*)?$", "i"),
    js_regex(r"^premature close of server response while trying to fetch\b", "i"),
    INCOMPLETE_ASSISTANT_STREAM_RE,
    "网络错误",
    "网络异常",
    "服务暂时不可用",
    "服务繁忙",
    "请求超时",
    "连接超时",
    "连接错误",
    js_regex(r"\beconn(?:refused|reset|aborted)\b", "i"),
    js_regex(r"\benetunreach\b", "i"),
    js_regex(r"\behostunreach\b", "i"),
    js_regex(r"\behostdown\b", "i"),
    js_regex(r"\benetreset\b", "i"),
    js_regex(r"\betimedout\b", "i"),
    js_regex(r"\besockettimedout\b", "i"),
    js_regex(r"\bepipe\b", "i"),
    js_regex(r"\benotfound\b", "i"),
    js_regex(r"\beai_again\b", "i"),
    js_regex(r"without sending (?:any )?chunks?", "i"),
    js_regex(r"\bstop reason:\s*(?:abort|malformed_response|network_error)\b", "i"),
    js_regex(r"\breason:\s*(?:abort|malformed_response|network_error)\b", "i"),
    js_regex(r"\bunhandled stop reason:\s*(?:abort|malformed_response|network_error)\b", "i"),
    js_regex(r"\bfinish_reason:\s*(?:abort|malformed_response|network_error)\b", "i"),
    js_regex(r"\boperation was aborted\b", "i"),
    js_regex(r"\bstream (?:was )?(?:closed|aborted)\b", "i"),
    TERMINATED_TRANSPORT_MESSAGE_RE,
    js_regex(r"^stream_read_error$", "i"),
    js_regex(
        r"\bund_err_(?:socket|connect|headers?|body|req_content_length_mismatch|aborted|closed)\b",
        "i",
    ),
    js_regex(r"^request failed$", "i"),
    js_regex(r"\brequest failed after repeated internal retries\b", "i"),
    js_regex(r"^llm request failed\.$", "i"),
)

BILLING_HARD_402_RE = js_regex(
    r"[\"']?(?:status|code)[\"']?\s*[:=]\s*402\b|\bhttp\s*402\b"
    r"|\berror(?:\s+code)?\s*[:=]?\s*402\b|^\s*402\s+payment",
    "i",
)

BILLING_PATTERNS: tuple[ErrorPattern, ...] = (
    BILLING_HARD_402_RE,
    js_regex(r"\b(?:got|returned|received)\s+(?:a\s+)?402\b(?!\s+records\b)", "i"),
    "payment required",
    "insufficient credits",
    js_regex(r"used\s+all\s+available\s+credits", "i"),
    js_regex(r"(?:monthly\s+)?spend(?:ing)?\s+limit", "i"),
    js_regex(r"insufficient[_ ]quota", "i"),
    js_regex(r"\b(?:go|free)usagelimiterror\b", "i"),
    "available balance",
    "out of budget",
    "credit balance",
    "plans & billing",
    js_regex(r"insufficient[_ ]balance", "i"),
    js_regex(r"\binsufficient\s+\w+\s+balance\b", "i"),
    "insufficient usd or diem balance",
    js_regex(r"requires?\s+more\s+credits", "i"),
    js_regex(r"out of extra usage", "i"),
    js_regex(r"draw from your extra usage", "i"),
    js_regex(r"extra usage is required(?: for long context requests)?", "i"),
    "余额不足",
    "账户余额不足",
    "欠费",
    "账户已欠费",
    js_regex(r"\"code\"\s*:\s*\"InvalidSubscription\"", "i"),
    js_regex(r"\bdoes not have a valid coding\s*plan subscription\b", "i"),
    js_regex(r"\"code\"\s*:\s*1311\b"),
    js_regex(
        r"\bcurrent\s+subscription\s+plan\b.*\b(?:does\s+not|doesn't|not)\b.*\binclude\s+access\b",
        "i",
    ),
    js_regex(r"\bmodel\b.*\bnot\s+available\b.*\bcurrent\s+plan\b", "i"),
)

AUTH_PERMANENT_PATTERNS: tuple[ErrorPattern, ...] = (
    js_regex(r"api[_ ]?key[_ ]?(?:revoked|deactivated|deleted)", "i"),
    js_regex(r"deactivated[_ ]workspace", "i"),
    "key has been disabled",
    "key has been revoked",
    "account has been deactivated",
    "not allowed for this organization",
)

# "invalid API key" and "API key is/not valid", in one matcher.
INVALID_API_KEY_RE = js_regex(
    r"(?:invalid[_ ]?api[_ ]?key(?![a-z0-9])|api[_ ]?key(?:[_ ]?(?:is[_ ]?)?"
    r"(?:invalid(?![a-z0-9])|not[_ ]?valid(?![a-z0-9]))))",
    "i",
)

AMBIGUOUS_AUTH_PATTERNS: tuple[ErrorPattern, ...] = (
    INVALID_API_KEY_RE,
    js_regex(r"could not (?:authenticate|validate).*(?:api[_ ]?key|credentials)", "i"),
    "permission_error",
)

COMMON_AUTH_PATTERNS: tuple[ErrorPattern, ...] = (
    "incorrect api key",
    "invalid token",
    "authentication",
    "re-authenticate",
    "oauth token refresh failed",
    "unauthorized",
    "forbidden",
    "access denied",
    "insufficient permissions",
    "insufficient permission",
    js_regex(r"missing scopes?:", "i"),
    "expired",
    "token has expired",
    js_regex(r"\b401\b"),
    js_regex(r"\b403\b"),
    "no credentials found",
    "no api key found",
    js_regex(r"\bfailed to (?:extract|parse|validate|decode)\b.*\btoken\b"),
)

ZAI_AUTH_PATTERNS: tuple[ErrorPattern, ...] = (js_regex(r"\"code\"\s*:\s*1113\b"),)

CJK_AUTH_PATTERNS: tuple[ErrorPattern, ...] = (
    "无权访问",
    "认证失败",
    "鉴权失败",
    "密钥无效",
    "apikey 无效",
    js_regex(
        r"(?:当前\s*ak|ce-011).*?(?:违规请求|禁止访问)|(?:违规请求|禁止访问).*?(?:当前\s*ak|ce-011)",
        "i",
    ),
    js_regex(r"\bce-011\b", "i"),
)

AUTH_PATTERNS: tuple[ErrorPattern, ...] = (
    *AMBIGUOUS_AUTH_PATTERNS,
    *COMMON_AUTH_PATTERNS,
    *ZAI_AUTH_PATTERNS,
    *CJK_AUTH_PATTERNS,
)

FORMAT_PATTERNS: tuple[ErrorPattern, ...] = (
    "string should match pattern",
    "tool_use.id",
    "tool_use_id",
    "messages.1.content.1.tool_use.id",
    "invalid request format",
    js_regex(r"tool call id was.*must be", "i"),
    "does not support assistant message prefill",
    "conversation must end with a user message",
    js_regex(r"agent harness .* does not support .*provider is not one of", "i"),
)

#: Provider-completed ``error`` stop/finish reasons: server_error, never timeout (#109218).
PROVIDER_COMPLETED_ERROR_FINISH_REASON_PATTERNS: tuple[ErrorPattern, ...] = (
    js_regex(r"\bfinish_reason:\s*error\b", "i"),
    js_regex(r"\bstop reason:\s*error\b", "i"),
    js_regex(r"\bunhandled stop reason:\s*error\b", "i"),
    js_regex(r"\breason:\s*error\b", "i"),
)

#: The groups under OpenClaw's ``ERROR_PATTERNS`` keys.
ERROR_PATTERNS: Mapping[str, tuple[ErrorPattern, ...]] = {
    "rateLimit": RATE_LIMIT_PATTERNS,
    "overloaded": OVERLOADED_PATTERNS,
    "serverError": SERVER_ERROR_PATTERNS,
    "timeout": TIMEOUT_PATTERNS,
    "billing": BILLING_PATTERNS,
    "authPermanent": AUTH_PERMANENT_PATTERNS,
    "auth": AUTH_PATTERNS,
    "format": FORMAT_PATTERNS,
}

BILLING_HEAD_RE = js_regex(
    r"^(?:error[:\s-]+)?billing(?:\s+error)?(?:[:\s-]+|$)"
    r"|^(?:error[:\s-]+)?(?:credit balance|insufficient credits?|payment required|http\s*402\b)",
    "i",
)
BILLING_HEAD_WORDS = ("upgrade", "credits", "payment", "purchase", "subscription", "plan")
MARKDOWN_SECTION_RE = js_regex(r"(?:^|\n)##\s+\S")

STATUS_INTERNAL_SERVER_ERROR_RE = js_regex(r"\bstatus:\s*internal server error\b", "i")
STATUS_INTERNAL_SERVER_ERROR_WITH_500_RE = js_regex(
    r"^(?=[\s\S]*\bstatus:\s*internal server error\b)(?=[\s\S]*\bcode[\"']?\s*[:=]\s*500\b)", "i"
)
HTTP_5XX_STATUS_RE = js_regex(r"\bHTTP\s+5\d\d\b", "i")


# --------------------------------------------------------------------------- 402 rules (§1.6)

BILLING_402_HINTS: tuple[str, ...] = (
    "insufficient credits",
    "insufficient quota",
    "credit balance",
    "insufficient balance",
    "plans & billing",
    "add more credits",
    "top up",
)
BILLING_402_PLAN_HINTS: tuple[str, ...] = (
    "upgrade your plan",
    "upgrade plan",
    "current plan",
    "subscription",
)
PERIODIC_402_HINTS = ("daily", "weekly", "monthly")
RETRYABLE_402_RETRY_HINTS = ("try again", "retry", "temporary", "cooldown")
RETRYABLE_402_LIMIT_HINTS = ("usage limit", "rate limit", "organization usage")
RETRYABLE_402_SCOPED_HINTS = ("organization", "workspace")
RETRYABLE_402_SCOPED_RESULT_HINTS = ("billing period", "exceeded", "reached", "exhausted")

RAW_402_MARKER_RE = js_regex(
    r"[\"']?(?:status|code)[\"']?\s*[:=]\s*402\b|\bhttp\s*402\b"
    r"|\berror(?:\s+code)?\s*[:=]?\s*402\b|\b(?:got|returned|received)\s+(?:a\s+)?402\b"
    r"|^\s*402\s+(?:payment required\b|.*used up your points\b"
    r"|no available asset for api access\b)",
    "i",
)
BARE_LEADING_402_RE = js_regex(r"^\s*402\b", "i")
LEADING_402_WRAPPER_RE = js_regex(
    r"^(?:error[:\s-]+)?(?:(?:http\s*)?402(?:\s+payment required)?|payment required)(?:[:\s-]+|$)",
    "i",
)


# --------------------------------------------------------------------------- message predicates

REPLAY_INVALID_RE = js_regex(
    r"\bprevious_response_id\b.*\b(?:invalid|unknown|not found|does not exist|expired|mismatch)\b"
    r"|\btool_(?:use|call)\.(?:input|arguments)\b.*\b(?:missing|required)\b"
    r"|\bincorrect role information\b|\broles must alternate\b"
    r"|\binput item id does not belong to this connection\b",
    "i",
)
THINKING_RE = js_regex(r"\bthinking\b", "i")
THINKING_SIGNATURE_RE = js_regex(
    r"\b(?:invalid|expired)\b.*\bsignature\b|\bsignature\b.*\b(?:invalid|expired)\b", "i"
)


UNSUPPORTED_IMAGE_RES = (
    js_regex(r"\bdoes not support image inputs?\b"),
    js_regex(r"\bunsupported image input\b"),
)
NO_ENDPOINTS_RE = js_regex(r"\bno endpoints found\b")
SUPPORT_IMAGE_INPUT_RE = js_regex(r"\bsupport image input\b")


GENERIC_UNKNOWN_STREAM_RE = js_regex(r"^\s*an unknown error occurred\.?\s*$", "i")


CLI_SESSION_EXPIRED_RE = js_regex(
    r"\b(?:session (?:not found|does not exist|expired|invalid)"
    r"|conversation (?:not found|does not exist|expired|invalid)|no conversation found"
    r"|no such session|invalid session|(?:session|conversation) id not found)\b"
)


MODEL_NOT_FOUND_ALWAYS = (
    js_regex(r"no endpoints found for", "i"),
    js_regex(r"\brouter not found\b", "i"),
    js_regex(r"unknown model", "i"),
    js_regex(r"\bmodel\b[^\r\n]{0,120}?\b(?:was|is|has been) retired\b", "i"),
    js_regex(
        r"\b[a-z0-9][a-z0-9._:/-]{0,255} was retired at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} "
        r"[+-]\d{4} [a-z]+ \(ref:",
        "i",
    ),
    js_regex(r"model(?:[_\-\s])?not(?:[_\-\s])?found|\bmodel\b.{0,60}?\bnot found\b", "i"),
)
NOT_FOUND_RE = js_regex(r"not(?:[_\-\s])?found", "i")
MODEL_NOT_FOUND_PAIRS = (
    (js_regex(r"\b404\b"), NOT_FOUND_RE),
    (js_regex(r"not_found_error", "i"), None),
    (js_regex(r"\bnot supported model\b", "i"), None),
    (
        js_regex(
            r"\bmodel\b[^.]{0,120}?\bis not supported when using\b[^.]{0,80}?"
            r"\bwith a ChatGPT account\b",
            "i",
        ),
        None,
    ),
    (js_regex(r"model:\s*[a-z0-9._/-]+", "i"), NOT_FOUND_RE),
    (js_regex(r"models\/[^\s]+ is not found", "i"), None),
    (js_regex(r"model", "i"), js_regex(r"does not exist", "i")),
    (js_regex(r"selected model", "i"), NOT_FOUND_RE),
)
DEPRECATED_RES = (
    js_regex(r"model", "i"),
    js_regex(r"deprecated", "i"),
    js_regex(r"(upgrade|transition) to", "i"),
)
STEALTH_RES = (js_regex(r"stealth model", "i"), js_regex(r"find it here", "i"))
VALID_MODEL_ID_RE = js_regex(r"is not a valid model id", "i")
INVALID_MODEL_RE = js_regex(r"invalid model", "i")
INVALID_MODEL_REFERENCE_RE = js_regex(r"invalid model reference", "i")


#: Provider phrases that take precedence over the generic tables (``provider-patterns.ts``).
LEGACY_PROVIDER_PATTERNS: tuple[tuple[re.Pattern[str], FailoverReason], ...] = (
    (js_regex(r"\bworkers_ai\b.*\bquota limit exceeded\b", "i"), FailoverReason.RATE_LIMIT),
    (js_regex(r"\bmodelnotreadyexception\b", "i"), FailoverReason.OVERLOADED),
    (
        js_regex(r"model(?:_is)?_deactivated|model has been deactivated", "i"),
        FailoverReason.MODEL_NOT_FOUND,
    ),
)


# --------------------------------------------------------------------------- TLS certificates

HOSTNAME_MISMATCH_CODES: frozenset[str] = frozenset(
    {"ERR_TLS_CERT_ALTNAME_INVALID", "HOSTNAME_MISMATCH"}
)
CERTIFICATE_INVALID_CODES: frozenset[str] = frozenset(
    {
        "CERT_CHAIN_TOO_LONG",
        "CERT_HAS_EXPIRED",
        "CERT_NOT_YET_VALID",
        "CERT_REJECTED",
        "CERT_REVOKED",
        "CERT_SIGNATURE_FAILURE",
        "CERT_UNTRUSTED",
        "CRL_HAS_EXPIRED",
        "CRL_NOT_YET_VALID",
        "CRL_SIGNATURE_FAILURE",
        "DEPTH_ZERO_SELF_SIGNED_CERT",
        "ERROR_IN_CERT_NOT_AFTER_FIELD",
        "ERROR_IN_CERT_NOT_BEFORE_FIELD",
        "ERROR_IN_CRL_LAST_UPDATE_FIELD",
        "ERROR_IN_CRL_NEXT_UPDATE_FIELD",
        "INVALID_CA",
        "INVALID_PURPOSE",
        "PATH_LENGTH_EXCEEDED",
        "SELF_SIGNED_CERT_IN_CHAIN",
        "UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY",
        "UNABLE_TO_DECRYPT_CERT_SIGNATURE",
        "UNABLE_TO_DECRYPT_CRL_SIGNATURE",
        "UNABLE_TO_GET_CRL",
        "UNABLE_TO_GET_ISSUER_CERT",
        "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
        "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    }
)
HOSTNAME_MISMATCH_PATTERNS = (
    js_regex(r"hostname\/ip does not match certificate(?:'s)? altnames", "i"),
    js_regex(r"hostname mismatch", "i"),
    js_regex(r"host: .+ is not in the cert(?:ificate)?(?:'s)? altnames", "i"),
)
CERTIFICATE_INVALID_PATTERNS = (
    js_regex(r"certificate has expired", "i"),
    js_regex(r"certificate is not yet valid", "i"),
    js_regex(r"self[- ]signed certificate", "i"),
    js_regex(r"unable to get local issuer certificate", "i"),
    js_regex(r"unable to verify the first certificate", "i"),
)


# --------------------------------------------------------------------------- structured codes

FAILOVER_TIMEOUT_ERROR_CODES: frozenset[str] = frozenset(
    {"EHOSTDOWN", "ENETRESET", "ERR_STREAM_PREMATURE_CLOSE"}
)
#: Node/undici transport codes that prove a transient network failure.
TRANSIENT_NETWORK_CODES: frozenset[str] = frozenset(
    {
        "ECONNRESET",
        "ECONNREFUSED",
        "ENOTFOUND",
        "ETIMEDOUT",
        "ESOCKETTIMEDOUT",
        "ECONNABORTED",
        "EPIPE",
        "ENETDOWN",
        "EHOSTUNREACH",
        "ENETUNREACH",
        "EADDRNOTAVAIL",
        "EAI_AGAIN",
        "UND_ERR_CONNECT_TIMEOUT",
        "UND_ERR_DNS_RESOLVE_FAILED",
        "UND_ERR_CONNECT",
        "UND_ERR_SOCKET",
        "UND_ERR_HEADERS_TIMEOUT",
        "UND_ERR_BODY_TIMEOUT",
        "ERR_HTTP2_INVALID_SESSION",
        "EPROTO",
        "ERR_SSL_WRONG_VERSION_NUMBER",
        "ERR_SSL_PROTOCOL_RETURNED_AN_ERROR",
    }
)
#: Cross-provider structured codes (upper-cased); provider-native codes live in plugins.
FAILOVER_CODE_REASONS: Mapping[str, FailoverReason] = {
    "UNKNOWN_PARAMETER": FailoverReason.FORMAT,
    "RESOURCE_EXHAUSTED": FailoverReason.RATE_LIMIT,
    "RATE_LIMIT": FailoverReason.RATE_LIMIT,
    "RATE_LIMITED": FailoverReason.RATE_LIMIT,
    "RATE_LIMIT_EXCEEDED": FailoverReason.RATE_LIMIT,
    "TOO_MANY_REQUESTS": FailoverReason.RATE_LIMIT,
    "THROTTLED": FailoverReason.RATE_LIMIT,
    "THROTTLING": FailoverReason.RATE_LIMIT,
    "THROTTLINGEXCEPTION": FailoverReason.RATE_LIMIT,
    "THROTTLING_EXCEPTION": FailoverReason.RATE_LIMIT,
    "DEACTIVATED_WORKSPACE": FailoverReason.AUTH_PERMANENT,
    "OVERLOADED": FailoverReason.OVERLOADED,
    "OVERLOADED_ERROR": FailoverReason.OVERLOADED,
}
#: Provider error types (lower-cased) that classify in core.
FAILOVER_ERROR_TYPE_REASONS: Mapping[str, FailoverReason] = {
    "invalid_request_error": FailoverReason.FORMAT,
    "server_error": FailoverReason.SERVER_ERROR,
    "upstream_error": FailoverReason.SERVER_ERROR,
    "overloaded_error": FailoverReason.OVERLOADED,
}
