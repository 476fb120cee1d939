"""Context-overflow detection (spec §1.5): the canonical wording tables and their policy.

Overflow is not a failover reason to rotate on: the orchestrator compacts or truncates and
retries instead. The tables are scoped like OpenClaw's ``matchesContextOverflowMessage``:

* ``failover-explicit`` — wording that is overflow on its own;
* ``provider-fallback`` — provider wording that counts only for an overflow-shaped message;
* ``assistant-error`` — wording read from an assistant message with ``stopReason: "error"``;
* ``failover-hint``, ``context-window-too-small``, ``tpm-rate-limit-hint``,
  ``rate-limit-hint`` — the heuristics of ``is_likely_context_overflow_error``.

Patterns are tested on the raw message, case-insensitively.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

from ..messages import AssistantMessage
from .matchers import (
    is_billing_error_message,
    is_provider_request_size_ceiling_error,
    is_rate_limit_error_message,
)
from .owners import ProviderFailoverDialect
from .text import js_regex, normalize_lower

__all__ = [
    "ASSISTANT_OVERFLOW_PATTERNS",
    "CONTEXT_OVERFLOW_PATTERN_SCOPES",
    "FAILOVER_EXPLICIT_OVERFLOW_PATTERNS",
    "NON_OVERFLOW_PATTERNS",
    "PROVIDER_FALLBACK_OVERFLOW_PATTERNS",
    "ContextOverflowMessageScope",
    "has_rate_limit_tpm_hint",
    "is_configured_context_size_overflow_error",
    "is_context_overflow",
    "is_context_overflow_error",
    "is_context_overflow_error_from_tables",
    "is_likely_context_overflow_error",
    "is_provider_refusal_assistant_error",
    "is_reasoning_constraint_error_message",
    "looks_like_provider_context_overflow_candidate",
    "matches_context_overflow_message",
    "resolve_context_input_tokens",
]

ContextOverflowMessageScope: TypeAlias = Literal[
    "assistant-error",
    "failover-explicit",
    "provider-fallback",
    "failover-hint",
    "context-window-too-small",
    "tpm-rate-limit-hint",
    "rate-limit-hint",
]

_CONFIGURED_CONTEXT_SIZE_OVERFLOW_RE = js_regex(
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?", "i"
)


#: TGI's 422: "Input validation error: `inputs` tokens + `max_new_tokens` must be <= N" (or
#: "`inputs` must have less than N tokens").
_TGI_INPUT_VALIDATION_OVERFLOW = (
    r"input validation error:?[\s\S]*\binputs`?\s+"
    r"(?:tokens\s*\+\s*`?max_new_tokens`?\s+must be\s*<=|must have less than)\s*[\d,]+"
)
#: LM Studio: "Trying to keep the first N tokens when context overflows. However, the model is
#: loaded with context length of only M tokens".
_LM_STUDIO_KEEP_FIRST_OVERFLOW = (
    r"trying to keep the first [\d,]+ tokens when context (?:the )?overflows"
)


def _table(*sources: str) -> tuple[re.Pattern[str], ...]:
    return tuple(js_regex(source, "i") for source in sources)


ASSISTANT_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = (
    *_table(
        r"prompt is too long",
        r"request_too_large",
        r"input length and `?max_tokens`? exceed context limit: [\d,]+ \+ [\d,]+ > [\d,]+",
        r"input is too long for requested model",
        r"exceeds the context window",
        r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?"
        r"|\s*\([\d,]+\))",
        r"input token count.*exceeds the maximum",
        r"maximum prompt length is \d+",
        r"reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
        r"exceeds the limit of \d+",
        r"(?:exceeds the available context size|context size has been exceeded)",
        r"greater than the context length",
        r"context window exceeds limit",
        r"exceeded model token limit",
        r"tokens? in request more than max tokens? allowed",
        r"prompt exceeds max(?:imum)? length",
        r"too large for model with \d+ maximum context length",
        _TGI_INPUT_VALIDATION_OVERFLOW,
        _LM_STUDIO_KEEP_FIRST_OVERFLOW,
    ),
    _CONFIGURED_CONTEXT_SIZE_OVERFLOW_RE,
    *_table(
        r"model_context_window_exceeded",
        r"prompt too long; exceeded (?:max )?context length",
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^413\s*(?:status code)?\s*\(no body\)",
    ),
)

FAILOVER_EXPLICIT_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = (
    *_table(r"request_too_large", r"context_overflow"),
    _CONFIGURED_CONTEXT_SIZE_OVERFLOW_RE,
    *_table(
        r"invalid_argument[\s\S]*maximum number of tokens",
        r"request exceeds the maximum size",
        r"context length exceeded",
        r"maximum context length",
        r"prompt is too long",
        r"prompt too long",
        r"exceeds model context window",
        r"model token limit",
        r"input exceeds[\s\S]*maximum number of tokens",
        r"^(?=[\s\S]*context window)(?=[\s\S]*ran out of (?:room|space))",
        r"request size exceeds[\s\S]*context window",
        r"context overflow:",
        r"exceed context limit",
        r"exceeds the model'?s maximum context",
        r"max_tokens[\s\S]*exceed[\s\S]*context",
        r"input(?: length[\s\S]*exceed[\s\S]*context"
        r"| \([\d,]+\s*tokens?\) is longer than (?:the )?model'?s context length)",
        r"413[\s\S]*too large",
        r"context_window_exceeded",
        r"input length [\d,]+\s+tokens? exceeds the model limit",
        _TGI_INPUT_VALIDATION_OVERFLOW,
        _LM_STUDIO_KEEP_FIRST_OVERFLOW,
    ),
    js_regex(r"上下文过长|上下文超出|上下文长度超|超出最大上下文|请压缩上下文"),
)

PROVIDER_FALLBACK_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = _table(
    r"\binput token count exceeds the maximum number of input tokens\b",
    r"\binput is too long for this model\b",
    r"\binput exceeds the maximum number of tokens\b",
    r"\bollama error:\s*context length exceeded(?:,\s*too many tokens)?\b",
    r"\btotal tokens?.*exceeds? (?:the )?(?:model(?:'s)? )?(?:max|maximum|limit)",
    r"\b(?:(?:request|prompt) \(\d[\d,]*\s*tokens?\) exceeds (?:the )?available context size"
    r"|context size has been exceeded)\b",
    r"\binput (?:is )?too long for (?:the )?model\b",
)

CONTEXT_OVERFLOW_PATTERN_SCOPES: Mapping[
    ContextOverflowMessageScope, tuple[re.Pattern[str], ...]
] = {
    "assistant-error": ASSISTANT_OVERFLOW_PATTERNS,
    "failover-explicit": FAILOVER_EXPLICIT_OVERFLOW_PATTERNS,
    "provider-fallback": PROVIDER_FALLBACK_OVERFLOW_PATTERNS,
    "failover-hint": _table(
        r"context.*overflow|context window.*(too (?:large|long)|exceed|over|limit|max(?:imum)?"
        r"|requested|sent|tokens)|prompt.*(too (?:large|long)|exceed|over|limit|max(?:imum)?)"
        r"|(?:request|input).*(?:context|window|length|token).*(too (?:large|long)|exceed|over"
        r"|limit|max(?:imum)?)"
    ),
    "context-window-too-small": _table(r"context window.*(too small|minimum is)"),
    "tpm-rate-limit-hint": _table(r"\btpm\b|tokens per minute"),
    "rate-limit-hint": _table(
        r"rate limit|too many requests|requests per (?:minute|hour|day)|quota|throttl|429\b"
        r"|tokens per day"
    ),
}

#: Assistant errors that look like overflow but are throttling (Bedrock's "Too many tokens").
NON_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = _table(
    r"^(Throttling error|Service unavailable):", r"rate limit", r"too many requests"
)

_OVERFLOW_SIGNAL_RE = js_regex(
    r"\b(?:context|window|prompt|token|tokens|input|request|model)\b", "i"
)
_OVERFLOW_ACTION_RE = js_regex(
    r"\b(?:too\s+(?:large|long|many)|exceed(?:s|ed|ing)?|overflow|limit|maximum|max)\b", "i"
)


def matches_context_overflow_message(
    error_message: str, scope: ContextOverflowMessageScope
) -> bool:
    """One canonical overflow wording scope, without any caller policy."""
    return any(pattern.search(error_message) for pattern in CONTEXT_OVERFLOW_PATTERN_SCOPES[scope])


def is_configured_context_size_overflow_error(error_message: str) -> bool:
    """DS4's ``prompt has N tokens, but the configured context size is M tokens``."""
    return _CONFIGURED_CONTEXT_SIZE_OVERFLOW_RE.search(error_message) is not None


