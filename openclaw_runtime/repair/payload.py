"""Parse text made only of plain-text tool calls (OpenClaw ``payload.ts``).

``parse_standalone_plain_text_tool_call_blocks`` succeeds only when the whole text, apart
from whitespace between calls, is tool calls; one stray word and it returns ``None``. At each
position the formats are tried in order (built-ins: bare JSON object, bracket, Harmony,
XML-ish) and the first that parses a call wins.

Every call's payload is capped (256 000 UTF-8 bytes by default) and, when an allow-list is
given, its name must be on it. JSON payloads must parse to an object; XML-ish parameter
values stay strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

from .blocks import PlainTextToolCallBlock, PlainTextToolCallParseOptions, coerce_parse_options
from .grammar import (
    StructuralLineBreaks,
    consume_line_break,
    consume_structural_line_break_after_horizontal_whitespace,
    skip_horizontal_whitespace,
    skip_whitespace,
    utf8_byte_length_within_limit,
)
from .scan import parse_json_arguments, scan_plain_text_json_tool_call
from .xmlish import scan_xmlish_tool_call

if TYPE_CHECKING:
    from .formats import ToolCallFormat

__all__ = [
    "extract_xmlish_parameter_value",
    "parse_json_syntax_tool_call_block_at",
    "parse_standalone_plain_text_tool_call_blocks",
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


def parse_standalone_plain_text_tool_call_blocks(
    text: str,
    options: PlainTextToolCallParseOptions | Mapping[str, Any] | Iterable[str] | None = None,
    structural_line_breaks: StructuralLineBreaks | AbstractSet[int] | None = None,
    *,
    formats: Sequence[ToolCallFormat] | None = None,
) -> list[PlainTextToolCallBlock] | None:
    """Every call in ``text`` when the text is nothing but calls; otherwise ``None``.

    ``options``: allow-list and payload cap (``{"allowedToolNames": [...],
    "maxPayloadBytes": n}`` works too). ``structural_line_breaks``: offsets where text parts
    were joined (see ``StructuralLineBreaks``). ``formats``: the syntaxes to try, in order;
    the built-ins by default. A format that raises counts as not matching.
    """
    from .formats import BUILTIN_TOOL_CALL_FORMATS, safe_parse_at

    parse_options = coerce_parse_options(options)
    line_breaks = _coerce_line_breaks(structural_line_breaks)
    chosen = tuple(BUILTIN_TOOL_CALL_FORMATS.values()) if formats is None else tuple(formats)
    blocks: list[PlainTextToolCallBlock] = []
    cursor = skip_whitespace(text, 0)
    while cursor < len(text):
        found: Sequence[PlainTextToolCallBlock] | None = None
        for fmt in chosen:
            found = safe_parse_at(fmt, text, cursor, parse_options, line_breaks)
            if found:
                break
        if not found:
            return None
        blocks.extend(found)
        cursor = skip_whitespace(text, max(block.end for block in found))
    return blocks or None


def _coerce_line_breaks(
    value: StructuralLineBreaks | AbstractSet[int] | None,
) -> StructuralLineBreaks | None:
    if value is None or isinstance(value, StructuralLineBreaks):
        return value
    return StructuralLineBreaks(frozenset(value))
