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


@pytest.mark.parametrize("seed", range(40))
def test_a_replaced_recent_message_keeps_the_sum_exact(seed: int) -> None:
    """A request whose recent messages are fresh copies (a sanitizer re-stripping a tool
    result) or another tail takes the old tail out of the sum: always the whole-history
    estimate, whatever is replaced, cut or added."""
    import random

    rng = random.Random(seed)
    tally = _HistoryTokens()
    messages: list[Any] = [UserMessage(content="go")]
    for n in range(25):
        action = rng.random()
        if action < 0.5 or len(messages) < 3:
            messages = [*messages, *group(n, rng.randrange(0, 300))]
        elif action < 0.8:  # a recent message replaced by a copy (equal or not)
            index = rng.randrange(max(1, len(messages) - 4), len(messages))
            copy = messages[index].model_copy(deep=True)
            if rng.random() < 0.5 and isinstance(copy, ToolResultMessage):
                copy.content = [TextContent(text="y" * rng.randrange(0, 200))]
            messages = [*messages[:index], copy, *messages[index + 1 :]]
        elif action < 0.9:  # the tail cut
            messages = messages[: rng.randrange(1, len(messages) + 1)]
        else:  # the same messages again
            messages = list(messages)
        expected = estimate_llm_boundary_token_pressure(messages, system_prompt="s", prompt="")
        assert tally(messages, system_prompt="s") == expected, (seed, n)


def test_a_replaced_recent_message_measures_from_there_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from openclaw_runtime.context import guard as guard_module
    from openclaw_runtime.context import tokens

    measured: list[Any] = []

    def counting(real: Any) -> Any:
        def estimate(message: Any) -> int:
            measured.append(message)
            return int(real(message))

        return estimate

    for name in ("estimate_message_token_pressure", "estimate_new_message_token_pressure"):
        monkeypatch.setattr(guard_module, name, counting(getattr(tokens, name)))
    history: list[Any] = [UserMessage(content="go")]
    for n in range(40):
        history.extend(group(n, 50))
    tally = _HistoryTokens()
    tally(history)
    assert len(measured) == len(history)
    measured.clear()
    copy = history[-1].model_copy()  # the last result, stripped again: a fresh object
    later = [*history[:-1], copy, *group(99, 10)]
    tally(later)
    # the old last result out of the sum, the copy and the new group in: nothing else
    assert measured == [history[-1], *later[-3:]]