def looks_like_provider_context_overflow_candidate(error_message: str) -> bool:
    """Overflow-shaped (a context noun and an excess verb) and not a rate limit."""
    return (
        not is_rate_limit_error_message(error_message)
        and _OVERFLOW_SIGNAL_RE.search(error_message) is not None
        and _OVERFLOW_ACTION_RE.search(error_message) is not None
    )


def is_reasoning_constraint_error_message(raw: str) -> bool:
    """The model insists on reasoning; wording about limits here is not overflow."""
    if not raw:
        return False
    lower = normalize_lower(raw)
    return (
        "reasoning is mandatory" in lower
        or "reasoning is required" in lower
        or "requires reasoning" in lower
        or ("reasoning" in lower and "cannot be disabled" in lower)
    )


def has_rate_limit_tpm_hint(raw: str) -> bool:
    """Tokens-per-minute wording: Groq's 413 TPM refusals are rate limits, not overflow."""
    return matches_context_overflow_message(raw, "tpm-rate-limit-hint")


def is_context_overflow_error_from_tables(error_message: str | None) -> bool:
    """Explicit context-window overflow, without confusing TPM rate limits."""
    if not error_message:
        return False
    if has_rate_limit_tpm_hint(error_message) and not is_provider_request_size_ceiling_error(
        error_message
    ):
        return False
    if is_reasoning_constraint_error_message(error_message):
        return False
    return matches_context_overflow_message(error_message, "failover-explicit") or (
        looks_like_provider_context_overflow_candidate(error_message)
        and matches_context_overflow_message(error_message, "provider-fallback")
    )


