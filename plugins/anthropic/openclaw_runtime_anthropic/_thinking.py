"""Extended thinking for the Messages API: a token budget, or adaptive thinking with an effort.

OpenClaw's rules: the budget for a level (``thinking_budgets`` overrides the defaults) is
added on top of the visible-output cap and capped by the model; when it cannot fit it shrinks
to leave 1024 output tokens, and below 1024 thinking is off. Models with adaptive thinking
(Opus 4.6+, Sonnet 4.6; ``compat["adaptive_thinking"]`` overrides) take an effort instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from openclaw_runtime.llm import Model

__all__ = [
    "ANTHROPIC_MIN_THINKING_BUDGET_TOKENS",
    "DEFAULT_THINKING_BUDGETS",
    "MIN_OUTPUT_TOKENS_WITH_THINKING",
    "ThinkingPlan",
    "adjust_max_tokens_for_thinking",
    "resolve_anthropic_thinking_effort",
    "resolve_thinking_plan",
    "supports_adaptive_thinking",
    "supports_native_xhigh_effort",
]

ANTHROPIC_MIN_THINKING_BUDGET_TOKENS = 1024
MIN_OUTPUT_TOKENS_WITH_THINKING = 1024
#: Default budgets per level (``xhigh`` uses ``high``); ``thinking_budgets`` overrides them.
DEFAULT_THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "max": 32768,
}
_ADAPTIVE_RE = re.compile(r"(?:^|-)claude-(?:opus-4-(?:6|7|8)|sonnet-4-6)(?=$|[^a-z0-9])")
_NATIVE_XHIGH_RE = re.compile(r"(?:^|-)claude-opus-4-(?:7|8)(?=$|[^a-z0-9])")


def _claude_identity(model_id: str) -> str:
    normalized = model_id.strip().lower()
    if normalized.startswith("anthropic/"):
        normalized = normalized[len("anthropic/") :]
    return re.sub(r"[._\s]+", "-", normalized)


def supports_adaptive_thinking(model: Model) -> bool:
    """Whether ``model`` takes ``thinking: {type: adaptive}`` + an effort instead of a budget.

    ``compat["adaptive_thinking"]`` overrides the id-based detection (Opus 4.6+, Sonnet 4.6).
    """
    override = (model.compat or {}).get("adaptive_thinking")
    if isinstance(override, bool):
        return override
    return bool(_ADAPTIVE_RE.search(_claude_identity(model.id)))


def supports_native_xhigh_effort(model: Model) -> bool:
    """Whether ``model`` takes ``effort: xhigh`` (and rejects custom sampling settings)."""
    return bool(_NATIVE_XHIGH_RE.search(_claude_identity(model.id)))


@dataclass(frozen=True, slots=True)
class ThinkingPlan:
    """What one request asks for: thinking on/off, its budget or effort, and ``max_tokens``."""

    enabled: bool
    max_tokens: int
    budget_tokens: int | None = None
    adaptive: bool = False
    effort: str | None = None


def adjust_max_tokens_for_thinking(
    base_max_tokens: int | None,
    model_max_tokens: int,
    level: str,
    budgets: Mapping[str, int] | None = None,
) -> tuple[int, int]:
    """(max_tokens, thinking budget): the budget is added on top of the visible-output cap,
    capped by the model; when it cannot fit, it shrinks to leave 1024 output tokens."""
    table = {**DEFAULT_THINKING_BUDGETS, **(budgets or {})}
    key = "high" if level == "xhigh" else level
    budget = int(table.get(key, table["high"]))
    if base_max_tokens is None:
        max_tokens = model_max_tokens
    else:
        max_tokens = min(base_max_tokens + budget, model_max_tokens)
    if max_tokens <= budget:
        budget = max(0, max_tokens - MIN_OUTPUT_TOKENS_WITH_THINKING)
    return max_tokens, budget


def resolve_anthropic_thinking_effort(model: Model, level: str | None) -> str:
    """The adaptive-thinking effort for a thinking level."""
    if level in ("off", "minimal", "low"):
        return "low"
    if level == "medium":
        return "medium"
    if level == "xhigh":
        return "xhigh" if supports_native_xhigh_effort(model) else "high"
    if level == "max":
        return "max" if supports_adaptive_thinking(model) else "high"
    return "high"


def resolve_thinking_plan(
    model: Model,
    reasoning: str | None,
    max_tokens: int | None = None,
    budgets: Mapping[str, int] | None = None,
) -> ThinkingPlan:
    """Thinking for one request from ``StreamOptions.reasoning`` and ``thinking_budgets``.

    Budget-based thinking is enabled only when the budget reaches 1024 tokens and stays below
    ``max_tokens``; otherwise thinking is off and the visible-output cap is restored.
    """
    visible_cap = max(1, min(max_tokens or model.max_tokens, model.max_tokens))
    if not reasoning or reasoning == "off":
        return ThinkingPlan(enabled=False, max_tokens=visible_cap)
    if supports_adaptive_thinking(model):
        return ThinkingPlan(
            enabled=True,
            max_tokens=visible_cap,
            adaptive=True,
            effort=resolve_anthropic_thinking_effort(model, reasoning),
        )
    adjusted_max, budget = adjust_max_tokens_for_thinking(
        visible_cap, model.max_tokens, reasoning, budgets
    )
    if budget < ANTHROPIC_MIN_THINKING_BUDGET_TOKENS or budget >= adjusted_max:
        return ThinkingPlan(enabled=False, max_tokens=visible_cap)
    return ThinkingPlan(enabled=True, max_tokens=adjusted_max, budget_tokens=budget)
