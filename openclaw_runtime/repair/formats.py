"""Tool-call formats: the plug-in point for syntaxes a model may write calls in.

A format is any object with two methods (``ToolCallFormat``)::

    parse_at(text, start, options, line_breaks) -> Sequence[PlainTextToolCallBlock] | None
    scan_at(text, start, options) -> FormatScan

``parse_at`` parses the one call that begins exactly at ``start`` (no leading whitespace)
and returns its blocks (usually one; a wrapper of several calls returns all, with the same
``end``), or ``None``. It must honour ``options.allowed_tool_names`` (when set) and
``options.max_payload_bytes``, use ``line_breaks`` wherever the syntax requires a line
break, and never raise for bad input.

``scan_at`` answers for a stream that is still arriving: ``complete`` (with ``end``) when
``parse_at`` would succeed there with that end and every name passes ``options.matcher``;
``prefix`` when appending text could still make it such a call; ``invalid`` when no
appended text can. ``invalid`` must be final: the stream repairer stops holding text back
the moment every format says ``invalid``, and a call it later sees complete is not promoted.

Built-in formats, by registered name (tried in this order):

* ``json_object`` — a bare JSON object (``{"name":…,"arguments":…}``, ``{"tool_calls":[…]}``…);
* ``bracket`` — ``[name]`` + line break + JSON + ``[/name]``/``[END_TOOL_REQUEST]``, and
  ``[tool:name]`` + JSON + optional closer;
* ``harmony`` — ``<|channel|>commentary to=name code <|message|>{json}<|call|>``;
* ``xmlish`` — ``<function=name>``/``[name]``/``[tool:name]`` + ``<parameter=k>v</parameter>``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..redaction import package_logger
from .blocks import PlainTextToolCallBlock, PlainTextToolCallParseOptions
from .call_at import parse_json_syntax_tool_call_block_at, parse_xmlish_tool_call_block_at
from .grammar import (
    DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES,
    Span,
    StructuralLineBreaks,
    char_at,
    skip_whitespace,
    utf8_byte_length_within_limit,
)
from .json_object import parse_json_tool_call_blocks_at, scan_json_object
from .scan import (
    PlainTextJsonToolCallCandidate,
    ScanKind,
    ToolNameMatcher,
    parse_json_arguments,
    scan_plain_text_json_tool_call,
)
from .xmlish import XmlishToolCallCandidate, scan_xmlish_tool_call

__all__ = [
    "BUILTIN_TOOL_CALL_FORMATS",
    "BracketToolCallFormat",
    "FormatScan",
    "FormatScanOptions",
    "HarmonyToolCallFormat",
    "JsonObjectToolCallFormat",
    "ToolCallFormat",
    "XmlishToolCallFormat",
    "coerce_tool_call_formats",
    "safe_parse_at",
    "safe_scan_at",
    "scan_standalone_plain_text_tool_calls",
]

logger = package_logger(logging.getLogger("openclaw_runtime.repair"))


@dataclass(frozen=True, slots=True)
class FormatScan:
    """A format's streaming verdict at one offset; ``end`` is set for ``complete``."""

    kind: ScanKind
    end: int | None = None


_INVALID = FormatScan("invalid")
_PREFIX = FormatScan("prefix")


@dataclass(frozen=True, slots=True)
class FormatScanOptions:
    """What a streaming scan may accept: names (``None``: any), payload cap, line breaks."""

    matcher: ToolNameMatcher | None = None
    max_payload_bytes: int = DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES
    line_breaks: StructuralLineBreaks | None = None

    def accepts(self, name: str, *, complete: bool = True) -> bool:
        """Does ``name`` (or, while streaming, the name so far) pass the matcher?"""
        if self.matcher is None:
            return True
        if complete:
            return self.matcher.has_exact_name(name)
        return self.matcher.has_name_prefix(name)

    def over_cap(self, text: str, payload: Span | None) -> bool:
        """True when ``payload`` is larger than the cap."""
        return payload is not None and (
            utf8_byte_length_within_limit(text, payload.start, payload.end, self.max_payload_bytes)
            is None
        )


@runtime_checkable
class ToolCallFormat(Protocol):
    """A syntax for tool calls written as plain text (see the module docstring)."""

    def parse_at(
        self,
        text: str,
        start: int,
        options: PlainTextToolCallParseOptions,
        line_breaks: StructuralLineBreaks | None,
    ) -> Sequence[PlainTextToolCallBlock] | None:
        """The call beginning exactly at ``start``, or ``None``."""
        ...

    def scan_at(self, text: str, start: int, options: FormatScanOptions) -> FormatScan:
        """``complete``/``prefix``/``invalid`` for the call that may begin at ``start``."""
        ...


