"""Pattern tables of OpenClaw's failure classifier (spec §1.3, §1.6, §1.7), as data.

Each group is a tuple of compiled regexes and plain substrings; a message matches a group when
any entry matches its trimmed, lower-cased text (``matches_error_patterns``). The predicates
below are the snake_case twins of ``message-patterns.ts`` and ``classification-rules.ts``.

OpenClaw's regexes are JavaScript regexes. ``js_regex`` compiles them with JavaScript's
meaning of ``\\b``/``\\w``/``\\d`` (ASCII), ``\\s`` (Unicode spaces), ``.`` (no line
terminators) and ``$`` (end of input only), so odd corners match the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal, TypeAlias

from .reasons import FailoverReason

__all__ = [
    "AMBIGUOUS_AUTH_PATTERNS",
    "AUTH_PATTERNS",
    "AUTH_PERMANENT_PATTERNS",
    "BILLING_402_HINTS",
    "BILLING_402_PLAN_HINTS",
    "BILLING_PATTERNS",
    "CERTIFICATE_INVALID_CODES",
    "CJK_AUTH_PATTERNS",
    "COMMON_AUTH_PATTERNS",
    "ERROR_PATTERNS",
    "FAILOVER_CODE_REASONS",
    "FAILOVER_ERROR_TYPE_REASONS",
    "FAILOVER_TIMEOUT_ERROR_CODES",
    "FORMAT_PATTERNS",
    "HOSTNAME_MISMATCH_CODES",
    "INCOMPLETE_ASSISTANT_STREAM_RE",
    "LEGACY_PROVIDER_PATTERNS",
    "OVERLOADED_PATTERNS",
    "PERIODIC_USAGE_LIMIT_RE",
    "PRE_DISPATCH_TOOL_CALL_REJECTION_MESSAGES",
    "PROVIDER_COMPLETED_ERROR_FINISH_REASON_PATTERNS",
    "RATE_LIMIT_429_RE",
    "RATE_LIMIT_PATTERNS",
    "SERVER_ERROR_PATTERNS",
    "TERMINATED_TRANSPORT_MESSAGE_RE",
    "TIMEOUT_PATTERNS",
    "TRANSIENT_NETWORK_CODES",
    "ZAI_AUTH_PATTERNS",
    "ErrorPattern",
    "TlsCertificateErrorKind",
    "classify_402_message",
    "classify_core_failover_reason_from_error_type",
    "classify_failover_reason_from_402_text",
    "classify_failover_reason_from_code",
    "classify_legacy_provider_specific_error",
    "classify_oauth_refresh_failure_reason",
    "inspect_tls_certificate_error",
    "is_auth_error_message",
    "is_auth_permanent_error_message",
    "is_billing_error_message",
    "is_cli_session_expired_error_message",
    "is_exact_unknown_no_details_error",
    "is_format_error_message",
    "is_generic_unknown_stream_error_message",
    "is_image_dimension_error_message",
    "is_image_size_error",
    "is_model_not_found_error_message",
    "is_oauth_refresh_failure_message",
    "is_overloaded_error_message",
    "is_periodic_usage_limit_error_message",
    "is_pre_dispatch_tool_call_rejection_message",
    "is_provider_completed_error_finish_reason_message",
    "is_provider_request_size_ceiling_error",
    "is_rate_limit_error_message",
    "is_replay_invalid_error_message",
    "is_server_error_message",
    "is_timeout_error_message",
    "is_unsupported_image_input_error_message",
    "js_regex",
    "matches_error_patterns",
    "normalize_lower",
    "normalize_optional_lower",
]

ErrorPattern: TypeAlias = "re.Pattern[str] | str"
TlsCertificateErrorKind: TypeAlias = Literal["certificate_invalid", "hostname_mismatch"]

# --------------------------------------------------------------------------- JS regex semantics

_JS_SPACE = (
    "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
_JS_LINE_TERMINATORS = "\\n\\r\\u2028\\u2029"


def js_regex(source: str, flags: str = "") -> re.Pattern[str]:
    """Compile a JavaScript regex source so it matches exactly what JavaScript matches.

    ``flags`` takes JavaScript flag letters; only ``i`` is meaningful here.
    """
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\" and index + 1 < len(source):
            escaped = source[index + 1]
            if escaped == "s":
                out.append(_JS_SPACE if in_class else f"[{_JS_SPACE}]")
            elif escaped == "S" and not in_class:
                out.append(f"[^{_JS_SPACE}]")
            else:
                out.append(char + escaped)
            index += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == ".":
            out.append(f"[^{_JS_LINE_TERMINATORS}]")
        elif char == "$":
            out.append(r"\Z")
        else:
            out.append(char)
        index += 1
    bits = re.ASCII | (re.IGNORECASE if "i" in flags else 0)
    return re.compile("".join(out), bits)


def normalize_lower(value: object) -> str:
    """OpenClaw's ``normalizeLowercaseStringOrEmpty``: trimmed lower-case text, or ``""``."""
    return value.strip().lower() if isinstance(value, str) else ""


