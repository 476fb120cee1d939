"""Bare JSON objects that are tool calls (OpenClaw ``json-tool-call.ts``).

Accepted shapes, tried in this order:

1. ``{"tool_calls": [...]}`` (or ``toolCalls``): every entry must be a valid call, else the
   whole wrapper is rejected, so no call is silently dropped while its text is consumed;
2. ``{"function": {"name": ..., "arguments": ...}}``;
3. a name under ``name``/``tool_name``/``tool``/``function_name`` and arguments under
   ``arguments``/``args``/``input``/``parameters`` (the key must be present);
4. ``{"name": ..., "type": ...}`` with a type in ``JSON_TOOL_CALL_TYPES`` (``tool_call``,
   ``toolcall``, ``tooluse``, ``tool_use``, ``function_call``, ``functioncall``), arguments
   read as in 3.

Arguments given as a string are JSON-parsed and must give an object (not an array); no other
coercion, so malformed input never becomes executable. JSON follows ``JSON.parse``: ``NaN``
and ``Infinity`` are rejected; integers keep every digit (Python needs no string fallback).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from .._json import MAX_UNTRUSTED_JSON_DEPTH, json_depth_exceeds
from .blocks import PlainTextToolCallBlock, PlainTextToolCallParseOptions
from .grammar import (
    char_at,
    consume_line_break,
    js_trim,
    skip_line_indentation,
    skip_whitespace,
    utf8_byte_length_within_limit,
)

__all__ = [
    "JSON_TOOL_CALL_TYPES",
    "JsonLexState",
    "JsonObjectScan",
    "extract_json_tool_calls",
    "parse_json_tool_call_block_end_at",
    "parse_json_tool_call_blocks_at",
    "parse_strict_json",
    "scan_json_object",
    "should_strip_json_blocks",
]

#: Values of ``type`` that mark shape 4 (compared trimmed and lowercased).
JSON_TOOL_CALL_TYPES = frozenset(
    {"tool_call", "toolcall", "tooluse", "tool_use", "function_call", "functioncall"}
)
_ARGUMENT_KEYS = ("arguments", "args", "input", "parameters")
_OUTSIDE_STRING = re.compile(r'["{}]')
_INSIDE_STRING = re.compile(r'["\\]')


@dataclass(frozen=True, slots=True)
class JsonLexState:
    """Where a JSON scan stopped: brace depth and whether it is inside a string/escape."""

    depth: int
    escaped: bool
    in_string: bool


@dataclass(frozen=True, slots=True)
class JsonObjectScan:
    """``complete`` (``end`` after the closing brace) or ``prefix`` (``end`` = text end)."""

    kind: Literal["complete", "prefix"]
    end: int
    state: JsonLexState


def scan_json_object(text: str, start: int) -> JsonObjectScan:
    """Find where the JSON object opening at ``start`` closes, tracking strings and escapes.

    Structural only: it balances braces outside strings and does not validate JSON.
    """
    depth = 0
    index = start
    length = len(text)
    while True:
        match = _OUTSIDE_STRING.search(text, index)
        if match is None:
            return JsonObjectScan("prefix", length, JsonLexState(depth, False, False))
        position = match.start()
        char = text[position]
        index = position + 1
        if char == "{":
            depth += 1
            continue
        if char == "}":
            depth -= 1
            if depth == 0:
                return JsonObjectScan("complete", index, JsonLexState(0, False, False))
            continue
        # inside a string: jump from escape to escape until the closing quote
        while True:
            inner = _INSIDE_STRING.search(text, index)
            if inner is None:
                return JsonObjectScan("prefix", length, JsonLexState(depth, False, True))
            position = inner.start()
            if text[position] == '"':
                index = position + 1
                break
            if position + 1 >= length:
                return JsonObjectScan("prefix", length, JsonLexState(depth, True, True))
            index = position + 2


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_strict_json(raw: str) -> Any:
    """``JSON.parse``: raises ``ValueError`` for anything JavaScript would reject, and for
    JSON nested deeper than ``MAX_UNTRUSTED_JSON_DEPTH`` (it is the model's text: a tool call
    that deep could not be validated or stored)."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError as exc:  # nesting deeper than Python's parser allows
        raise ValueError("JSON nested too deeply") from exc
    if json_depth_exceeds(value, MAX_UNTRUSTED_JSON_DEPTH):
        raise ValueError("JSON nested too deeply")
    return value


def _read_tool_name(record: dict[str, Any]) -> str | None:
    name = record.get("name")
    if isinstance(name, str) and js_trim(name):
        return js_trim(name)
    alt = record.get("tool_name")
    if alt is None:
        alt = record.get("tool")
    if alt is None:
        alt = record.get("function_name")
    if isinstance(alt, str) and js_trim(alt):
        return js_trim(alt)
    return None


