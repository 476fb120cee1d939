"""The plain-text tool-call stream repairer: a transformer of assistant-message events.

Some models (local ones, proxies) write a tool call as text instead of a structured call. The
repairer watches the provider's events and, when the finished response is nothing but such
calls, replaces the text with ``ToolCall`` blocks so the tool runs and the transcript holds a
structured call. Its rules:

* While the response could still become plain-text tool calls (every text run is, so far, a
  complete or still-growing call — ``scan_standalone_plain_text_tool_calls``), its events
  from the first text event on are held back, so the raw call never reaches the user
  (``start`` and leading thinking pass at once).
* As soon as it cannot (prose, an unknown tool name, a payload over the cap, a native tool
  call), the held events are released unchanged and the rest of the stream passes through;
  text that was shown is never taken back, and text that is not promoted is never scrubbed
  (OpenClaw's normalizer scrubs such calls from visible text; this port leaves them).
* At ``done`` (reason ``stop`` or ``toolUse``) the final message is promoted all-or-nothing
  (``promote_plain_text_tool_calls``). Promoted: held text is dropped, held non-text events are
  re-indexed onto the new message, ``toolcall_start``/``_delta``/``_end`` are emitted for each
  call and ``done`` carries the promoted message with reason ``toolUse``. Not promoted: the
  held events and ``done`` are released unchanged.
* ``error`` events (aborts included) release what is held and pass unchanged.

The promotion decision is made on the provider's final message, and the hold decision only
ever stops holding when no continuation could be promoted, so how the text was split into
deltas never changes the result. Text blocks are joined with virtual line breaks between
them, exactly as promotion joins them. The repairer never raises because of model output; if
its own logic fails it releases what it holds and passes the stream through (logged).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..agent.tools import AgentTool
from ..events import AssistantMessageEvent, Done, Start
from ..llm import Context, Tool
from ..messages import AssistantMessage
from ..redaction import package_logger
from .formats import (
    BUILTIN_TOOL_CALL_FORMATS,
    FormatScanOptions,
    ToolCallFormat,
    coerce_tool_call_formats,
    scan_standalone_plain_text_tool_calls,
)
from .grammar import DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES, StructuralLineBreaks, js_trim
from .promote import (
    PlainTextToolCallMessageProjection,
    ToolNameResolver,
    create_promoted_plain_text_tool_call_events,
    promote_plain_text_tool_calls,
)
from .scan import AllowedToolNameMatcher

__all__ = [
    "PLAIN_TEXT_TOOL_CALL_REPAIRER",
    "PlainTextToolCallRepairer",
    "repair_plain_text_tool_calls",
    "resolve_context_tool_names",
]

logger = package_logger(logging.getLogger("openclaw_runtime.repair"))

#: Name under which the built-in plugin registers the repairer.
PLAIN_TEXT_TOOL_CALL_REPAIRER = "plain_text_tool_calls"

_TEXT_EVENTS = frozenset({"text_start", "text_delta", "text_end"})
_NON_TEXT_BLOCK_EVENTS = frozenset({"thinking_start", "thinking_delta", "thinking_end"})
_NATIVE_CALL_EVENTS = frozenset({"toolcall_start", "toolcall_delta", "toolcall_end"})
_PROMOTABLE_REASONS = frozenset({"stop", "toolUse"})
_ALWAYS_SCAN_CHARS = 256


#: Tool classes that are not mappings and always have a ``name`` (exact types: a subclass
#: may be a ``Mapping`` too and is asked as before).
_TOOL_TYPES: frozenset[type] = frozenset({Tool, AgentTool})


def resolve_context_tool_names(context: Context | Mapping[str, Any] | Any) -> frozenset[str]:
    """Names of the request's tools (blank names ignored), i.e. what may be promoted."""
    # the runtime's own request and tools by exact type first: asking the ``Mapping`` ABC
    # about each was most of this per-request look-up
    tools: Any
    if type(context) is Context:
        tools = context.tools
    else:
        tools = (
            context.get("tools")
            if isinstance(context, Mapping)
            else getattr(context, "tools", None)
        )
    names: set[str] = set()
    name: Any
    for tool in tools or ():
        if type(tool) in _TOOL_TYPES:
            name = tool.name
        else:
            name = tool.get("name") if isinstance(tool, Mapping) else getattr(tool, "name", None)
        if isinstance(name, str) and js_trim(name):
            names.add(name)
    return frozenset(names)


