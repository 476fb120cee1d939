"""The persisted context-budget status of a session, built from the pre-prompt check.

Before each prompt the runner decides whether the history fits (``preemptive``). OpenClaw
keeps the facts behind that decision on the session (``buildPrePromptContextBudgetStatus``)
so status views and the next run can show how close the session is to its window without
re-estimating. This module only converts; it reads no clock unless ``now_ms`` is omitted.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Literal

from .preemptive import PreemptiveCompactionDecision

__all__ = [
    "CONTEXT_BUDGET_STATUS_SCHEMA_VERSION",
    "SessionContextBudgetStatus",
    "build_pre_prompt_context_budget_status",
]

CONTEXT_BUDGET_STATUS_SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class SessionContextBudgetStatus:
    """OpenClaw's ``SessionContextBudgetStatus`` (schema 1); ``to_record`` gives its JSON."""

    updated_at: int
    provider: str
    model: str
    route: str
    should_compact: bool
    estimated_prompt_tokens: int
    context_token_budget: int
    prompt_budget_before_reserve: int
    reserve_tokens: int
    effective_reserve_tokens: int
    remaining_prompt_budget_tokens: int
    overflow_tokens: int
    tool_result_reducible_chars: int
    message_count: int
    unwindowed_message_count: int
    session_id: str | None = None
    schema_version: int = CONTEXT_BUDGET_STATUS_SCHEMA_VERSION
    source: Literal["pre-prompt-estimate"] = "pre-prompt-estimate"

    def to_record(self) -> dict[str, Any]:
        """The camelCase record OpenClaw persists (``sessionId`` only when known)."""
        record: dict[str, Any] = {
            "schemaVersion": self.schema_version,
            "source": self.source,
            "updatedAt": self.updated_at,
            "provider": self.provider,
            "model": self.model,
            "route": self.route,
            "shouldCompact": self.should_compact,
            "estimatedPromptTokens": self.estimated_prompt_tokens,
            "contextTokenBudget": self.context_token_budget,
            "promptBudgetBeforeReserve": self.prompt_budget_before_reserve,
            "reserveTokens": self.reserve_tokens,
            "effectiveReserveTokens": self.effective_reserve_tokens,
            "remainingPromptBudgetTokens": self.remaining_prompt_budget_tokens,
            "overflowTokens": self.overflow_tokens,
            "toolResultReducibleChars": self.tool_result_reducible_chars,
            "messageCount": self.message_count,
            "unwindowedMessageCount": self.unwindowed_message_count,
        }
        if self.session_id:
            record["sessionId"] = self.session_id
        return record


def _whole(value: float, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return math.floor(value)


def build_pre_prompt_context_budget_status(
    decision: PreemptiveCompactionDecision,
    *,
    provider: str,
    model_id: str,
    message_count: int,
    context_token_budget: float,
    reserve_tokens: float,
    unwindowed_message_count: int | None = None,
    session_id: str | None = None,
    now_ms: int | None = None,
) -> SessionContextBudgetStatus:
    """OpenClaw's ``buildPrePromptContextBudgetStatus``.

    Budgets are floored and clamped (window >= 1, reserve and counts >= 0); the remaining
    prompt budget never goes below zero; the unwindowed count defaults to the message count.
    """
    unwindowed = message_count if unwindowed_message_count is None else unwindowed_message_count
    return SessionContextBudgetStatus(
        updated_at=int(time.time() * 1000) if now_ms is None else now_ms,
        provider=provider,
        model=model_id,
        route=decision.route,
        should_compact=decision.should_compact,
        estimated_prompt_tokens=decision.estimated_prompt_tokens,
        context_token_budget=max(1, _whole(context_token_budget, "context_token_budget")),
        prompt_budget_before_reserve=decision.prompt_budget_before_reserve,
        reserve_tokens=max(0, _whole(reserve_tokens, "reserve_tokens")),
        effective_reserve_tokens=decision.effective_reserve_tokens,
        remaining_prompt_budget_tokens=max(
            0, decision.prompt_budget_before_reserve - decision.estimated_prompt_tokens
        ),
        overflow_tokens=decision.overflow_tokens,
        tool_result_reducible_chars=decision.tool_result_reducible_chars,
        message_count=max(0, _whole(message_count, "message_count")),
        unwindowed_message_count=max(0, _whole(unwindowed, "unwindowed_message_count")),
        session_id=session_id or None,
    )
