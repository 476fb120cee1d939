"""Preemptive compaction routing (openclaw-spec §6, preemptive-compaction.ts, seed 000 §6.5)."""

from __future__ import annotations

import json
import math

import pytest

from openclaw_runtime.context import (
    estimate_llm_boundary_token_pressure,
    estimate_rendered_llm_boundary_token_pressure,
    resolve_prompt_budget,
    should_preemptively_compact_before_prompt,
)
from openclaw_runtime.context.preemptive import (
    PREEMPTIVE_OVERFLOW_ERROR_TEXT,
    LlmBoundaryTokenPressure,
    format_pre_prompt_precheck_log,
)
from openclaw_runtime.context.truncation import estimate_tool_result_reduction_potential
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    load_message,
)

VERBOSE_HISTORY = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu " * 40
VERBOSE_SYSTEM = (
    "system guidance with multiple distinct words to avoid tokenizer overcompression " * 25
)
VERBOSE_PROMPT = (
    "user request with distinct content asking for a detailed answer and more context " * 25
)
MEDIUM = "alpha beta gamma delta epsilon "


def history(text: str) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)])


def tool_result(*texts: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id="call", tool_name="read", content=[TextContent(text=t) for t in texts]
    )


def decide(messages, **kwargs):
    kwargs.setdefault("system_prompt", "sys")
    kwargs.setdefault("prompt", "hello")
    return should_preemptively_compact_before_prompt(messages=messages, **kwargs)


def test_error_text():
    assert (
        PREEMPTIVE_OVERFLOW_ERROR_TEXT
        == "Context overflow: prompt too large for the model (precheck)."
    )


@pytest.mark.parametrize(
    ("context", "reserve", "budget", "effective_reserve"),
    [
        (16_000, 20_000, 8_000, 8_000),  # the reserve is capped to keep 8000 for the prompt
        (4_096, 20_000, 4_095, 1),  # tiny window: almost all of it stays with the prompt
        (32_000, 20_000, 12_000, 20_000),  # enough room: the reserve is honoured
        (10_000, 1_000, 9_000, 1_000),
        (200_000, 32_000, 168_000, 32_000),
        (500, 50, 499, 1),
        (1, 100, 1, 0),
        (2, 100, 1, 1),
        (20_000, 0, 20_000, 0),
        (20_000, -5, 20_000, 0),
        (16_000.9, 20_000.9, 8_000, 8_000),  # both floored
        (0, 0, 1, 0),  # the window is at least one token
    ],
)
def test_prompt_budget(context, reserve, budget, effective_reserve):
    assert resolve_prompt_budget(context, reserve) == (budget, effective_reserve)


def test_over_budget_without_tool_results_compacts():
    result = decide(
        [history(VERBOSE_HISTORY)],
        system_prompt=VERBOSE_SYSTEM,
        prompt=VERBOSE_PROMPT,
        context_token_budget=500,
        reserve_tokens=50,
    )
    assert (result.route, result.should_compact) == ("compact_only", True)
    assert result.estimated_prompt_tokens > result.prompt_budget_before_reserve
    assert (
        result.overflow_tokens
        == result.estimated_prompt_tokens - result.prompt_budget_before_reserve
    )
    assert result.tool_result_reducible_chars == 0


def test_small_history_fits():
    result = decide([history("short history")], context_token_budget=10_000, reserve_tokens=1_000)
    assert (result.route, result.should_compact, result.overflow_tokens) == ("fits", False, 0)
    assert result.estimated_prompt_tokens < result.prompt_budget_before_reserve
    assert result.pressure_source == "transcript_estimate"


def test_estimate_is_the_boundary_pressure():
    messages = [history(VERBOSE_HISTORY), tool_result("x" * 999)]
    result = decide(messages, context_token_budget=10_000, reserve_tokens=0)
    assert result.estimated_prompt_tokens == estimate_llm_boundary_token_pressure(
        messages, system_prompt="sys", prompt="hello"
    )


