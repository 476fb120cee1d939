"""Tool-call input hygiene: drop tool calls that cannot be replayed (spec §12.3).

:func:`repair_tool_call_inputs` / :func:`sanitize_tool_call_inputs` drop tool calls that
cannot be replayed (blank id/name, bad or disallowed name, interrupted ``partialJson``
streams) and redact ``sessions_spawn`` attachment content. Signed-thinking turns are kept
byte-for-byte or dropped whole.

Every function is pure: the input list and its messages are never changed, and an input
that needs nothing is returned as the same list object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .pairing import collect_completed_tool_call_blocks
from .tool_calls import (
    CALL_ID_KEYS,
    RAW_CALL_TYPES,
    block_type,
    extract_tool_calls_from_assistant,
    extract_tool_result_ids,
    is_allowed_tool_call_name,
    is_message,
    normalize_allowed_names,
    normalize_legacy_result_id,
    optional_string,
)
from .wire import role_of, wdel, wget, whas, wset

__all__ = [
    "REDACTED_ATTACHMENT_CONTENT",
    "ToolCallInputRepairReport",
    "repair_tool_call_inputs",
    "sanitize_tool_call_inputs",
]

REDACTED_ATTACHMENT_CONTENT = "__OPENCLAW_REDACTED__"


@dataclass(frozen=True, slots=True)
class ToolCallInputRepairReport:
    """What :func:`repair_tool_call_inputs` did."""

    messages: list[Any]
    dropped_tool_calls: int = 0
    dropped_assistant_messages: int = 0


def _is_raw_call(block: Any) -> bool:
    return block_type(block) in RAW_CALL_TYPES


def _has_input(block: Any) -> bool:
    return wget(block, "input") is not None or wget(block, "arguments") is not None


def _has_call_id(block: Any) -> bool:
    return any(optional_string(wget(block, key)) for key in CALL_ID_KEYS)


def _is_thinking_like(block: Any) -> bool:
    return block_type(block) in ("thinking", "redacted_thinking")


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
        if not is_message(message):
            saw_other = True
            continue
        role = role_of(message)
        if role == "assistant" and extract_tool_calls_from_assistant(message):
            break
        if role == "toolResult":
            found = extract_tool_result_ids(normalize_legacy_result_id(message, calls))
            ids.update(found)
            displaced = displaced or (bool(found) and saw_other)
            continue
        saw_other = True
    return ids, displaced


def _is_replay_safe_signed_turn(
    content: list[Any], allowed: frozenset[str] | None, completed: Callable[[], set[int]]
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
            id(block) in completed() and is_allowed_tool_call_name(wget(block, "name"), None)
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
    allowed = normalize_allowed_names(allowed_tool_names)
    # which calls a real result answered matters only for a name off the allowlist: worked
    # out (a pass over the pairing) the first time such a name shows up
    answered: list[set[int]] = []

    def completed_blocks() -> set[int]:
        if not answered:
            answered.append(
                collect_completed_tool_call_blocks(messages) if allowed is not None else set()
            )
        return answered[0]

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
        return id(block) in completed_blocks() and is_allowed_tool_call_name(name, None)

    for index, message in enumerate(messages):
        if not is_message(message):
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
            if _is_replay_safe_signed_turn(content, allowed, completed_blocks) and all(
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
