"""Guards of successive attempts on one session share their tool-result projections."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from openclaw_runtime.context.guard import ProjectionMemo, ToolResultContextGuard
from openclaw_runtime.context.projection import ToolResultProjectionState
from openclaw_runtime.messages import TextContent, ToolResultMessage, UserMessage
from openclaw_runtime.runner.projection_memo import _MEMOS, session_projection_memo


class Counting(ToolResultProjectionState):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def project(self, message: Any, max_chars: int, project: Any, measure: Any) -> Any:
        self.calls += 1
        return super().project(message, max_chars, project, measure)


def history(count: int) -> list[Any]:
    out: list[Any] = []
    for n in range(count):
        out.append(UserMessage(content=f"q{n}"))
        out.append(
            ToolResultMessage(
                tool_call_id=f"c{n}", tool_name="read", content=[TextContent(text="x" * 90_000)]
            )
        )
    return out


@pytest.mark.anyio
async def test_a_second_attempt_on_the_same_history_projects_only_what_is_new() -> None:
    memo = ProjectionMemo()
    messages = history(20)
    first_state, second_state = Counting(), Counting()
    first = ToolResultContextGuard(
        context_window_tokens=8_192, projection_state=first_state, memo=memo
    )
    out1 = await first(messages, None)
    assert first_state.calls == 40
    second = ToolResultContextGuard(
        context_window_tokens=8_192, projection_state=second_state, memo=memo
    )
    extra = UserMessage(content="one more")
    out2 = await second([*messages, extra], None)
    assert second_state.calls == 1  # only the new message
    assert out2[:-1] == out1 and all(a is b for a, b in zip(out1, out2, strict=False))
    # an unshared guard projects everything again, to the same result
    third_state = Counting()
    alone = ToolResultContextGuard(context_window_tokens=8_192, projection_state=third_state)
    assert await alone([*messages, extra], None) == out2 and third_state.calls == 41


class Plain:
    """Stands in for a session object."""


class Unhashable:
    __hash__ = None  # type: ignore[assignment]


def test_one_memo_per_session_object_released_with_it() -> None:
    one, two = Plain(), Plain()
    assert session_projection_memo(one) is session_projection_memo(one)
    assert session_projection_memo(one) is not session_projection_memo(two)
    memo = weakref.ref(session_projection_memo(one))
    del one
    gc.collect()
    assert memo() is None  # released with its session
    assert session_projection_memo(two) in _MEMOS.values()
    odd = Unhashable()
    assert session_projection_memo(odd) is not session_projection_memo(odd)


@pytest.mark.anyio
async def test_a_growing_tool_loop_projects_each_message_once_and_matches_a_fresh_guard() -> None:
    memo = ProjectionMemo()
    state = Counting()
    guard = ToolResultContextGuard(context_window_tokens=8_192, projection_state=state, memo=memo)
    messages: list[Any] = [UserMessage(content="go")]
    for n in range(25):
        messages.append(
            ToolResultMessage(
                tool_call_id=f"c{n}", tool_name="read", content=[TextContent(text="y" * 60_000)]
            )
        )
        before = state.calls
        out = await guard(list(messages), None)
        assert state.calls - before == (2 if n == 0 else 1)  # only what was added
        fresh = ToolResultContextGuard(context_window_tokens=8_192)
        assert out == await fresh(list(messages), None)
    # the caller may change the list it got back: the memo keeps its own
    out.clear()
    # a history rewritten in the middle (compaction, truncation) is not a continuation:
    # the replaced message is projected, the others are found by object
    replaced = ToolResultMessage(
        tool_call_id="c3", tool_name="read", content=[TextContent(text="short")]
    )
    rewritten = [*messages[:4], replaced, *messages[5:]]
    before = state.calls
    again = await guard(rewritten, None)
    assert state.calls - before == 1
    assert again == await ToolResultContextGuard(context_window_tokens=8_192)(rewritten, None)
    # another limit projects everything again
    wider = ToolResultContextGuard(context_window_tokens=200_000, projection_state=state, memo=memo)
    before = state.calls
    await wider(rewritten, None)
    assert state.calls - before == len(rewritten)
