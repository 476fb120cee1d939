"""Streaming-aware scanners: is the text at an offset a complete call, a prefix, or invalid?

``scan_plain_text_json_tool_call`` covers the syntaxes whose payload is a JSON object
(OpenClaw ``scanPlainTextJsonToolCall``):

* named bracket ``[name]`` + line break + ``{json}`` + a required closer ``[/name]`` or
  ``[END_TOOL_REQUEST]``;
* tool bracket ``[tool:name]`` + ``{json}`` + an optional closer ``<|call|>``,
  ``[END_TOOL_REQUEST]`` or ``[/name]``;
* Harmony ``(<|channel|>)?(commentary|analysis|final) to=name code (<|message|>)? {json}`` with
  the same optional closers.

``prefix`` means more text could still make it a call (a partial closer keeps it open); a
suffix that cannot become a closer (``<|cap``) completes it at the end of the JSON.

``scan_plain_text_tool_call`` combines that scan with the XML-ish one, an optional tool-name
matcher and the payload cap (OpenClaw ``scanPlainTextToolCall``), and always reports how far
a caller may skip (``next``) so repeated scans stay linear.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from .grammar import (
    DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES,
    END_TOOL_REQUEST,
    HARMONY_CALL_MARKER,
    HARMONY_CHANNEL_MARKER,
    HARMONY_CHANNELS,
    HARMONY_MESSAGE_MARKER,
    MAX_PLAIN_TEXT_TOOL_NAME_CHARS,
    Span,
    StructuralLineBreaks,
    char_at,
    consume_structural_line_break_after_horizontal_whitespace,
    is_literal_prefix_at,
    is_plain_text_tool_name_char,
    skip_horizontal_whitespace,
    skip_whitespace,
    utf8_byte_length_within_limit,
)
from .json_object import JsonLexState, parse_strict_json, scan_json_object
from .xmlish import XmlishToolCallCandidate, XmlishToolCallScan, scan_xmlish_tool_call

__all__ = [
    "AllowedToolNameMatcher",
    "JsonToolCallSyntax",
    "PlainTextJsonToolCallCandidate",
    "PlainTextJsonToolCallScan",
    "PlainTextToolCallScan",
    "ScanKind",
    "ToolNameMatcher",
    "parse_json_arguments",
    "scan_plain_text_json_tool_call",
    "scan_plain_text_tool_call",
]

ScanKind: TypeAlias = Literal["complete", "prefix", "invalid"]
JsonToolCallSyntax: TypeAlias = Literal["harmony", "named-bracket", "tool-bracket"]


@runtime_checkable
class ToolNameMatcher(Protocol):
    """Which tool names a request may repair, asked while names are still streaming in."""

    def has_exact_name(self, name: str) -> bool:
        """True only for a complete name this request may repair."""
        ...

    def has_name_prefix(self, prefix: str) -> bool:
        """True while ``prefix`` can still grow into a repairable name."""
        ...


@dataclass(frozen=True, slots=True)
class AllowedToolNameMatcher:
    """The matcher for a fixed set of allowed names (the request's tools)."""

    names: frozenset[str]

    @classmethod
    def of(cls, names: Iterable[str]) -> AllowedToolNameMatcher:
        """A matcher for ``names``."""
        return cls(frozenset(names))

    def has_exact_name(self, name: str) -> bool:
        """True when ``name`` is allowed."""
        return name in self.names

    def has_name_prefix(self, prefix: str) -> bool:
        """True when some allowed name starts with ``prefix``."""
        return any(name.startswith(prefix) for name in self.names)


@dataclass(frozen=True, slots=True)
class PlainTextJsonToolCallCandidate:
    """A JSON-payload call seen so far: syntax, name (maybe partial), payload and lexer state."""

    syntax: JsonToolCallSyntax
    name: Span
    name_complete: bool
    payload: Span | None = None
    json: JsonLexState | None = None


@dataclass(frozen=True, slots=True)
class PlainTextJsonToolCallScan:
    """Result of ``scan_plain_text_json_tool_call``.

    ``complete``: ``candidate`` (name complete, payload set) and ``end`` after any closer;
    ``prefix``: ``candidate`` when a name is known; ``invalid``: ``at`` where it failed.
    """

    kind: ScanKind
    candidate: PlainTextJsonToolCallCandidate | None = None
    at: int | None = None
    end: int | None = None


@dataclass(frozen=True, slots=True)
class _Opening:
    cursor: int
    candidate: PlainTextJsonToolCallCandidate


def _prefix(candidate: PlainTextJsonToolCallCandidate | None = None) -> PlainTextJsonToolCallScan:
    return PlainTextJsonToolCallScan("prefix", candidate)


def _invalid(
    at: int, candidate: PlainTextJsonToolCallCandidate | None = None
) -> PlainTextJsonToolCallScan:
    return PlainTextJsonToolCallScan("invalid", candidate, at=at)


def _scan_tool_name_end(text: str, start: int) -> int | None:
    """End of a ``[A-Za-z0-9_-]`` name; ``None`` once a 121st name character appears."""
    end = start
    while is_plain_text_tool_name_char(char_at(text, end)):
        if end - start == MAX_PLAIN_TEXT_TOOL_NAME_CHARS:
            return None
        end += 1
    return end


def _named(
    syntax: JsonToolCallSyntax, name: Span, complete: bool
) -> PlainTextJsonToolCallCandidate | None:
    return PlainTextJsonToolCallCandidate(syntax, name, complete) if name.end > name.start else None


def _scan_bracket_opening(
    text: str, start: int, line_breaks: StructuralLineBreaks | None
) -> _Opening | PlainTextJsonToolCallScan:
    cursor = start + 1
    syntax: JsonToolCallSyntax = "named-bracket"
    if text.startswith("tool:", cursor):
        syntax = "tool-bracket"
        cursor += len("tool:")
    elif is_literal_prefix_at(text, cursor, "tool:"):
        return _prefix()
    name_start = cursor
    name_end = _scan_tool_name_end(text, name_start)
    if name_end is None:
        return _invalid(name_start + MAX_PLAIN_TEXT_TOOL_NAME_CHARS)
    name = Span(name_start, name_end)
    cursor = name_end
    if cursor == len(text):
        return _prefix(_named(syntax, name, False))
    if name_start == name_end or text[cursor] != "]":
        return _invalid(cursor)
    cursor += 1
    value = PlainTextJsonToolCallCandidate(syntax, name, True)
    if syntax == "named-bracket":
        horizontal_end = skip_horizontal_whitespace(text, cursor)
        if horizontal_end == len(text):
            return _prefix(value)
        after_line_break = consume_structural_line_break_after_horizontal_whitespace(
            text, cursor, line_breaks
        )
        if after_line_break is None:
            return _invalid(horizontal_end, value)
        cursor = after_line_break
    return _Opening(cursor, value)


def _scan_harmony_opening(text: str, start: int) -> _Opening | PlainTextJsonToolCallScan:
    cursor = start
    if text.startswith(HARMONY_CHANNEL_MARKER, cursor):
        cursor += len(HARMONY_CHANNEL_MARKER)
    elif is_literal_prefix_at(text, cursor, HARMONY_CHANNEL_MARKER):
        return _prefix()
    elif char_at(text, cursor) == "<":
        return _invalid(cursor)

    channel = next((c for c in HARMONY_CHANNELS if text.startswith(c, cursor)), None)
    if channel is None:
        if any(is_literal_prefix_at(text, cursor, c) for c in HARMONY_CHANNELS):
            return _prefix()
        return _invalid(cursor)
    cursor += len(channel)
    if cursor == len(text):
        return _prefix()
    if text[cursor] not in " \t":
        return _invalid(cursor)
    cursor = skip_horizontal_whitespace(text, cursor)
    if not text.startswith("to=", cursor):
        return _prefix() if is_literal_prefix_at(text, cursor, "to=") else _invalid(cursor)
    cursor += len("to=")

    name_start = cursor
    name_end = _scan_tool_name_end(text, name_start)
    if name_end is None:
        return _invalid(name_start + MAX_PLAIN_TEXT_TOOL_NAME_CHARS)
    name = Span(name_start, name_end)
    cursor = name_end
    if cursor == len(text):
        return _prefix(_named("harmony", name, False))
    if name_start == name_end or text[cursor] not in " \t":
        return _invalid(cursor)
    cursor = skip_horizontal_whitespace(text, cursor)
    value = PlainTextJsonToolCallCandidate("harmony", name, True)
    if not text.startswith("code", cursor):
        if is_literal_prefix_at(text, cursor, "code"):
            return _prefix(value)
        return _invalid(cursor, value)
    cursor = skip_whitespace(text, cursor + len("code"))
    if text.startswith(HARMONY_MESSAGE_MARKER, cursor):
        cursor = skip_whitespace(text, cursor + len(HARMONY_MESSAGE_MARKER))
    elif is_literal_prefix_at(text, cursor, HARMONY_MESSAGE_MARKER):
        return _prefix(value)
    elif char_at(text, cursor) == "<":
        return _invalid(cursor, value)
    return _Opening(cursor, value)


def scan_plain_text_json_tool_call(
    text: str, start: int = 0, line_breaks: StructuralLineBreaks | None = None
) -> PlainTextJsonToolCallScan:
    """Classify the bracket or Harmony call that may begin at ``start`` (uncapped)."""
    if char_at(text, start) == "[":
        opening = _scan_bracket_opening(text, start, line_breaks)
    else:
        opening = _scan_harmony_opening(text, start)
    if isinstance(opening, PlainTextJsonToolCallScan):
        return opening

    value = opening.candidate
    payload_start = skip_whitespace(text, opening.cursor)
    if payload_start == len(text):
        return _prefix(value)
    if text[payload_start] != "{":
        return _invalid(payload_start, value)

    scanned = scan_json_object(text, payload_start)
    payload = Span(payload_start, scanned.end)
    with_payload = replace(value, payload=payload, json=scanned.state)
    if scanned.kind == "prefix":
        return _prefix(with_payload)

    name = value.name.of(text)
    complete = replace(value, payload=payload)
    if value.syntax != "named-bracket":
        marker_start = skip_whitespace(text, scanned.end)
        for closing in (HARMONY_CALL_MARKER, END_TOOL_REQUEST, f"[/{name}]"):
            if text.startswith(closing, marker_start):
                return PlainTextJsonToolCallScan(
                    "complete", complete, end=marker_start + len(closing)
                )
            if marker_start < len(text) and is_literal_prefix_at(text, marker_start, closing):
                return _prefix(with_payload)
        return PlainTextJsonToolCallScan("complete", complete, end=scanned.end)

    closing_start = skip_whitespace(text, scanned.end)
    if closing_start == len(text):
        return _prefix(with_payload)
    for closing in (END_TOOL_REQUEST, f"[/{name}]"):
        if text.startswith(closing, closing_start):
            return PlainTextJsonToolCallScan("complete", complete, end=closing_start + len(closing))
        if is_literal_prefix_at(text, closing_start, closing):
            return _prefix(with_payload)
    return _invalid(closing_start, with_payload)


def parse_json_arguments(text: str, payload: Span) -> dict[str, object] | None:
    """The payload parsed as a JSON object (never an array), or ``None``."""
    try:
        value = parse_strict_json(payload.of(text))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# --------------------------------------------------------------------------- combined scan


@dataclass(frozen=True, slots=True)
class PlainTextToolCallScan:
    """Result of ``scan_plain_text_tool_call``: the verdict plus both branch scans.

    ``next`` is how far a caller may safely skip. ``over_cap`` says the payload is larger than
    the cap (such a call is recognized for stripping but never promoted).
    """

    kind: ScanKind
    next: int
    over_cap: bool
    json: PlainTextJsonToolCallScan
    xmlish: XmlishToolCallScan
    matches_json: bool
    matches_xmlish: bool
    end: int | None = None
    at: int | None = None
    payload_start: int | None = None
    complete_end: int | None = None


@dataclass(frozen=True, slots=True)
class _Acceptance:
    accepted: bool
    payload: Span | None = None


def _accept(
    text: str,
    kind: ScanKind,
    candidate: PlainTextJsonToolCallCandidate | XmlishToolCallCandidate | None,
    matcher: ToolNameMatcher | None,
) -> _Acceptance:
    if candidate is None:
        return _Acceptance(kind == "prefix")
    name = candidate.name.of(text)
    if matcher is None:
        matches = True
    elif candidate.name_complete:
        matches = matcher.has_exact_name(name)
    else:
        matches = matcher.has_name_prefix(name)
    if not matches:
        return _Acceptance(False)
    return _Acceptance(True, candidate.payload)


def scan_plain_text_tool_call(
    text: str,
    start: int = 0,
    *,
    matcher: ToolNameMatcher | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES,
    line_breaks: StructuralLineBreaks | None = None,
) -> PlainTextToolCallScan:
    """Classify one JSON-payload or XML-ish call at ``start`` for the given names and cap."""
    xmlish = scan_xmlish_tool_call(text, start, line_breaks)
    json_scan = scan_plain_text_json_tool_call(text, start, line_breaks)
    xml = _accept(text, xmlish.kind, xmlish.candidate, matcher)
    js = _accept(text, json_scan.kind, json_scan.candidate, matcher)

    def over_cap(payload: Span | None) -> bool:
        return payload is not None and (
            utf8_byte_length_within_limit(text, payload.start, payload.end, max_payload_bytes)
            is None
        )

    def result(
        kind: ScanKind, next_: int, capped: bool, **extra: int | None
    ) -> PlainTextToolCallScan:
        return PlainTextToolCallScan(
            kind, next_, capped, json_scan, xmlish, js.accepted, xml.accepted, **extra
        )

    xml_over_cap = over_cap(xml.payload)
    json_over_cap = over_cap(js.payload)

    if xml.accepted and xmlish.kind == "complete":
        assert xmlish.end is not None and xml.payload is not None
        end = xmlish.end
        return result("complete", end, xml_over_cap, end=end, payload_start=xml.payload.start)
    if js.accepted and json_scan.kind == "complete":
        assert json_scan.end is not None and js.payload is not None
        end = json_scan.end
        if json_over_cap or parse_json_arguments(text, js.payload) is not None:
            return result("complete", end, json_over_cap, end=end, payload_start=js.payload.start)
        return result("invalid", end, False, at=end, payload_start=js.payload.start)

    if xml.accepted and xmlish.kind == "invalid" and xml_over_cap and xml.payload is not None:
        assert xmlish.at is not None
        return result("invalid", xmlish.at, True, at=xmlish.at, payload_start=xml.payload.start)
    if js.accepted and json_scan.kind == "invalid" and json_over_cap and js.payload is not None:
        assert json_scan.at is not None
        at = json_scan.at
        return result("invalid", at, True, at=at, payload_start=js.payload.start)

    xml_prefix = xml.accepted and xmlish.kind == "prefix"
    json_prefix = js.accepted and json_scan.kind == "prefix"
    if xml_prefix or json_prefix:
        payload = xml.payload if xml_prefix else js.payload
        complete_end = xmlish.complete_end if xmlish.kind == "prefix" else None
        return result(
            "prefix",
            len(text),
            over_cap(payload),
            complete_end=complete_end,
            payload_start=None if payload is None else payload.start,
        )

    next_ = start + 1
    if xml.accepted:
        next_ = max(
            next_, xmlish.at if xmlish.kind == "invalid" and xmlish.at is not None else len(text)
        )
    if js.accepted:
        if json_scan.kind == "complete" and json_scan.end is not None:
            reached = json_scan.end
        elif json_scan.kind == "invalid" and json_scan.at is not None:
            reached = json_scan.at
        else:
            reached = len(text)
        next_ = max(next_, reached)
    return result("invalid", next_, False, at=next_)
