"""Preemptive compaction routing (``shouldPreemptivelyCompactBeforePrompt``).

Before a prompt is sent, estimate its tokens against the budget left after the output
reserve, and pick the cheapest cure instead of one "overflow" switch:

* ``fits`` — nothing to do;
* ``compact_only`` — over budget and no tool result can be cut;
* ``truncate_tool_results_only`` — cutting tool results clearly covers the overflow;
* ``compact_then_truncate`` — cutting helps but is not enough on its own.

The reserve never squeezes the prompt below ``min(8000, window/2)`` (or ``window − 1`` for
windows under 8000 tokens): a tiny local model keeps almost its whole window for the prompt.

One case no cure helps: the prompt itself (what the user typed plus the system prompt) is far
above the window. Compaction shrinks history, never the prompt, so sending it can only fail,
after uploading megabytes. ``should_refuse_prompt_before_sending`` says so before anything is
sent, and ``format_prompt_too_large_message`` says how large it was and what the window is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .limits import MIN_PROMPT_BUDGET_RATIO, MIN_PROMPT_BUDGET_TOKENS
from .tokens import (
    ESTIMATED_CHARS_PER_TOKEN,
    TokenEstimator,
    resolve_token_estimator,
)
from .truncation import estimate_tool_result_reduction_potential

__all__ = [
    "PREEMPTIVE_OVERFLOW_ERROR_TEXT",
    "PROMPT_REFUSAL_WINDOW_FACTOR",
    "TRUNCATION_ROUTE_BUFFER_TOKENS",
    "LlmBoundaryTokenPressure",
    "PreemptiveCompactionDecision",
    "PreemptiveCompactionRoute",
    "format_pre_prompt_precheck_log",
    "format_prompt_too_large_message",
    "prompt_fits_budget",
    "resolve_prompt_budget",
    "should_preemptively_compact_before_prompt",
    "should_refuse_prompt_before_sending",
]

PreemptiveCompactionRoute: TypeAlias = Literal[
    "fits", "compact_only", "truncate_tool_results_only", "compact_then_truncate"
]

#: The error a run reports when the precheck decides the prompt cannot be sent.
PREEMPTIVE_OVERFLOW_ERROR_TEXT = "Context overflow: prompt too large for the model (precheck)."

#: A prompt is refused unsent when it alone is estimated above this multiple of the window.
#: The estimate already carries a 1.2 safety margin, so this is ~1.25x the window in plain
#: chars/4 terms: far enough above that a coarse estimate never refuses a prompt that fits.
PROMPT_REFUSAL_WINDOW_FACTOR = 1.5

#: Truncate-only must cover the overflow with at least this much to spare.
TRUNCATION_ROUTE_BUFFER_TOKENS = 512
_TRUNCATE_ONLY_OVERFLOW_FACTOR = 1.5


@dataclass(frozen=True, slots=True)
class LlmBoundaryTokenPressure:
    """Token pressure measured on the rendered provider payload; it wins over estimates."""

    estimated_prompt_tokens: float
    source: str = "rendered_llm_boundary"
    rendered_chars: float | None = None

    @classmethod
    def coerce(cls, value: Any) -> LlmBoundaryTokenPressure | None:
        """From an instance or a dict with OpenClaw's keys; None when it carries no number."""
        if value is None or isinstance(value, LlmBoundaryTokenPressure):
            return value
        if isinstance(value, Mapping):
            return cls(
                estimated_prompt_tokens=value.get(
                    "estimatedPromptTokens", value.get("estimated_prompt_tokens", math.nan)
                ),
                source=value.get("source", ""),
                rendered_chars=value.get("renderedChars", value.get("rendered_chars")),
            )
        raise TypeError(f"llm_boundary_token_pressure: unsupported {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class PreemptiveCompactionDecision:
    """The route plus the budget facts that explain it (for logs and session state)."""

    route: PreemptiveCompactionRoute
    should_compact: bool
    estimated_prompt_tokens: int
    pressure_source: str
    prompt_budget_before_reserve: int
    overflow_tokens: int
    tool_result_reducible_chars: int
    effective_reserve_tokens: int

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's camelCase shape of the decision."""
        return {
            "route": self.route,
            "shouldCompact": self.should_compact,
            "estimatedPromptTokens": self.estimated_prompt_tokens,
            "pressureSource": self.pressure_source,
            "promptBudgetBeforeReserve": self.prompt_budget_before_reserve,
            "overflowTokens": self.overflow_tokens,
            "toolResultReducibleChars": self.tool_result_reducible_chars,
            "effectiveReserveTokens": self.effective_reserve_tokens,
        }


def resolve_prompt_budget(context_token_budget: float, reserve_tokens: float) -> tuple[int, int]:
    """``(prompt_budget_before_reserve, effective_reserve_tokens)`` for a window and reserve.

    ``min_prompt = max(min(8000, floor(ctx · 0.5)), min(8000, ctx − 1))``,
    ``reserve = min(reserve, ctx − min_prompt)``, ``budget = max(1, ctx − reserve)``.
    """
    context = max(1, math.floor(_finite(context_token_budget, "context_token_budget")))
    requested_reserve = max(0, math.floor(_finite(reserve_tokens, "reserve_tokens")))
    ratio_budget = max(1, math.floor(context * MIN_PROMPT_BUDGET_RATIO))
    window_floor = min(MIN_PROMPT_BUDGET_TOKENS, max(0, context - 1))
    min_prompt = max(min(MIN_PROMPT_BUDGET_TOKENS, ratio_budget), window_floor)
    reserve = min(requested_reserve, max(0, context - min_prompt))
    return max(1, context - reserve), reserve


def should_preemptively_compact_before_prompt(
    params: Mapping[str, Any] | None = None,
    /,
    *,
    messages: Sequence[Any] | None = None,
    context_token_budget: float | None = None,
    reserve_tokens: float | None = None,
    prompt: str = "",
    system_prompt: str | None = None,
    unwindowed_messages: Sequence[Any] | None = None,
    tool_result_max_chars: int | None = None,
    llm_boundary_token_pressure: LlmBoundaryTokenPressure | Mapping[str, Any] | None = None,
    estimator: TokenEstimator | None = None,
) -> PreemptiveCompactionDecision:
    """Route a prompt before it is sent: fits, compact, truncate tool results, or both.

    Keyword arguments are snake_case; OpenClaw's parameter object (``messages``,
    ``contextTokenBudget``, ``reserveTokens``, ``systemPrompt``, ``unwindowedMessages``,
    ``toolResultMaxChars``, ``llmBoundaryTokenPressure``) may be passed positionally instead.

    The estimate is ``estimator`` (default: ``estimate_llm_boundary_token_pressure``) over
    ``messages``; a larger estimate over ``unwindowed_messages`` replaces it, and rendered
    ``llm_boundary_token_pressure`` wins over the transcript estimate when given.
    """
    if params is not None:
        messages = params.get("messages", messages)
        context_token_budget = params.get("contextTokenBudget", context_token_budget)
        reserve_tokens = params.get("reserveTokens", reserve_tokens)
        prompt = params.get("prompt", prompt)
        system_prompt = params.get("systemPrompt", system_prompt)
        unwindowed_messages = params.get("unwindowedMessages", unwindowed_messages)
        tool_result_max_chars = params.get("toolResultMaxChars", tool_result_max_chars)
        llm_boundary_token_pressure = params.get(
            "llmBoundaryTokenPressure", llm_boundary_token_pressure
        )
    if messages is None:
        raise TypeError("should_preemptively_compact_before_prompt: messages is required")
    if context_token_budget is None:
        raise TypeError(
            "should_preemptively_compact_before_prompt: context_token_budget is required"
        )
    if reserve_tokens is None:
        raise TypeError("should_preemptively_compact_before_prompt: reserve_tokens is required")

    estimate = resolve_token_estimator(estimator)
    pressure = _normalize_pressure(LlmBoundaryTokenPressure.coerce(llm_boundary_token_pressure))
    messages_for_pressure = messages
    if pressure is not None:
        estimated, source = pressure
    else:
        estimated = _as_tokens(estimate(messages, system_prompt=system_prompt, prompt=prompt))
        source = "transcript_estimate"
    if unwindowed_messages is not None and unwindowed_messages is not messages:
        unwindowed = _as_tokens(
            estimate(unwindowed_messages, system_prompt=system_prompt, prompt=prompt)
        )
        if unwindowed > estimated:
            estimated = unwindowed
            messages_for_pressure = unwindowed_messages
            source = "unwindowed_transcript_estimate"

    budget, effective_reserve = resolve_prompt_budget(context_token_budget, reserve_tokens)
    overflow = max(0, estimated - budget)
    potential = estimate_tool_result_reduction_potential(
        messages_for_pressure,
        context_window_tokens=context_token_budget,
        max_chars_override=tool_result_max_chars,
    )
    reducible = potential.max_reducible_chars
    overflow_chars = overflow * ESTIMATED_CHARS_PER_TOKEN
    truncate_only_threshold = max(
        overflow_chars + TRUNCATION_ROUTE_BUFFER_TOKENS * ESTIMATED_CHARS_PER_TOKEN,
        math.ceil(overflow_chars * _TRUNCATE_ONLY_OVERFLOW_FACTOR),
    )
    route: PreemptiveCompactionRoute = "fits"
    if overflow > 0:
        if reducible <= 0:
            route = "compact_only"
        elif reducible >= truncate_only_threshold:
            route = "truncate_tool_results_only"
        else:
            route = "compact_then_truncate"
    return PreemptiveCompactionDecision(
        route=route,
        should_compact=route in ("compact_only", "compact_then_truncate"),
        estimated_prompt_tokens=estimated,
        pressure_source=source,
        prompt_budget_before_reserve=budget,
        overflow_tokens=overflow,
        tool_result_reducible_chars=reducible,
        effective_reserve_tokens=effective_reserve,
    )


def prompt_fits_budget(
    messages: Sequence[Any],
    *,
    context_token_budget: float,
    reserve_tokens: float,
    system_prompt: str | None = None,
    prompt: str = "",
    estimator: TokenEstimator | None = None,
) -> bool:
    """Whether :func:`should_preemptively_compact_before_prompt` would route ``"fits"`` (no
    rendered pressure, no unwindowed messages), without measuring the tool results: a request
    that fits needs no reduction potential, which costs a pass over every tool result."""
    estimate = resolve_token_estimator(estimator)
    estimated = _as_tokens(estimate(messages, system_prompt=system_prompt, prompt=prompt))
    # every request of a tool loop asks with the same window and reserve: the last answer is
    # kept (keyed by type too, so ``True`` is not taken for ``1``; a failed check keeps none)
    key = (type(context_token_budget), context_token_budget, type(reserve_tokens), reserve_tokens)
    last = _last_budget[0]
    if last[0] != key:
        last = (key, resolve_prompt_budget(context_token_budget, reserve_tokens)[0])
        _last_budget[0] = last
    return estimated <= last[1]


_last_budget: list[tuple[Any, int]] = [(None, 0)]


def should_refuse_prompt_before_sending(
    prompt_tokens: int,
    context_window: int | None,
    *,
    factor: float = PROMPT_REFUSAL_WINDOW_FACTOR,
) -> bool:
    """Refuse to send a prompt whose own estimate (system prompt + prompt, no history) is
    above ``factor`` × the window; an unknown (``None``/non-positive) window refuses nothing."""
    if not context_window or context_window <= 0:
        return False
    return prompt_tokens > context_window * factor


def format_prompt_too_large_message(
    *, prompt_tokens: int, prompt_chars: int, context_window: int, model_ref: str
) -> str:
    """The one-line error of a refused prompt: how large, what the window is, where it went."""
    return (
        f"prompt too large: about {prompt_tokens:,} tokens estimated ({prompt_chars:,} "
        f"characters) for the {context_window:,}-token context window of {model_ref}; it was "
        "not sent (the prompt is kept in the session transcript)"
    )


def format_pre_prompt_precheck_log(
    decision: PreemptiveCompactionDecision,
    *,
    provider: str,
    model_id: str,
    message_count: int,
    context_token_budget: float,
    reserve_tokens: float,
    unwindowed_message_count: int | None = None,
    session_key: str | None = None,
    session_id: str | None = None,
    session_file: str | None = None,
) -> str:
    """The one-line operator log of a pre-prompt check, in OpenClaw's format."""
    unwindowed = message_count if unwindowed_message_count is None else unwindowed_message_count
    return (
        "[context-overflow-precheck] pre-prompt check "
        f"sessionKey={session_key or session_id or 'unknown'} "
        f"provider={provider}/{model_id} "
        f"route={decision.route} "
        f"estimatedPromptTokens={decision.estimated_prompt_tokens} "
        f"pressureSource={decision.pressure_source or 'unknown'} "
        f"promptBudgetBeforeReserve={decision.prompt_budget_before_reserve} "
        f"overflowTokens={decision.overflow_tokens} "
        f"toolResultReducibleChars={decision.tool_result_reducible_chars} "
        f"reserveTokens={_number_text(reserve_tokens)} "
        f"effectiveReserveTokens={decision.effective_reserve_tokens} "
        f"contextTokenBudget={_number_text(context_token_budget)} "
        f"messages={message_count} "
        f"unwindowedMessages={unwindowed} "
        f"sessionFile={'undefined' if session_file is None else session_file}"
    )


def _normalize_pressure(pressure: LlmBoundaryTokenPressure | None) -> tuple[int, str] | None:
    if pressure is None:
        return None
    value = pressure.estimated_prompt_tokens
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    source = pressure.source.strip() if isinstance(pressure.source, str) else ""
    return max(0, math.ceil(value)), source or "rendered_llm_boundary"


def _as_tokens(value: float) -> int:
    """An estimator's answer as whole tokens; a clear error when it is not a number."""
    if type(value) is int:  # the default estimators' answer
        return value if value > 0 else 0
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise TypeError(f"token estimator returned {value!r}, not a number of tokens")
    return max(0, math.ceil(value))


def _finite(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