@dataclass(slots=True)
class _Normalizer:
    """Per-stream state: the text seen so far, by content index, and the held events."""

    allowed: frozenset[str]
    formats: tuple[ToolCallFormat, ...]
    resolve_tool_name: ToolNameResolver | None
    tool_call_id: Callable[[], str] | None
    max_payload_bytes: int
    tracking: bool = True
    holding: bool = False
    saw_start: bool = False
    held: list[AssistantMessageEvent] = field(default_factory=list)
    # content index -> the pieces of a text block's text (joined lazily), or None for any
    # other block; appending pieces keeps a long streamed call linear
    blocks: dict[int, list[str] | None] = field(default_factory=dict)
    total_chars: int = 0
    next_scan_chars: int = _ALWAYS_SCAN_CHARS
    #: as a ``repair.stages`` stage: the generator stops reading after ``done``/``error``
    stops_at_terminal: ClassVar[bool] = True

    # -- entry points -----------------------------------------------------------------------

    def feed(self, event: AssistantMessageEvent) -> list[AssistantMessageEvent]:
        """Events to emit now for ``event`` (possibly none while holding)."""
        if not self.tracking and not self.held:
            return [event]
        try:
            return self._feed(event)
        except Exception as exc:  # the repairer's own bug: fail open, never lose an event
            logger.warning("plain-text tool-call repair disabled for this stream: %s", exc)
            self.tracking = False
            out = self._release()
            if not any(held is event for held in out):
                out.append(event)
            return out

    def flush(self) -> list[AssistantMessageEvent]:
        """The stream ended without ``done``/``error``: release what is held."""
        self.tracking = False
        return self._release()

    # -- state machine ----------------------------------------------------------------------

    def _feed(self, event: AssistantMessageEvent) -> list[AssistantMessageEvent]:
        kind = event.type
        if kind == "done":
            return self._finish(event)  # type: ignore[arg-type]
        if kind == "error":
            self.tracking = False
            return self._release(event)
        if kind == "start":
            self.saw_start = True
        if not self.tracking:
            return [event]
        if kind in _TEXT_EVENTS:
            return self._on_text(event)
        if kind in _NATIVE_CALL_EVENTS:  # a structured call exists: nothing to promote
            self.tracking = False
            return self._release(event)
        if kind in _NON_TEXT_BLOCK_EVENTS:
            self.blocks[event.content_index] = None  # type: ignore[union-attr]
        if self.holding:
            self.held.append(event)
            return []
        return [event]

    def _on_text(self, event: Any) -> list[AssistantMessageEvent]:
        index: int = event.content_index
        pieces = self.blocks.get(index)
        if pieces is None:
            pieces = self.blocks[index] = []
        if event.type == "text_delta":
            pieces.append(event.delta)
            self.total_chars += len(event.delta)
        elif event.type == "text_end":  # authoritative for its block
            self.total_chars += len(event.content) - sum(len(piece) for piece in pieces)
            pieces[:] = [event.content]
        self.holding = True
        self.held.append(event)
        if not self._should_scan(force=event.type == "text_end"):
            return []
        if self._could_become_calls():
            return []
        self.tracking = False
        return self._release()

    def _should_scan(self, *, force: bool) -> bool:
        total = self.total_chars
        if not force and _ALWAYS_SCAN_CHARS < total < self.next_scan_chars:
            return False
        self.next_scan_chars = max(total + 1, self.next_scan_chars * 2)
        return True

    def _text_runs(self) -> list[list[str]]:
        runs: list[list[str]] = [[]]
        for index in sorted(self.blocks):
            pieces = self.blocks[index]
            if pieces is None:
                runs.append([])
                continue
            if len(pieces) > 1:
                pieces[:] = ["".join(pieces)]
            runs[-1].append(pieces[0] if pieces else "")
        return [run for run in runs if run]

    def _could_become_calls(self) -> bool:
        matcher = None if self.resolve_tool_name else AllowedToolNameMatcher(self.allowed)
        for run in self._text_runs():
            text = "".join(run)
            offsets: set[int] = set()
            offset = 0
            for part in run[:-1]:
                offset += len(part)
                offsets.add(offset)
            options = FormatScanOptions(
                matcher, self.max_payload_bytes, StructuralLineBreaks(frozenset(offsets))
            )
            if scan_standalone_plain_text_tool_calls(text, self.formats, options) == "invalid":
                return False
        return True

    def _release(self, *extra: AssistantMessageEvent) -> list[AssistantMessageEvent]:
        out, self.held = [*self.held, *extra], []
        self.holding = False
        return out

    def _finish(self, done: Done) -> list[AssistantMessageEvent]:
        if self.tracking and done.reason in _PROMOTABLE_REASONS:
            projection = promote_plain_text_tool_calls(
                done.message,
                self.allowed,
                resolve_tool_name=self.resolve_tool_name,
                formats=self.formats,
                tool_call_id=self.tool_call_id,
                max_payload_bytes=self.max_payload_bytes,
            )
            if projection is not None:
                self.tracking = False
                return self._promoted(projection, done)
        self.tracking = False
        return self._release(done)

    def _promoted(
        self, projection: PlainTextToolCallMessageProjection, done: Done
    ) -> list[AssistantMessageEvent]:
        message = projection.message
        out: list[AssistantMessageEvent] = []
        if not self.saw_start:
            out.append(Start(message.model_copy(update={"content": []})))
        moved: list[AssistantMessageEvent] = []
        for event in self.held:
            if event.type in _TEXT_EVENTS:
                continue
            index = getattr(event, "content_index", None)
            if index is None:
                moved.append(event)
                continue
            target = projection.source_to_projected_content_index.get(index)
            if target is not None:
                moved.append(_reindexed(event, target, message))
        size = len(message.content)

        def position(event: AssistantMessageEvent) -> int:
            index = getattr(event, "content_index", None)
            return index if isinstance(index, int) and 0 <= index < size else size

        out.extend(
            sorted([*create_promoted_plain_text_tool_call_events(message), *moved], key=position)
        )
        out.append(Done("toolUse", message))
        self._release()  # built everything first: a failure above still releases the held events
        return out


