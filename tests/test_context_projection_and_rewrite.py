"""Stable bytes for truncated tool results, and the session rewrite with ``max_chars_override``
and its transcript-update event (issue 15 §4):

* the guard projects a heavy tool result to the same bytes on every later request, even when
  the budget grows; it re-projects only when the budget shrinks below it or the original
  changes;
* re-truncating the same history reproduces the same bytes (in memory and on disk);
* ``truncate_oversized_tool_results_in_session`` honours ``max_chars_override`` and announces
  a rewrite that changed the file to the transcript-update listeners, once.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.context import truncate_oversized_tool_results_in_messages
from openclaw_runtime.context.guard import (
    ToolResultContextGuard,
    estimate_tool_result_context_chars,
    truncate_tool_result_to_chars,
)
from openclaw_runtime.context.projection import (
    ToolResultProjectionState,
    tool_result_fingerprint,
)
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.runner.session_ops import truncate_oversized_tool_results_in_session
from openclaw_runtime.transcript.update_events import (
    SessionTranscriptUpdate,
    emit_session_transcript_update,
    subscribe_session_transcript_updates,
)

pytestmark = pytest.mark.anyio


def result(call_id: str, size: int, *, marker: str = "line") -> ToolResultMessage:
    body = "".join(f"{marker} {i}\n" for i in range(size // 8)) + "Traceback: error at the end"
    return ToolResultMessage(
        tool_call_id=call_id,
        tool_name="read",
        content=[TextContent(text=body)],
        is_error=False,
    )


def call(call_id: str) -> AssistantMessage:
    return AssistantMessage(
        content=[ToolCall(id=call_id, name="read", arguments={})],
        api="fake",
        provider="fake",
        model="m",
        stop_reason="toolUse",
    )


def dump(messages: list[Any]) -> list[str]:
    return [m.model_dump_json() for m in messages]


def project(state: ToolResultProjectionState, message: Any, limit: int) -> Any:
    return state.project(
        message, limit, truncate_tool_result_to_chars, estimate_tool_result_context_chars
    )


# --------------------------------------------------------------------------- projection state


def test_the_same_original_keeps_its_projection_while_it_fits():
    state = ToolResultProjectionState()
    original = result("c1", 40_000)
    first = project(state, original, 4_000)
    assert first is not original and estimate_tool_result_context_chars(first) <= 4_000
    assert project(state, original, 4_000) is first
    # more room later: the same bytes are sent again, not a longer re-truncation
    assert project(state, original, 20_000).model_dump_json() == first.model_dump_json()
    # less room than the projection takes: projected again, smaller
    smaller = project(state, original, 2_000)
    assert (
        estimate_tool_result_context_chars(smaller)
        <= 2_000
        < (estimate_tool_result_context_chars(first))
    )
    assert project(state, original, 2_000) is smaller


def test_a_changed_original_is_projected_again():
    state = ToolResultProjectionState()
    first = project(state, result("c1", 40_000), 4_000)
    changed = project(state, result("c1", 40_000, marker="other"), 4_000)
    assert changed.model_dump_json() != first.model_dump_json()
    assert "other" in changed.content[0].text


def test_results_that_fit_pass_through_and_are_not_remembered():
    state = ToolResultProjectionState()
    small = result("c1", 200)
    assert project(state, small, 4_000) is small
    assert len(state) == 0
    user = UserMessage(content="hi")
    assert project(state, user, 10) is user


def test_forget_and_fingerprint():
    state = ToolResultProjectionState()
    project(state, result("a", 40_000), 4_000)
    project(state, result("b", 40_000), 4_000)
    state.forget("a")
    assert len(state) == 1
    state.forget()
    assert len(state) == 0
    assert tool_result_fingerprint(result("a", 100)) == tool_result_fingerprint(result("a", 100))
    assert tool_result_fingerprint(result("a", 100)) != tool_result_fingerprint(result("b", 100))


async def test_the_guard_resends_identical_bytes_as_history_grows():
    guard = ToolResultContextGuard(context_window_tokens=4_000)
    history: list[Any] = [UserMessage(content="go"), call("c1"), result("c1", 60_000)]
    first = await guard(list(history))
    history += [call("c2"), result("c2", 60_000)]
    # a larger budget must not re-truncate the result already sent
    guard.max_single_tool_result_chars *= 3
    second = await guard(list(history))
    assert second[2].model_dump_json() == first[2].model_dump_json()
    assert second[2] is not history[2]  # still a projection, not the full original
    assert history[2].content[0].text.startswith("line 0")  # the original is untouched


async def test_without_state_a_bigger_budget_would_change_the_bytes():
    """The control that shows what the state prevents."""
    original = result("c1", 60_000)
    small = truncate_tool_result_to_chars(original, 8_000)
    large = truncate_tool_result_to_chars(original, 24_000)
    assert small.model_dump_json() != large.model_dump_json()


def test_re_truncating_the_same_history_reproduces_the_same_bytes():
    history: list[Any] = [UserMessage(content="go")]
    for index in range(4):
        history += [call(f"c{index}"), result(f"c{index}", 30_000)]
    once, stats = truncate_oversized_tool_results_in_messages(history, 8_000)
    twice, again = truncate_oversized_tool_results_in_messages(once, 8_000)
    assert stats.truncated_count > 0 and again.truncated_count == 0
    assert dump(twice) == dump(once)


# --------------------------------------------------------------------------- session rewrite


async def _seed(runtime: Runtime, session_id: str, sizes: list[int]) -> None:
    session = await runtime.session_store.open_or_create(session_id, cwd=str(Path.cwd()))
    try:
        await session.append_message(UserMessage(content="read everything"))
        for index, size in enumerate(sizes):
            await session.append_message(call(f"c{index}"))
            await session.append_message(result(f"c{index}", size))
        await session.flush()
    finally:
        await session.aclose()


async def test_session_rewrite_honours_max_chars_override_and_announces_it(
    runtime_factory: Any,
):
    runtime = runtime_factory()
    await _seed(runtime, "s-trunc", [30_000, 500])
    updates: list[SessionTranscriptUpdate] = []
    unsubscribe = subscribe_session_transcript_updates(updates.append)
    try:
        session = await runtime.session_store.open("s-trunc")
        try:
            outcome = await truncate_oversized_tool_results_in_session(
                session, 200_000, max_chars_override=5_000
            )
            path = anyio.Path(str(session.path))
            after_first = await path.read_bytes()
            tool_texts = [
                m.content[0].text
                for m in session.build_session_context().messages
                if isinstance(m, ToolResultMessage)
            ]
            # the same history cut again: nothing changes, nothing is announced
            again = await truncate_oversized_tool_results_in_session(
                session, 200_000, max_chars_override=5_000
            )
            assert await path.read_bytes() == after_first
        finally:
            await session.aclose()
    finally:
        unsubscribe()
    # 200k tokens would allow the 30k result as it is: only the override cut it
    assert outcome.truncated == 1 and outcome.rewritten_entries == 1
    assert len(tool_texts[0]) <= 5_000 < 30_000 and "more characters truncated" in tool_texts[0]
    assert len(tool_texts[1]) < 1_000  # the small one is untouched
    assert again.truncated == 0 and again.rewritten_entries == 0
    (update,) = updates
    assert update.session_file == str(path)
    assert (update.session_id, update.reason, update.rewritten_entries) == (
        "s-trunc",
        "tool_result_truncation",
        1,
    )


async def test_without_override_the_window_decides(runtime_factory: Any):
    runtime = runtime_factory()
    await _seed(runtime, "s-window", [30_000])
    updates: list[SessionTranscriptUpdate] = []
    unsubscribe = subscribe_session_transcript_updates(updates.append)
    try:
        session = await runtime.session_store.open("s-window")
        try:
            outcome = await truncate_oversized_tool_results_in_session(session, 200_000)
        finally:
            await session.aclose()
    finally:
        unsubscribe()
    assert outcome.truncated == 0 and updates == []


def test_a_raising_listener_is_isolated(caplog: Any):
    seen: list[str] = []

    def broken(update: SessionTranscriptUpdate) -> None:
        raise RuntimeError("ui crashed")

    first = subscribe_session_transcript_updates(broken)
    second = subscribe_session_transcript_updates(lambda u: seen.append(u.session_file))
    try:
        with caplog.at_level(logging.ERROR):
            emit_session_transcript_update(SessionTranscriptUpdate("/tmp/s.jsonl"))
    finally:
        first()
        second()
    assert seen == ["/tmp/s.jsonl"]
    assert any("listener" in r.getMessage() for r in caplog.records)
    emit_session_transcript_update(SessionTranscriptUpdate("/tmp/s.jsonl"))
    assert seen == ["/tmp/s.jsonl"]  # unsubscribed: not called again


def test_an_update_names_its_file():
    with pytest.raises(ValueError, match="session file"):
        emit_session_transcript_update(SessionTranscriptUpdate(""))
