"""Anthropic's additions to the shared replay transform (``openclaw_runtime.providers.replay``):
tool-call ids in the form OpenClaw replays to the Messages API, and the tool turn in progress."""

from __future__ import annotations

from collections.abc import Sequence

from openclaw_runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from openclaw_runtime.providers.replay import (
    FAILED_ASSISTANT_REPLAY_TEXT,
    MISSING_TOOL_RESULT_TEXT,
    STREAM_ERROR_FALLBACK_TEXT,
    TOOL_IMAGE_OMITTED_TEXT,
    USER_IMAGE_OMITTED_TEXT,
    prepare_replay_messages,
)
from openclaw_runtime.transcript.tool_call_ids import normalize_tool_call_id

__all__ = [
    "FAILED_ASSISTANT_REPLAY_TEXT",
    "MISSING_TOOL_RESULT_TEXT",
    "STREAM_ERROR_FALLBACK_TEXT",
    "TOOL_IMAGE_OMITTED_TEXT",
    "USER_IMAGE_OMITTED_TEXT",
    "active_tool_turn_index",
    "normalize_anthropic_tool_call_id",
    "prepare_replay_messages",
]


def normalize_anthropic_tool_call_id(call_id: str) -> str:
    """One id alone in the form replayed to Anthropic (OpenClaw's rule: a native ``toolu_…``
    id unchanged, any other reduced to at most 40 alphanumerics). A whole transcript goes
    through ``normalize_tool_call_ids(messages, "anthropic")``, which also keeps ids unique."""
    return normalize_tool_call_id(call_id, "anthropic")


def active_tool_turn_index(messages: Sequence[Message]) -> int:
    """The assistant whose tool calls the trailing tool results answer (its signed thinking
    is replayed even when this request has thinking off)."""
    index = len(messages) - 1
    result_ids: set[str] = set()
    while index >= 0 and isinstance(messages[index], ToolResultMessage):
        result_ids.add(messages[index].tool_call_id)  # type: ignore[union-attr]
        index -= 1
    if not result_ids or index < 0:
        return -1
    assistant = messages[index]
    if not isinstance(assistant, AssistantMessage):
        return -1
    call_ids = {b.id for b in assistant.content if isinstance(b, ToolCall)}
    return index if result_ids <= call_ids else -1