def _reindexed(event: Any, index: int, message: AssistantMessage) -> Any:
    """``event`` moved to ``index`` of the promoted ``message``."""
    names = {f.name for f in dataclasses.fields(event)}
    changes: dict[str, Any] = {"content_index": index}
    if "partial" in names:
        changes["partial"] = message
    return dataclasses.replace(event, **changes)


async def repair_plain_text_tool_calls(
    events: AsyncIterator[AssistantMessageEvent],
    context: Context | Mapping[str, Any] | Any,
    *,
    formats: Sequence[ToolCallFormat] | Mapping[str, ToolCallFormat] | None = None,
    resolve_tool_name: ToolNameResolver | None = None,
    tool_call_id: Callable[[], str] | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES,
) -> AsyncIterator[AssistantMessageEvent]:
    """Repair one provider stream: ``async for event in repair_plain_text_tool_calls(...)``.

    ``context`` is the request's ``Context``; its tools are the names that may be promoted (no
    tools: the stream passes through untouched). ``formats``: the syntaxes to recognize, in
    order (default: the built-ins). ``resolve_tool_name(raw, allowed)`` maps a written name to
    an allowed one (default: exact match); with a resolver, names are not filtered while
    streaming. ``tool_call_id()`` makes ids for promoted calls. Stops after ``done``/``error``
    and closes ``events`` when it finishes or is closed.
    """
    try:
        allowed = resolve_context_tool_names(context)
        if not allowed:
            async for event in events:
                yield event
            return
        chosen = (
            tuple(BUILTIN_TOOL_CALL_FORMATS.values())
            if formats is None
            else coerce_tool_call_formats(formats)
        )
        state = _Normalizer(allowed, chosen, resolve_tool_name, tool_call_id, max_payload_bytes)
        async for event in events:
            for out in state.feed(event):
                yield out
            if event.type == "done" or event.type == "error":
                return
        for out in state.flush():
            yield out
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


@dataclass(frozen=True, slots=True)
class PlainTextToolCallRepairer:
    """``repair_plain_text_tool_calls`` with its options bound: a registrable transformer.

    ``repairer(events, context)`` repairs one stream. ``with_formats(formats)`` returns a copy
    that recognizes exactly ``formats`` (the runtime passes every registered format).
    """

    formats: tuple[ToolCallFormat, ...] | None = None
    resolve_tool_name: ToolNameResolver | None = None
    tool_call_id: Callable[[], str] | None = None
    max_payload_bytes: int = DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES
    _checked: tuple[ToolCallFormat, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __call__(
        self, events: AsyncIterator[AssistantMessageEvent], context: Context | Any
    ) -> AsyncIterator[AssistantMessageEvent]:
        return repair_plain_text_tool_calls(
            events,
            context,
            formats=self.formats,
            resolve_tool_name=self.resolve_tool_name,
            tool_call_id=self.tool_call_id,
            max_payload_bytes=self.max_payload_bytes,
        )

    def open_stage(self, context: Context | Any) -> _Normalizer | None:
        """This repairer on one stream for ``context`` as a ``repair.stages`` stage: what
        ``__call__``'s generator does, fed event by event; None when the stream would pass
        untouched (no tools)."""
        allowed = resolve_context_tool_names(context)
        if not allowed:
            return None
        chosen = self._checked
        if chosen is None:  # the formats, checked once (``__call__`` checks per stream)
            chosen = (
                tuple(BUILTIN_TOOL_CALL_FORMATS.values())
                if self.formats is None
                else coerce_tool_call_formats(self.formats)
            )
            object.__setattr__(self, "_checked", chosen)
        return _Normalizer(
            allowed, chosen, self.resolve_tool_name, self.tool_call_id, self.max_payload_bytes
        )

    def passes_through(self, context: Context | Any) -> bool:
        """True when a stream for ``context`` would pass untouched (it offers no tools), so
        the composer can leave this stage out (``repair.compose``)."""
        return not resolve_context_tool_names(context)

    def with_formats(
        self, formats: Mapping[str, ToolCallFormat] | Iterable[ToolCallFormat]
    ) -> PlainTextToolCallRepairer:
        """A copy recognizing ``formats`` in the given order (validated now, not mid-stream)."""
        return dataclasses.replace(self, formats=coerce_tool_call_formats(formats))
