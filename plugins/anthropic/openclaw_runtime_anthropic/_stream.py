"""The response side of the Anthropic Messages API: SSE bytes → assistant-message events.

``AnthropicStreamDecoder`` is fed raw network chunks (any split, down to single bytes) and
drives a ``MessageBuilder``: ``message_start`` (id, model, prompt usage) emits ``start``;
``content_block_start/delta/stop`` carry text, thinking (+ ``signature_delta``), redacted
thinking and tool calls (``input_json_delta``); ``message_delta`` brings the stop reason and
the final usage; ``message_stop`` ends the message. ``ping`` frames and comments are ignored,
an ``error`` frame ends the stream with its type (``overloaded_error``...) as a fact.

A stream is only complete with ``message_stop`` (``compat["require_message_stop"] = False``
accepts a stop reason alone, for proxies that drop it) and with every block closed; anything
less is ``Anthropic stream ended before message_stop``, the text OpenClaw's classifier reads
as an incomplete stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from openclaw_runtime.events import AssistantMessageEvent
from openclaw_runtime.llm import Model
from openclaw_runtime.messages import Cost, Usage
from openclaw_runtime.providers.builder import MALFORMED_TOOL_ARGUMENTS, MessageBuilder
from openclaw_runtime.providers.errors import (
    MAX_ERROR_BODY_CHARS,
    ProviderFailure,
    failure_from_payload,
)
from openclaw_runtime.providers.sse import SSEDecoder, SSEEvent

__all__ = [
    "ANTHROPIC_STREAM_INCOMPLETE_ERROR",
    "EMPTY_RESPONSE_ERROR",
    "MALFORMED_FRAME_ERROR",
    "AnthropicStreamDecoder",
    "AnthropicUsage",
    "format_refusal",
    "map_anthropic_stop_reason",
]

ANTHROPIC_STREAM_INCOMPLETE_ERROR = "Anthropic stream ended before message_stop"
EMPTY_RESPONSE_ERROR = "Provider returned an empty response (HTTP 200 without any stream event)"
MALFORMED_FRAME_ERROR = "Provider sent a malformed stream chunk (finish_reason: malformed_response)"
_STOP_REASONS = {
    "end_turn": "stop",
    "pause_turn": "stop",
    "compaction": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
}


def map_anthropic_stop_reason(
    reason: str | None, stop_details: Any = None
) -> tuple[str, str | None]:
    """``stop_reason`` → (stop reason, error text or None). ``refusal`` carries its category
    and explanation; ``sensitive`` and unknown reasons are errors too."""
    if reason is None:
        return "stop", None
    mapped = _STOP_REASONS.get(reason)
    if mapped is not None:
        return mapped, None
    if reason == "refusal":
        return "error", format_refusal(stop_details)
    if reason == "sensitive":
        return "error", "An unknown error occurred"
    return "error", f"Unhandled stop reason: {reason}"


def format_refusal(stop_details: Any) -> str:
    """``Anthropic refusal (category: X): explanation`` — the parts that are present."""
    details = stop_details if isinstance(stop_details, dict) else {}

    def text(key: str) -> str | None:
        value = details.get(key)
        return value.strip() if isinstance(value, str) and value.strip() else None

    category, explanation = text("category"), text("explanation")
    category_part = f" (category: {category})" if category else ""
    return f"Anthropic refusal{category_part}{': ' + explanation if explanation else '.'}"


def _count(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return int(value)
    return None


@dataclass(slots=True)
class AnthropicUsage:
    """Token counts as ``message_start`` and ``message_delta`` report them."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    prompt_snapshot: bool = False
    context: dict[str, Any] | None = None
    seen: bool = False

    def apply_start(self, raw: Any) -> None:
        """``message_start.message.usage``: every bucket, absent cache counters as 0."""
        if not isinstance(raw, dict):
            return
        self.seen = True
        input_tokens = _count(raw.get("input_tokens"))
        output_tokens = _count(raw.get("output_tokens"))
        if input_tokens is not None:
            self.input = input_tokens
        if output_tokens is not None:
            self.output = output_tokens
        self.cache_read = _count(raw.get("cache_read_input_tokens")) or 0
        self.cache_write = _count(raw.get("cache_creation_input_tokens")) or 0
        prompt = self.input + self.cache_read + self.cache_write
        if input_tokens is not None and prompt > 0:
            self.prompt_snapshot = True
            if output_tokens is not None:
                self.context = _context(prompt, prompt + self.output)

    def apply_delta(self, raw: Any) -> None:
        """``message_delta.usage``: present counters win, absent ones keep earlier values."""
        if not isinstance(raw, dict):
            return
        self.seen = True
        input_tokens = _count(raw.get("input_tokens"))
        output_tokens = _count(raw.get("output_tokens"))
        cache_read = _count(raw.get("cache_read_input_tokens"))
        cache_write = _count(raw.get("cache_creation_input_tokens"))
        if input_tokens is not None:
            self.input = input_tokens
        if output_tokens is not None:
            self.output = output_tokens
        if cache_read is not None:
            self.cache_read = cache_read
        if cache_write is not None:
            self.cache_write = cache_write
        iterations = raw.get("iterations")
        if iterations is not None:
            last = iterations[-1] if isinstance(iterations, list) and iterations else None
            counts = (
                [
                    _count(last.get(k))
                    for k in (
                        "input_tokens",
                        "cache_read_input_tokens",
                        "cache_creation_input_tokens",
                        "output_tokens",
                    )
                ]
                if isinstance(last, dict)
                else [None]
            )
            if any(c is None for c in counts):
                self.context = {"state": "unavailable"}
            else:
                prompt = sum(c or 0 for c in counts[:3])
                self.context = _context(prompt, prompt + (counts[3] or 0))
        elif output_tokens is not None and (
            self.prompt_snapshot
            or (input_tokens is not None and cache_read is not None and cache_write is not None)
        ):
            prompt = self.input + self.cache_read + self.cache_write
            self.context = _context(prompt, prompt + self.output)
        else:
            self.context = {"state": "unavailable"}

    def to_usage(self, model: Model) -> Usage:
        """Our ``Usage``, priced by the model's cost per million tokens."""
        price = model.cost
        cost = Cost(
            input=self.input * price.input / 1e6,
            output=self.output * price.output / 1e6,
            cache_read=self.cache_read * price.cache_read / 1e6,
            cache_write=self.cache_write * price.cache_write / 1e6,
        )
        cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
        usage = Usage(
            input=self.input,
            output=self.output,
            cache_read=self.cache_read,
            cache_write=self.cache_write,
            total_tokens=self.input + self.output + self.cache_read + self.cache_write,
            cost=cost,
        )
        if self.context is not None:
            usage.context_usage = self.context
        return usage


