"""Tool-call / tool-result pairing repair (spec §12.3).

Strict providers reject a transcript unless every tool call is answered by exactly one result
right after the assistant turn that made it. :func:`repair_tool_use_result_pairing` works in
*frames*: each assistant turn with tool calls owns the messages up to the next such turn.

* results of the frame are matched to its calls per occurrence (a provider may reuse an id
  across turns, even within one turn) and emitted right after the assistant, in call order;
* a result displaced into a later frame moves back only when exactly one unresolved call can
  own it — ambiguous cases are dropped, never guessed;
* a missing result gets a synthetic error result (``[openclaw] missing tool result in session
  history; inserted synthetic error result for transcript repair.``, ``isError: true``,
  ``details.openclawSyntheticMissingToolResult: true``); a later real result replaces it;
* duplicates and orphans are dropped; display-only assistant turns inside a frame stay in
  place after the results; aborted/error turns never get synthetic results (their real
  results are kept, or the whole turn is dropped with ``errored_assistant_result_policy="drop"``).


Every function is pure: the input list and its messages are never changed, and an input
that needs nothing is returned as the same list object.

Reading calls and result ids out of messages is in ``tool_calls``; the tool-call input
sanitizer (``repair_tool_call_inputs``) in ``tool_inputs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .tool_calls import (
    ToolCallRef,
    block_type,
    extract_tool_calls_from_assistant,
    extract_tool_result_id,
    is_message,
    normalize_legacy_result_id,
    optional_string,
)
from .wire import make_tool_result, role_of, wdel, wget, whas, wset

__all__ = [
    "DEFAULT_MISSING_TOOL_RESULT_TEXT",
    "SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY",
    "ToolUseRepairReport",
    "collect_completed_tool_call_blocks",
    "is_synthetic_missing_tool_result",
    "make_missing_tool_result",
    "repair_tool_use_result_pairing",
    "sanitize_tool_use_result_pairing",
    "strip_tool_result_details",
]

DEFAULT_MISSING_TOOL_RESULT_TEXT = (
    "[openclaw] missing tool result in session history; "
    "inserted synthetic error result for transcript repair."
)
SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY = "openclawSyntheticMissingToolResult"

ErroredAssistantResultPolicy = Literal["preserve", "drop"]


# --------------------------------------------------------------------------- synthetic results


def make_missing_tool_result(
    tool_call_id: str,
    tool_name: str | None = None,
    *,
    text: str | None = None,
    like: Any = None,
    timestamp: Any = 0,
) -> Any:
    """The synthetic error result inserted for a call that has none.

    ``like`` decides the representation (a model for model transcripts, else a wire dict);
    ``timestamp`` defaults to 0 so the same history always sanitizes to the same bytes.
    """
    return make_tool_result(
        like if like is not None else {},
        tool_call_id=tool_call_id,
        tool_name=tool_name if tool_name is not None else "unknown",
        text=DEFAULT_MISSING_TOOL_RESULT_TEXT if text is None else text,
        details={SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY: True},
        is_error=True,
        timestamp=timestamp,
    )


def is_synthetic_missing_tool_result(message: Any) -> bool:
    """A result this repair (or OpenClaw's) inserted, by flag or by its legacy text."""
    if not wget(message, "isError"):
        return False
    details = wget(message, "details")
    if isinstance(details, dict) and details.get(SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY) is True:
        return True
    content = wget(message, "content")
    if not isinstance(content, list):
        return False
    return any(
        block_type(block) == "text" and wget(block, "text") == DEFAULT_MISSING_TOOL_RESULT_TEXT
        for block in content
    )


def _normalize_result_name(message: Any, fallback: str | None) -> Any:
    raw = wget(message, "toolName")
    name = optional_string(raw) or optional_string(fallback)
    if name is None and isinstance(raw, str):
        name = "unknown"
    return wset(message, toolName=name) if name is not None and name != raw else message


def _timestamp_of(message: Any) -> Any:
    value = wget(message, "timestamp")
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


# --------------------------------------------------------------------------- classification


@dataclass(eq=False)
class _Occurrence:
    id: str
    name: str | None
    content_index: int
    result: Any = None
    source: Any = None
    source_index: int = -1


@dataclass(eq=False)
class _Record:
    result: Any
    source: Any
    index: int
    id: str | None


@dataclass(eq=False)
class _Frame:
    start: int
    end: int
    assistant: Any
    remainder: list[Any]
    occurrences: list[_Occurrence]
    unclaimed: list[_Record]
    failed: bool


@dataclass
class _Classification:
    frames: list[_Frame]
    dropped_duplicate_count: int = 0
    dropped_orphan_count: int = 0
    dropped: list[tuple[int, Any]] = field(default_factory=list)


class _OccurrenceQueue:
    """Pending occurrences per id, claimed first-in first-out."""

    def __init__(self) -> None:
        self._by_id: dict[str, list[_Occurrence]] = {}

    def add(self, occurrence: _Occurrence) -> None:
        self._by_id.setdefault(occurrence.id, []).append(occurrence)

    def claim(self, call_id: str) -> _Occurrence | None:
        pending = self._by_id.get(call_id)
        if not pending:
            return None
        occurrence = pending.pop(0)
        if not pending:
            del self._by_id[call_id]
        return occurrence


def _classify(messages: Sequence[Any]) -> _Classification:
    """Assign every tool result to the call occurrence that owns it (no reordering)."""
    starts: list[int] = []
    calls_at: list[list[ToolCallRef]] = []  # each start's calls, read once
    for index, message in enumerate(messages):
        if role_of(message) == "assistant":
            found = extract_tool_calls_from_assistant(message)
            if found:
                starts.append(index)
                calls_at.append(found)
    result = _Classification([])
    for position, start in enumerate(starts):
        assistant = messages[start]
        calls = calls_at[position]
        occurrences = [_Occurrence(call.id, call.name, call.content_index) for call in calls]
        pending = _OccurrenceQueue()
        synthetic = _OccurrenceQueue()
        for occurrence in occurrences:
            pending.add(occurrence)
        end = starts[position + 1] if position + 1 < len(starts) else len(messages)
        remainder: list[Any] = []
        unclaimed: list[_Record] = []
        for index in range(start + 1, end):
            message = messages[index]
            if not is_message(message):
                continue
            if role_of(message) != "toolResult":
                remainder.append(message)
                continue
            result_id = extract_tool_result_id(message)
            normalized = message
            if not result_id:  # a legacy result without id may answer the turn's only call
                normalized = normalize_legacy_result_id(message, calls)
                if normalized is not message:
                    result_id = extract_tool_result_id(normalized)
            owner = pending.claim(result_id) if result_id else None
            if owner is not None:
                owner.result = _normalize_result_name(normalized, owner.name)
                owner.source, owner.source_index = message, index
                if is_synthetic_missing_tool_result(owner.result):
                    synthetic.add(owner)
                continue
            if not result_id or all(o.id != result_id for o in occurrences):
                unclaimed.append(_Record(normalized, message, index, result_id))
                continue
            result.dropped_duplicate_count += 1
            replaceable = (
                None if is_synthetic_missing_tool_result(normalized) else synthetic.claim(result_id)
            )
            if replaceable is not None:
                result.dropped.append((replaceable.source_index, replaceable.source))
                replaceable.result = _normalize_result_name(normalized, replaceable.name)
                replaceable.source, replaceable.source_index = message, index
            else:
                result.dropped.append((index, message))
        stop = wget(assistant, "stopReason")
        result.frames.append(
            _Frame(
                start,
                end,
                assistant,
                remainder,
                occurrences,
                unclaimed,
                stop in ("error", "aborted"),
            )
        )

    unresolved: dict[str, list[_Occurrence]] = {}
    for frame in result.frames:
        for occurrence in frame.occurrences:
            if occurrence.result is None or is_synthetic_missing_tool_result(occurrence.result):
                unresolved.setdefault(occurrence.id, []).append(occurrence)
        for record in frame.unclaimed:
            candidates = []
            if record.id:
                record_synthetic = is_synthetic_missing_tool_result(record.result)
                candidates = [
                    candidate
                    for candidate in unresolved.get(record.id, [])
                    if candidate.result is None
                    or (is_synthetic_missing_tool_result(candidate.result) and not record_synthetic)
                ]
            if len(candidates) != 1:
                result.dropped_orphan_count += 1
                result.dropped.append((record.index, record.source))
                continue
            owner = candidates[0]
            if owner.result is not None:
                result.dropped_duplicate_count += 1
                if owner.source is not None:
                    result.dropped.append((owner.source_index, owner.source))
            owner.result = _normalize_result_name(record.result, owner.name)
            owner.source, owner.source_index = record.source, record.index
    return result


def collect_completed_tool_call_blocks(messages: Sequence[Any]) -> set[int]:
    """``id()`` of every tool-call block answered by a real (not synthetic) result."""
    completed: set[int] = set()
    for frame in _classify(messages).frames:
        content = wget(frame.assistant, "content")
        for occurrence in frame.occurrences:
            if occurrence.source is not None and not is_synthetic_missing_tool_result(
                occurrence.source
            ):
                completed.add(id(content[occurrence.content_index]))
    return completed


# --------------------------------------------------------------------------- pairing repair


@dataclass(frozen=True, slots=True)
class ToolUseRepairReport:
    """What :func:`repair_tool_use_result_pairing` did."""

    messages: list[Any]
    added: list[Any] = field(default_factory=list)
    dropped_duplicate_count: int = 0
    dropped_orphan_count: int = 0
    moved: bool = False
    #: Results that were dropped (duplicates, orphans, replaced synthetics), in transcript order.
    discarded: list[Any] = field(default_factory=list)


def repair_tool_use_result_pairing(
    messages: Sequence[Any],
    *,
    errored_assistant_result_policy: ErroredAssistantResultPolicy = "preserve",
    missing_tool_result_text: str | None = None,
) -> ToolUseRepairReport:
    """Put every tool result right after its call; synthesize missing ones (§12.3).

    :param errored_assistant_result_policy: ``"drop"`` removes aborted/error turns that made
        tool calls together with their results (the replay pipeline uses this).
    :param missing_tool_result_text: text of synthetic results (OpenAI Responses replay uses
        ``"aborted"``).
    """
    classification = _classify(messages)
    added: list[Any] = []
    out: list[Any] = []
    orphans = classification.dropped_orphan_count
    dropped = list(classification.dropped)
    cursor = 0

    def push_unframed(end: int) -> None:
        nonlocal cursor, orphans
        for index in range(cursor, end):
            message = messages[index]
            if not is_message(message):
                continue
            if role_of(message) == "toolResult":
                orphans += 1
                dropped.append((index, message))
                continue
            out.append(message)
        cursor = end

    for frame in classification.frames:
        push_unframed(frame.start)
        cursor = frame.end
        if frame.failed and errored_assistant_result_policy == "drop":
            for occurrence in frame.occurrences:
                if occurrence.source is not None:
                    dropped.append((occurrence.source_index, occurrence.source))
        else:
            out.append(frame.assistant)
            for occurrence in frame.occurrences:
                if occurrence.result is not None:
                    out.append(occurrence.result)
                    continue
                if frame.failed:
                    continue
                missing = make_missing_tool_result(
                    occurrence.id,
                    occurrence.name,
                    text=missing_tool_result_text,
                    like=frame.assistant,
                    timestamp=_timestamp_of(frame.assistant),
                )
                occurrence.result = missing
                added.append(missing)
                out.append(missing)
        out.extend(frame.remainder)
    push_unframed(len(messages))

    changed = len(out) != len(messages) or any(
        a is not b for a, b in zip(out, messages, strict=False)
    )
    dropped.sort(key=lambda item: item[0])
    return ToolUseRepairReport(
        messages=out if changed else messages if isinstance(messages, list) else list(messages),
        added=added,
        dropped_duplicate_count=classification.dropped_duplicate_count,
        dropped_orphan_count=orphans,
        moved=changed,
        discarded=[message for _, message in dropped],
    )


def sanitize_tool_use_result_pairing(
    messages: Sequence[Any],
    *,
    errored_assistant_result_policy: ErroredAssistantResultPolicy = "preserve",
    missing_tool_result_text: str | None = None,
) -> list[Any]:
    """The messages of :func:`repair_tool_use_result_pairing`."""
    return repair_tool_use_result_pairing(
        messages,
        errored_assistant_result_policy=errored_assistant_result_policy,
        missing_tool_result_text=missing_tool_result_text,
    ).messages


def strip_tool_result_details(messages: Sequence[Any]) -> list[Any]:
    """Drop opaque ``details`` from tool results; synthetic results keep only their flag."""
    out: list[Any] = []
    touched = False
    for message in messages:
        if role_of(message) != "toolResult" or not whas(message, "details"):
            out.append(message)
            continue
        details = wget(message, "details")
        if (
            isinstance(details, dict)
            and details.get(SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY) is True
        ):
            projection = {SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY: True}
            if details == projection:
                out.append(message)
                continue
            out.append(wset(message, details=projection))
        else:
            out.append(wdel(message, "details"))
        touched = True
    return out if touched else list(messages) if not isinstance(messages, list) else messages
