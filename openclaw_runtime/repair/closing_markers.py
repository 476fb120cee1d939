"""What may follow a serialized JSON tool call: a closing marker, then one line break.

Models that write tool calls as text close them in several ways: the legacy
``[END_TOOL_REQUEST]``, a bracketed ``[/tool_name]``, Harmony's ``<|call|>``, or nothing. A
repair that removes the call from the visible text must also consume that closing marker and
exactly one line break after it, or the cleaned answer keeps a dangling marker or swallows
a paragraph break. These are the twins of OpenClaw's grammar helpers
``matchesLiteralPrefix``, ``skipSerializedToolCallTrailingLineBreak`` and
``consumeJsonToolClosingMarker``; all of them work on offsets and never copy the text.
"""

from __future__ import annotations

import re

from .grammar import (
    END_TOOL_REQUEST,
    HARMONY_CALL_MARKER,
    consume_line_break,
    is_js_whitespace,
)

__all__ = [
    "consume_json_tool_closing_marker",
    "matches_literal_prefix",
    "skip_serialized_tool_call_trailing_line_break",
]

_BRACKET_CLOSE_RE = re.compile(r"\[/[A-Za-z0-9_-]+\]")


def matches_literal_prefix(text: str, literal: str) -> bool:
    """``text`` is ``literal``, a still-streaming prefix of it, or starts with it."""
    return literal.startswith(text) or text.startswith(literal)


def skip_serialized_tool_call_trailing_line_break(text: str, cursor: int) -> int:
    """One optional ``\\n``, ``\\r\\n`` or ``\\r`` at ``cursor`` is consumed; nothing else."""
    after = consume_line_break(text, cursor)
    return cursor if after is None else after


def consume_json_tool_closing_marker(text: str, cursor: int) -> int:
    """The offset after an optional closing marker (and one line break) at ``cursor``.

    Whitespace before a marker is skipped only when a marker follows it; with no marker the
    cursor moves past at most one line break.
    """
    marker_start = cursor
    while marker_start < len(text) and is_js_whitespace(text[marker_start]):
        marker_start += 1
    if text.startswith(END_TOOL_REQUEST, marker_start):
        return skip_serialized_tool_call_trailing_line_break(
            text, marker_start + len(END_TOOL_REQUEST)
        )
    bracket = _BRACKET_CLOSE_RE.match(text, marker_start)
    if bracket is not None:
        return skip_serialized_tool_call_trailing_line_break(text, bracket.end())
    if text.startswith(HARMONY_CALL_MARKER, marker_start):
        return skip_serialized_tool_call_trailing_line_break(
            text, marker_start + len(HARMONY_CALL_MARKER)
        )
    return skip_serialized_tool_call_trailing_line_break(text, cursor)
