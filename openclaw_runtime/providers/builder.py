"""``MessageBuilder``: the bookkeeping every provider needs to stream one assistant message.

A provider decodes its wire format and calls ``text()``, ``thinking()``, ``tool_call_*()``;
the builder mutates one partial ``AssistantMessage`` in place and returns the events to yield,
so every provider emits the same event grammar (``start``; ``*_start``/``*_delta``/``*_end``
per block; exactly one terminal ``done`` or ``error``) and records failures the same way.

Text is appended in place for the usual sizes. Past ``_LARGE_TEXT`` characters a block
switches to batched joins (every ``_BATCH`` deltas) so a very long answer stays linear rather
than quadratic; the deltas themselves are always exact and ``*_end`` carries the full text.
"""

from __future__ import annotations

import contextlib
from typing import Any, Literal

from .._json import loads_untrusted
from ..events import (
    AssistantMessageEvent,
    Done,
    Error,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..llm import Model
from ..messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, Usage
from .errors import ProviderFailure

__all__ = ["MALFORMED_TOOL_ARGUMENTS", "MessageBuilder", "parse_partial_json"]

MALFORMED_TOOL_ARGUMENTS = "Provider completed tool call with malformed JSON arguments"
_LARGE_TEXT = 64 * 1024
_BATCH = 64
#: ``append_text`` builds its ``TextDelta`` as the dataclass's ``__init__`` would (three slot
#: stores) without calling it: the Python-level call is a third of the event's cost per token
_new_text_delta = TextDelta.__new__


class _OpenBlock:
    __slots__ = ("args", "block", "ended", "index", "kind", "pending")

    def __init__(self, kind: str, index: int, block: Any) -> None:
        self.kind = kind
        self.index = index
        self.block = block
        self.pending: list[str] = []
        self.args: list[str] = []
        self.ended = False


class MessageBuilder:
    """Builds one streamed ``AssistantMessage`` and the events describing it."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
        self._blocks: dict[object, _OpenBlock] = {}
        self._current_text: _OpenBlock | None = None
        self._current_thinking: _OpenBlock | None = None
        self.started = False
        self.finished = False

    # lifecycle ---------------------------------------------------------------------------------

    def start(self) -> Start:
        """The ``start`` event; call once, before any content."""
        self.started = True
        return Start(self.message)

    @property
    def output_started(self) -> bool:
        """Whether any content reached the message (classification needs to know)."""
        return bool(self.message.content)

    # text and thinking --------------------------------------------------------------------------

    def text(self, delta: str, out: list[AssistantMessageEvent]) -> None:
        """Append visible text, opening a text block if needed."""
        if not delta:
            return
        open_block = self._current_text
        if open_block is None:
            if self._current_thinking is not None:
                self._close_thinking(out)
            open_block = self._open("text", TextContent(text=""), out)
            self._current_text = open_block
        # hot path inlined: one dict write per token (the field is already set, so going
        # around pydantic's __setattr__ changes nothing but the cost); the field is emptied
        # while appending so the string has one owner and CPython extends it in place
        fields = open_block.block.__dict__
        text = fields["text"]
        if not open_block.pending and len(text) < _LARGE_TEXT:
            fields["text"] = ""
            text += delta
            fields["text"] = text
        else:
            self._append(open_block, "text", delta)
        out.append(TextDelta(open_block.index, delta, self.message))

    def append_text(self, delta: str) -> TextDelta | None:
        """``text()``'s hot path: append a non-empty ``delta`` to the open text block and return
        its event; ``None`` (nothing done) when ``text()`` has more to do (no open text block,
        an empty delta, a long text that batches its joins)."""
        open_block = self._current_text
        if open_block is None or not delta or open_block.pending:
            return None
        fields = open_block.block.__dict__
        text = fields["text"]
        if len(text) >= _LARGE_TEXT:
            return None
        fields["text"] = ""  # one owner while appending: CPython extends the string in place
        text += delta
        fields["text"] = text
        event = _new_text_delta(TextDelta)  # == TextDelta(open_block.index, delta, self.message)
        event.content_index = open_block.index
        event.delta = delta
        event.partial = self.message
        return event

    @property
    def text_open(self) -> bool:
        """Whether a text block is open (``append_texts`` needs one)."""
        return self._current_text is not None

    def append_texts(self, pieces: list[str]) -> TextDelta:
        """Append non-empty ``pieces`` to the open text block as ``append_text``/``text()``
        would one by one, and return ONE event whose delta is their concatenation (deltas
        that arrived together, merged). The block ends exactly as after the single appends:
        in place while the text is short, the batched joins past ``_LARGE_TEXT`` (so the
        partial message is the one the last single append would have left)."""
        open_block = self._current_text
        assert open_block is not None, "append_texts needs an open text block"
        joined = pieces[0] if len(pieces) == 1 else "".join(pieces)
        fields = open_block.block.__dict__
        text = fields["text"]
        # every piece goes in place when the text before the last one is still short
        if not open_block.pending and len(text) + len(joined) - len(pieces[-1]) < _LARGE_TEXT:
            fields["text"] = ""  # one owner while appending: CPython extends it in place
            text += joined
            fields["text"] = text
        else:
            for piece in pieces:
                self._append(open_block, "text", piece)
        event = _new_text_delta(TextDelta)  # == TextDelta(open_block.index, joined, self.message)
        event.content_index = open_block.index
        event.delta = joined
        event.partial = self.message
        return event

    def thinking(
        self, delta: str, out: list[AssistantMessageEvent], *, signature: str | None = None
    ) -> None:
        """Append reasoning text, opening a thinking block if needed."""
        if not delta and signature is None:
            return
        open_block = self._current_thinking
        if open_block is None:
            self._close_text(out)
            thought = ThinkingContent(thinking="")
            if signature is not None:
                thought.thinking_signature = signature
            open_block = self._open("thinking", thought, out)
            self._current_thinking = open_block
        elif signature is not None:
            open_block.block.thinking_signature = signature
        if delta:
            self._append(open_block, "thinking", delta)
            out.append(ThinkingDelta(open_block.index, delta, self.message))

    def thinking_signature(self, signature: str) -> None:
        """Attach a signature to the open (or last) thinking block."""
        target = self._current_thinking
        if target is None:
            for candidate in reversed(list(self._blocks.values())):
                if candidate.kind == "thinking":
                    target = candidate
                    break
        if target is not None:
            target.block.thinking_signature = signature

    def redacted_thinking(self, data: str, out: list[AssistantMessageEvent]) -> None:
        """A redacted thinking block: empty text, the opaque payload as its signature."""
        self._close_text(out)
        self._close_thinking(out)
        thought = ThinkingContent(thinking="", thinking_signature=data, redacted=True)
        open_block = self._open("thinking", thought, out)
        self._end(open_block, out)

    # tool calls --------------------------------------------------------------------------------

    def tool_call_start(
        self, key: object, call_id: str, name: str, out: list[AssistantMessageEvent]
    ) -> None:
        """Open the tool call identified by ``key`` (a wire index or id)."""
        if key in self._blocks:
            self.tool_call_meta(key, call_id, name)
            return
        self._close_text(out)
        self._close_thinking(out)
        self._open("toolCall", ToolCall(id=call_id, name=name), out, key=key)

    def has_tool_call(self, key: object) -> bool:
        """Whether ``key`` names an open or finished tool call."""
        found = self._blocks.get(key)
        return found is not None and found.kind == "toolCall"

    def tool_call_meta(self, key: object, call_id: str | None, name: str | None) -> None:
        """Set id/name of a tool call (servers repeat them on every chunk: set, not append)."""
        block = self._blocks[key].block
        if call_id and not block.id:
            block.id = call_id
        if name and not block.name:
            block.name = name

    def tool_call_args(self, key: object, delta: str, out: list[AssistantMessageEvent]) -> None:
        """Append a piece of a tool call's JSON arguments."""
        open_block = self._blocks[key]
        if delta:
            open_block.args.append(delta)
        out.append(ToolCallDelta(open_block.index, delta, self.message))

    def tool_call_arguments(self, key: object, arguments: dict[str, Any]) -> None:
        """Set complete, already-parsed arguments (providers that send objects, not text)."""
        open_block = self._blocks[key]
        open_block.args = []
        open_block.block.arguments = arguments

    def key_for_tool_call_id(self, call_id: str) -> object | None:
        """The key of the tool call with this id, if one was opened under another key."""
        for key, open_block in self._blocks.items():
            if open_block.kind == "toolCall" and open_block.block.id == call_id:
                return key
        return None

    def tool_calls(self) -> list[ToolCall]:
        """Tool calls so far."""
        return [b.block for b in self._blocks.values() if b.kind == "toolCall"]

    # endings -----------------------------------------------------------------------------------

    def close_blocks(self, out: list[AssistantMessageEvent]) -> None:
        """End every open block in content order; tool-call arguments are parsed here."""
        for open_block in sorted(self._blocks.values(), key=lambda b: b.index):
            if not open_block.ended:
                self._end(open_block, out)
        self._current_text = self._current_thinking = None

    def finish(
        self,
        stop_reason: Literal["stop", "length", "toolUse"],
        out: list[AssistantMessageEvent],
        *,
        usage: Usage | None = None,
    ) -> None:
        """Close the blocks and end with ``done``; a malformed tool call turns it into ``error``."""
        if usage is not None:
            self.message.usage = usage
        try:
            self.close_blocks(out)
        except _MalformedArguments:
            self.fail(ProviderFailure(MALFORMED_TOOL_ARGUMENTS), out)
            return
        if stop_reason == "stop" and self.tool_calls():
            stop_reason = "toolUse"  # some servers (Ollama) say "stop" next to tool calls
        self.message.stop_reason = stop_reason
        self.finished = True
        out.append(Done(stop_reason, self.message))

    def fail(self, failure: ProviderFailure, out: list[AssistantMessageEvent]) -> None:
        """End with ``error``, keeping what was streamed and recording every fact."""
        if self.finished:
            return
        if not self.started:
            out.append(self.start())
        output_started = self.output_started
        with contextlib.suppress(_MalformedArguments):
            self.close_blocks(out)
        message = self.message
        message.stop_reason = "aborted" if failure.aborted else "error"
        message.error_message = failure.message
        message.error_output_started = output_started
        failure.apply_to(message)
        self.finished = True
        out.append(Error("aborted" if failure.aborted else "error", message))

    # internals ---------------------------------------------------------------------------------

    def _open(
        self, kind: str, block: Any, out: list[AssistantMessageEvent], *, key: object | None = None
    ) -> _OpenBlock:
        index = len(self.message.content)
        self.message.content.append(block)
        open_block = _OpenBlock(kind, index, block)
        self._blocks[key if key is not None else object()] = open_block
        if kind == "text":
            out.append(TextStart(index, self.message))
        elif kind == "thinking":
            out.append(ThinkingStart(index, self.message))
        else:
            out.append(ToolCallStart(index, self.message))
        return open_block

    def _append(self, open_block: _OpenBlock, attr: str, delta: str) -> None:
        fields = open_block.block.__dict__
        value = fields[attr]
        if not open_block.pending and len(value) < _LARGE_TEXT:
            fields[attr] = ""  # one owner: CPython extends the string in place
            value += delta
            fields[attr] = value
            return
        open_block.pending.append(delta)
        if len(open_block.pending) >= _BATCH:
            self._flush(open_block, attr)

    def _flush(self, open_block: _OpenBlock, attr: str) -> None:
        if open_block.pending:
            open_block.block.__dict__[attr] += "".join(open_block.pending)
            open_block.pending = []

    def _close_text(self, out: list[AssistantMessageEvent]) -> None:
        if self._current_text is not None:
            self._end(self._current_text, out)
            self._current_text = None

    def _close_thinking(self, out: list[AssistantMessageEvent]) -> None:
        if self._current_thinking is not None:
            self._end(self._current_thinking, out)
            self._current_thinking = None

    def _end(self, open_block: _OpenBlock, out: list[AssistantMessageEvent]) -> None:
        open_block.ended = True
        block = open_block.block
        if open_block.kind == "text":
            self._flush(open_block, "text")
            out.append(TextEnd(open_block.index, block.text, self.message))
        elif open_block.kind == "thinking":
            self._flush(open_block, "thinking")
            out.append(ThinkingEnd(open_block.index, block.thinking, self.message))
        else:
            if open_block.args:
                raw = "".join(open_block.args)
                parsed = _parse_arguments(raw)
                if parsed is None:
                    block.arguments = parse_partial_json(raw)
                    raise _MalformedArguments(raw)
                block.arguments = parsed
            out.append(ToolCallEnd(open_block.index, block, self.message))


class _MalformedArguments(ValueError):
    pass


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    text = raw.strip()
    if not text:
        return {}
    try:
        # bounded: arguments nested past the limit are malformed (they could not be
        # validated, stored or sent back without recursing too deep)
        value = loads_untrusted(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_partial_json(raw: str) -> dict[str, Any]:
    """Best-effort object from unfinished JSON text: close open strings and brackets,
    dropping up to 64 trailing characters until it parses (used for malformed arguments)."""
    text = raw.strip()
    if not text.startswith("{"):
        return {}
    for end in range(len(text), max(len(text) - 64, 1) - 1, -1):
        prefix = text[:end].rstrip().rstrip(",:")
        closers, in_string = _open_brackets(prefix)
        candidate = prefix + ('"' if in_string else "") + "".join(reversed(closers))
        try:
            value = loads_untrusted(candidate)
        except ValueError:
            continue
        return value if isinstance(value, dict) else {}
    return {}


def _open_brackets(text: str) -> tuple[list[str], bool]:
    closers: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]" and closers:
            closers.pop()
    return closers, in_string