def is_context_overflow_error(
    error_message: str | None, *, provider_owner: ProviderFailoverDialect | None = None
) -> bool:
    """OpenClaw's ``isContextOverflowError``: the tables, or the provider owner's matcher for
    an overflow-shaped message."""
    if not error_message:
        return False
    if is_context_overflow_error_from_tables(error_message):
        return True
    if provider_owner is None or not looks_like_provider_context_overflow_candidate(error_message):
        return False
    return provider_owner.classify_reason(error_message=error_message) == "context_overflow"


def _is_anthropic_long_context_usage_error(error_message: str) -> bool:
    return "extra usage is required for long context" in normalize_lower(error_message)


def is_likely_context_overflow_error(error_message: str | None) -> bool:
    """OpenClaw's ``isLikelyContextOverflowError``: the broad heuristic the run loop uses.

    Anthropic's 429 "Extra usage is required for long context requests" counts as overflow
    (compact and retry) before the billing and rate-limit exclusions can claim it.
    """
    if not error_message:
        return False
    if is_provider_request_size_ceiling_error(error_message):
        return is_context_overflow_error_from_tables(error_message)
    if has_rate_limit_tpm_hint(error_message) or is_reasoning_constraint_error_message(
        error_message
    ):
        return False
    if _is_anthropic_long_context_usage_error(error_message):
        return True
    if (
        is_billing_error_message(error_message)
        or matches_context_overflow_message(error_message, "context-window-too-small")
        or is_rate_limit_error_message(error_message)
    ):
        return False
    if is_context_overflow_error(error_message):
        return True
    return (
        "prompt template" not in normalize_lower(error_message)
        and not matches_context_overflow_message(error_message, "rate-limit-hint")
        and matches_context_overflow_message(error_message, "failover-hint")
    )


# --------------------------------------------------------------------------- assistant messages


def _field(source: Any, name: str, camel: str) -> Any:
    if isinstance(source, Mapping):
        return source.get(camel, source.get(name))
    return getattr(source, name, None)


def is_provider_refusal_assistant_error(message: AssistantMessage | Mapping[str, Any]) -> bool:
    """The provider refused the payload (a ``provider_refusal`` diagnostic): never overflow."""
    diagnostics = _field(message, "diagnostics", "diagnostics")
    if not isinstance(diagnostics, list):
        return False
    return any(
        isinstance(item, Mapping) and item.get("type") == "provider_refusal" for item in diagnostics
    )


def resolve_context_input_tokens(message: AssistantMessage | Mapping[str, Any]) -> float | None:
    """Prompt tokens of a response: ``contextUsage.promptTokens`` when available, unknown when
    marked unavailable, else ``input + cacheRead + cacheWrite``."""
    usage = _field(message, "usage", "usage")
    if usage is None:
        return None
    context_usage = _field(usage, "context_usage", "contextUsage")
    if isinstance(context_usage, Mapping):
        state = context_usage.get("state")
        if state == "available":
            prompt_tokens = context_usage.get("promptTokens")
            return float(prompt_tokens) if isinstance(prompt_tokens, int | float) else None
        if state == "unavailable":
            return None
    total = 0.0
    for name, camel in (
        ("input", "input"),
        ("cache_read", "cacheRead"),
        ("cache_write", "cacheWrite"),
    ):
        value = _field(usage, name, camel)
        total += float(value) if isinstance(value, int | float) else 0.0
    return total


def is_context_overflow(
    message: AssistantMessage | Mapping[str, Any], context_window: float | None = None
) -> bool:
    """Did this assistant response overflow the context window?

    * an error response whose text matches the ``assistant-error`` table (throttling texts
      excluded);
    * silent overflow: ``stop`` with more prompt tokens than ``context_window`` (z.ai);
    * ``length`` with zero output and prompt tokens at 99% of the window (Xiaomi MiMo).

    Provider refusals are never overflow.
    """
    if is_provider_refusal_assistant_error(message):
        return False
    stop_reason = _field(message, "stop_reason", "stopReason")
    error_message = _field(message, "error_message", "errorMessage")
    if stop_reason == "error" and isinstance(error_message, str) and error_message:
        non_overflow = any(pattern.search(error_message) for pattern in NON_OVERFLOW_PATTERNS)
        if not non_overflow and matches_context_overflow_message(error_message, "assistant-error"):
            return True
    if not context_window:
        return False
    if stop_reason == "stop":
        tokens = resolve_context_input_tokens(message)
        if tokens is not None and tokens > context_window:
            return True
    if stop_reason == "length":
        usage = _field(message, "usage", "usage")
        output = _field(usage, "output", "output") if usage is not None else None
        if output == 0:
            tokens = resolve_context_input_tokens(message)
            if tokens is not None and tokens >= context_window * 0.99:
                return True
    return False
