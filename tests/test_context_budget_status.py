"""``build_pre_prompt_context_budget_status`` (OpenClaw's ``buildPrePromptContextBudgetStatus``):
the persisted record of one pre-prompt budget check."""

from __future__ import annotations

import json

import pytest

from openclaw_runtime.context.budget_status import (
    SessionContextBudgetStatus,
    build_pre_prompt_context_budget_status,
)
from openclaw_runtime.context.preemptive import (
    PreemptiveCompactionDecision,
    should_preemptively_compact_before_prompt,
)
from openclaw_runtime.messages import UserMessage


def _decision(**overrides: object) -> PreemptiveCompactionDecision:
    base: dict[str, object] = {
        "route": "compact_only",
        "should_compact": True,
        "estimated_prompt_tokens": 1200,
        "pressure_source": "transcript_estimate",
        "prompt_budget_before_reserve": 1000,
        "overflow_tokens": 200,
        "tool_result_reducible_chars": 0,
        "effective_reserve_tokens": 300,
    }
    base.update(overrides)
    return PreemptiveCompactionDecision(**base)  # type: ignore[arg-type]


def test_record_shape_matches_openclaw() -> None:
    status = build_pre_prompt_context_budget_status(
        _decision(),
        provider="openai",
        model_id="gpt-4o",
        message_count=7,
        unwindowed_message_count=12,
        context_token_budget=1300.9,
        reserve_tokens=300.4,
        session_id="s-1",
        now_ms=1_700_000_000_000,
    )
    assert status.to_record() == {
        "schemaVersion": 1,
        "source": "pre-prompt-estimate",
        "updatedAt": 1_700_000_000_000,
        "provider": "openai",
        "model": "gpt-4o",
        "route": "compact_only",
        "shouldCompact": True,
        "estimatedPromptTokens": 1200,
        "contextTokenBudget": 1300,
        "promptBudgetBeforeReserve": 1000,
        "reserveTokens": 300,
        "effectiveReserveTokens": 300,
        "remainingPromptBudgetTokens": 0,
        "overflowTokens": 200,
        "toolResultReducibleChars": 0,
        "messageCount": 7,
        "unwindowedMessageCount": 12,
        "sessionId": "s-1",
    }


@pytest.mark.parametrize(
    ("kwargs", "field", "expected"),
    [
        # remaining budget is what is left before the reserve, never negative
        ({"decision": {"estimated_prompt_tokens": 400}}, "remaining_prompt_budget_tokens", 600),
        ({"decision": {"estimated_prompt_tokens": 5000}}, "remaining_prompt_budget_tokens", 0),
        # clamps: window >= 1, reserve >= 0, counts >= 0
        ({"context_token_budget": 0}, "context_token_budget", 1),
        ({"context_token_budget": -50}, "context_token_budget", 1),
        ({"reserve_tokens": -5}, "reserve_tokens", 0),
        ({"message_count": -3}, "message_count", 0),
        # the unwindowed count defaults to the message count
        ({"message_count": 9}, "unwindowed_message_count", 9),
        ({"unwindowed_message_count": 40}, "unwindowed_message_count", 40),
        # no session id: the record leaves it out
        ({"session_id": ""}, "session_id", None),
    ],
)
def test_budget_status_rules(kwargs: dict[str, object], field: str, expected: object) -> None:
    decision = _decision(**kwargs.pop("decision", {}))  # type: ignore[arg-type]
    args: dict[str, object] = {
        "provider": "p",
        "model_id": "m",
        "message_count": 3,
        "context_token_budget": 2000,
        "reserve_tokens": 100,
        "now_ms": 1,
    }
    args.update(kwargs)
    status = build_pre_prompt_context_budget_status(decision, **args)  # type: ignore[arg-type]
    assert getattr(status, field) == expected
    if field == "session_id":
        assert "sessionId" not in status.to_record()


def test_built_from_a_real_decision_is_json_and_consistent() -> None:
    messages = [UserMessage(content="word " * 400, timestamp=0)]
    decision = should_preemptively_compact_before_prompt(
        messages=messages, context_token_budget=300, reserve_tokens=50, prompt="go"
    )
    status = build_pre_prompt_context_budget_status(
        decision,
        provider="local",
        model_id="tiny",
        message_count=len(messages),
        context_token_budget=300,
        reserve_tokens=50,
        now_ms=5,
    )
    record = json.loads(json.dumps(status.to_record()))
    assert record["shouldCompact"] is decision.should_compact is True
    assert record["overflowTokens"] == decision.overflow_tokens > 0
    assert record["remainingPromptBudgetTokens"] == 0
    assert isinstance(status, SessionContextBudgetStatus)


def test_non_finite_budget_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="context_token_budget"):
        build_pre_prompt_context_budget_status(
            _decision(),
            provider="p",
            model_id="m",
            message_count=1,
            context_token_budget=float("nan"),
            reserve_tokens=0,
        )
