"""``ProjectionMemo.project_all(..., changes=...)``: a message of a type the projection never
changes is its own projection without a call. The guard passes ``ToolResultMessage``: a first
request after a restart projects only its tool results, and sends what it sent before.
Random histories (tool results that fit and that are cut, every other role) compare the guard
with the reference projection, message by message and by identity, on a fresh and a reused
memo."""

from __future__ import annotations

import random
from typing import Any

import pytest

from openclaw_runtime.context.guard import (
    ProjectionMemo,
    ToolResultContextGuard,
    estimate_tool_result_context_chars,
    truncate_tool_result_to_chars,
)
from openclaw_runtime.context.projection import ToolResultProjectionState
from openclaw_runtime.messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    OpaqueMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def _message(rng: random.Random, index: int) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        return UserMessage(content=f"question {index}")
    if kind == 1:
        return AssistantMessage(
            content=[
                TextContent(text="a" * rng.randrange(0, 9_000)),
                ToolCall(id=f"c{index}", name="read"),
            ]
        )
    if kind == 2:
        return CustomMessage(custom_type="note", content="x" * rng.randrange(0, 9_000))
    if kind == 3:
        return OpaqueMessage(role="somethingElse")
    blocks: list[Any] = [TextContent(text="line\n" * rng.randrange(0, 4_000))]
    if rng.random() < 0.3:
        blocks.append(ImageContent(data="AAAA", mime_type="image/png"))
    return ToolResultMessage(tool_call_id=f"c{index}", tool_name="read", content=blocks)


def _reference(messages: list[Any], limit: int) -> list[Any]:
    state = ToolResultProjectionState()
    return [
        state.project(m, limit, truncate_tool_result_to_chars, estimate_tool_result_context_chars)
        for m in messages
    ]


def _same(got: list[Any], want: list[Any], source: list[Any]) -> None:
    assert len(got) == len(want)
    for g, w, m in zip(got, want, source, strict=True):
        assert g == w
        assert (g is m) == (w is m)  # kept as it is exactly when the reference kept it


@pytest.mark.parametrize("seed", range(30))
def test_the_guard_projects_as_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    messages = [_message(rng, i) for i in range(rng.randrange(1, 60))]
    guard = ToolResultContextGuard(context_window_tokens=rng.choice([2_000, 8_000, 200_000]))
    limit = guard.max_single_tool_result_chars
    got = guard._project_all(messages, limit)
    _same(got, _reference(messages, limit), messages)
    assert any(g is not m for g, m in zip(got, messages, strict=True)) or all(
        estimate_tool_result_context_chars(m) <= limit for m in messages
    )
    # a second request after the history was rebuilt (new objects, same projections)
    rebuilt = [m.model_copy(deep=True) for m in messages]
    _same(guard._project_all(rebuilt, limit), _reference(rebuilt, limit), rebuilt)


class _Counting:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, message: Any) -> Any:
        self.seen.append(message)
        return ("projected", id(message))


@pytest.mark.parametrize("seed", range(10))
def test_only_the_changed_types_are_projected(seed: int) -> None:
    rng = random.Random(seed)
    messages = [_message(rng, i) for i in range(40)]
    project = _Counting()
    got = ProjectionMemo().project_all(messages, 100, project, ToolResultMessage)
    assert project.seen == [m for m in messages if isinstance(m, ToolResultMessage)]
    for g, m in zip(got, messages, strict=True):
        assert g == (("projected", id(m)) if isinstance(m, ToolResultMessage) else m)
    # without ``changes`` every message is projected, as before
    plain = _Counting()
    ProjectionMemo().project_all(messages, 100, plain)
    assert plain.seen == messages


def test_a_passed_through_message_is_memoized_like_a_projected_one() -> None:
    rng = random.Random(7)
    messages = [_message(rng, i) for i in range(30)]
    memo = ProjectionMemo()
    memo.project_all(messages, 100, _Counting(), ToolResultMessage)
    assert sorted(memo._entries) == sorted(id(m) for m in messages)
    project = _Counting()
    memo._last = None  # not the previous request: looked up one by one
    memo.project_all(list(reversed(messages)), 100, project, ToolResultMessage)
    assert project.seen == []


class _Recording(ToolResultProjectionState):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def project(self, message: Any, *args: Any) -> Any:
        self.seen.append(message)
        return super().project(message, *args)


@pytest.mark.parametrize("seed", range(5))
def test_a_projection_state_subclass_still_sees_every_message(seed: int) -> None:
    rng = random.Random(seed)
    messages = [_message(rng, i) for i in range(30)]
    state = _Recording()
    guard = ToolResultContextGuard(context_window_tokens=8_000, projection_state=state)
    limit = guard.max_single_tool_result_chars
    _same(guard._project_all(messages, limit), _reference(messages, limit), messages)
    assert state.seen == messages


@pytest.mark.parametrize("seed", range(20))
def test_a_growing_request_projects_only_the_changed_types_it_adds(seed: int) -> None:
    """The tool-loop path (``ProjectionMemo._extend``: each request resends the previous one
    and adds some) passes the other types through too: the same outputs and memo as a fresh
    memo's whole-request projection, and ``project`` called only for the added results."""
    rng = random.Random(seed)
    messages = [_message(rng, i) for i in range(60)]
    memo = ProjectionMemo()
    cut = 0
    while cut < len(messages):
        cut = min(len(messages), cut + rng.randrange(1, 6))
        project = _Counting()
        before = len(memo._last[0]) if memo._last is not None else 0
        got = memo.project_all(messages[:cut], 100, project, ToolResultMessage)
        added = messages[before:cut] if before else messages[:cut]
        assert project.seen == [m for m in added if isinstance(m, ToolResultMessage)]
        want = ProjectionMemo().project_all(messages[:cut], 100, _Counting(), ToolResultMessage)
        assert len(got) == len(want)
        for g, w, m in zip(got, want, messages[:cut], strict=True):
            assert g == w
            assert (g is m) == (w is m)
        assert sorted(memo._entries) == sorted(id(m) for m in messages[:cut])
    # the guard itself, request after request, against the reference projection
    guard = ToolResultContextGuard(context_window_tokens=rng.choice([2_000, 8_000, 200_000]))
    limit = guard.max_single_tool_result_chars
    for end in range(1, len(messages) + 1, 3):
        source = messages[:end]
        _same(guard._project_all(source, limit), _reference(source, limit), source)