def test_reserve_cap_keeps_small_context_models_usable():
    result = decide([history("short history")], context_token_budget=16_000, reserve_tokens=20_000)
    assert (result.effective_reserve_tokens, result.prompt_budget_before_reserve) == (8_000, 8_000)
    assert result.route == "fits"


def test_larger_unwindowed_estimate_wins():
    result = decide(
        [history("small assembled window")],
        unwindowed_messages=[history(VERBOSE_HISTORY * 4)],
        context_token_budget=500,
        reserve_tokens=50,
    )
    assert result.route == "compact_only"
    assert result.pressure_source == "unwindowed_transcript_estimate"


def test_smaller_unwindowed_estimate_is_ignored():
    messages = [history(VERBOSE_HISTORY)]
    result = decide(
        messages, unwindowed_messages=[history("tiny")], context_token_budget=500, reserve_tokens=50
    )
    assert result.pressure_source == "transcript_estimate"


@pytest.mark.parametrize(
    "pressure",
    [
        LlmBoundaryTokenPressure(estimated_prompt_tokens=0, source="test_rendered_payload"),
        {"estimatedPromptTokens": 0, "source": "test_rendered_payload", "renderedChars": 60_000},
    ],
)
def test_rendered_boundary_pressure_wins(pressure):
    tokens = estimate_rendered_llm_boundary_token_pressure(system_prompt="sys", prompt="x" * 60_000)
    if isinstance(pressure, dict):
        pressure = {**pressure, "estimatedPromptTokens": tokens}
    else:
        pressure = LlmBoundaryTokenPressure(tokens, pressure.source)
    result = decide(
        [history("the transcript view is intentionally small")],
        prompt="small prompt before runtime projection",
        context_token_budget=16_000,
        reserve_tokens=4_000,
        llm_boundary_token_pressure=pressure,
    )
    assert result.pressure_source == "test_rendered_payload"
    assert result.estimated_prompt_tokens == tokens
    assert result.route == "compact_only"


@pytest.mark.parametrize(
    ("pressure", "estimate", "source"),
    [
        ({"estimatedPromptTokens": 10.2, "source": "  "}, 11, "rendered_llm_boundary"),
        ({"estimatedPromptTokens": -4, "source": "r"}, 0, "r"),
        ({"estimatedPromptTokens": math.nan, "source": "r"}, None, "transcript_estimate"),
        ({"estimatedPromptTokens": math.inf, "source": "r"}, None, "transcript_estimate"),
    ],
)
def test_rendered_pressure_is_normalized(pressure, estimate, source):
    messages = [history("short history")]
    result = decide(
        messages,
        context_token_budget=10_000,
        reserve_tokens=0,
        llm_boundary_token_pressure=pressure,
    )
    fallback = estimate_llm_boundary_token_pressure(messages, system_prompt="sys", prompt="hello")
    assert result.estimated_prompt_tokens == (fallback if estimate is None else estimate)
    assert result.pressure_source == source


def test_json_tool_result_payloads_count():
    payload = {
        "rows": [{"path": f"/tmp/generated-{i}.txt", "body": "x" * 1_500} for i in range(120)]
    }
    message = load_message(
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "json_tool",
            "content": [{"type": "json", "payload": payload}],
            "isError": False,
            "timestamp": 1,
        }
    )
    estimate = estimate_llm_boundary_token_pressure(
        [message], system_prompt="sys", prompt="continue"
    )
    assert estimate > 80_000
    result = decide(
        [message], prompt="continue", context_token_budget=96_000, reserve_tokens=20_000
    )
    assert result.route != "fits"
    assert result.estimated_prompt_tokens == estimate
    assert result.overflow_tokens > 0


def test_tool_call_arguments_count():
    call = ToolCall(
        id="c",
        name="bulk_lookup",
        arguments={
            "queryPlan": "find relevant files",
            "candidates": [
                {"path": f"/repo/file-{i}.ts", "content": "z" * 1_000} for i in range(100)
            ],
        },
    )
    estimate = estimate_llm_boundary_token_pressure(
        [AssistantMessage(content=[call])], system_prompt="sys", prompt="continue"
    )
    assert estimate > 30_000


