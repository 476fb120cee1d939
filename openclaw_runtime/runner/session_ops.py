"""Session surgery a run performs while it holds the session's lane.

* ``compact_with_engine`` — explicit compaction through the context engine (under the safety
  timeout); the engine may delegate back to the runtime's own summarization, which runs
  *directly* here because the caller already holds the lane (the queued variant on
  ``Runtime.compact_session`` would wait for itself).
* ``truncate_oversized_tool_results_in_session`` — rewrite the branch with oversized tool
  results cut down (head and tail kept); the originals stay in the file on the old branch.
* ``set_aside_failed_tail`` — move the leaf back over a failed turn (error/aborted assistant
  and its interruption note) so a retry does not replay it; nothing is deleted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..abort import AbortSignal
from ..backends import Session
from ..context import truncate_oversized_tool_results_in_messages
from ..context.compaction import (
    DEFAULT_SUMMARY_MAX_TOKENS,
    SummaryModel,
    compact_session_direct,
    messages_with_entries,
)
from ..context.engine import (
    CompactParams,
    CompactResult,
    ContextEngineRuntimeContext,
    MaintenanceResult,
)
from ..context.lifecycle import compact_context_engine_with_safety_timeout
from ..messages import AssistantMessage, CustomMessage, UserMessage
from ..transcript.session_context import entry_message
from ..transcript.update_events import SessionTranscriptUpdate, emit_session_transcript_update
from .checkin import CheckinRun, flush_session

__all__ = [
    "TruncationOutcome",
    "branch_messages_with_entries",
    "compact_with_engine",
    "set_aside_failed_tail",
    "set_aside_orphan_user_message",
    "transcript_rewriter",
    "truncate_oversized_tool_results_in_session",
]


def branch_messages_with_entries(session: Session) -> list[tuple[dict[str, Any], Any]]:
    """(entry, message) for every message of the active context, in order."""
    return messages_with_entries(session, session.get_branch())


def transcript_rewriter(session: Session) -> Callable[..., Awaitable[MaintenanceResult]]:
    """The ``rewrite_transcript_entries`` callback an engine's runtime context offers for
    ``session``: rewrite, flush, and report what changed."""

    async def rewrite_transcript_entries(
        replacements: Any = None, **kwargs: Any
    ) -> MaintenanceResult:
        wanted = replacements if replacements is not None else kwargs.get("replacements", {})
        result = await session.rewrite_transcript_entries(wanted)
        await session.flush()
        return MaintenanceResult(
            result.changed, result.bytes_freed, result.rewritten_entries, result.reason
        )

    return rewrite_transcript_entries


async def compact_with_engine(
    engine: Any,
    session: Session,
    summary_models: Sequence[SummaryModel],
    *,
    session_key: str | None,
    token_budget: int | None,
    current_token_count: int | None,
    force: bool,
    keep_recent_tokens: int,
    custom_instructions: str | None = None,
    abort_signal: AbortSignal | None = None,
    timeout_s: float | None = None,
    window_tokens: int | None = None,
) -> CompactResult:
    """Compact through ``engine`` with the runtime's summarization available to it.

    ``window_tokens`` (the window the run plans with) bounds each summarization request to
    half of it and the summary to a quarter, so a small-window model can summarize itself.
    """
    chunk = max(256, window_tokens // 2) if window_tokens else None
    summary_max = (
        min(DEFAULT_SUMMARY_MAX_TOKENS, max(256, window_tokens // 4))
        if window_tokens
        else DEFAULT_SUMMARY_MAX_TOKENS
    )

    async def compact_session(**kwargs: Any) -> CompactResult:
        return await compact_session_direct(
            session,
            summary_models,
            keep_recent_tokens=keep_recent_tokens,
            force=bool(kwargs.get("force", force)),
            token_budget=kwargs.get("token_budget", token_budget),
            current_token_count=kwargs.get("current_token_count", current_token_count),
            custom_instructions=kwargs.get("custom_instructions", custom_instructions),
            summary_max_tokens=summary_max,
            max_input_tokens=chunk,
            abort_signal=kwargs.get("abort_signal", abort_signal),
        )

    params = CompactParams(
        session_id=session.session_id,
        session_file=str(session.path),
        session_key=session_key,
        token_budget=token_budget,
        force=force,
        current_token_count=current_token_count,
        custom_instructions=custom_instructions,
        runtime_context=ContextEngineRuntimeContext(
            token_budget=token_budget,
            current_token_count=current_token_count,
            compact_session=compact_session,
            rewrite_transcript_entries=transcript_rewriter(session),
        ),
        abort_signal=abort_signal,
    )
    if timeout_s is None:
        return await compact_context_engine_with_safety_timeout(engine, params)
    return await compact_context_engine_with_safety_timeout(engine, params, timeout_s=timeout_s)


@dataclass(frozen=True, slots=True)
class TruncationOutcome:
    """How many tool results were cut and how many entries were rewritten."""

    truncated: int
    rewritten_entries: int
    reason: str | None = None


async def truncate_oversized_tool_results_in_session(
    session: Session,
    context_window_tokens: int,
    *,
    max_chars_override: int | None = None,
    run: CheckinRun | None = None,
) -> TruncationOutcome:
    """Cut oversized tool results on the active branch (OpenClaw's
    ``truncateOversizedToolResultsInSession``); ``max_chars_override`` replaces the per-result
    cap derived from the window. A rewrite that changed the file is announced to the
    transcript-update listeners. A failed flush is ``run``'s error (``flush_session``)."""
    pairs = branch_messages_with_entries(session)
    messages = [message for _, message in pairs]
    updated, stats = truncate_oversized_tool_results_in_messages(
        messages, context_window_tokens, max_chars_override=max_chars_override
    )
    replacements = {
        str(entry["id"]): new
        for (entry, old), new in zip(pairs, updated, strict=True)
        if new is not old and entry.get("type") == "message"
    }
    if not replacements:
        return TruncationOutcome(0, 0, stats.reason or "nothing to truncate")
    result = await session.rewrite_transcript_entries(replacements)
    await flush_session(run, session, "tool-result truncation")
    if result.changed:
        emit_session_transcript_update(
            SessionTranscriptUpdate(
                str(session.path),
                session.session_id,
                "tool_result_truncation",
                result.rewritten_entries,
            )
        )
    return TruncationOutcome(stats.truncated_count, result.rewritten_entries, result.reason)


