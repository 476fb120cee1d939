"""Reading tool calls and tool results out of messages (models or wire dicts).

The shared vocabulary of the tool-call hygiene in this package: which blocks are tool calls,
which ids a tool result names, and which tool names may be replayed. Used by the pairing
repair (``pairing``), the tool-call input sanitizer (``tool_inputs``), replay validation and
the incremental sanitizer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .wire import wget, wset

__all__ = [
    "CALL_ID_KEYS",
    "RAW_CALL_TYPES",
    "TOOL_CALL_NAME_MAX_CHARS",
    "ToolCallRef",
    "block_type",
    "extract_tool_calls_from_assistant",
    "extract_tool_result_id",
    "extract_tool_result_ids",
    "is_allowed_tool_call_name",
    "is_message",
    "normalize_allowed_names",
    "normalize_legacy_result_id",
    "optional_string",
]

TOOL_CALL_NAME_MAX_CHARS = 64
_TOOL_CALL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
#: Block types the pairing repair treats as tool calls.
_PAIRED_CALL_TYPES = frozenset({"toolCall", "toolUse", "functionCall"})
#: Block types the input sanitizer inspects (legacy snake_case spellings included).
RAW_CALL_TYPES = frozenset(
    {"toolCall", "toolUse", "functionCall", "tool_call", "tool_use", "function_call"}
)
CALL_ID_KEYS = ("id", "call_id", "toolCallId", "toolUseId", "tool_call_id", "tool_use_id")
_RESULT_ID_KEYS = ("toolCallId", "toolUseId", "tool_call_id", "tool_use_id", "callId", "call_id")


@dataclass(frozen=True, slots=True)
class ToolCallRef:
    """One tool call of an assistant turn: its id, name and block position."""

    id: str
    name: str | None
    content_index: int


def is_message(value: Any) -> bool:
    return value is not None and not isinstance(value, str | int | float | bool | list)


def block_type(block: Any) -> Any:
    return wget(block, "type") if is_message(block) else None


def _read_tool_call(block: Any, index: int) -> ToolCallRef | None:
    if block_type(block) not in _PAIRED_CALL_TYPES:
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


def optional_string(value: Any) -> str | None:
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


def normalize_allowed_names(names: Iterable[str] | None) -> frozenset[str] | None:
    if names is None:
        return None
    normalized = frozenset(n.strip().lower() for n in names if isinstance(n, str) and n.strip())
    return normalized or None


def normalize_legacy_result_id(message: Any, calls: Sequence[ToolCallRef]) -> Any:
    """A result with no id answers the only call of its turn (and is marked an error)."""
    if extract_tool_result_id(message) or len(calls) != 1:
        return message
    call = calls[0]
    result_name = optional_string(wget(message, "toolName"))
    call_name = optional_string(call.name)
    if result_name and call_name and result_name != call_name:
        return message
    return wset(message, toolCallId=call.id, isError=True)
