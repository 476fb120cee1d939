"""Lexical primitives shared by every plain-text tool-call syntax (OpenClaw ``grammar.ts``).

Everything here works on offsets into one string so scanners never copy the tail of a
possibly huge model response. Whitespace follows JavaScript's ``\\s`` (what OpenClaw's
regexes mean), not Python's ``str.isspace``: the two differ on ``\\x1c``-``\\x1f``, ``\\x85``
and ``\\ufeff``, and a port that disagreed would strip or keep different text.

Offsets are Python string indices (code points); OpenClaw's are UTF-16 units. They differ
only after astral characters and only matter to callers that slice with them.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES",
    "END_TOOL_REQUEST",
    "HARMONY_CALL_MARKER",
    "HARMONY_CHANNELS",
    "HARMONY_CHANNEL_MARKER",
    "HARMONY_MESSAGE_MARKER",
    "MAX_PLAIN_TEXT_TOOL_NAME_CHARS",
    "Span",
    "StructuralLineBreaks",
    "char_at",
    "consume_line_break",
    "consume_structural_line_break_after_horizontal_whitespace",
    "index_of_ascii_marker_ignore_case",
    "is_ascii_marker_prefix_ignore_case",
    "is_js_blank",
    "is_js_whitespace",
    "is_literal_prefix_at",
    "is_plain_text_tool_name_char",
    "is_xmlish_name_char",
    "js_trim",
    "js_trim_end",
    "js_trim_start",
    "skip_horizontal_whitespace",
    "skip_line_indentation",
    "skip_whitespace",
    "starts_with_ascii_marker_ignore_case",
    "utf8_byte_length_within_limit",
]

#: Legacy marker some models emit after a serialized JSON tool request.
END_TOOL_REQUEST = "[END_TOOL_REQUEST]"
#: Harmony marker that introduces the target channel before a tool call.
HARMONY_CHANNEL_MARKER = "<|channel|>"
#: Harmony marker that may separate the header from the JSON payload.
HARMONY_MESSAGE_MARKER = "<|message|>"
#: Harmony marker that may close a serialized tool-call payload.
HARMONY_CALL_MARKER = "<|call|>"
#: Harmony channels a tool call may be addressed from, in OpenClaw's matching order.
HARMONY_CHANNELS = ("commentary", "analysis", "final")
#: Longest tool name any plain-text syntax accepts; one more character is invalid.
MAX_PLAIN_TEXT_TOOL_NAME_CHARS = 120
#: Largest payload (UTF-8 bytes) one repaired call may carry.
DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES = 256_000

# JavaScript's WhiteSpace + LineTerminator, i.e. what /\s/ and String.prototype.trim() match.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_WHITESPACE_SET = frozenset(_JS_WHITESPACE)
_INDENTATION_SET = _JS_WHITESPACE_SET - {"\r", "\n"}
_PLAIN_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_XMLISH_NAME_CHARS = _PLAIN_NAME_CHARS | {".", ":"}


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open ``[start, end)`` range of the scanned text."""

    start: int
    end: int

    def of(self, text: str) -> str:
        """The slice of ``text`` this span covers."""
        return text[self.start : self.end]


@dataclass(slots=True)
class StructuralLineBreaks:
    """Virtual line breaks: offsets where one text part ended and the next began.

    Providers split a response into several text blocks; a ``[name]`` header at the end of one
    block and its JSON at the start of the next are on different lines even though no ``\\n``
    separates them. Scanners accept such an offset wherever a line break is required and
    record each one they used in ``used`` (when given).
    """

    offsets: AbstractSet[int]
    used: set[int] | None = field(default=None)


def char_at(text: str, index: int) -> str:
    """The character at ``index``, or ``""`` past either end (JavaScript's ``undefined``)."""
    return text[index] if 0 <= index < len(text) else ""


def is_js_whitespace(char: str) -> bool:
    """True for one character JavaScript's ``\\s`` matches."""
    return char in _JS_WHITESPACE_SET and char != ""


def is_js_blank(text: str) -> bool:
    """True when ``text`` is empty or only JavaScript whitespace (``!text.trim()``)."""
    return not text.strip(_JS_WHITESPACE)


def js_trim(text: str) -> str:
    """``String.prototype.trim``."""
    return text.strip(_JS_WHITESPACE)


def js_trim_start(text: str) -> str:
    """``String.prototype.trimStart``."""
    return text.lstrip(_JS_WHITESPACE)