def _context(prompt: int, total: int) -> dict[str, Any]:
    return {"state": "available", "promptTokens": prompt, "totalTokens": total}


@dataclass(slots=True)
class _Block:
    kind: str  # text | thinking | redacted | tool | other
    key: object = None
    signature: list[str] = field(default_factory=list)
    json_seen: bool = False
    initial_input: dict[str, Any] | None = None
    stopped: bool = False


class AnthropicStreamDecoder:
    """Decodes one Messages API stream into assistant-message events."""

    def __init__(self, model: Model, *, require_message_stop: bool = True) -> None:
        self.model = model
        self.builder = MessageBuilder(model)
        self.require_message_stop = require_message_stop
        self.failure: ProviderFailure | None = None
        self.usage = AnthropicUsage()
        self.frames = 0
        self.saw_message_start = False
        self.saw_message_stop = False
        self.stop_reason: str | None = None
        self.stop_details: Any = None
        self._sse = SSEDecoder()
        self._blocks: dict[int, _Block] = {}

    @property
    def finished_reading(self) -> bool:
        """Nothing more to decode: ``message_stop`` arrived or the stream failed."""
        return self.saw_message_stop or self.failure is not None

    def feed(self, chunk: bytes, out: list[AssistantMessageEvent]) -> None:
        """Decode a network chunk; events it completes are appended to ``out``."""
        for sse in self._sse.feed(chunk):
            if self.finished_reading:
                return
            self._frame(sse, out, final=False)

    def close(self, out: list[AssistantMessageEvent]) -> None:
        """The body ended: decode a last unterminated frame, then finish or fail."""
        if not self.finished_reading:
            for sse in self._sse.close():
                self._frame(sse, out, final=True)
        self._finish(out)

    # frames ---------------------------------------------------------------------------------

    def _frame(self, sse: SSEEvent, out: list[AssistantMessageEvent], *, final: bool) -> None:
        data = sse.data
        if not data.strip():
            return
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            if final:
                return  # a frame cut by the end of the body: reported as incomplete
            if data.lstrip()[:1] in (b"{", b"["):
                self.failure = ProviderFailure(
                    MALFORMED_FRAME_ERROR, body=sse.text[:MAX_ERROR_BODY_CHARS]
                )
            return
        if not isinstance(payload, dict):
            return
        kind = payload.get("type") if isinstance(payload.get("type"), str) else sse.event
        self.frames += 1
        if kind == "error" or sse.event == "error":
            self.failure = failure_from_payload(payload)
        elif kind == "message_start":
            self._message_start(payload, out)
        elif kind == "content_block_start":
            self._block_start(payload, out)
        elif kind == "content_block_delta":
            self._block_delta(payload, out)
        elif kind == "content_block_stop":
            self._block_stop(payload, out)
        elif kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict):
                if isinstance(delta.get("stop_reason"), str):
                    self.stop_reason = delta["stop_reason"]
                if delta.get("stop_details") is not None:
                    self.stop_details = delta["stop_details"]
            if payload.get("usage") is not None:
                self.usage.apply_delta(payload["usage"])
        elif kind == "message_stop":
            self.saw_message_stop = True
        # "ping" and event types this runtime does not know are ignored

    def _ensure_started(self, out: list[AssistantMessageEvent]) -> None:
        if not self.builder.started:
            out.append(self.builder.start())

    def _message_start(self, payload: dict[str, Any], out: list[AssistantMessageEvent]) -> None:
        self.saw_message_start = True
        message = payload.get("message")
        if isinstance(message, dict):
            partial = self.builder.message
            if isinstance(message.get("id"), str):
                partial.response_id = message["id"]
            if isinstance(message.get("model"), str):
                partial.response_model = message["model"]
            self.usage.apply_start(message.get("usage"))
            partial.usage = self.usage.to_usage(self.model)
        self._ensure_started(out)

    def _block_start(self, payload: dict[str, Any], out: list[AssistantMessageEvent]) -> None:
        index = payload.get("index")
        block = payload.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            return
        self._ensure_started(out)
        builder = self.builder
        kind = block.get("type")
        if kind == "text":
            self._blocks[index] = _Block("text")
            if isinstance(block.get("text"), str) and block["text"]:
                builder.text(block["text"], out)
        elif kind == "thinking":
            state = _Block("thinking")
            self._blocks[index] = state
            if isinstance(block.get("thinking"), str) and block["thinking"]:
                builder.thinking(block["thinking"], out)
            if isinstance(block.get("signature"), str) and block["signature"]:
                state.signature.append(block["signature"])
                builder.thinking("", out, signature=block["signature"])
        elif kind == "redacted_thinking":
            self._blocks[index] = _Block("redacted", stopped=True)
            data = block.get("data")
            builder.redacted_thinking(data if isinstance(data, str) else "", out)
        elif kind == "tool_use":
            key = ("tool_use", index)
            initial = block.get("input")
            self._blocks[index] = _Block(
                "tool", key=key, initial_input=initial if isinstance(initial, dict) else None
            )
            call_id, name = block.get("id"), block.get("name")
            builder.tool_call_start(
                key,
                call_id if isinstance(call_id, str) else "",
                name if isinstance(name, str) else "",
                out,
            )
        else:
            self._blocks[index] = _Block("other", stopped=True)

    def _block_delta(self, payload: dict[str, Any], out: list[AssistantMessageEvent]) -> None:
        state = self._blocks.get(payload.get("index"))  # type: ignore[arg-type]
        delta = payload.get("delta")
        if state is None or state.stopped or not isinstance(delta, dict):
            return
        builder = self.builder
        kind = delta.get("type")
        if kind == "text_delta" and state.kind == "text":
            text = delta.get("text")
            if isinstance(text, str):
                builder.text(text, out)
        elif kind == "thinking_delta" and state.kind == "thinking":
            thinking = delta.get("thinking")
            if isinstance(thinking, str):
                builder.thinking(thinking, out)
        elif kind == "signature_delta" and state.kind == "thinking":
            piece = delta.get("signature")
            if isinstance(piece, str):
                state.signature.append(piece)
                builder.thinking("", out, signature="".join(state.signature))
        elif kind == "input_json_delta" and state.kind == "tool":
            partial = delta.get("partial_json")
            if isinstance(partial, str):
                state.json_seen = True
                builder.tool_call_args(state.key, partial, out)

    def _block_stop(self, payload: dict[str, Any], out: list[AssistantMessageEvent]) -> None:
        state = self._blocks.get(payload.get("index"))  # type: ignore[arg-type]
        if state is None or state.stopped:
            return
        state.stopped = True
        if state.kind == "tool" and not state.json_seen and state.initial_input:
            self.builder.tool_call_arguments(state.key, state.initial_input)
        self._close_open_blocks(out)

    def _close_open_blocks(self, out: list[AssistantMessageEvent]) -> None:
        try:
            self.builder.close_blocks(out)
        except ValueError:  # the builder's malformed-arguments signal
            self.failure = ProviderFailure(MALFORMED_TOOL_ARGUMENTS)

    # the end ---------------------------------------------------------------------------------

    def _finish(self, out: list[AssistantMessageEvent]) -> None:
        builder = self.builder
        if self.usage.seen:
            builder.message.usage = self.usage.to_usage(self.model)
        if self.failure is not None:
            builder.fail(self.failure, out)
            return
        if self.frames == 0:
            builder.fail(ProviderFailure(EMPTY_RESPONSE_ERROR), out)
            return
        open_blocks = any(not b.stopped for b in self._blocks.values())
        terminal = self.saw_message_stop or (
            not self.require_message_stop and self.stop_reason is not None
        )
        if not self.saw_message_start or open_blocks or not terminal:
            builder.fail(ProviderFailure(ANTHROPIC_STREAM_INCOMPLETE_ERROR), out)
            return
        stop_reason, error = map_anthropic_stop_reason(self.stop_reason, self.stop_details)
        if error is not None:
            builder.fail(ProviderFailure(error, code=self.stop_reason), out)
            return
        builder.finish(stop_reason, out, usage=builder.message.usage)  # type: ignore[arg-type]
