"""What kind of provider failure happened, finer than a failover reason, for user-facing copy.

A failover reason answers "what should the run do next" (rotate, fall back, surface). The
runtime failure kind answers "what should the person be told": an OAuth refresh that timed
out, a proxy that blocked the tunnel, a CDN HTML page, a schema rejection. This is the twin
of OpenClaw's ``classifyProviderRuntimeFailureKind``; it asks the failover classifier first
where the two overlap (rate limit, model not found, TLS, timeout) so the two never disagree.

OpenClaw's ``gateway_storage`` kind (SQLite diagnostics of its gateway) has no counterpart
here: this runtime has no gateway database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from .classify import (
    classify_failover_reason,
    classify_failover_signal,
    extract_leading_http_status,
    infer_signal_status,
    is_html_error_response,
)
from .matchers import (
    is_exact_unknown_no_details_error,
    is_format_error_message,
    is_oauth_refresh_failure_message,
    is_replay_invalid_error_message,
    is_timeout_error_message,
)
from .overflow import is_context_overflow_error_from_tables
from .reasons import FailoverSignal
from .text import js_regex

__all__ = [
    "PROVIDER_RUNTIME_FAILURE_KINDS",
    "ProviderRuntimeFailureKind",
    "classify_provider_runtime_failure_kind",
]

ProviderRuntimeFailureKind = Literal[
    "auth_scope",
    "auth_refresh",
    "refresh_timeout",
    "refresh_contention",
    "callback_timeout",
    "callback_validation",
    "auth_html",
    "auth_invalid_token",
    "upstream_html",
    "proxy",
    "rate_limit",
    "dns",
    "timeout",
    "tls_certificate",
    "model_not_found",
    "schema",
    "sandbox_blocked",
    "replay_invalid",
    "empty_response",
    "no_error_details",
    "unclassified",
    "unknown",
]

PROVIDER_RUNTIME_FAILURE_KINDS: tuple[str, ...] = ProviderRuntimeFailureKind.__args__  # type: ignore[attr-defined]

_AUTH_SCOPE_HINT_RE = js_regex(
    r"\b(?:missing|required|requires|insufficient)\s+(?:the\s+following\s+)?scopes?\b"
    r"|\bmissing\s+scope\b",
    "i",
)
_AUTH_SCOPE_NAME_RE = js_regex(r"\b(?:api\.responses\.write|model\.request)\b", "i")
_AUTH_INVALID_TOKEN_HINT_RE = js_regex(
    r"\bunauthorized\b"
    r"|\b(?:invalid|incorrect|expired|stale)[_\s-]?api[_\s-]?key\b"
    r"|\b(?:invalid|incorrect|expired|stale)\s+(?:token|jwt|credential|api[_\s-]?key)\b"
    r"|\b(?:token|jwt|credential|api[_\s-]?key)\s+(?:is\s+)?(?:invalid|incorrect|expired|stale)\b",
    "i",
)
_CLOUDFLARE_CHALLENGE_RE = js_regex(
    r"Enable\s+JavaScript\s+and\s+cookies\s+to\s+continue|cf-browser-verification"
    r"|__cf_challenge|cdn-cgi\/challenge-platform|challenge-error-text",
    "i",
)
_PROXY_ERROR_RE = js_regex(
    r"\bproxyconnect\b|\bhttps?_proxy\b|\b407\b|\bproxy authentication required\b"
    r"|\btunnel connection failed\b|\bconnect tunnel\b|\bsocks proxy\b|\bproxy error\b",
    "i",
)
_DNS_ERROR_RE = js_regex(
    r"\benotfound\b|\beai_again\b|\bgetaddrinfo\b|\bno such host\b|\bdns\b", "i"
)
_INTERRUPTED_NETWORK_ERROR_RE = js_regex(
    r"\beconnrefused\b|\beconnreset\b|\beconnaborted\b|\benetreset\b|\behostunreach\b"
    r"|\behostdown\b|\benetunreach\b|\bepipe\b|\bsocket hang up\b|\bconnection refused\b"
    r"|\bconnection reset\b|\bconnection aborted\b|\bnetwork is unreachable\b"
    r"|\bhost is unreachable\b|\bfetch failed\b|\bconnection error\b|\bnetwork request failed\b",
    "i",
)
_SANDBOX_BLOCKED_RE = js_regex(
    r"\bapproval is required\b|\bapproval timed out\b|\bapproval was denied\b"
    r"|\bblocked by sandbox\b|\bsandbox\b.*\b(?:blocked|denied|forbidden|disabled|not allowed)\b"
    r"|\bexec denied\s*\(",
    "i",
)
_OPENAI_CODEX_RE = js_regex(r"\bopenai\s+codex\b", "i")
_CODEX_SCOPES_RE = js_regex(r"\bcodex\b.*\bscopes?\b", "i")
_REFRESH_TIMEOUT_RE = js_regex(r"\boauth refresh call\b.*\bexceeded hard timeout\b", "i")
_REFRESH_CONTENTION_RE = js_regex(r"\brefresh_contention\b", "i")
_FILE_LOCK_TIMEOUT_RE = js_regex(r"\bfile lock timeout\b", "i")
_REFRESH_LOCK_PATH_RE = js_regex(
    r"(?:\/|\\|^)(?:oauth-refresh|openclaw-oauth-refresh)[^/\n\\]*?(?:\.lock)?\b", "i"
)
_CALLBACK_TIMEOUT_RE = js_regex(r"\bcallback_timeout\b", "i")
_CALLBACK_VALIDATION_RE = js_regex(r"\bcallback_validation_failed\b", "i")
_MENTIONS_401_RE = re.compile(r"\b401\b")
_MENTIONS_403_RE = re.compile(r"\b403\b")
#: Statuses whose bare presence means the transport gave up (gateway and timing codes).
_TRANSPORT_TIMEOUT_STATUSES = frozenset({408, 499, 500, 502, 503, 504, 521, 522, 523, 524, 529})


def _is_openai_codex_scope_context(raw: str, provider: str | None) -> bool:
    return (
        (provider or "").strip().lower() == "openai"
        or bool(_OPENAI_CODEX_RE.search(raw))
        or bool(_CODEX_SCOPES_RE.search(raw))
    )


def _is_auth_scope_error(raw: str, status: int | None, provider: str | None) -> bool:
    """Missing OpenAI/Codex OAuth scopes: a scope hint, and a 401/403 when a status is known."""
    if not _is_openai_codex_scope_context(raw, provider):
        return False
    has_hint = bool(_AUTH_SCOPE_HINT_RE.search(raw))
    if not has_hint and not _AUTH_SCOPE_NAME_RE.search(raw):
        return False
    if status is None:
        leading = extract_leading_http_status(raw.strip())
        status = leading.code if leading else None
    if status is None:
        return has_hint
    return status in (401, 403)


def _is_refresh_contention(raw: str) -> bool:
    return bool(_REFRESH_CONTENTION_RE.search(raw)) or (
        bool(_FILE_LOCK_TIMEOUT_RE.search(raw)) and bool(_REFRESH_LOCK_PATH_RE.search(raw))
    )


def _is_schema_error(raw: str, provider: str | None) -> bool:
    """A schema rejection needs message evidence, never a bare 400."""
    if is_replay_invalid_error_message(raw) or is_context_overflow_error_from_tables(raw):
        return False
    return classify_failover_reason(raw, provider=provider) == "format" or is_format_error_message(
        raw
    )


def _is_timeout_transport_error(raw: str, status: int | None) -> bool:
    if is_timeout_error_message(raw) or _INTERRUPTED_NETWORK_ERROR_RE.search(raw):
        return True
    return status in _TRANSPORT_TIMEOUT_STATUSES


def _signal(value: FailoverSignal | Mapping[str, Any] | str) -> FailoverSignal:
    if isinstance(value, FailoverSignal):
        return value
    if isinstance(value, str):
        return FailoverSignal(message=value)
    if isinstance(value, Mapping):
        return FailoverSignal.from_mapping(dict(value))
    raise TypeError(
        "classify_provider_runtime_failure_kind takes a FailoverSignal, a mapping or a string, "
        f"not {type(value).__name__}"
    )


def classify_provider_runtime_failure_kind(
    signal: FailoverSignal | Mapping[str, Any] | str,
) -> ProviderRuntimeFailureKind:
    """OpenClaw's ``classifyProviderRuntimeFailureKind``: the first matching kind, in order."""
    facts = _signal(signal)
    message = (facts.message or "").strip()
    status = infer_signal_status(facts)
    if not message and status is None and not (facts.code or facts.error_type):
        return "empty_response"
    if facts.code == "refresh_contention":
        return "refresh_contention"
    if message:
        if _is_refresh_contention(message):
            return "refresh_contention"
        if _REFRESH_TIMEOUT_RE.search(message):
            return "refresh_timeout"
        if _CALLBACK_TIMEOUT_RE.search(message):
            return "callback_timeout"
        if _CALLBACK_VALIDATION_RE.search(message):
            return "callback_validation"
        if is_oauth_refresh_failure_message(message):
            return "auth_refresh"
        if _is_auth_scope_error(message, status, facts.provider):
            return "auth_scope"
        if status == 407 or _PROXY_ERROR_RE.search(message):
            return "proxy"
        if is_html_error_response(message, status):
            if status == 403 and _CLOUDFLARE_CHALLENGE_RE.search(message):
                return "upstream_html"
            return "auth_html" if status in (401, 403) else "upstream_html"
    classification = classify_failover_signal(
        FailoverSignal(
            status=status,
            retry_after_ms=facts.retry_after_ms,
            code=facts.code,
            error_type=facts.error_type,
            message=message or None,
            provider=facts.provider,
            model=facts.model,
            details=facts.details,
        )
    )
    reason = classification.reason if classification and classification.kind == "reason" else None
    if reason in ("tls_certificate", "rate_limit", "model_not_found"):
        return reason  # type: ignore[return-value]
    if message:
        if _DNS_ERROR_RE.search(message):
            return "dns"
        if _SANDBOX_BLOCKED_RE.search(message):
            return "sandbox_blocked"
        if is_replay_invalid_error_message(message):
            return "replay_invalid"
        if _is_schema_error(message, facts.provider):
            return "schema"
    # a plain 401 with invalid-token wording (and no scope talk) gets its own safe copy
    has_401 = status == 401 or (
        status is None
        and bool(_MENTIONS_401_RE.search(message))
        and not _MENTIONS_403_RE.search(message)
    )
    scope_signal = bool(_AUTH_SCOPE_HINT_RE.search(message) or _AUTH_SCOPE_NAME_RE.search(message))
    if (
        reason == "auth"
        and has_401
        and _AUTH_INVALID_TOKEN_HINT_RE.search(message)
        and not scope_signal
    ):
        return "auth_invalid_token"
    if reason in ("timeout", "overloaded"):
        return "timeout"
    if message and _is_timeout_transport_error(message, status):
        return "timeout"
    if message and is_exact_unknown_no_details_error(message):
        return "no_error_details"
    return "unclassified"