def test_regression_sized_tool_heavy_transcript_is_over_budget():
    messages = []
    for index in range(241):
        if index % 2 == 0:
            messages.append(
                tool_result(
                    "t" * math.ceil(427_000 / 120),
                    json.dumps({"index": index, "payload": "p" * 80}),
                )
            )
        else:
            messages.append(history("h" * math.ceil((503_000 - 427_000) / 121)))
    result = decide(
        messages,
        system_prompt="system" * 200,
        prompt="continue",
        context_token_budget=200_000,
        reserve_tokens=32_000,
    )
    assert result.estimated_prompt_tokens > 200_000
    assert result.prompt_budget_before_reserve == 168_000
    assert result.route != "fits"


def _budget_for_overflow(messages, overflow, reserve):
    """A window that leaves exactly ``overflow`` tokens over the budget."""
    estimate = estimate_llm_boundary_token_pressure(messages, system_prompt="sys", prompt="hello")
    return estimate - overflow + reserve


def test_truncation_alone_when_tool_output_clearly_covers_the_overflow():
    medium = MEDIUM * 2_200
    messages = [history("short history"), tool_result(medium, medium, medium, medium)]
    result = decide(
        messages,
        context_token_budget=_budget_for_overflow(messages, 200, 2_000),
        reserve_tokens=2_000,
    )
    assert (result.route, result.should_compact) == ("truncate_tool_results_only", False)
    assert result.overflow_tokens == 200
    assert result.tool_result_reducible_chars > 0


def test_compact_then_truncate_when_tool_output_helps_but_is_not_enough():
    medium = MEDIUM * 220
    messages = [
        history("old discussion with substantial retained context and decisions " * 5_000),
        tool_result(medium),
        tool_result(medium),
        tool_result(medium),
    ]
    result = decide(
        messages,
        system_prompt=VERBOSE_SYSTEM,
        prompt=VERBOSE_PROMPT,
        context_token_budget=12_000,
        reserve_tokens=500,
    )
    assert (result.route, result.should_compact) == ("compact_then_truncate", True)
    assert 0 < result.tool_result_reducible_chars < result.overflow_tokens * 4


def test_oversized_plus_aggregate_potential_is_cumulative():
    medium = MEDIUM * 500
    messages = [
        history("short history"),
        tool_result("x" * 45_000),
        tool_result(medium),
        tool_result(medium),
    ]
    potential = estimate_tool_result_reduction_potential(messages, context_window_tokens=128_000)
    result = decide(
        messages,
        context_token_budget=_budget_for_overflow(messages, 2_000, 2_000),
        reserve_tokens=2_000,
    )
    assert potential.oversized_reducible_chars > 0
    assert potential.aggregate_reducible_chars > 0
    assert potential.oversized_reducible_chars < potential.max_reducible_chars
    assert potential.max_reducible_chars > 2_000 * 4
    assert (result.route, result.should_compact) == ("truncate_tool_results_only", False)


@pytest.mark.parametrize(
    ("overflow", "reducible", "route"),
    [
        # threshold = max(overflow·4 + 2048, ceil(overflow·4·1.5))
        (100, 2_448, "truncate_tool_results_only"),  # exactly 400 + 2048
        (100, 2_447, "compact_then_truncate"),
        (2_000, 12_000, "truncate_tool_results_only"),  # exactly ceil(8000 · 1.5)
        (2_000, 11_999, "compact_then_truncate"),
        (1_024, 6_144, "truncate_tool_results_only"),  # both terms equal 6144
        (1_024, 6_143, "compact_then_truncate"),
        (5_000, 0, "compact_only"),
        (0, 0, "fits"),
        (0, 50_000, "fits"),
    ],
)
def test_route_thresholds(overflow, reducible, route):
    """Pin the thresholds with a fake estimator and a tool result of exact reducible size."""
    cap = 1_000
    messages = [tool_result("y" * (cap + reducible))] if reducible else []

    def estimator(messages, *, system_prompt=None, prompt=""):
        return 10_000 + overflow

    result = should_preemptively_compact_before_prompt(
        messages=messages,
        context_token_budget=10_000,
        reserve_tokens=0,
        tool_result_max_chars=cap,
        estimator=estimator,
    )
    assert result.overflow_tokens == overflow
    assert result.tool_result_reducible_chars == reducible
    assert result.route == route
    assert result.should_compact is (route in ("compact_only", "compact_then_truncate"))


