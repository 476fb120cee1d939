"""The runtime's own compaction: summarize older history, keep a recent tail.

What it guarantees:

* the kept tail starts at a user or assistant message, never at a tool result, so no tool call
  is separated from its result;
* duplicate user messages (retries, client resends) are removed from what gets summarized
  (OpenClaw's rule, ``dedupe_duplicate_user_messages_for_compaction``);
* a previous compaction summary is carried forward into the new one;
* the result is a ``compaction`` entry in the session (summary, first kept entry id, tokens
  before, and tokens after in its details) — nothing is deleted from the file;
* a failing summarization model falls back along the configured chain, and any failure ends
  as ``CompactResult(ok=False, reason=...)`` rather than an exception.

Pure parts (``find_compaction_cut``, ``serialize_conversation``, ``build_summary_prompt``) are
separate from the model call so they can be tested by tables.

Layering: ``context`` sits above ``transcript``. Compaction reads a session branch the way a
model call sees it (``transcript.session_context``); ``transcript`` never imports ``context``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..abort import AbortSignal
from ..llm import Context, Model, StreamFn, StreamOptions
from ..messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..transcript.session_context import build_session_context, entry_message
from .dedupe import dedupe_duplicate_user_messages_for_compaction
from .engine import CompactionDetails, CompactResult
from .tokens import estimate_llm_boundary_token_pressure

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS",
    "SUMMARY_SYSTEM_PROMPT",
    "CompactionCut",
    "SummaryModel",
    "build_summary_prompt",
    "compact_session_direct",
    "find_compaction_cut",
    "messages_with_entries",
    "serialize_conversation",
    "split_for_summary",
]

DEFAULT_KEEP_RECENT_TOKENS = 20_000
DEFAULT_SUMMARY_MAX_TOKENS = 8_192
TOOL_RESULT_EXCERPT_CHARS = 2_000

SUMMARY_SYSTEM_PROMPT = (
    "You condense a long working conversation between a user and an AI assistant into a "
    "summary the assistant will continue from. The summary replaces the older messages, so "
    "keep everything needed to carry on: facts, decisions and their reasons, file paths, "
    "commands, identifiers, open questions and the exact next steps. Leave out pleasantries "
    "and repetition. Write plain text with the headings: Goal, Constraints and preferences, "
    "Progress, Key decisions, Open issues, Next steps."
)


@dataclass(frozen=True, slots=True)
class CompactionCut:
    """Where to cut: messages before ``index`` are summarized, the rest kept."""

    index: int
    kept_tokens: int
    summarized_tokens: int


def _is_cut_point(message: Any) -> bool:
    # a tool result must stay right after the call that produced it
    return isinstance(message, UserMessage | AssistantMessage | CustomMessage)


def find_compaction_cut(
    messages: Sequence[Any],
    *,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    estimate: Callable[[Sequence[Any]], int] | None = None,
) -> CompactionCut | None:
    """The latest cut that keeps at least ``keep_recent_tokens`` of recent history.

    Walks back from the end until the kept tail is big enough, then moves the cut back to the
    nearest user/assistant message. ``None`` when nothing before the cut would be summarized.
    """
    measure = estimate or (lambda items: estimate_llm_boundary_token_pressure(list(items)))
    if len(messages) < 2:
        return None
    kept = 0
    index = len(messages)
    while index > 0 and kept < keep_recent_tokens:
        index -= 1
        kept = measure(messages[index:])
    while index > 0 and not _is_cut_point(messages[index]):
        index -= 1
    if index <= 0:
        return None
    # skip summaries produced by earlier compactions: they are carried forward, not re-cut
    first = next(
        (i for i, m in enumerate(messages) if not isinstance(m, CompactionSummaryMessage)), 0
    )
    if index <= first:
        return None
    return CompactionCut(index, measure(messages[index:]), measure(messages[:index]))


def serialize_conversation(messages: Sequence[Any]) -> str:
    """History as plain text for the summarizer (tool results excerpted)."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            lines.append(f"[User]: {message.text()}")
        elif isinstance(message, CustomMessage):
            content = message.content if isinstance(message.content, str) else ""
            lines.append(f"[Runtime note {message.custom_type}]: {content}")
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent) and block.text:
                    lines.append(f"[Assistant]: {block.text}")
                elif isinstance(block, ThinkingContent) and block.thinking:
                    lines.append(f"[Assistant thinking]: {block.thinking}")
                elif isinstance(block, ToolCall):
                    arguments = json.dumps(block.arguments, ensure_ascii=False, sort_keys=True)
                    lines.append(f"[Assistant tool call]: {block.name}({arguments})")
            if message.stop_reason in ("error", "aborted") and message.error_message:
                lines.append(f"[Assistant turn {message.stop_reason}]: {message.error_message}")
        elif isinstance(message, ToolResultMessage):
            text = message.text()
            if len(text) > TOOL_RESULT_EXCERPT_CHARS:
                omitted = len(text) - TOOL_RESULT_EXCERPT_CHARS
                text = text[:TOOL_RESULT_EXCERPT_CHARS] + f" ... [{omitted} more characters]"
            marker = " (error)" if message.is_error else ""
            lines.append(f"[Tool result {message.tool_name}{marker}]: {text}")
        elif isinstance(message, BranchSummaryMessage):
            lines.append(f"[Branch summary]: {message.summary}")
    return "\n".join(lines)


