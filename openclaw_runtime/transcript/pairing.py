"""Tool-call / tool-result pairing and tool-call input hygiene (spec §12.3).

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

:func:`sanitize_tool_call_inputs` drops tool calls that cannot be replayed (blank id/name,
bad or disallowed name, interrupted ``partialJson`` streams) and redacts ``sessions_spawn``
attachment content. Signed-thinking turns are kept byte-for-byte or dropped whole.

Every function is pure: the input list and its messages are never changed, and an input
that needs nothing is returned as the same list object.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from .wire import make_tool_result, role_of, wdel, wget, whas, wset

__all__ = [
    "DEFAULT_MISSING_TOOL_RESULT_TEXT",
    "REDACTED_ATTACHMENT_CONTENT",
    "SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY",
    "TOOL_CALL_NAME_MAX_CHARS",
    "ToolCallInputRepairReport",
    "ToolCallRef",
    "ToolUseRepairReport",
    "collect_completed_tool_call_blocks",
    "extract_tool_calls_from_assistant",
    "extract_tool_result_id",
    "extract_tool_result_ids",
    "is_allowed_tool_call_name",
    "is_synthetic_missing_tool_result",
    "make_missing_tool_result",
    "repair_tool_call_inputs",
    "repair_tool_use_result_pairing",
    "sanitize_tool_call_inputs",
    "sanitize_tool_use_result_pairing",
    "strip_tool_result_details",
]

DEFAULT_MISSING_TOOL_RESULT_TEXT = (
    "[openclaw] missing tool result in session history; "
    "inserted synthetic error result for transcript repair."
)
SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY = "openclawSyntheticMissingToolResult"
REDACTED_ATTACHMENT_CONTENT = "__OPENCLAW_REDACTED__"
TOOL_CALL_NAME_MAX_CHARS = 64
_TOOL_CALL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
#: Block types the pairing repair treats as tool calls.
_PAIRED_CALL_TYPES = frozenset({"toolCall", "toolUse", "functionCall"})
#: Block types the input sanitizer inspects (legacy snake_case spellings included).
_RAW_CALL_TYPES = frozenset(
    {"toolCall", "toolUse", "functionCall", "tool_call", "tool_use", "function_call"}
)
_CALL_ID_KEYS = ("id", "call_id", "toolCallId", "toolUseId", "tool_call_id", "tool_use_id")
_RESULT_ID_KEYS = ("toolCallId", "toolUseId", "tool_call_id", "tool_use_id", "callId", "call_id")

ErroredAssistantResultPolicy = Literal["preserve", "drop"]


# --------------------------------------------------------------------------- small readers


@dataclass(frozen=True, slots=True)
class ToolCallRef:
    """One tool call of an assistant turn: its id, name and block position."""

    id: str
    name: str | None
    content_index: int


def _is_message(value: Any) -> bool:
    return value is not None and not isinstance(value, str | int | float | bool | list)


def _block_type(block: Any) -> Any:
    return wget(block, "type") if _is_message(block) else None


def _read_tool_call(block: Any, index: int) -> ToolCallRef | None:
    if _block_type(block) not in _PAIRED_CALL_TYPES:
        return None
    call_id = wget(block, "id")
    if not isinstance(call_id, str) or not call_id:
        return None
    name = wget(block, "name")
    return ToolCallRef(call_id, name if isinstance(name, str) else None, index)


def extract_tool_calls_from_assistant(message: Any) -> list[ToolCallRef]:
    """The tool calls of an assistant message (``toolCall``/``toolUse``/``functionCall``)."""
    content = wget(message, "content")
    if not isinstance(content, list):
        return []
    calls = []
    for index, block in enumerate(content):
        call = _read_tool_call(block, index)
        if call is not None:
            calls.append(call)
    return calls


def extract_tool_result_ids(message: Any) -> list[str]:
    """Every id a tool result names, trimmed and de-duplicated, in field order."""
    ids: list[str] = []
    for key in _RESULT_ID_KEYS:
        value = wget(message, key)
        if isinstance(value, str):
            trimmed = value.strip()
            if trimmed and trimmed not in ids:
                ids.append(trimmed)
    return ids


def extract_tool_result_id(message: Any) -> str | None:
    """The first id a tool result names."""
    ids = extract_tool_result_ids(message)
    return ids[0] if ids else None


def _optional_string(value: Any) -> str | None:
    if isinstance(value, str):
        trimmed = value.strip()
        return trimmed or None
    return None


def is_allowed_tool_call_name(name: Any, allowed: frozenset[str] | None) -> bool:
    """Non-blank, ≤ 64 chars of ``[A-Za-z0-9_-]`` after trimming, and on the allowlist."""
    if not isinstance(name, str):
        return False
    trimmed = name.strip()
    if not trimmed or len(trimmed) > TOOL_CALL_NAME_MAX_CHARS:
        return False
    if not _TOOL_CALL_NAME_RE.match(trimmed):
        return False
    return allowed is None or trimmed.lower() in allowed


def _normalize_allowed(names: Iterable[str] | None) -> frozenset[str] | None:
    if names is None:
        return None
    normalized = frozenset(n.strip().lower() for n in names if isinstance(n, str) and n.strip())
    return normalized or None


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
        _block_type(block) == "text" and wget(block, "text") == DEFAULT_MISSING_TOOL_RESULT_TEXT
        for block in content
    )


def _normalize_result_name(message: Any, fallback: str | None) -> Any:
    raw = wget(message, "toolName")
    name = _optional_string(raw) or _optional_string(fallback)
    if name is None and isinstance(raw, str):
        name = "unknown"
    return wset(message, toolName=name) if name is not None and name != raw else message


def _normalize_legacy_result_id(message: Any, calls: Sequence[ToolCallRef]) -> Any:
    """A result with no id answers the only call of its turn (and is marked an error)."""
    if extract_tool_result_id(message) or len(calls) != 1:
        return message
    call = calls[0]
    result_name = _optional_string(wget(message, "toolName"))
    call_name = _optional_string(call.name)
    if result_name and call_name and result_name != call_name:
        return message
    return wset(message, toolCallId=call.id, isError=True)


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
    starts = [
        index
        for index, message in enumerate(messages)
        if role_of(message) == "assistant" and extract_tool_calls_from_assistant(message)
    ]
    result = _Classification([])
    for position, start in enumerate(starts):
        assistant = messages[start]
        calls = extract_tool_calls_from_assistant(assistant)
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
            if not _is_message(message):
                continue
            if role_of(message) != "toolResult":
                remainder.append(message)
                continue
            normalized = _normalize_legacy_result_id(message, calls)
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
            if not _is_message(message):
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


# --------------------------------------------------------------------------- tool-call inputs


@dataclass(frozen=True, slots=True)
class ToolCallInputRepairReport:
    """What :func:`repair_tool_call_inputs` did."""

    messages: list[Any]
    dropped_tool_calls: int = 0
    dropped_assistant_messages: int = 0


def _is_raw_call(block: Any) -> bool:
    return _block_type(block) in _RAW_CALL_TYPES


def _has_input(block: Any) -> bool:
    return wget(block, "input") is not None or wget(block, "arguments") is not None


def _has_call_id(block: Any) -> bool:
    return any(_optional_string(wget(block, key)) for key in _CALL_ID_KEYS)


def _is_thinking_like(block: Any) -> bool:
    return _block_type(block) in ("thinking", "redacted_thinking")


def _is_complete_json_object(text: str) -> bool:
    try:
        return isinstance(orjson.loads(text), dict)
    except orjson.JSONDecodeError:
        return False


def _is_finalized_responses_call(message: Any, block: Any) -> bool:
    """A ``partialJson`` scratch buffer left on a call the Responses API did finish."""
    partial = wget(block, "partialJson")
    call_id = wget(block, "id")
    arguments = wget(block, "arguments")
    if (
        wget(message, "stopReason") != "toolUse"
        or not isinstance(partial, str)
        or not isinstance(call_id, str)
        or whas(block, "input")
        or not isinstance(arguments, dict)
    ):
        return False
    if not _is_complete_json_object(partial) and (partial.strip() or arguments):
        return False
    separator = call_id.find("|")
    return 0 < separator < len(call_id) - 1


def _redact_attachments(value: Any) -> Any:
    if not isinstance(value, dict) or not isinstance(value.get("attachments"), list):
        return value
    attachments = [
        {**item, "content": REDACTED_ATTACHMENT_CONTENT}
        if isinstance(item, dict) and "content" in item
        else item
        for item in value["attachments"]
    ]
    return {**value, "attachments": attachments}


def _sanitize_call_block(block: Any) -> Any:
    """Trim the name; redact ``sessions_spawn`` attachment content."""
    raw_name = wget(block, "name")
    trimmed = raw_name.strip() if isinstance(raw_name, str) else None
    updates: dict[str, Any] = {}
    if trimmed and trimmed != raw_name:
        updates["name"] = trimmed
    if trimmed and trimmed.lower() == "sessions_spawn":
        for key in ("arguments", "input"):
            if whas(block, key):
                value = wget(block, key)
                redacted = _redact_attachments(value)
                if redacted is not value and redacted != value:
                    updates[key] = redacted
    return wset(block, **updates) if updates else block


def _has_spawn_attachments(content: list[Any]) -> bool:
    for block in content:
        if not _is_raw_call(block) or wget(block, "name") != "sessions_spawn":
            continue
        value = wget(block, "input")
        attachments = value.get("attachments") if isinstance(value, dict) else None
        if isinstance(attachments, list) and attachments:
            return True
    return False


def _following_results(messages: Sequence[Any], index: int) -> tuple[set[str], bool]:
    """Result ids after ``index`` up to the next tool-calling turn, and whether displaced."""
    calls = extract_tool_calls_from_assistant(messages[index])
    ids: set[str] = set()
    saw_other = False
    displaced = False
    for message in messages[index + 1 :]:
        if not _is_message(message):
            saw_other = True
            continue
        role = role_of(message)
        if role == "assistant" and extract_tool_calls_from_assistant(message):
            break
        if role == "toolResult":
            found = extract_tool_result_ids(_normalize_legacy_result_id(message, calls))
            ids.update(found)
            displaced = displaced or (bool(found) and saw_other)
            continue
        saw_other = True
    return ids, displaced


def _is_replay_safe_signed_turn(
    content: list[Any], allowed: frozenset[str] | None, completed: set[int]
) -> bool:
    saw_call = False
    seen: set[str] = set()
    for block in content:
        if not _is_raw_call(block):
            continue
        saw_call = True
        raw_id = wget(block, "id")
        call_id = raw_id.strip() if isinstance(raw_id, str) else ""
        name_ok = is_allowed_tool_call_name(wget(block, "name"), allowed) or (
            id(block) in completed and is_allowed_tool_call_name(wget(block, "name"), None)
        )
        if (
            not _has_input(block)
            or whas(block, "partialJson")
            or not call_id
            or call_id in seen
            or not name_ok
        ):
            return False
        seen.add(call_id)
        name = wget(block, "name")
        if isinstance(name, str) and name != name.strip():
            return False
    return saw_call


def repair_tool_call_inputs(
    messages: Sequence[Any],
    *,
    allowed_tool_names: Iterable[str] | None = None,
    allow_provider_owned_thinking_replay: bool = False,
) -> ToolCallInputRepairReport:
    """Drop tool calls that cannot be replayed; see the module docstring for the rules.

    A call to a tool that is no longer allowed survives when a real result already answered
    it (completed history is not rewritten).
    """
    allowed = _normalize_allowed(allowed_tool_names)
    completed = collect_completed_tool_call_blocks(messages) if allowed is not None else set()
    out: list[Any] = []
    dropped_calls = 0
    dropped_messages = 0
    changed = False
    preserved_signed_ids: set[str] = set()
    prior_ids: set[str] = set()

    def allowed_name(block: Any) -> bool:
        name = wget(block, "name")
        if is_allowed_tool_call_name(name, allowed):
            return True
        return id(block) in completed and is_allowed_tool_call_name(name, None)

    for index, message in enumerate(messages):
        if not _is_message(message):
            changed = True
            continue
        content = wget(message, "content")
        if role_of(message) != "assistant" or not isinstance(content, list):
            out.append(message)
            continue
        raw_calls = sum(1 for block in content if _is_raw_call(block))
        if (
            allow_provider_owned_thinking_replay
            and raw_calls
            and any(_is_thinking_like(block) for block in content)
        ):
            calls = extract_tool_calls_from_assistant(message)
            following, displaced = _following_results(messages, index)
            spawn = _has_spawn_attachments(content)
            if _is_replay_safe_signed_turn(content, allowed, completed) and all(
                call.id not in preserved_signed_ids
                and (not spawn or call.id in following)
                and (not displaced or call.id not in prior_ids)
                for call in calls
            ):
                for call in calls:
                    preserved_signed_ids.add(call.id)
                    prior_ids.add(call.id)
                changed = changed or displaced
                out.append(message)
            else:
                dropped_calls += raw_calls
                dropped_messages += 1
                changed = True
            continue

        next_content: list[Any] = []
        dropped_here = 0
        touched = False
        for block in content:
            if not _is_raw_call(block):
                next_content.append(block)
                continue
            if not _has_input(block) or not _has_call_id(block) or not allowed_name(block):
                dropped_here += 1
                continue
            work = block
            if whas(block, "partialJson"):
                if not _is_finalized_responses_call(message, block):
                    dropped_here += 1
                    continue
                work = wdel(block, "partialJson")
                touched = True
            sanitized = _sanitize_call_block(work)
            touched = touched or sanitized is not block
            next_content.append(sanitized)
        if dropped_here:
            dropped_calls += dropped_here
            changed = True
            if not next_content:
                dropped_messages += 1
                continue
        if dropped_here or touched:
            changed = True
            message = wset(message, content=next_content)
        for call in extract_tool_calls_from_assistant(message):
            prior_ids.add(call.id)
        out.append(message)

    result = out if changed else messages if isinstance(messages, list) else list(messages)
    return ToolCallInputRepairReport(result, dropped_calls, dropped_messages)


def sanitize_tool_call_inputs(
    messages: Sequence[Any],
    *,
    allowed_tool_names: Iterable[str] | None = None,
    allow_provider_owned_thinking_replay: bool = False,
) -> list[Any]:
    """The messages of :func:`repair_tool_call_inputs`."""
    return repair_tool_call_inputs(
        messages,
        allowed_tool_names=allowed_tool_names,
        allow_provider_owned_thinking_replay=allow_provider_owned_thinking_replay,
    ).messages