def normalize_optional_lower(value: object) -> str | None:
    """OpenClaw's ``normalizeOptionalLowercaseString``: trimmed lower-case text, or None."""
    text = normalize_lower(value)
    return text or None


def matches_error_patterns(raw: str | None, patterns: Iterable[ErrorPattern]) -> bool:
    """True when any pattern matches the trimmed lower-cased ``raw`` (substrings or regexes)."""
    if not raw:
        return False
    value = normalize_lower(raw)
    for pattern in patterns:
        if isinstance(pattern, str):
            if pattern in value:
                return True
        elif pattern.search(value):
            return True
    return False


def _any_of(text: str, hints: Iterable[str]) -> bool:
    return any(hint in text for hint in hints)


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
_STATED_TOKEN_SIZES_RE = js_regex(
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

_BILLING_HARD_402_RE = js_regex(
    r"[\"']?(?:status|code)[\"']?\s*[:=]\s*402\b|\bhttp\s*402\b"
    r"|\berror(?:\s+code)?\s*[:=]?\s*402\b|^\s*402\s+payment",
    "i",
)

BILLING_PATTERNS: tuple[ErrorPattern, ...] = (
    _BILLING_HARD_402_RE,
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
_INVALID_API_KEY_RE = js_regex(
    r"(?:invalid[_ ]?api[_ ]?key(?![a-z0-9])|api[_ ]?key(?:[_ ]?(?:is[_ ]?)?"
    r"(?:invalid(?![a-z0-9])|not[_ ]?valid(?![a-z0-9]))))",
    "i",
)

AMBIGUOUS_AUTH_PATTERNS: tuple[ErrorPattern, ...] = (
    _INVALID_API_KEY_RE,
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

_BILLING_HEAD_RE = js_regex(
    r"^(?:error[:\s-]+)?billing(?:\s+error)?(?:[:\s-]+|$)"
    r"|^(?:error[:\s-]+)?(?:credit balance|insufficient credits?|payment required|http\s*402\b)",
    "i",
)
_BILLING_HEAD_WORDS = ("upgrade", "credits", "payment", "purchase", "subscription", "plan")
_MARKDOWN_SECTION_RE = js_regex(r"(?:^|\n)##\s+\S")

_STATUS_INTERNAL_SERVER_ERROR_RE = js_regex(r"\bstatus:\s*internal server error\b", "i")
_STATUS_INTERNAL_SERVER_ERROR_WITH_500_RE = js_regex(
    r"^(?=[\s\S]*\bstatus:\s*internal server error\b)(?=[\s\S]*\bcode[\"']?\s*[:=]\s*500\b)", "i"
)
_HTTP_5XX_STATUS_RE = js_regex(r"\bHTTP\s+5\d\d\b", "i")

# --------------------------------------------------------------------------- group predicates


def is_rate_limit_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isRateLimitErrorMessage``."""
    return matches_error_patterns(raw, RATE_LIMIT_PATTERNS)


def is_overloaded_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isOverloadedErrorMessage``."""
    return matches_error_patterns(raw, OVERLOADED_PATTERNS)


def is_timeout_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isTimeoutErrorMessage``."""
    return matches_error_patterns(raw, TIMEOUT_PATTERNS)


def is_format_error_message(raw: str | None) -> bool:
    """OpenClaw's ``matchesFormatErrorPattern`` (request-shape rejections)."""
    return matches_error_patterns(raw, FORMAT_PATTERNS)


def is_auth_permanent_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isAuthPermanentErrorMessage``: revoked/deactivated keys and workspaces."""
    return matches_error_patterns(raw, AUTH_PERMANENT_PATTERNS)


def is_auth_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isAuthErrorMessage``."""
    return matches_error_patterns(raw, AUTH_PATTERNS)


def is_provider_completed_error_finish_reason_message(raw: str | None) -> bool:
    """A provider completed with a bare ``error`` stop/finish reason (not a hang)."""
    return matches_error_patterns(raw, PROVIDER_COMPLETED_ERROR_FINISH_REASON_PATTERNS)


def is_periodic_usage_limit_error_message(raw: str | None) -> bool:
    """``daily/weekly/monthly (usage) limit (exhausted|reached|exceeded)`` in the raw text."""
    return bool(raw) and PERIODIC_USAGE_LIMIT_RE.search(raw or "") is not None


def is_billing_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isBillingErrorMessage``.

    Text with more than one Markdown ``##`` section is explanatory content, never billing.
    """
    value = normalize_lower(raw)
    if not value or raw is None:
        return False
    if len(_MARKDOWN_SECTION_RE.findall(raw)) > 1:
        return False
    if matches_error_patterns(value, BILLING_PATTERNS):
        return True
    if not _BILLING_HEAD_RE.search(raw):
        return False
    return _any_of(value, _BILLING_HEAD_WORDS)


def is_server_error_message(raw: str | None) -> bool:
    """OpenClaw's ``isServerErrorMessage``.

    ``status: internal server error`` counts on its own or paired with ``code 500``; as a
    prefix of other prose only the first occurrence is removed before matching.
    """
    value = normalize_lower(raw)
    if not value:
        return False
    if _STATUS_INTERNAL_SERVER_ERROR_WITH_500_RE.search(value) or _HTTP_5XX_STATUS_RE.search(value):
        return True
    scrubbed = _STATUS_INTERNAL_SERVER_ERROR_RE.sub("", value, count=1).strip()
    if scrubbed == "":
        return True
    return matches_error_patterns(scrubbed, SERVER_ERROR_PATTERNS)


def is_pre_dispatch_tool_call_rejection_message(message: str | None) -> bool:
    """One of the five exact transport texts for a tool call rejected before dispatch."""
    return message is not None and message in PRE_DISPATCH_TOOL_CALL_REJECTION_MESSAGES


def _stated_token_count(digits: str | None) -> float | None:
    if digits is None:
        return None
    cleaned = digits.replace(",", "")
    try:
        value = float(cleaned) if cleaned else 0.0
    except ValueError:
        return None
    return value if value > 0 else None


def is_provider_request_size_ceiling_error(error_message: str | None) -> bool:
    """A single TPM clause whose ``Requested`` size exceeds its whole ``Limit`` (Groq's 413).

    Such a request can never fit, so it is overflow-like rather than a rate limit.
    """
    if not error_message:
        return False
    stated = _STATED_TOKEN_SIZES_RE.search(error_message)
    if stated is None:
        return False
    limit = _stated_token_count(stated.group(1))
    requested = _stated_token_count(stated.group(2))
    return limit is not None and requested is not None and requested > limit


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
_PERIODIC_402_HINTS = ("daily", "weekly", "monthly")
_RETRYABLE_402_RETRY_HINTS = ("try again", "retry", "temporary", "cooldown")
_RETRYABLE_402_LIMIT_HINTS = ("usage limit", "rate limit", "organization usage")
_RETRYABLE_402_SCOPED_HINTS = ("organization", "workspace")
_RETRYABLE_402_SCOPED_RESULT_HINTS = ("billing period", "exceeded", "reached", "exhausted")

_RAW_402_MARKER_RE = js_regex(
    r"[\"']?(?:status|code)[\"']?\s*[:=]\s*402\b|\bhttp\s*402\b"
    r"|\berror(?:\s+code)?\s*[:=]?\s*402\b|\b(?:got|returned|received)\s+(?:a\s+)?402\b"
    r"|^\s*402\s+(?:payment required\b|.*used up your points\b"
    r"|no available asset for api access\b)",
    "i",
)
_BARE_LEADING_402_RE = js_regex(r"^\s*402\b", "i")
_LEADING_402_WRAPPER_RE = js_regex(
    r"^(?:error[:\s-]+)?(?:(?:http\s*)?402(?:\s+payment required)?|payment required)(?:[:\s-]+|$)",
    "i",
)


def _has_explicit_402_billing_signal(text: str) -> bool:
    return (
        _any_of(text, BILLING_402_HINTS)
        or (_any_of(text, BILLING_402_PLAN_HINTS) and "limit" in text)
        or "billing hard limit" in text
        or "hard limit reached" in text
        or ("maximum allowed" in text and "limit" in text)
    )


def _has_quota_refresh_window_signal(text: str) -> bool:
    return "subscription quota limit" in text and (
        "automatic quota refresh" in text or "rolling time window" in text
    )


def _has_retryable_402_transient_signal(text: str) -> bool:
    periodic = _any_of(text, _PERIODIC_402_HINTS)
    spend_limit = "spend limit" in text or "spending limit" in text
    scoped = _any_of(text, _RETRYABLE_402_SCOPED_HINTS)
    return (
        (_any_of(text, _RETRYABLE_402_RETRY_HINTS) and _any_of(text, _RETRYABLE_402_LIMIT_HINTS))
        or (periodic and ("usage limit" in text or spend_limit))
        or (periodic and "limit" in text and "reset" in text)
        or (
            scoped
            and "limit" in text
            and (spend_limit or _any_of(text, _RETRYABLE_402_SCOPED_RESULT_HINTS))
        )
    )


def _normalize_402_message(raw: str) -> str:
    lowered = normalize_optional_lower(raw)
    if lowered is None:
        return ""
    return _LEADING_402_WRAPPER_RE.sub("", lowered, count=1).strip()


def classify_402_message(message: str) -> FailoverReason:
    """A payment-required text is billing unless it reads as a temporary limit."""
    normalized = _normalize_402_message(message)
    if not normalized:
        return FailoverReason.BILLING
    if _has_quota_refresh_window_signal(normalized):
        return FailoverReason.RATE_LIMIT
    if _has_explicit_402_billing_signal(normalized):
        return FailoverReason.BILLING
    if is_rate_limit_error_message(normalized):
        return FailoverReason.RATE_LIMIT
    if _has_retryable_402_transient_signal(normalized):
        return FailoverReason.RATE_LIMIT
    return FailoverReason.BILLING


def classify_failover_reason_from_402_text(raw: str) -> FailoverReason | None:
    """OpenClaw's ``classifyFailoverReasonFrom402Text``: billing or rate_limit, or None.

    A bare leading ``402`` counts only with a known billing/limit signal after it.
    """
    if _RAW_402_MARKER_RE.search(raw):
        return classify_402_message(raw)
    if not _BARE_LEADING_402_RE.search(raw):
        return None
    normalized = _normalize_402_message(raw)
    if not normalized or not (
        _has_quota_refresh_window_signal(normalized)
        or _has_explicit_402_billing_signal(normalized)
        or is_rate_limit_error_message(normalized)
        or _has_retryable_402_transient_signal(normalized)
    ):
        return None
    return classify_402_message(raw)


# --------------------------------------------------------------------------- message predicates

_REPLAY_INVALID_RE = js_regex(
    r"\bprevious_response_id\b.*\b(?:invalid|unknown|not found|does not exist|expired|mismatch)\b"
    r"|\btool_(?:use|call)\.(?:input|arguments)\b.*\b(?:missing|required)\b"
    r"|\bincorrect role information\b|\broles must alternate\b"
    r"|\binput item id does not belong to this connection\b",
    "i",
)
_THINKING_RE = js_regex(r"\bthinking\b", "i")
_THINKING_SIGNATURE_RE = js_regex(
    r"\b(?:invalid|expired)\b.*\bsignature\b|\bsignature\b.*\b(?:invalid|expired)\b", "i"
)


def is_replay_invalid_error_message(raw: str) -> bool:
    """The provider rejected the replayed transcript (ids, roles, thinking signatures)."""
    if _REPLAY_INVALID_RE.search(raw):
        return True
    return bool(_THINKING_RE.search(raw) and _THINKING_SIGNATURE_RE.search(raw))


_UNSUPPORTED_IMAGE_RES = (
    js_regex(r"\bdoes not support image inputs?\b"),
    js_regex(r"\bunsupported image input\b"),
)
_NO_ENDPOINTS_RE = js_regex(r"\bno endpoints found\b")
_SUPPORT_IMAGE_INPUT_RE = js_regex(r"\bsupport image input\b")


def is_unsupported_image_input_error_message(raw: str | None) -> bool:
    """The model cannot take images (a format failure, not a missing model)."""
    value = normalize_optional_lower(raw)
    if value is None:
        return False
    if any(pattern.search(value) for pattern in _UNSUPPORTED_IMAGE_RES):
        return True
    return bool(_NO_ENDPOINTS_RE.search(value) and _SUPPORT_IMAGE_INPUT_RE.search(value))


def is_image_dimension_error_message(raw: str | None) -> bool:
    """Anthropic's many-image dimension limit (handled by image resizing, not failover)."""
    return bool(raw) and "image dimensions exceed max allowed size" in (raw or "").lower()


def is_image_size_error(error_message: str | None) -> bool:
    """An ``image exceeds N MB`` rejection (handled by image resizing, not failover)."""
    if not error_message:
        return False
    lower = error_message.lower()
    return "image exceeds" in lower and "mb" in lower


_GENERIC_UNKNOWN_STREAM_RE = js_regex(r"^\s*an unknown error occurred\.?\s*$", "i")


def is_generic_unknown_stream_error_message(raw: str) -> bool:
    """The runtime's bare ``An unknown error occurred`` (a transport failure; #71620)."""
    return _GENERIC_UNKNOWN_STREAM_RE.search(raw) is not None


def is_exact_unknown_no_details_error(raw: str) -> bool:
    """Exactly ``unknown error (no error details in response)``."""
    return normalize_optional_lower(raw) == "unknown error (no error details in response)"


_CLI_SESSION_EXPIRED_RE = js_regex(
    r"\b(?:session (?:not found|does not exist|expired|invalid)"
    r"|conversation (?:not found|does not exist|expired|invalid)|no conversation found"
    r"|no such session|invalid session|(?:session|conversation) id not found)\b"
)


def is_cli_session_expired_error_message(raw: str) -> bool:
    """A CLI backend lost the session/conversation it was resuming."""
    return _CLI_SESSION_EXPIRED_RE.search(normalize_lower(raw)) is not None


_MODEL_NOT_FOUND_ALWAYS = (
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
_NOT_FOUND_RE = js_regex(r"not(?:[_\-\s])?found", "i")
_MODEL_NOT_FOUND_PAIRS = (
    (js_regex(r"\b404\b"), _NOT_FOUND_RE),
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
    (js_regex(r"model:\s*[a-z0-9._/-]+", "i"), _NOT_FOUND_RE),
    (js_regex(r"models\/[^\s]+ is not found", "i"), None),
    (js_regex(r"model", "i"), js_regex(r"does not exist", "i")),
    (js_regex(r"selected model", "i"), _NOT_FOUND_RE),
)
_DEPRECATED_RES = (
    js_regex(r"model", "i"),
    js_regex(r"deprecated", "i"),
    js_regex(r"(upgrade|transition) to", "i"),
)
_STEALTH_RES = (js_regex(r"stealth model", "i"), js_regex(r"find it here", "i"))
_VALID_MODEL_ID_RE = js_regex(r"is not a valid model id", "i")
_INVALID_MODEL_RE = js_regex(r"invalid model", "i")
_INVALID_MODEL_REFERENCE_RE = js_regex(r"invalid model reference", "i")


def is_model_not_found_error_message(raw: str) -> bool:
    """A missing, retired or plan-restricted model id (``live-model-errors.ts``).

    "Not available" alone also describes outages, so it does not count.
    """
    msg = raw.strip()
    if not msg:
        return False
    if any(pattern.search(msg) for pattern in _MODEL_NOT_FOUND_ALWAYS):
        return True
    for first, second in _MODEL_NOT_FOUND_PAIRS:
        if first.search(msg) and (second is None or second.search(msg)):
            return True
    if all(pattern.search(msg) for pattern in _DEPRECATED_RES):
        return True
    if all(pattern.search(msg) for pattern in _STEALTH_RES):
        return True
    if _VALID_MODEL_ID_RE.search(msg):
        return True
    return bool(_INVALID_MODEL_RE.search(msg) and not _INVALID_MODEL_REFERENCE_RE.search(msg))


#: Provider phrases that take precedence over the generic tables (``provider-patterns.ts``).
LEGACY_PROVIDER_PATTERNS: tuple[tuple[re.Pattern[str], FailoverReason], ...] = (
    (js_regex(r"\bworkers_ai\b.*\bquota limit exceeded\b", "i"), FailoverReason.RATE_LIMIT),
    (js_regex(r"\bmodelnotreadyexception\b", "i"), FailoverReason.OVERLOADED),
    (
        js_regex(r"model(?:_is)?_deactivated|model has been deactivated", "i"),
        FailoverReason.MODEL_NOT_FOUND,
    ),
)


def classify_legacy_provider_specific_error(error_message: str) -> FailoverReason | None:
    """The first matching provider-specific phrase (Cloudflare, Bedrock, Groq), or None."""
    for pattern, reason in LEGACY_PROVIDER_PATTERNS:
        if pattern.search(error_message):
            return reason
    return None


# --------------------------------------------------------------------------- OAuth refresh


def is_oauth_refresh_failure_message(message: str) -> bool:
    """The text reports a failed OAuth token refresh (incl. a CLI subprocess 401)."""
    lower = message.lower()
    return (
        "oauth token refresh failed" in lower
        or "access token could not be refreshed" in lower
        or "authentication session could not be refreshed automatically" in lower
        or ("failed to authenticate" in lower and "401" in lower)
    )


def classify_oauth_refresh_failure_reason(message: str) -> str | None:
    """Why an OAuth refresh failed for good (``invalid_grant``, ``revoked``...), or None.

    Gated on ``is_oauth_refresh_failure_message``; a definitive reason makes the failure
    ``auth_permanent``.
    """
    if not is_oauth_refresh_failure_message(message):
        return None
    lower = message.lower()
    if "refresh_token_reused" in lower:
        return "refresh_token_reused"
    if "invalid_grant" in lower:
        return "invalid_grant"
    if "signing in again" in lower or "sign in again" in lower:
        return "sign_in_again"
    if "invalid refresh token" in lower:
        return "invalid_refresh_token"
    if "expired or revoked" in lower or "revoked" in lower:
        return "revoked"
    if "failed to authenticate" in lower and "401" in lower:
        return "revoked"
    return None


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
_HOSTNAME_MISMATCH_PATTERNS = (
    js_regex(r"hostname\/ip does not match certificate(?:'s)? altnames", "i"),
    js_regex(r"hostname mismatch", "i"),
    js_regex(r"host: .+ is not in the cert(?:ificate)?(?:'s)? altnames", "i"),
)
_CERTIFICATE_INVALID_PATTERNS = (
    js_regex(r"certificate has expired", "i"),
    js_regex(r"certificate is not yet valid", "i"),
    js_regex(r"self[- ]signed certificate", "i"),
    js_regex(r"unable to get local issuer certificate", "i"),
    js_regex(r"unable to verify the first certificate", "i"),
)


def inspect_tls_certificate_error(
    code: str | None, message: str | None
) -> TlsCertificateErrorKind | None:
    """A deterministic certificate-validation failure, from its code or its message."""
    normalized = code.strip().upper() if isinstance(code, str) else None
    if normalized in HOSTNAME_MISMATCH_CODES:
        return "hostname_mismatch"
    if normalized in CERTIFICATE_INVALID_CODES:
        return "certificate_invalid"
    if not message or not message.strip():
        return None
    if any(pattern.search(message) for pattern in _HOSTNAME_MISMATCH_PATTERNS):
        return "hostname_mismatch"
    if any(pattern.search(message) for pattern in _CERTIFICATE_INVALID_PATTERNS):
        return "certificate_invalid"
    return None


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


def classify_failover_reason_from_code(raw: str | None) -> FailoverReason | None:
    """OpenClaw's ``classifyFailoverReasonFromCode`` (transient network codes are timeout)."""
    normalized = raw.strip().upper() if isinstance(raw, str) else ""
    if not normalized:
        return None
    reason = FAILOVER_CODE_REASONS.get(normalized)
    if reason is not None:
        return reason
    if normalized in FAILOVER_TIMEOUT_ERROR_CODES or normalized in TRANSIENT_NETWORK_CODES:
        return FailoverReason.TIMEOUT
    return None


def classify_core_failover_reason_from_error_type(raw: str | None) -> FailoverReason | None:
    """OpenClaw's ``classifyCoreFailoverReasonFromErrorType``."""
    normalized = normalize_optional_lower(raw)
    return FAILOVER_ERROR_TYPE_REASONS.get(normalized) if normalized else None
