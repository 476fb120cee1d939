"""What a parser returns (``PlainTextToolCallBlock``) and the options every parser takes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .grammar import DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES

__all__ = [
    "PlainTextToolCallBlock",
    "PlainTextToolCallParseOptions",
    "coerce_parse_options",
]


@dataclass(frozen=True, slots=True)
class PlainTextToolCallBlock:
    """One tool call parsed from text, with the source offsets needed to repair it.

    ``start``/``end`` delimit the call in the parsed text (``end`` exclusive) and ``raw`` is
    that slice. Several blocks from one JSON ``tool_calls`` wrapper share start, end and raw.
    """

    name: str
    arguments: dict[str, Any]
    start: int
    end: int
    raw: str

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's shape: ``{name, arguments, start, end, raw}``."""
        return {
            "name": self.name,
            "arguments": self.arguments,
            "start": self.start,
            "end": self.end,
            "raw": self.raw,
        }


@dataclass(frozen=True, slots=True)
class PlainTextToolCallParseOptions:
    """Parser limits: an optional allow-list of names and the per-call payload cap (bytes)."""

    allowed_tool_names: frozenset[str] | None = None
    max_payload_bytes: int = DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES

    def __post_init__(self) -> None:
        cap = self.max_payload_bytes
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise ValueError(f"maxPayloadBytes must be a non-negative integer, got {cap!r}")

    def allows(self, name: str) -> bool:
        """True when there is no allow-list or ``name`` is on it."""
        return self.allowed_tool_names is None or name in self.allowed_tool_names


def coerce_parse_options(
    options: PlainTextToolCallParseOptions | Mapping[str, Any] | Iterable[str] | None,
) -> PlainTextToolCallParseOptions:
    """Accept options as the dataclass, OpenClaw's dict (``allowedToolNames``,
    ``maxPayloadBytes``, snake_case too), a bare iterable of allowed names, or ``None``."""
    if options is None:
        return PlainTextToolCallParseOptions()
    if isinstance(options, PlainTextToolCallParseOptions):
        return options
    if isinstance(options, Mapping):
        unknown = set(options) - {
            "allowedToolNames",
            "allowed_tool_names",
            "maxPayloadBytes",
            "max_payload_bytes",
        }
        if unknown:
            raise TypeError(f"unknown plain-text tool-call parse option(s): {sorted(unknown)}")
        names = options.get("allowedToolNames", options.get("allowed_tool_names"))
        cap = options.get("maxPayloadBytes", options.get("max_payload_bytes"))
        return PlainTextToolCallParseOptions(
            allowed_tool_names=None if names is None else _names(names),
            max_payload_bytes=DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES if cap is None else cap,
        )
    return PlainTextToolCallParseOptions(allowed_tool_names=_names(options))


def _names(names: Any) -> frozenset[str]:
    if isinstance(names, str):
        raise TypeError("allowedToolNames must be an iterable of names, not a single string")
    return frozenset(names)
