"""Tables for the closing-marker grammar helpers (OpenClaw's ``matchesLiteralPrefix``,
``skipSerializedToolCallTrailingLineBreak``, ``consumeJsonToolClosingMarker``)."""

from __future__ import annotations

import pytest

from openclaw_runtime.repair.closing_markers import (
    consume_json_tool_closing_marker,
    matches_literal_prefix,
    skip_serialized_tool_call_trailing_line_break,
)


@pytest.mark.parametrize(
    ("text", "literal", "expected"),
    [
        ("<|cha", "<|channel|>", True),  # still streaming
        ("<|channel|>", "<|channel|>", True),  # complete
        ("<|channel|>commentary", "<|channel|>", True),  # complete and more
        ("", "<|channel|>", True),  # nothing yet is a prefix of anything
        ("<|chx", "<|channel|>", False),
        ("[END", "[END_TOOL_REQUEST]", True),
        ("[end", "[END_TOOL_REQUEST]", False),  # case matters
    ],
)
def test_matches_literal_prefix(text: str, literal: str, expected: bool) -> None:
    assert matches_literal_prefix(text, literal) is expected


@pytest.mark.parametrize(
    ("text", "cursor", "expected"),
    [
        ("}\nnext", 1, 2),
        ("}\r\nnext", 1, 3),
        ("}\rnext", 1, 2),
        ("}\n\nnext", 1, 2),  # only one line break
        ("}  \nnext", 1, 1),  # spaces are not skipped
        ("}", 1, 1),  # end of text
    ],
)
def test_skip_trailing_line_break(text: str, cursor: int, expected: int) -> None:
    assert skip_serialized_tool_call_trailing_line_break(text, cursor) == expected


@pytest.mark.parametrize(
    ("text", "rest"),
    [
        ('{"a":1}[END_TOOL_REQUEST]\nafter', "after"),
        ('{"a":1}\n  [END_TOOL_REQUEST]\r\nafter', "after"),
        ('{"a":1} [/read_file]\nafter', "after"),
        ('{"a":1}<|call|>after', "after"),
        ('{"a":1}\n<|call|>\n\nafter', "\nafter"),  # one line break only
        ('{"a":1}\nafter', "after"),  # no marker: one line break
        ('{"a":1}  after', "  after"),  # no marker: whitespace stays
        ('{"a":1}\n\n[/not closed', "\n[/not closed"),
        ('{"a":1}[/bad name!]', "[/bad name!]"),
    ],
)
def test_consume_json_tool_closing_marker(text: str, rest: str) -> None:
    cursor = text.index("}") + 1
    assert text[consume_json_tool_closing_marker(text, cursor) :] == rest