def test_estimator_receives_the_prompt_inputs():
    calls = []

    def estimator(messages, *, system_prompt=None, prompt=""):
        calls.append((len(messages), system_prompt, prompt))
        return 3

    result = should_preemptively_compact_before_prompt(
        messages=[history("a")],
        system_prompt="sys",
        prompt="go",
        context_token_budget=100,
        reserve_tokens=0,
        estimator=estimator,
    )
    assert calls == [(1, "sys", "go")]
    assert result.estimated_prompt_tokens == 3


def test_openclaw_parameter_object():
    params = {
        "messages": [history(VERBOSE_HISTORY)],
        "systemPrompt": VERBOSE_SYSTEM,
        "prompt": VERBOSE_PROMPT,
        "contextTokenBudget": 500,
        "reserveTokens": 50,
    }
    assert should_preemptively_compact_before_prompt(params) == decide(
        params["messages"],
        system_prompt=VERBOSE_SYSTEM,
        prompt=VERBOSE_PROMPT,
        context_token_budget=500,
        reserve_tokens=50,
    )


def test_decision_to_dict_uses_openclaw_names():
    result = decide([history("short history")], context_token_budget=10_000, reserve_tokens=1_000)
    assert result.to_dict() == {
        "route": "fits",
        "shouldCompact": False,
        "estimatedPromptTokens": result.estimated_prompt_tokens,
        "pressureSource": "transcript_estimate",
        "promptBudgetBeforeReserve": 9_000,
        "overflowTokens": 0,
        "toolResultReducibleChars": 0,
        "effectiveReserveTokens": 1_000,
    }


def test_precheck_log_line():
    result = decide([history("short history")], context_token_budget=10_000, reserve_tokens=1_000)
    line = format_pre_prompt_precheck_log(
        result,
        session_key="discord:channel:thread",
        session_id="session-1",
        provider="anthropic",
        model_id="claude-opus-4-6",
        message_count=1,
        unwindowed_message_count=3,
        context_token_budget=10_000,
        reserve_tokens=1_000,
        session_file="sessions/session-1.json",
    )
    assert line == (
        "[context-overflow-precheck] pre-prompt check sessionKey=discord:channel:thread "
        "provider=anthropic/claude-opus-4-6 route=fits "
        f"estimatedPromptTokens={result.estimated_prompt_tokens} pressureSource=transcript_estimate "
        "promptBudgetBeforeReserve=9000 overflowTokens=0 toolResultReducibleChars=0 "
        "reserveTokens=1000 effectiveReserveTokens=1000 contextTokenBudget=10000 messages=1 "
        "unwindowedMessages=3 sessionFile=sessions/session-1.json"
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"context_token_budget": 100, "reserve_tokens": 0}, TypeError, "messages"),
        ({"messages": [], "reserve_tokens": 0}, TypeError, "context_token_budget"),
        ({"messages": [], "context_token_budget": 100}, TypeError, "reserve_tokens"),
        (
            {"messages": [], "context_token_budget": math.nan, "reserve_tokens": 0},
            ValueError,
            "context_token_budget",
        ),
        (
            {"messages": [], "context_token_budget": 100, "reserve_tokens": math.inf},
            ValueError,
            "reserve_tokens",
        ),
        (
            {"messages": [], "context_token_budget": "100", "reserve_tokens": 0},
            TypeError,
            "context_token_budget",
        ),
        (
            {
                "messages": [],
                "context_token_budget": 100,
                "reserve_tokens": 0,
                "estimator": lambda *a, **k: None,
            },
            TypeError,
            "estimator",
        ),
    ],
)
def test_bad_input_is_named(kwargs, error, name):
    with pytest.raises(error, match=name):
        should_preemptively_compact_before_prompt(**kwargs)