def _is_failed_turn(message: Any) -> bool:
    return isinstance(message, AssistantMessage) and message.stop_reason in ("error", "aborted")


async def set_aside_failed_tail(session: Session) -> int:
    """Move the leaf before trailing failed turns; returns how many messages were set aside.

    A failed turn is an ``error``/``aborted`` assistant message, plus the hidden
    interruption note after an abort. Entries that are not messages (a compaction, a model
    change) stop the walk: undoing them is never right.
    """
    branch = session.get_branch()
    index = len(branch)
    moved = 0
    while index > 0:
        entry = branch[index - 1]
        if entry.get("type") != "message":
            break
        message = entry_message(entry)
        if isinstance(message, CustomMessage) and index >= 2:
            previous = (
                entry_message(branch[index - 2])
                if branch[index - 2].get("type") == "message"
                else None
            )
            if _is_failed_turn(previous):
                index -= 1
                moved += 1
                continue
            break
        if not _is_failed_turn(message):
            break
        index -= 1
        moved += 1
    if moved == 0:
        return 0
    parent = branch[index - 1]["id"] if index > 0 else None
    if parent is None:
        await session.reset_leaf()
    else:
        await session.branch(str(parent))
    return moved


async def set_aside_orphan_user_message(session: Session) -> bool:
    """A trailing user message left by a run that died before answering: move the leaf
    before it so the new prompt does not follow another user turn."""
    branch = session.get_branch()
    if not branch or branch[-1].get("type") != "message":
        return False
    if not isinstance(entry_message(branch[-1]), UserMessage):
        return False
    parent = branch[-1].get("parentId")
    # a parent that is gone (its line was damaged and kept aside) starts the branch afresh
    if parent and session.get_entry(str(parent)) is not None:
        await session.branch(str(parent))
    else:
        await session.reset_leaf()
    return True