def js_trim_end(text: str) -> str:
    """``String.prototype.trimEnd``."""
    return text.rstrip(_JS_WHITESPACE)


def is_plain_text_tool_name_char(char: str) -> bool:
    """Bracket and Harmony tool names use provider-safe ids only: ``[A-Za-z0-9_-]``."""
    return char in _PLAIN_NAME_CHARS and char != ""


def is_xmlish_name_char(char: str) -> bool:
    """XML-ish function and parameter names also allow namespace punctuation ``.`` and ``:``."""
    return char in _XMLISH_NAME_CHARS and char != ""


def skip_horizontal_whitespace(text: str, start: int) -> int:
    """Skip spaces and tabs only, so line structure stays visible to the grammar."""
    index, length = start, len(text)
    while index < length and text[index] in " \t":
        index += 1
    return index


def skip_line_indentation(text: str, start: int) -> int:
    """Skip indentation (any whitespace but ``\\r``/``\\n``) without leaving the line."""
    index, length = start, len(text)
    while index < length and text[index] in _INDENTATION_SET:
        index += 1
    return index


def skip_whitespace(text: str, start: int) -> int:
    """Skip all whitespace, line breaks included, where line structure no longer matters."""
    index, length = start, len(text)
    while index < length and text[index] in _JS_WHITESPACE_SET:
        index += 1
    return index


def consume_line_break(text: str, start: int) -> int | None:
    """The offset after a ``\\n``, ``\\r\\n`` or lone ``\\r`` at ``start``; ``None`` if none."""
    char = char_at(text, start)
    if char == "\r":
        return start + 2 if char_at(text, start + 1) == "\n" else start + 1
    if char == "\n":
        return start + 1
    return None


def consume_structural_line_break_after_horizontal_whitespace(
    text: str, start: int, line_breaks: StructuralLineBreaks | None = None
) -> int | None:
    """After optional spaces/tabs, a real line break (its end) or a virtual one (its offset).

    A real break wins. Otherwise the first virtual offset in ``[start, end of spaces]`` counts;
    the returned offset is the virtual break itself (nothing is consumed).
    """
    right = skip_horizontal_whitespace(text, start)
    actual = consume_line_break(text, right)
    if actual is not None:
        return actual
    if line_breaks is None:
        return None
    for offset in range(start, right + 1):
        if offset in line_breaks.offsets:
            if line_breaks.used is not None:
                line_breaks.used.add(offset)
            return offset
    return None


def utf8_byte_length_within_limit(text: str, start: int, end: int, max_bytes: int) -> int | None:
    """The UTF-8 size of ``text[start:end]`` when it is at most ``max_bytes``, else ``None``.

    Counted on the encoded bytes so multibyte characters cannot smuggle a payload past a
    character-count guard. A lone surrogate counts as the 3 bytes of its replacement.
    """
    if end - start > max_bytes:
        return None
    size = len(text[start:end].encode("utf-8", "surrogatepass"))
    return size if size <= max_bytes else None


def is_literal_prefix_at(text: str, start: int, literal: str) -> bool:
    """True when the text from ``start`` to its end is a strict prefix of ``literal``.

    Used while streaming: ``"<|ca"`` at the end of the text may still become ``"<|call|>"``.
    """
    available = len(text) - start
    return start >= 0 and available < len(literal) and literal.startswith(text[start:])


def starts_with_ascii_marker_ignore_case(text: str, cursor: int, marker: str) -> bool:
    """True when ``text`` continues with ``marker`` (given lowercase) at ``cursor``, any case."""
    return text[cursor : cursor + len(marker)].lower() == marker


def is_ascii_marker_prefix_ignore_case(text: str, cursor: int, marker: str) -> bool:
    """True when the text from ``cursor`` to its end is a strict prefix of ``marker``, any case."""
    rest = text[cursor : cursor + len(marker)].lower()
    return len(rest) < len(marker) and marker.startswith(rest)


def index_of_ascii_marker_ignore_case(text: str, marker: str, start: int) -> int:
    """The first offset ``>= start`` where ``marker`` (lowercase, starting with ``<``) occurs."""
    cursor = text.find("<", start)
    while cursor != -1:
        if starts_with_ascii_marker_ignore_case(text, cursor, marker):
            return cursor
        cursor = text.find("<", cursor + 1)
    return -1