def split_for_summary(messages: Sequence[Any], max_input_tokens: int) -> list[list[Any]]:
    """Consecutive chunks of ``messages`` of at most ``max_input_tokens`` each (a message
    larger than that is a chunk of its own; its serialization excerpts tool results)."""
    chunks: list[list[Any]] = []
    current: list[Any] = []
    size = 0
    for message in messages:
        weight = estimate_llm_boundary_token_pressure([message])
        if current and size + weight > max_input_tokens:
            chunks.append(current)
            current, size = [], 0
        current.append(message)
        size += weight
    if current:
        chunks.append(current)
    return chunks or [[]]


def build_summary_prompt(
    to_summarize: Sequence[Any],
    *,
    previous_summary: str | None = None,
    custom_instructions: str | None = None,
) -> str:
    """The user prompt asking for the summary (updating an earlier one when there is one)."""
    parts = []
    if previous_summary:
        parts.append(
            "Here is the summary of the conversation so far. Update it with the messages "
            "that follow; keep what is still relevant.\n\n"
            f"<summary>\n{previous_summary}\n</summary>"
        )
    parts.append(f"<conversation>\n{serialize_conversation(to_summarize)}\n</conversation>")
    if custom_instructions:
        parts.append(f"Additional instructions for this summary: {custom_instructions}")
    parts.append("Write the summary now.")
    return "\n\n".join(parts)


@dataclass(frozen=True, slots=True)
class SummaryModel:
    """A model to summarize with, and how to reach it."""

    model: Model
    stream_fn: StreamFn
    api_key: str | None = None


async def _summarize(
    candidate: SummaryModel, prompt: str, *, max_tokens: int, signal: AbortSignal | None
) -> str:
    context = Context(SUMMARY_SYSTEM_PROMPT, [UserMessage(content=prompt, timestamp=0)], [])
    options = StreamOptions(signal=signal, api_key=candidate.api_key, max_tokens=max_tokens)
    result = candidate.stream_fn(candidate.model, context, options)
    stream = await result if inspect.isawaitable(result) else result
    message = await stream.result()
    await stream.aclose()
    if message.stop_reason in ("error", "aborted"):
        raise _SummaryFailed(message.error_message or f"summary {message.stop_reason}")
    summary = message.text().strip()
    if not summary:
        raise _SummaryFailed("the summarization model returned no text")
    return summary


class _SummaryFailed(Exception):
    pass


