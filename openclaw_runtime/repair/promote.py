"""Promote plain-text tool calls to structured ``ToolCall`` blocks (OpenClaw ``promote.ts``).

All or nothing: every text run of the message (consecutive text blocks between non-text
blocks) must be nothing but tool calls (or blank), and every call's name must resolve to an
allowed tool (exact match, or a resolver). If any of that fails, nothing is promoted and the
message is left as it was. A promoted message has ``stop_reason="toolUse"``.

Text blocks of one run are joined without separators; each boundary between two blocks is a
virtual line break (``StructuralLineBreaks``) so ``[read]`` at the end of one block and its
JSON at the start of the next still form a call, without changing any payload.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..events import AssistantMessageEvent, ToolCallDelta, ToolCallEnd, ToolCallStart
from ..messages import AssistantMessage, ContentBlock, TextContent, ToolCall
from .blocks import PlainTextToolCallBlock, PlainTextToolCallParseOptions
from .formats import ToolCallFormat
from .grammar import (
    DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES,
    StructuralLineBreaks,
    is_js_blank,
    js_trim,
)
from .payload import parse_standalone_plain_text_tool_call_blocks

__all__ = [
    "PlainTextToolCallMessageProjection",
    "PromotedToolCallFactory",
    "ToolNameResolver",
    "create_promoted_plain_text_tool_call_block",
    "create_promoted_plain_text_tool_call_events",
    "extract_standalone_plain_text_tool_call_text",
    "new_tool_call_id",
    "project_standalone_plain_text_tool_call_message",
    "promote_plain_text_tool_calls",
    "promote_standalone_plain_text_tool_call_message",
    "resolve_exact_tool_name",
]

#: ``resolver(raw_name, allowed_names)`` → the allowed name to call, or ``None``.
ToolNameResolver: TypeAlias = Callable[[str, frozenset[str]], str | None]
#: ``factory(block, resolved_name)`` → the structured block that replaces the text.
PromotedToolCallFactory: TypeAlias = Callable[[PlainTextToolCallBlock, str], ToolCall]


@dataclass(frozen=True, slots=True)
class PlainTextToolCallMessageProjection:
    """A promoted message and where each retained source block moved to."""

    message: AssistantMessage
    source_to_projected_content_index: Mapping[int, int]


def new_tool_call_id() -> str:
    """OpenClaw's id for a repaired call: ``call_`` + 24 hex characters of a random UUID."""
    return f"call_{uuid.uuid4().hex[:24]}"


def resolve_exact_tool_name(raw_name: str, allowed_tool_names: frozenset[str]) -> str | None:
    """The default resolver: the name itself when it is allowed."""
    return raw_name if raw_name in allowed_tool_names else None


def create_promoted_plain_text_tool_call_block(
    block: PlainTextToolCallBlock, name: str, *, tool_call_id: str | None = None
) -> ToolCall:
    """The ``ToolCall`` that replaces one parsed block."""
    return ToolCall(
        id=tool_call_id or new_tool_call_id(), name=name, arguments=dict(block.arguments)
    )


def _arguments_json(arguments: dict[str, Any]) -> str:
    try:
        return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return "{}"


def create_promoted_plain_text_tool_call_events(
    message: AssistantMessage,
) -> list[AssistantMessageEvent]:
    """``toolcall_start``/``toolcall_delta``/``toolcall_end`` for every call of ``message``.

    The delta carries the arguments as compact JSON, as a provider would have streamed them.
    """
    events: list[AssistantMessageEvent] = []
    for index, block in enumerate(message.content):
        if isinstance(block, ToolCall):
            events.append(ToolCallStart(index, message))
            events.append(ToolCallDelta(index, _arguments_json(block.arguments), message))
            events.append(ToolCallEnd(index, block, message))
    return events


def _coerce_message(message: AssistantMessage | Mapping[str, Any]) -> AssistantMessage | None:
    if isinstance(message, AssistantMessage):
        return message
    if not isinstance(message, Mapping) or message.get("role", "assistant") != "assistant":
        return None
    data = dict(message)
    if isinstance(data.get("content"), str):
        data["content"] = [{"type": "text", "text": data["content"]}]
    try:
        return AssistantMessage.model_validate(data)
    except ValueError:
        return None


def _promote_text_parts(
    parts: Sequence[str],
    allowed: frozenset[str],
    resolve: ToolNameResolver,
    create: PromotedToolCallFactory,
    formats: Sequence[ToolCallFormat] | None,
    max_payload_bytes: int,
) -> list[ToolCall] | None:
    """Calls for one text run: ``[]`` for a blank run, ``None`` when it cannot be promoted."""
    text = "".join(parts)
    if is_js_blank(text):
        return []
    offsets: set[int] = set()
    offset = 0
    for part in parts[:-1]:
        offset += len(part)
        offsets.add(offset)
    offsets.discard(len(text))
    blocks = parse_standalone_plain_text_tool_call_blocks(
        text,
        PlainTextToolCallParseOptions(max_payload_bytes=max_payload_bytes),
        StructuralLineBreaks(frozenset(offsets)),
        formats=formats,
    )
    if blocks is None:
        return None
    calls: list[ToolCall] = []
    for block in blocks:
        resolved = resolve(block.name, allowed)
        if not resolved:
            return None
        calls.append(create(block, resolved))
    return calls


