"""What a model call needs from a branch of a session (OpenClaw ``buildSessionContext``).

``build_session_context`` turns an ordered branch of entries into a :class:`SessionContext`:
the messages to replay (after the latest compaction only its summary and the kept entries)
plus the latest thinking level, model and active tools. ``entry_message`` is the message one
entry contributes. Pure functions over entry dicts: the session managers (file and Redis) and
compaction use them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ..messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    OpaqueMessage,
    ToolResultMessage,
    UserMessage,
    load_message,
)
from .entries import parse_timestamp_ms

__all__ = [
    "ModelRef",
    "SessionContext",
    "build_session_context",
    "entry_message",
    "load_entry_message",
]


@dataclass(frozen=True, slots=True)
class ModelRef:
    """The model a branch last used: ``{provider, modelId}`` in OpenClaw."""

    provider: str
    model_id: str


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What a model call needs from a branch: messages plus the latest state markers."""

    messages: list[Any]
    thinking_level: str = "off"
    model: ModelRef | None = None
    active_tool_names: list[str] | None = None


#: role → the validator of the model ``load_message`` picks for it. ``load_message`` goes
#: through the union of every message model, whose discriminator is a Python function called
#: per message; a session load validates thousands, and the union's only effect here is the
#: choice of model (a message that fails becomes an ``OpaqueMessage`` either way).
_VALIDATE_BY_ROLE: dict[str, Callable[[Any], Any]] = {
    model.model_fields["role"].default: model.__pydantic_validator__.validate_python
    for model in (UserMessage, AssistantMessage, ToolResultMessage)
}


def load_entry_message(message: dict[str, Any]) -> Any:
    """``load_message(message)`` for the message dict of an entry: the same model, or the
    same ``ValidationError`` raised (its wording may differ: no union tag in its location)."""
    role = message.get("role")
    validate = _VALIDATE_BY_ROLE.get(role) if type(role) is str else None
    if validate is None:
        return load_message(message)
    return validate(message)


def entry_message(entry: Mapping[str, Any], *, materialize: bool = True) -> Any:
    """The context message an entry contributes, or ``None``.

    ``message`` entries give their message (unless ``excludeFromContext``), ``custom_message``
    a custom message, ``branch_summary`` (with a summary) and ``compaction`` their summary
    messages. With ``materialize`` the result is a pydantic model (a message that does not
    validate is kept as :class:`~openclaw_runtime.messages.OpaqueMessage`); without it, the
    wire dict.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry["message"]
        if message.get("excludeFromContext") is True:
            return None
        if not materialize:
            return message
        try:
            return load_entry_message(message)
        except ValidationError:
            return OpaqueMessage.model_validate(message)
    timestamp = parse_timestamp_ms(entry.get("timestamp")) or 0
    if kind == "custom_message":
        data = {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": entry.get("content"),
            "display": entry.get("display"),
            "details": entry.get("details"),
            "timestamp": timestamp,
        }
        return _materialized(data, CustomMessage, materialize)
    if kind == "branch_summary":
        if not entry.get("summary"):
            return None
        data = {
            "role": "branchSummary",
            "summary": entry.get("summary"),
            "fromId": entry.get("fromId"),
            "timestamp": timestamp,
        }
        return _materialized(data, BranchSummaryMessage, materialize)
    if kind == "compaction":
        data = {
            "role": "compactionSummary",
            "summary": entry.get("summary"),
            "tokensBefore": entry.get("tokensBefore"),
            "timestamp": timestamp,
        }
        return _materialized(data, CompactionSummaryMessage, materialize)
    return None


def _materialized(data: dict[str, Any], model: type[BaseModel], materialize: bool) -> Any:
    if not materialize:
        return data
    try:
        return model.model_validate(data)
    except ValidationError:
        return OpaqueMessage.model_validate(data)


def build_session_context(
    path_entries: Iterable[Mapping[str, Any]],
    *,
    materialize: bool = True,
    message_of: Callable[[Mapping[str, Any]], Any] | None = None,
) -> SessionContext:
    """Context of an ordered branch (OpenClaw ``buildSessionContext``).

    After the latest compaction only its summary, the entries from ``firstKeptEntryId`` up
    to the compaction, and everything after it are replayed.
    """
    entries = list(path_entries)
    thinking_level = "off"
    model: ModelRef | None = None
    tools: list[str] | None = None
    compaction_index = -1
    # one scan: the state markers, and the replayable entries after the latest compaction
    # (a first turn after a restart walks a whole history here)
    tail: list[Mapping[str, Any]] = []
    for index, entry in enumerate(entries):
        kind = entry.get("type")
        if kind == "message":
            tail.append(entry)
            message = entry["message"]
            if message.get("role") == "assistant":
                model = ModelRef(str(message.get("provider")), str(message.get("model")))
        elif kind == "custom_message" or kind == "branch_summary":
            tail.append(entry)
        elif kind == "thinking_level_change":
            thinking_level = entry.get("thinkingLevel") or thinking_level
        elif kind == "model_change":
            model = ModelRef(str(entry.get("provider")), str(entry.get("modelId")))
        elif kind == "active_tools_change":
            names = entry.get("activeToolNames")
            tools = list(names) if isinstance(names, list) else tools
        elif kind == "compaction":
            compaction_index = index
            tail = []

    convert: Callable[[Mapping[str, Any]], Any]
    if message_of is not None:
        convert = message_of
    elif materialize:
        convert = entry_message
    else:
        convert = _wire_message

    messages: list[Any] = []
    if compaction_index >= 0:
        compaction = entries[compaction_index]
        messages.append(convert(compaction))
        first_kept = compaction.get("firstKeptEntryId")
        keeping = False
        for entry in entries[:compaction_index]:
            if entry.get("id") == first_kept:
                keeping = True
            if keeping and entry.get("type") in _REPLAYABLE:
                messages.append(convert(entry))
    messages.extend(map(convert, tail))
    return SessionContext([m for m in messages if m is not None], thinking_level, model, tools)


_REPLAYABLE = ("message", "custom_message", "branch_summary")


def _wire_message(entry: Mapping[str, Any]) -> Any:
    return entry_message(entry, materialize=False)
