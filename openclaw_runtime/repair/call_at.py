"""Parse the one JSON-syntax or XML-ish tool call that begins at a position.

The built-in bracket, Harmony and XML-ish formats (``formats.py``) parse with these; the
standalone parser (``payload.py``) tries the formats in turn. Kept apart from both so the
formats never import the standalone parser that uses them.

Every call's payload is capped (``options.max_payload_bytes``) and, when an allow-list is
given, its name must be on it. JSON payloads must parse to an object; XML-ish parameter
values stay strings.
"""

from __future__ import annotations

from typing import Any

from .blocks import PlainTextToolCallBlock, PlainTextToolCallParseOptions
from .grammar import (
    StructuralLineBreaks,
    consume_line_break,
    consume_structural_line_break_after_horizontal_whitespace,
    skip_horizontal_whitespace,
    utf8_byte_length_within_limit,
)
from .scan import parse_json_arguments, scan_plain_text_json_tool_call
from .xmlish import scan_xmlish_tool_call

__all__ = [
    "extract_xmlish_parameter_value",
    "parse_json_syntax_tool_call_block_at",
    "parse_xmlish_tool_call_block_at",
]


def parse_json_syntax_tool_call_block_at(
    text: str,
    start: int,
    options: PlainTextToolCallParseOptions | None = None,
    line_breaks: StructuralLineBreaks | None = None,
) -> PlainTextToolCallBlock | None:
    """The complete bracket or Harmony call at ``start`` whose JSON is an object, or ``None``."""
    options = options or PlainTextToolCallParseOptions()
    scan = scan_plain_text_json_tool_call(text, start, line_breaks)
    if scan.kind != "complete" or scan.candidate is None or scan.end is None:
        return None
    payload = scan.candidate.payload
    assert payload is not None
    name = scan.candidate.name.of(text)
    if not options.allows(name):
        return None
    if (
        utf8_byte_length_within_limit(text, payload.start, payload.end, options.max_payload_bytes)
        is None
    ):
        return None
    arguments = parse_json_arguments(text, payload)
    if arguments is None:
        return None
    return PlainTextToolCallBlock(name, arguments, start, scan.end, text[start : scan.end])


def extract_xmlish_parameter_value(
    text: str, start: int, end: int, line_breaks: StructuralLineBreaks | None = None
) -> str:
    """A parameter value as the model meant it.

    One leading line break (real, or virtual at a text-part boundary within the leading
    spaces) and one trailing line break belong to the markup, not to the value.
    """
    value = text[start:end]
    if consume_line_break(text, skip_horizontal_whitespace(text, start)) is None:
        boundary = consume_structural_line_break_after_horizontal_whitespace(
            text, start, line_breaks
        )
        if boundary is not None:
            offset = boundary - start
            value = f"{value[:offset]}\n{value[offset:]}"
    payload_start = consume_line_break(value, 0)
    if payload_start is None:
        return value
    value = value[payload_start:]
    if value.endswith("\r\n"):
        return value[:-2]
    if value.endswith(("\r", "\n")):
        return value[:-1]
    return value


def parse_xmlish_tool_call_block_at(
    text: str,
    start: int,
    options: PlainTextToolCallParseOptions | None = None,
    line_breaks: StructuralLineBreaks | None = None,
) -> PlainTextToolCallBlock | None:
    """The complete XML-ish call at ``start`` (string arguments), or ``None``."""
    options = options or PlainTextToolCallParseOptions()
    scan = scan_xmlish_tool_call(text, start, line_breaks)
    if scan.kind != "complete" or scan.candidate is None or scan.end is None:
        return None
    candidate = scan.candidate
    assert candidate.payload is not None
    name = candidate.name.of(text)
    if not options.allows(name):
        return None
    payload = candidate.payload
    if (
        utf8_byte_length_within_limit(text, payload.start, payload.end, options.max_payload_bytes)
        is None
    ):
        return None
    arguments: dict[str, Any] = {}
    for parameter in candidate.parameters:
        arguments[parameter.name.of(text)] = extract_xmlish_parameter_value(
            text, parameter.value.start, parameter.value.end, line_breaks
        )
    return PlainTextToolCallBlock(name, arguments, start, scan.end, text[start : scan.end])
