"""Stream repair: tool calls written as plain text, found and promoted to structured calls.

Some models write a tool call as text (``[read]\n{"path": "a"}\n[/read]``,
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
  (``register_tool_call_formats``), with ``FormatScan``/``FormatScanOptions``,
  ``PlainTextToolCallBlock``/``PlainTextToolCallParseOptions`` and ``StructuralLineBreaks``
  in its signatures; the built-ins are ``BUILTIN_TOOL_CALL_FORMATS``.

Modules: ``grammar`` (characters, markers, line breaks), ``scan``/``xmlish``/``json_object``
(scanners), ``call_at`` (one call at a position), ``formats`` (the plug-in point),
``payload`` (standalone text), ``strip``, ``promote``, ``normalizer`` (the stream repairer),
``compose``. Everything not re-exported here is imported from its module.
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .blocks import (  # noqa: I001 (packed: a face has at most 100 lines)
        PlainTextToolCallBlock, PlainTextToolCallParseOptions,
    )
    from .compose import apply_stream_repairers
    from .formats import BUILTIN_TOOL_CALL_FORMATS, FormatScan, FormatScanOptions, ToolCallFormat
    from .grammar import StructuralLineBreaks
    from .normalizer import (
        PLAIN_TEXT_TOOL_CALL_REPAIRER, PlainTextToolCallRepairer, repair_plain_text_tool_calls,
    )
    from .payload import parse_standalone_plain_text_tool_call_blocks
    from .promote import (
        project_standalone_plain_text_tool_call_message, promote_plain_text_tool_calls,
    )
    from .scan import scan_plain_text_json_tool_call, scan_plain_text_tool_call
    from .strip import strip_plain_text_tool_call_blocks
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "blocks": "PlainTextToolCallBlock PlainTextToolCallParseOptions",
    "compose": "apply_stream_repairers",
    "formats": "BUILTIN_TOOL_CALL_FORMATS FormatScan FormatScanOptions ToolCallFormat",
    "grammar": "StructuralLineBreaks",
    "normalizer": (
        "PLAIN_TEXT_TOOL_CALL_REPAIRER PlainTextToolCallRepairer repair_plain_text_tool_calls"
    ),
    "payload": "parse_standalone_plain_text_tool_call_blocks",
    "promote": "project_standalone_plain_text_tool_call_message promote_plain_text_tool_calls",
    "scan": "scan_plain_text_json_tool_call scan_plain_text_tool_call",
    "strip": "strip_plain_text_tool_call_blocks",
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "BUILTIN_TOOL_CALL_FORMATS", "PLAIN_TEXT_TOOL_CALL_REPAIRER", "FormatScan", "FormatScanOptions",
    "PlainTextToolCallBlock", "PlainTextToolCallParseOptions", "PlainTextToolCallRepairer",
    "StructuralLineBreaks", "ToolCallFormat", "apply_stream_repairers",
    "parse_standalone_plain_text_tool_call_blocks",
    "project_standalone_plain_text_tool_call_message", "promote_plain_text_tool_calls",
    "repair_plain_text_tool_calls", "scan_plain_text_json_tool_call", "scan_plain_text_tool_call",
    "strip_plain_text_tool_call_blocks",
]  # fmt: skip
