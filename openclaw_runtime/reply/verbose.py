"""Verbose mode: one short line per tool call of the run, for the reply payloads.

With ``verbose = "on"`` a channel shows what the agent did (``🧩 Read: notes/a.md``); with
``"full"`` the line also carries the start of the tool's result (``… → 42 lines``). This module
finds, for each tool result of the run, the call it answers and a human summary of that call:
the first non-blank string argument among ``path``, ``file_path``, ``command``, ``cmd``,
``url``, ``query``, ``pattern``, ``name`` (else none); with ``full``, `` → `` and the first line
of the result, cut at ``FULL_RESULT_CHARS``. The runner renders the lines (and masks secrets:
payload text is always redacted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..messages import AssistantMessage, ToolCall, ToolResultMessage
from .settings import VerboseMode

__all__ = ["FULL_RESULT_CHARS", "VerboseToolLine", "verbose_tool_lines"]

FULL_RESULT_CHARS: Final = 200
_SUMMARY_KEYS: Final = ("path", "file_path", "command", "cmd", "url", "query", "pattern", "name")


@dataclass(frozen=True, slots=True)
class VerboseToolLine:
    """One tool call as verbose mode shows it."""

    tool_name: str
    tool_call_id: str
    meta: str | None
    is_error: bool


def _summary(call: ToolCall | None) -> str | None:
    if call is None:
        return None
    for key in _SUMMARY_KEYS:
        value = call.arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip().splitlines()[0]
    return None


def _result_head(result: ToolResultMessage) -> str:
    text = result.text().strip()
    head = text.splitlines()[0] if text else ""
    if len(head) > FULL_RESULT_CHARS or len(text) > len(head):
        head = head[:FULL_RESULT_CHARS].rstrip() + "…"
    return head


def verbose_tool_lines(messages: Sequence[Any], mode: VerboseMode) -> list[VerboseToolLine]:
    """The tool calls of ``messages`` (in order of their results) as verbose mode shows them;
    empty when ``mode`` is ``"off"``."""
    if mode == "off":
        return []
    calls: dict[str, ToolCall] = {}
    lines: list[VerboseToolLine] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls():
                calls[call.id] = call
        elif isinstance(message, ToolResultMessage):
            meta = _summary(calls.get(message.tool_call_id))
            if mode == "full":
                head = _result_head(message)
                if head:
                    meta = f"{meta or message.tool_name} → {head}"
            lines.append(
                VerboseToolLine(message.tool_name, message.tool_call_id, meta, message.is_error)
            )
    return lines