async def compact_session_direct(
    session: Any,
    models: Sequence[SummaryModel],
    *,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    force: bool = False,
    token_budget: int | None = None,
    current_token_count: int | None = None,
    custom_instructions: str | None = None,
    summary_max_tokens: int = DEFAULT_SUMMARY_MAX_TOKENS,
    max_input_tokens: int | None = None,
    abort_signal: AbortSignal | None = None,
) -> CompactResult:
    """Compact ``session`` (a ``SessionManager``) now. Must run inside the session's lane.

    ``models`` is the summarization chain: the dedicated compaction model first (when one is
    configured), then fallbacks. Without ``force`` nothing happens while the context fits
    ``token_budget``. With ``max_input_tokens`` the history to summarize is cut into chunks
    of about that size, summarized in order, each update carrying the summary so far (a
    summarizer with the same small window as the model can still compact it).
    """
    branch = session.get_branch()
    pairs = messages_with_entries(session, branch)
    messages = [message for _, message in pairs]
    tokens_before = current_token_count or estimate_llm_boundary_token_pressure(messages)
    if not force and token_budget is not None and tokens_before <= token_budget:
        return CompactResult(ok=True, compacted=False, reason="context fits the budget")
    keep = keep_recent_tokens
    if token_budget is not None:
        keep = min(keep, max(1, token_budget // 2))
    cut = find_compaction_cut(messages, keep_recent_tokens=keep)
    if cut is None:
        return CompactResult(ok=True, compacted=False, reason="nothing to compact")
    previous = next(
        (m.summary for m in messages[: cut.index] if isinstance(m, CompactionSummaryMessage)), None
    )
    older = [m for m in messages[: cut.index] if not isinstance(m, CompactionSummaryMessage)]
    older = dedupe_duplicate_user_messages_for_compaction(older)
    chunks = split_for_summary(older, max_input_tokens) if max_input_tokens else [older]
    errors: list[str] = []
    summary: str | None = None
    used: SummaryModel | None = None
    for candidate in models:
        if abort_signal is not None and abort_signal.aborted:
            return CompactResult(ok=False, compacted=False, reason="compaction aborted")
        running = previous
        try:
            for chunk in chunks:
                running = await _summarize(
                    candidate,
                    build_summary_prompt(
                        chunk, previous_summary=running, custom_instructions=custom_instructions
                    ),
                    max_tokens=summary_max_tokens,
                    signal=abort_signal,
                )
        except Exception as exc:
            errors.append(f"{candidate.model.ref}: {exc}")
            continue
        summary = running
        used = candidate
        break
    if summary is None or used is None:
        reason = "; ".join(errors) or "no summarization model configured"
        return CompactResult(ok=False, compacted=False, reason=f"summarization failed: {reason}")
    first_kept_entry = pairs[cut.index][0]
    kept_messages = messages[cut.index :]
    tokens_after = estimate_llm_boundary_token_pressure(
        [
            CompactionSummaryMessage(summary=summary, tokens_before=tokens_before, timestamp=0),
            *kept_messages,
        ]
    )
    details = {
        "tokensAfter": tokens_after,
        "model": used.model.ref,
        "summarizedMessages": len(older),
    }
    await session.append_compaction(summary, first_kept_entry["id"], tokens_before, details)
    return CompactResult(
        ok=True,
        compacted=True,
        result=CompactionDetails(
            tokens_before=tokens_before,
            summary=summary,
            first_kept_entry_id=first_kept_entry["id"],
            tokens_after=tokens_after,
            details=details,
        ),
    )


def messages_with_entries(
    session: Any, branch: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], Any]]:
    """(entry, message) for every message of the current context, in order.

    After an earlier compaction the context starts with that compaction's summary; its entry
    is the compaction entry itself.
    """
    pairs: list[tuple[dict[str, Any], Any]] = []

    def message_of(entry: Any) -> Any:
        message = entry_message(entry)
        if message is not None:
            pairs.append((entry, message))
        return message

    build_session_context(branch, message_of=message_of)
    return pairs
