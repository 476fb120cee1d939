"""The mid-turn precheck keeps the history's token sum across the requests of a tool loop.

With the default estimator the guard adds the tokens of what a request added to the sum of
the previous request instead of summing the whole history again. It must decide exactly as
the whole-history estimate does: the same "fits" at every request, the signal at the same
request, and a fresh sum when the history is not a continuation (rewritten, compacted).
"""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.context.guard import (
    MidTurnPrecheckOptions,
    MidTurnPrecheckSignal,
    ToolResultContextGuard,
    _HistoryTokens,
)
from openclaw_runtime.context.tokens import estimate_llm_boundary_token_pressure
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

pytestmark = pytest.mark.anyio


def group(n: int, size: int) -> list[Any]:
    call = ToolCall(id=f"c{n}", name="read", arguments={"path": f"f{n}"})
    return [
        AssistantMessage(content=[call], stop_reason="toolUse"),
        ToolResultMessage(
            tool_call_id=call.id, tool_name="read", content=[TextContent(text="z" * size)]
        ),
    ]


@pytest.mark.parametrize("prompt", ["", "and one more thing", "   "], ids=["none", "text", "blank"])
@pytest.mark.parametrize("system_prompt", [None, "", "You are terse."])
def test_the_kept_sum_is_the_whole_history_estimate(system_prompt: Any, prompt: str) -> None:
    tally = _HistoryTokens()
    messages: list[Any] = [UserMessage(content="go")]
    for n in range(30):
        messages.extend(group(n, 37 * n))
        expected = estimate_llm_boundary_token_pressure(
            messages, system_prompt=system_prompt, prompt=prompt
        )
        assert tally(list(messages), system_prompt=system_prompt, prompt=prompt) == expected
    # not a continuation: the middle was rewritten, then the history shrank
    rewritten = [*messages[:5], UserMessage(content="summary " * 40), *messages[6:]]
    for history in (rewritten, rewritten[:7], [*rewritten[:7], *group(99, 5)]):
        expected = estimate_llm_boundary_token_pressure(
            history, system_prompt=system_prompt, prompt=prompt
        )
        assert tally(history, system_prompt=system_prompt, prompt=prompt) == expected


async def first_signal(guard: ToolResultContextGuard, steps: list[list[Any]]) -> int | None:
    for index, messages in enumerate(steps):
        try:
            await guard(messages, None)
        except MidTurnPrecheckSignal:
            return index
    return None


async def test_the_precheck_signals_at_the_same_request_as_the_whole_history_estimate() -> None:
    steps: list[list[Any]] = []
    messages: list[Any] = [UserMessage(content="go")]
    for n in range(60):
        messages = [*messages, *group(n, 400)]
        steps.append(messages)

    def options() -> MidTurnPrecheckOptions:
        return MidTurnPrecheckOptions(
            context_token_budget=6_000,
            reserve_tokens=500,
            get_system_prompt=lambda: "You are terse.",
            get_pre_prompt_message_count=lambda: 1,
        )

    kept = ToolResultContextGuard(context_window_tokens=200_000, mid_turn_precheck=options())
    whole = ToolResultContextGuard(
        context_window_tokens=200_000,
        mid_turn_precheck=options(),
        estimator=estimate_llm_boundary_token_pressure,  # sums the whole history each time
    )
    at = await first_signal(kept, steps)
    assert at is not None and at > 5  # it fit for a while, then did not
    assert at == await first_signal(whole, steps)
    assert kept.last_signal is not None and whole.last_signal is not None
    assert kept.last_signal.request == whole.last_signal.request