def _has_tool_arguments(record: dict[str, Any]) -> bool:
    return any(key in record for key in _ARGUMENT_KEYS)


def _read_tool_arguments(record: dict[str, Any]) -> dict[str, Any] | None:
    for key in _ARGUMENT_KEYS:
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            try:
                parsed = parse_strict_json(value)
            except ValueError:
                return None
            return parsed if isinstance(parsed, dict) else None
        return value if isinstance(value, dict) else None
    return None


def extract_json_tool_calls(
    record: dict[str, Any], allowed_tool_names: frozenset[str] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The ``(name, arguments)`` calls a parsed JSON object describes; ``[]`` if none."""

    def allowed(name: str) -> bool:
        return allowed_tool_names is None or name in allowed_tool_names

    tool_calls = record.get("tool_calls")
    if tool_calls is None:
        tool_calls = record.get("toolCalls")
    if isinstance(tool_calls, list) and tool_calls:
        results: list[tuple[str, dict[str, Any]]] = []
        for entry in tool_calls:
            if not isinstance(entry, dict):
                return []
            name: str | None = None
            args: dict[str, Any] | None = None
            function = entry.get("function")
            if isinstance(function, dict):
                name = _read_tool_name(function)
                if name and allowed(name):
                    args = _read_tool_arguments(function)
            if not name or args is None:
                name = _read_tool_name(entry)
                if name and allowed(name):
                    args = _read_tool_arguments(entry)
            if not name or args is None:
                return []
            results.append((name, args))
        return results

    function = record.get("function")
    if isinstance(function, dict):
        name = _read_tool_name(function)
        if name and allowed(name):
            args = _read_tool_arguments(function)
            if args is not None:
                return [(name, args)]

    flat_name = _read_tool_name(record)
    if flat_name and _has_tool_arguments(record) and allowed(flat_name):
        args = _read_tool_arguments(record)
        if args is not None:
            return [(flat_name, args)]

    kind = record.get("type")
    kind = js_trim(kind).lower() if isinstance(kind, str) else ""
    if flat_name and kind in JSON_TOOL_CALL_TYPES and allowed(flat_name):
        args = _read_tool_arguments(record)
        if args is not None:
            return [(flat_name, args)]
    return []


def parse_json_tool_call_blocks_at(
    text: str, start: int, options: PlainTextToolCallParseOptions | None = None
) -> list[PlainTextToolCallBlock] | None:
    """The calls of the JSON object at ``start`` (after whitespace), or ``None``.

    The byte cap applies to the raw object before parsing. Every block of a ``tool_calls``
    wrapper shares the object's offsets.
    """
    options = options or PlainTextToolCallParseOptions()
    cursor = skip_whitespace(text, start)
    if char_at(text, cursor) != "{":
        return None
    scan = scan_json_object(text, cursor)
    if scan.kind != "complete":
        return None
    if utf8_byte_length_within_limit(text, cursor, scan.end, options.max_payload_bytes) is None:
        return None
    raw = text[cursor : scan.end]
    try:
        parsed = parse_strict_json(raw)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    calls = extract_json_tool_calls(parsed, options.allowed_tool_names)
    if not calls:
        return None
    return [PlainTextToolCallBlock(name, args, cursor, scan.end, raw) for name, args in calls]


def parse_json_tool_call_block_end_at(text: str, start: int) -> int | None:
    """Where the JSON tool-call object at ``start`` ends, or ``None`` when it is not one.

    The stripper uses this so ordinary JSON prose (``{"status":"ok"}``) survives.
    """
    blocks = parse_json_tool_call_blocks_at(text, start)
    return blocks[0].end if blocks else None


def should_strip_json_blocks(text: str) -> bool:
    """True only when every non-blank line is (part of) a JSON tool call.

    A JSON call next to ordinary prose is an example for the reader and must stay visible;
    bracket, XML and Harmony blocks are not gated because nobody types them as prose.
    """
    found = False
    probe = 0
    length = len(text)
    while probe < length:
        if probe != 0 and text[probe - 1] not in "\n\r":
            probe += 1
            continue
        block_start = skip_line_indentation(text, probe)
        block_end = parse_json_tool_call_block_end_at(text, block_start)
        if block_end is not None:
            found = True
            probe = block_end
            after = consume_line_break(text, probe)
            if after is not None:
                probe = after
            continue
        index = block_start
        while index < length and text[index] not in "\n\r":
            if text[index] not in " \t":
                return False
            index += 1
        newline = text.find("\n", probe)
        if newline == -1:
            break
        probe = newline + 1
    return found