def _scan_candidate(
    text: str,
    kind: ScanKind,
    candidate: PlainTextJsonToolCallCandidate | XmlishToolCallCandidate | None,
    options: FormatScanOptions,
) -> FormatScan:
    """Shared verdict for a prefix: names must still match and the payload fit the cap."""
    if kind != "prefix":
        return _INVALID
    if candidate is None:
        return _PREFIX
    if not options.accepts(candidate.name.of(text), complete=candidate.name_complete):
        return _INVALID
    if options.over_cap(text, candidate.payload):
        return _INVALID
    return _PREFIX


class JsonObjectToolCallFormat:
    """A bare JSON object in one of the tool-call shapes (``json_object``)."""

    def parse_at(
        self,
        text: str,
        start: int,
        options: PlainTextToolCallParseOptions,
        line_breaks: StructuralLineBreaks | None,
    ) -> Sequence[PlainTextToolCallBlock] | None:
        """The calls of the JSON object at ``start``."""
        if char_at(text, start) != "{":
            return None
        return parse_json_tool_call_blocks_at(text, start, options)

    def scan_at(self, text: str, start: int, options: FormatScanOptions) -> FormatScan:
        """Prefix while the object is open and under the cap; then it must be a call."""
        if char_at(text, start) != "{":
            return _INVALID
        scanned = scan_json_object(text, start)
        if scanned.kind == "prefix":
            return _INVALID if options.over_cap(text, Span(start, scanned.end)) else _PREFIX
        parse_options = PlainTextToolCallParseOptions(max_payload_bytes=options.max_payload_bytes)
        blocks = parse_json_tool_call_blocks_at(text, start, parse_options)
        if not blocks or not all(options.accepts(block.name) for block in blocks):
            return _INVALID
        return FormatScan("complete", scanned.end)

    def __repr__(self) -> str:
        return "JsonObjectToolCallFormat()"


class _JsonSyntaxFormat:
    """Bracket and Harmony share one scanner; each format owns the openings it starts with."""

    _bracket: bool

    def _owns(self, text: str, start: int) -> bool:
        return (char_at(text, start) == "[") == self._bracket

    def parse_at(
        self,
        text: str,
        start: int,
        options: PlainTextToolCallParseOptions,
        line_breaks: StructuralLineBreaks | None,
    ) -> Sequence[PlainTextToolCallBlock] | None:
        """The complete call at ``start`` whose JSON payload is an object."""
        if not self._owns(text, start):
            return None
        block = parse_json_syntax_tool_call_block_at(text, start, options, line_breaks)
        return None if block is None else [block]

    def scan_at(self, text: str, start: int, options: FormatScanOptions) -> FormatScan:
        """The JSON-payload scan, narrowed by names, the cap and argument validity."""
        if not self._owns(text, start):
            return _INVALID
        scan = scan_plain_text_json_tool_call(text, start, options.line_breaks)
        candidate = scan.candidate
        if scan.kind != "complete":
            return _scan_candidate(text, scan.kind, candidate, options)
        assert candidate is not None and candidate.payload is not None and scan.end is not None
        if (
            not options.accepts(candidate.name.of(text))
            or options.over_cap(text, candidate.payload)
            or parse_json_arguments(text, candidate.payload) is None
        ):
            return _INVALID
        return FormatScan("complete", scan.end)


class BracketToolCallFormat(_JsonSyntaxFormat):
    """``[name]`` + line break + JSON + closer, and ``[tool:name]`` + JSON (``bracket``)."""

    _bracket = True

    def __repr__(self) -> str:
        return "BracketToolCallFormat()"


class HarmonyToolCallFormat(_JsonSyntaxFormat):
    """``(<|channel|>)?(commentary|analysis|final) to=name code …{json}`` (``harmony``)."""

    _bracket = False

    def __repr__(self) -> str:
        return "HarmonyToolCallFormat()"


