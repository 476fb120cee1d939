"""Stream repair: tool calls written as plain text, found and promoted to structured calls.

Some models write a tool call as text (``[read]\\n{"path": "a"}\\n[/read]``,
``<function=read><parameter=path>a</parameter></function>``, a bare ``{"name": …}`` object…)
instead of a structured call. This package recognizes those syntaxes (OpenClaw's
``packages/tool-call-repair``, openclaw-spec §9) and repairs them:

* ``parse_standalone_plain_text_tool_call_blocks`` — parse text made only of calls;
* ``scan_plain_text_json_tool_call`` / ``scan_plain_text_tool_call`` — complete, prefix or
  invalid, for text that is still streaming;
* ``strip_plain_text_tool_call_blocks`` — remove whole-line calls from visible text;
* ``promote_plain_text_tool_calls`` / ``project_standalone_plain_text_tool_call_message`` —
  turn a finished message's text into ``ToolCall`` blocks, all or nothing;
* ``repair_plain_text_tool_calls`` — the stream transformer (registered by the built-in
  plugin as ``plain_text_tool_calls``); ``apply_stream_repairers`` composes transformers
  around a provider's ``StreamFn``;
* ``ToolCallFormat`` — the protocol a plugin implements to add a syntax
  (``register_tool_call_formats``); the built-ins are ``BUILTIN_TOOL_CALL_FORMATS``.
"""

from __future__ import annotations

from .blocks import PlainTextToolCallBlock, PlainTextToolCallParseOptions
from .compose import StreamTransformer, apply_stream_repairers, bind_tool_call_formats
from .formats import (
    BUILTIN_TOOL_CALL_FORMATS,
    BracketToolCallFormat,
    FormatScan,
    FormatScanOptions,
    HarmonyToolCallFormat,
    JsonObjectToolCallFormat,
    ToolCallFormat,
    XmlishToolCallFormat,
    coerce_tool_call_formats,
    scan_standalone_plain_text_tool_calls,
)
from .grammar import (
    DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES,
    END_TOOL_REQUEST,
    HARMONY_CALL_MARKER,
    HARMONY_CHANNEL_MARKER,
    HARMONY_MESSAGE_MARKER,
    MAX_PLAIN_TEXT_TOOL_NAME_CHARS,
    Span,
    StructuralLineBreaks,
    is_plain_text_tool_name_char,
    is_xmlish_name_char,
)
from .json_object import parse_json_tool_call_blocks_at, should_strip_json_blocks
from .normalizer import (
    PLAIN_TEXT_TOOL_CALL_REPAIRER,
    PlainTextToolCallRepairer,
    repair_plain_text_tool_calls,
    resolve_context_tool_names,
)
from .payload import parse_standalone_plain_text_tool_call_blocks
from .promote import (
    PlainTextToolCallMessageProjection,
    ToolNameResolver,
    create_promoted_plain_text_tool_call_block,
    create_promoted_plain_text_tool_call_events,
    extract_standalone_plain_text_tool_call_text,
    project_standalone_plain_text_tool_call_message,
    promote_plain_text_tool_calls,
    promote_standalone_plain_text_tool_call_message,
    resolve_exact_tool_name,
)
from .scan import (
    AllowedToolNameMatcher,
    PlainTextJsonToolCallScan,
    PlainTextToolCallScan,
    ToolNameMatcher,
    scan_plain_text_json_tool_call,
    scan_plain_text_tool_call,
)
from .strip import strip_plain_text_tool_call_blocks
from .xmlish import XmlishToolCallScan, scan_xmlish_tool_call

__all__ = [
    "BUILTIN_TOOL_CALL_FORMATS",
    "DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES",
    "END_TOOL_REQUEST",
    "HARMONY_CALL_MARKER",
    "HARMONY_CHANNEL_MARKER",
    "HARMONY_MESSAGE_MARKER",
    "MAX_PLAIN_TEXT_TOOL_NAME_CHARS",
    "PLAIN_TEXT_TOOL_CALL_REPAIRER",
    "AllowedToolNameMatcher",
    "BracketToolCallFormat",
    "FormatScan",
    "FormatScanOptions",
    "HarmonyToolCallFormat",
    "JsonObjectToolCallFormat",
    "PlainTextJsonToolCallScan",
    "PlainTextToolCallBlock",
    "PlainTextToolCallMessageProjection",
    "PlainTextToolCallParseOptions",
    "PlainTextToolCallRepairer",
    "PlainTextToolCallScan",
    "Span",
    "StreamTransformer",
    "StructuralLineBreaks",
    "ToolCallFormat",
    "ToolNameMatcher",
    "ToolNameResolver",
    "XmlishToolCallFormat",
    "XmlishToolCallScan",
    "apply_stream_repairers",
    "bind_tool_call_formats",
    "coerce_tool_call_formats",
    "create_promoted_plain_text_tool_call_block",
    "create_promoted_plain_text_tool_call_events",
    "extract_standalone_plain_text_tool_call_text",
    "is_plain_text_tool_name_char",
    "is_xmlish_name_char",
    "parse_json_tool_call_blocks_at",
    "parse_standalone_plain_text_tool_call_blocks",
    "project_standalone_plain_text_tool_call_message",
    "promote_plain_text_tool_calls",
    "promote_standalone_plain_text_tool_call_message",
    "repair_plain_text_tool_calls",
    "resolve_context_tool_names",
    "resolve_exact_tool_name",
    "scan_plain_text_json_tool_call",
    "scan_plain_text_tool_call",
    "scan_standalone_plain_text_tool_calls",
    "scan_xmlish_tool_call",
    "should_strip_json_blocks",
    "strip_plain_text_tool_call_blocks",
]