def project_standalone_plain_text_tool_call_message(
    message: AssistantMessage | Mapping[str, Any],
    allowed_tool_names: Iterable[str],
    *,
    create_tool_call_block: PromotedToolCallFactory | None = None,
    resolve_tool_name: ToolNameResolver | None = None,
    is_retainable_non_text_block: Callable[[Any], bool] | None = None,
    allowed_stop_reasons: Iterable[str] | None = None,
    formats: Sequence[ToolCallFormat] | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES,
) -> PlainTextToolCallMessageProjection | None:
    """Promote the message's text runs to calls and map each retained source block.

    ``None`` (nothing promoted) when: no allowed names; the stop reason is not in
    ``allowed_stop_reasons`` (when given); a non-text block is not retainable (by default
    none is); any text run is not purely calls; any name fails to resolve; or no call at all.
    """
    allowed = frozenset(allowed_tool_names)
    record = _coerce_message(message)
    if record is None or not allowed:
        return None
    if allowed_stop_reasons is not None and record.stop_reason not in set(allowed_stop_reasons):
        return None
    resolve = resolve_tool_name or resolve_exact_tool_name
    create = create_tool_call_block or create_promoted_plain_text_tool_call_block

    content: list[ContentBlock] = []
    index_map: dict[int, int] = {}
    promoted_any = False
    run: list[str] = []

    def flush() -> bool:
        nonlocal promoted_any, run
        calls = _promote_text_parts(run, allowed, resolve, create, formats, max_payload_bytes)
        run = []
        if calls is None:
            return False
        content.extend(calls)
        promoted_any = promoted_any or bool(calls)
        return True

    for source_index, block in enumerate(record.content):
        if isinstance(block, TextContent):
            run.append(block.text)
            continue
        if not flush():
            return None
        if is_retainable_non_text_block is not None and is_retainable_non_text_block(block):
            index_map[source_index] = len(content)
            content.append(block)
            continue
        return None
    if not flush() or not promoted_any:
        return None
    promoted = record.model_copy(update={"content": content, "stop_reason": "toolUse"})
    return PlainTextToolCallMessageProjection(promoted, index_map)


def promote_standalone_plain_text_tool_call_message(
    message: AssistantMessage | Mapping[str, Any],
    allowed_tool_names: Iterable[str],
    **options: Any,
) -> AssistantMessage | None:
    """``project_standalone_plain_text_tool_call_message`` without the index map."""
    projection = project_standalone_plain_text_tool_call_message(
        message, allowed_tool_names, **options
    )
    return None if projection is None else projection.message


def _retain_every_block(_block: Any) -> bool:
    return True


def promote_plain_text_tool_calls(
    message: AssistantMessage | Mapping[str, Any],
    allowed_tool_names: Iterable[str],
    *,
    resolve_tool_name: ToolNameResolver | None = None,
    formats: Sequence[ToolCallFormat] | None = None,
    tool_call_id: Callable[[], str] | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES,
) -> PlainTextToolCallMessageProjection | None:
    """What the stream repairer applies to a finished response (OpenClaw's provider wrapper).

    A message that already holds a structured call is left alone; every other non-text
    block (thinking, images) is kept in place around the promoted calls.
    """
    record = _coerce_message(message)
    if record is None or any(isinstance(block, ToolCall) for block in record.content):
        return None
    make_id = tool_call_id or new_tool_call_id

    def create(block: PlainTextToolCallBlock, name: str) -> ToolCall:
        return create_promoted_plain_text_tool_call_block(block, name, tool_call_id=make_id())

    return project_standalone_plain_text_tool_call_message(
        record,
        allowed_tool_names,
        create_tool_call_block=create,
        resolve_tool_name=resolve_tool_name,
        is_retainable_non_text_block=_retain_every_block,
        formats=formats,
        max_payload_bytes=max_payload_bytes,
    )


def extract_standalone_plain_text_tool_call_text(
    message: AssistantMessage | Mapping[str, Any],
    *,
    allow_other_non_text_blocks: bool = False,
    allowed_stop_reasons: Iterable[str] | None = None,
    is_retainable_non_text_block: Callable[[Any], bool] | None = None,
) -> str | None:
    """The message's non-blank text joined and trimmed, when nothing else is in the way.

    ``None`` when a non-text block is neither retainable nor allowed, when the stop reason
    is not allowed, or when the text is blank.
    """
    record = _coerce_message(message)
    if record is None:
        return None
    if allowed_stop_reasons is not None and record.stop_reason not in set(allowed_stop_reasons):
        return None
    parts: list[str] = []
    for block in record.content:
        if isinstance(block, TextContent):
            if not is_js_blank(block.text):
                parts.append(block.text)
            continue
        retainable = is_retainable_non_text_block is not None and is_retainable_non_text_block(
            block
        )
        if retainable or allow_other_non_text_blocks:
            continue
        return None
    text = js_trim("".join(parts))
    return text or None
