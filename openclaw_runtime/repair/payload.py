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
from typing import Any

from .blocks import PlainTextToolCallBlock, PlainTextToolCallParseOptions, coerce_parse_options
from .formats import BUILTIN_TOOL_CALL_FORMATS, ToolCallFormat, safe_parse_at
from .grammar import StructuralLineBreaks, skip_whitespace

__all__ = ["parse_standalone_plain_text_tool_call_blocks"]


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
