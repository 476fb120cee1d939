"""The XML-ish tool-call syntax (OpenClaw ``scanXmlishToolCall``).

Recognized openings, markers matched case-insensitively:

* ``<function=NAME>`` — NAME of ``[A-Za-z0-9_.:-]``, 1 to 120 characters;
* ``[NAME]`` then a (real or virtual) line break — NAME of ``[A-Za-z0-9_-]``;
* ``[tool:NAME]``.

Then zero or more ``<parameter=KEY>VALUE</parameter>`` and ``</function>``. A bracket opening
needs at least one parameter before ``</function>``; ``[tool:NAME]`` needs no ``</function>``
at all once it has a parameter. Parameter values are kept verbatim (they are strings, never
JSON-parsed) and may contain anything up to the first ``</parameter>``.

The scan is structural and uncapped; callers apply name allow-lists and the payload cap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from .grammar import (
    Span,
    StructuralLineBreaks,
    char_at,
    consume_structural_line_break_after_horizontal_whitespace,
    index_of_ascii_marker_ignore_case,
    is_ascii_marker_prefix_ignore_case,
    is_plain_text_tool_name_char,
    is_xmlish_name_char,
    skip_whitespace,
    starts_with_ascii_marker_ignore_case,
)

__all__ = [
    "FUNCTION_CLOSE",
    "FUNCTION_OPEN",
    "PARAMETER_CLOSE",
    "PARAMETER_OPEN",
    "XmlishParameterSpan",
    "XmlishSyntax",
    "XmlishToolCallCandidate",
    "XmlishToolCallScan",
    "scan_xmlish_tool_call",
]

FUNCTION_OPEN = "<function="
FUNCTION_CLOSE = "</function>"
PARAMETER_OPEN = "<parameter="
PARAMETER_CLOSE = "</parameter>"

XmlishSyntax: TypeAlias = Literal["function", "named-bracket", "tool-bracket"]

_NAME_LIMIT = 120


@dataclass(frozen=True, slots=True)
class XmlishParameterSpan:
    """One ``<parameter=KEY>VALUE</parameter>``: where its key and its raw value are."""

    name: Span
    value: Span


@dataclass(frozen=True, slots=True)
class XmlishToolCallCandidate:
    """What is known about a call so far.

    ``payload`` is the body after the opening (parameters included) up to where the scan
    stopped; ``active_parameter_open_end`` is set while a parameter value is still open.
    """

    syntax: XmlishSyntax
    name: Span
    name_complete: bool
    parameters: tuple[XmlishParameterSpan, ...] = ()
    payload: Span | None = None
    active_parameter_open_end: int | None = None


@dataclass(frozen=True, slots=True)
class XmlishToolCallScan:
    """``complete`` (``end`` set), ``prefix`` (could still become a call) or ``invalid``.

    ``at`` is where an invalid scan failed. ``complete_end`` on a prefix is the end of a
    ``[tool:NAME]`` call that is already complete though more parameters might follow; it is
    safe for stripping visible text but the prefix itself is never executable.
    """

    kind: Literal["complete", "prefix", "invalid"]
    candidate: XmlishToolCallCandidate | None = None
    at: int | None = None
    end: int | None = None
    complete_end: int | None = None


def _invalid(at: int, candidate: XmlishToolCallCandidate | None = None) -> XmlishToolCallScan:
    return XmlishToolCallScan("invalid", candidate, at=at)


def _scan_name(text: str, start: int, is_name_char: Callable[[str], bool]) -> int:
    """End of a name run, stopping one past the limit so an overlong name is detectable."""
    cursor = start
    while is_name_char(char_at(text, cursor)) and cursor - start < _NAME_LIMIT + 1:
        cursor += 1
    return cursor


def scan_xmlish_tool_call(
    text: str, start: int = 0, line_breaks: StructuralLineBreaks | None = None
) -> XmlishToolCallScan:
    """Classify the XML-ish call that may begin at ``start``."""
    cursor = start
    first = char_at(text, cursor)
    syntax: XmlishSyntax
    if first == "<":
        if not starts_with_ascii_marker_ignore_case(
            text, cursor, FUNCTION_OPEN
        ) and not is_ascii_marker_prefix_ignore_case(text, cursor, FUNCTION_OPEN):
            return _invalid(start)
        if len(text) - cursor < len(FUNCTION_OPEN):
            return XmlishToolCallScan("prefix")
        cursor += len(FUNCTION_OPEN)
        name_start = cursor
        cursor = _scan_name(text, name_start, is_xmlish_name_char)
        name = Span(name_start, cursor)
        syntax = "function"
        if cursor - name_start > _NAME_LIMIT:
            return _invalid(cursor)
        if cursor == len(text):
            return XmlishToolCallScan("prefix", XmlishToolCallCandidate(syntax, name, False))
        if cursor == name_start or text[cursor] != ">":
            return _invalid(cursor)
        cursor += 1
    elif first == "[":
        cursor += 1
        first_name_start = cursor
        cursor = _scan_name(text, first_name_start, is_plain_text_tool_name_char)
        if cursor - first_name_start > _NAME_LIMIT:
            return _invalid(cursor)
        first_name = text[first_name_start:cursor]
        if cursor == len(text) and "tool".startswith(first_name):
            return XmlishToolCallScan("prefix")
        syntax = "named-bracket"
        name = Span(first_name_start, cursor)
        if char_at(text, cursor) == ":" and first_name == "tool":
            syntax = "tool-bracket"
            cursor += 1
            name_start = cursor
            cursor = _scan_name(text, name_start, is_plain_text_tool_name_char)
            name = Span(name_start, cursor)
            if cursor - name_start > _NAME_LIMIT:
                return _invalid(cursor)
        if cursor == len(text):
            return XmlishToolCallScan("prefix", XmlishToolCallCandidate(syntax, name, False))
        if name.start == name.end or text[cursor] != "]":
            return _invalid(cursor)
        cursor += 1
        if syntax == "named-bracket":
            if cursor == len(text):
                return XmlishToolCallScan("prefix", XmlishToolCallCandidate(syntax, name, True))
            after_line_break = consume_structural_line_break_after_horizontal_whitespace(
                text, cursor, line_breaks
            )
            if after_line_break is None:
                return _invalid(cursor)
            cursor = after_line_break
    else:
        return _invalid(start)
    return _scan_body(text, cursor, syntax, name)


def _scan_body(text: str, body_start: int, syntax: XmlishSyntax, name: Span) -> XmlishToolCallScan:
    parameters: list[XmlishParameterSpan] = []
    last_parameter_end: int | None = None

    def candidate(payload_end: int, active: int | None = None) -> XmlishToolCallCandidate:
        return XmlishToolCallCandidate(
            syntax, name, True, tuple(parameters), Span(body_start, payload_end), active
        )

    def prefix(payload_end: int, active: int | None = None) -> XmlishToolCallScan:
        complete_end = last_parameter_end if syntax == "tool-bracket" else None
        return XmlishToolCallScan(
            "prefix", candidate(payload_end, active), complete_end=complete_end
        )

    def complete(payload_end: int, end: int | None = None) -> XmlishToolCallScan:
        return XmlishToolCallScan(
            "complete", candidate(payload_end), end=payload_end if end is None else end
        )

    cursor = body_start
    while True:
        marker_start = skip_whitespace(text, cursor)
        if marker_start == len(text):
            if syntax == "tool-bracket" and last_parameter_end is not None:
                return complete(last_parameter_end)
            return XmlishToolCallScan("prefix", candidate(len(text)))
        if starts_with_ascii_marker_ignore_case(text, marker_start, FUNCTION_CLOSE):
            if syntax != "function" and not parameters:
                return _invalid(marker_start, candidate(marker_start))
            return complete(marker_start, marker_start + len(FUNCTION_CLOSE))
        if is_ascii_marker_prefix_ignore_case(text, marker_start, FUNCTION_CLOSE):
            return prefix(marker_start)
        if starts_with_ascii_marker_ignore_case(text, marker_start, PARAMETER_OPEN):
            key_start = marker_start + len(PARAMETER_OPEN)
            key_end = _scan_name(text, key_start, is_xmlish_name_char)
            if key_end - key_start > _NAME_LIMIT:
                return _invalid(marker_start, candidate(marker_start))
            if key_end == len(text):
                return prefix(marker_start)
            if key_end == key_start or text[key_end] != ">":
                return _invalid(marker_start, candidate(marker_start))
            value_start = key_end + 1
            close_start = index_of_ascii_marker_ignore_case(text, PARAMETER_CLOSE, value_start)
            if close_start == -1:
                return prefix(len(text), value_start)
            end = close_start + len(PARAMETER_CLOSE)
            parameters.append(
                XmlishParameterSpan(Span(key_start, key_end), Span(value_start, close_start))
            )
            cursor = end
            last_parameter_end = end
            continue
        if is_ascii_marker_prefix_ignore_case(text, marker_start, PARAMETER_OPEN):
            return prefix(marker_start)
        if syntax == "tool-bracket" and last_parameter_end is not None:
            return complete(last_parameter_end)
        return _invalid(marker_start, candidate(marker_start))