class XmlishToolCallFormat:
    """``<function=name>``/``[name]``/``[tool:name]`` with ``<parameter=…>`` (``xmlish``)."""

    def parse_at(
        self,
        text: str,
        start: int,
        options: PlainTextToolCallParseOptions,
        line_breaks: StructuralLineBreaks | None,
    ) -> Sequence[PlainTextToolCallBlock] | None:
        """The complete XML-ish call at ``start``."""
        block = parse_xmlish_tool_call_block_at(text, start, options, line_breaks)
        return None if block is None else [block]

    def scan_at(self, text: str, start: int, options: FormatScanOptions) -> FormatScan:
        """The XML-ish scan, narrowed by names and the cap."""
        scan = scan_xmlish_tool_call(text, start, options.line_breaks)
        candidate = scan.candidate
        if scan.kind != "complete":
            return _scan_candidate(text, scan.kind, candidate, options)
        assert candidate is not None and scan.end is not None
        if not options.accepts(candidate.name.of(text)) or options.over_cap(
            text, candidate.payload
        ):
            return _INVALID
        return FormatScan("complete", scan.end)

    def __repr__(self) -> str:
        return "XmlishToolCallFormat()"


#: The syntaxes of openclaw-spec §9.1 by registered name, in OpenClaw's order of precedence.
BUILTIN_TOOL_CALL_FORMATS: Mapping[str, ToolCallFormat] = {
    "json_object": JsonObjectToolCallFormat(),
    "bracket": BracketToolCallFormat(),
    "harmony": HarmonyToolCallFormat(),
    "xmlish": XmlishToolCallFormat(),
}


def coerce_tool_call_formats(
    formats: Mapping[str, Any] | Iterable[Any],
) -> tuple[ToolCallFormat, ...]:
    """Check that every object implements ``ToolCallFormat``; a clear ``TypeError`` if not.

    Accepts a mapping of name to format (the name is used in the error) or an iterable.
    """
    items = list(formats.items()) if isinstance(formats, Mapping) else list(enumerate(formats))
    checked: list[ToolCallFormat] = []
    for key, fmt in items:
        missing = [
            method for method in ("parse_at", "scan_at") if not callable(getattr(fmt, method, None))
        ]
        if missing:
            label = f"tool-call format {key!r}" if isinstance(key, str) else f"{fmt!r}"
            raise TypeError(
                f"{label} does not implement ToolCallFormat: missing "
                f"{', '.join(m + '()' for m in missing)} "
                "(see openclaw_runtime.repair.formats)"
            )
        checked.append(fmt)
    return tuple(checked)


def _report(fmt: object, method: str, exc: Exception) -> None:
    logger.warning("tool-call format %r raised in %s: %s", fmt, method, exc, exc_info=exc)


def safe_parse_at(
    fmt: ToolCallFormat,
    text: str,
    start: int,
    options: PlainTextToolCallParseOptions,
    line_breaks: StructuralLineBreaks | None,
) -> Sequence[PlainTextToolCallBlock] | None:
    """``fmt.parse_at``; a format that raises or returns no progress counts as no match."""
    try:
        blocks = fmt.parse_at(text, start, options, line_breaks)
    except Exception as exc:
        _report(fmt, "parse_at", exc)
        return None
    if not blocks:
        return None
    if not all(isinstance(b, PlainTextToolCallBlock) and b.end > start for b in blocks):
        logger.warning("tool-call format %r returned blocks without progress; ignored", fmt)
        return None
    return blocks


def safe_scan_at(
    fmt: ToolCallFormat, text: str, start: int, options: FormatScanOptions
) -> FormatScan:
    """``fmt.scan_at``; a format that raises or completes without progress is ``invalid``."""
    try:
        scan = fmt.scan_at(text, start, options)
    except Exception as exc:
        _report(fmt, "scan_at", exc)
        return _INVALID
    if not isinstance(scan, FormatScan):
        return _INVALID
    if scan.kind == "complete" and (scan.end is None or scan.end <= start):
        return _INVALID
    return scan


def scan_standalone_plain_text_tool_calls(
    text: str,
    formats: Sequence[ToolCallFormat],
    options: FormatScanOptions | None = None,
) -> ScanKind:
    """Could ``text`` still be nothing but tool calls (``parse_standalone…`` on its future)?

    ``complete``: it already is; ``prefix``: every call so far is valid and the last may
    still be growing; ``invalid``: no continuation can make it standalone calls. Blank text
    is ``complete`` with no calls.
    """
    options = options or FormatScanOptions()
    cursor = skip_whitespace(text, 0)
    while cursor < len(text):
        end: int | None = None
        saw_prefix = False
        for fmt in formats:
            scan = safe_scan_at(fmt, text, cursor, options)
            if scan.kind == "complete":
                end = scan.end
                break
            saw_prefix = saw_prefix or scan.kind == "prefix"
        if end is None:
            return "prefix" if saw_prefix else "invalid"
        cursor = skip_whitespace(text, end)
    return "complete"
