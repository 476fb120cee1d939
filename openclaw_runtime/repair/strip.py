"""Remove plain-text tool-call blocks from user-visible text (OpenClaw
``stripPlainTextToolCallBlocks``).

Only blocks that start a line (after indentation) are removed, together with the line break
that ends them, and adjacent calls go with them. A JSON tool-call object is removed only when
every non-blank line of the text is one; a JSON example inside prose stays. A block whose
structure is balanced but whose JSON is invalid stays, and so does an unfinished block.
"""

from __future__ import annotations

import re

from .grammar import consume_line_break, skip_line_indentation
from .json_object import parse_json_tool_call_block_end_at, should_strip_json_blocks
from .scan import scan_plain_text_tool_call

__all__ = ["strip_plain_text_tool_call_blocks"]

# JavaScript's [^\S\r\n]: whitespace other than line breaks.
_INDENT = "[\t\v\f \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_BRACKET_HINT = re.compile(r"\[(?:tool:)?[A-Za-z0-9_-]+\]")
_HARMONY_HINT = re.compile(
    rf"(?:^|[\r\n]){_INDENT}*(?:<\|channel\|>)?(?:commentary|analysis|final)[ \t]+to="
)
_FUNCTION_HINT = re.compile(rf"(?:^|[\r\n]){_INDENT}*<function=", re.IGNORECASE)


def _may_contain_calls(text: str) -> bool:
    return bool(
        _BRACKET_HINT.search(text)
        or _HARMONY_HINT.search(text)
        or _FUNCTION_HINT.search(text)
        or "{" in text
    )


def strip_plain_text_tool_call_blocks(text: str) -> str:
    """``text`` without its whole-line plain-text tool-call blocks."""
    if not text or not _may_contain_calls(text):
        return text
    strip_json = should_strip_json_blocks(text)
    result: list[str] = []
    cursor = 0
    index = 0
    length = len(text)
    while index < length:
        if index != 0 and text[index - 1] not in "\n\r":
            index += 1
            continue
        block_start = skip_line_indentation(text, index)
        json_end = parse_json_tool_call_block_end_at(text, block_start) if strip_json else None
        if json_end is not None:
            result.append(text[cursor:index])
            cursor = json_end
            after = consume_line_break(text, cursor)
            if after is not None:
                cursor = after
            index = cursor
            continue
        scan = scan_plain_text_tool_call(text, block_start)
        if scan.kind == "invalid":
            # the scanner owns everything before `next`; skipping it keeps the strip linear
            index = max(index + 1, scan.next)
            continue
        block_end = scan.end if scan.kind == "complete" else scan.complete_end
        if block_end is None:
            return "".join(result) + text[cursor:]
        result.append(text[cursor:index])
        while True:
            adjacent = scan_plain_text_tool_call(text, skip_line_indentation(text, block_end))
            if adjacent.kind == "complete":
                adjacent_end = adjacent.end
            elif adjacent.kind == "prefix":
                adjacent_end = adjacent.complete_end
            else:
                adjacent_end = None
            if adjacent_end is None or adjacent_end <= block_end:
                break
            block_end = adjacent_end
        line_break_start = skip_line_indentation(text, block_end)
        if line_break_start == length:
            cursor = line_break_start
        else:
            after = consume_line_break(text, line_break_start)
            cursor = block_end if after is None else after
        index = cursor
    result.append(text[cursor:])
    return "".join(result)
