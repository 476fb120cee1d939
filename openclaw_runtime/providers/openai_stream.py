"""Reading a Chat Completions stream: one response's state, event by event.

``ChatCompletionStreamState`` folds the decoded server-sent events of one response into
assistant-message events (text, reasoning as thinking, tool-call deltas whose id/type/name
repeat on every chunk while arguments arrive in pieces, ``{"error": ...}`` objects inside a
200 stream, usage chunks) and ends the message with the reason it could or could not finish;
``map_finish_reason`` and ``parse_usage`` map OpenAI's fields to ours.

Hot path (``apply``): one SSE data payload at a time, applied when the consumer asks for its
events (so the shared partial message is never ahead of the event in hand). The common chunk,
a plain content delta, is one chain of dict lookups and an in-place string append
(``MessageBuilder.append_text``) returning its one event; every other shape goes through
``chunk``'s full walk, and ``tests/test_openai_stream_fast_path.py`` holds the two to the
same events. ``fold`` applies a run of such chunks from one network read and returns one event
for them all (``tests/test_openai_coalesced_deltas.py`` holds it to the per-chunk events).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..events import AssistantMessageEvent, TextDelta
from ..llm import Model
from ..messages import Cost, Usage
from .builder import MessageBuilder
from .errors import EMPTY_STREAM_ERROR, ProviderFailure, failure_from_payload

__all__ = [
    "MALFORMED_CHUNK",
    "ChatCompletionStreamState",
    "map_finish_reason",
    "parse_usage",
]

_NO_FINISH = "Stream ended without finish_reason"
MALFORMED_CHUNK = "Provider sent a malformed stream chunk (finish_reason: malformed_response)"
_DONE = b"[DONE]"
_loads = orjson.loads
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_UNPARSED: Any = object()  # ``held``: ``fold`` stopped before parsing its payload


# --------------------------------------------------------------------------- response


def map_finish_reason(reason: str) -> tuple[str, str | None]:
    """``finish_reason`` → (stop reason, error text or None)."""
    if reason == "stop":
        return "stop", None
    if reason == "length":
        return "length", None
    if reason in ("tool_calls", "function_call"):
        return "toolUse", None
    return "error", f"Provider finish_reason: {reason}"


def parse_usage(raw: Mapping[str, Any], model: Model) -> Usage:
    """OpenAI usage (prompt tokens include cached ones) → our usage, priced by the model."""
    prompt = int(raw.get("prompt_tokens") or 0)
    output = int(raw.get("completion_tokens") or 0)
    details = raw.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, Mapping) else 0
    cache_write = int(details.get("cache_write_tokens") or 0) if isinstance(details, Mapping) else 0
    fresh = max(0, prompt - cached - cache_write)
    price = model.cost
    cost = Cost(
        input=fresh * price.input / 1e6,
        output=output * price.output / 1e6,
        cache_read=cached * price.cache_read / 1e6,
        cache_write=cache_write * price.cache_write / 1e6,
    )
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    total = int(raw.get("total_tokens") or (prompt + output))
    return Usage(
        input=fresh,
        output=output,
        cache_read=cached,
        cache_write=cache_write,
        total_tokens=total,
        cost=cost,
    )


class ChatCompletionStreamState:
    """What one response has said so far."""

    __slots__ = (
        "builder",
        "done",
        "events_seen",
        "failure",
        "finish_reason",
        "held",
        "last_tool_key",
        "model",
        "stop",
        "usage",
    )

    def __init__(self, model: Model) -> None:
        self.model = model
        self.builder = MessageBuilder(model)
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.failure: ProviderFailure | None = None
        self.events_seen = 0
        self.last_tool_key: object | None = None
        self.done = False  # ``[DONE]`` came: the rest of the body is drained, not decoded
        #: where the last ``fold`` stopped, and the chunk it parsed there (``_UNPARSED``: none)
        self.stop = 0
        self.held: Any = _UNPARSED

    def apply(self, data: bytes, out: list[AssistantMessageEvent]) -> TextDelta | None:
        """One SSE data payload (from ``SSEDecoder.feed_data``). A plain content delta, the
        common chunk, returns its one event (the hot path); anything else returns ``None``
        and appends its events to ``out``. ``[DONE]`` sets ``done``; a payload that is not
        JSON, or an ``error`` object, sets ``failure``: the caller stops reading there."""
        try:
            chunk = _loads(data)
        except orjson.JSONDecodeError:
            if data == _DONE:  # not JSON: tested here, not before every chunk's ``loads``
                self.done = True
                return None
            text = data.decode("utf-8", errors="replace")
            self.failure = ProviderFailure(f"{MALFORMED_CHUNK}: {text[:200]}")
            return None
        self.events_seen += 1
        # what ``_chunk`` would turn into exactly one ``text()``: one lookup chain, then the
        # keys that could say more (a tool call, reasoning, a finish, usage, an error); a key
        # that is usually absent is tested with ``in`` (no method call), ``usage`` with
        # ``get`` (OpenAI sends ``"usage": null`` on every chunk when asked for usage)
        try:
            choice = chunk["choices"][0]
            delta = choice["delta"]
            content = delta.get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            content = None
        if (
            type(content) is str
            and len(delta) == 1
            and not choice.get("finish_reason")
            and ("usage" not in choice or not choice["usage"])
            and not chunk.get("usage")
            and ("error" not in chunk or not chunk["error"])
            and self.builder.message.response_id is not None
        ):
            event = self.builder.append_text(content)
            if event is not None or not content:
                return event
        if type(chunk) is dict:
            self._chunk(chunk, out)
        return None

    def fold(self, payloads: list[bytes], start: int) -> TextDelta | None:
        """Apply the plain content deltas of ``payloads[start:]`` (the data of one network
        read), up to the first payload that is anything else, and return ONE ``TextDelta`` for
        them all (their concatenation; ``None`` when there was no text). ``stop`` is then the
        index of the first payload not applied; when it was parsed, ``held`` is its chunk,
        which ``apply_stopped`` applies (after the caller handed out the merged delta, so the
        partial message is never ahead of the event in hand).

        A payload is folded exactly when it passes ``apply``'s hot-path test, while a text
        block is open and the response id known (which folding cannot change); past the
        batching size ``apply`` would append it through ``text()``, which ``append_texts``
        does too. The message ends as it would after one ``apply`` per payload; only the
        events between are merged."""
        self.held = _UNPARSED
        builder = self.builder
        if not builder.text_open or builder.message.response_id is None:
            self.stop = start
            return None
        pieces: list[str] = []
        index = start
        count = len(payloads)
        while index < count:
            try:
                chunk = _loads(payloads[index])
            except orjson.JSONDecodeError:
                break  # ``[DONE]`` or malformed: ``apply`` says which
            # ``apply``'s hot-path test, word for word
            try:
                choice = chunk["choices"][0]
                delta = choice["delta"]
                content = delta.get("content")
            except (KeyError, IndexError, TypeError, AttributeError):
                content = None
            if not (
                type(content) is str
                and len(delta) == 1
                and not choice.get("finish_reason")
                and ("usage" not in choice or not choice["usage"])
                and not chunk.get("usage")
                and ("error" not in chunk or not chunk["error"])
            ):
                self.held = chunk
                break
            if content:
                pieces.append(content)
            index += 1
        self.events_seen += index - start
        self.stop = index
        return builder.append_texts(pieces) if pieces else None

    def apply_stopped(self, data: bytes, out: list[AssistantMessageEvent]) -> TextDelta | None:
        """``apply`` for the payload ``fold`` stopped at (``data``), without parsing it twice."""
        held = self.held
        if held is _UNPARSED:
            return self.apply(data, out)
        self.held = _UNPARSED
        self.chunk(held, out)  # not a plain delta: ``apply`` would take the full walk too
        return None

    def chunk(self, chunk: Any, out: list[AssistantMessageEvent]) -> None:
        """Apply one decoded ``chat.completion.chunk``."""
        self.events_seen += 1
        if type(chunk) is dict:
            self._chunk(chunk, out)

    def _chunk(self, chunk: dict[str, Any], out: list[AssistantMessageEvent]) -> None:
        error = chunk.get("error")
        if error:
            status = error.get("code") if isinstance(error, dict) else None
            self.failure = failure_from_payload(
                chunk, status=status if isinstance(status, int) and 400 <= status < 600 else None
            )
            return
        builder = self.builder
        message = builder.message
        if message.response_id is None and chunk.get("id"):
            message.response_id = chunk["id"]
        usage = chunk.get("usage")
        choices = chunk.get("choices")
        if not choices:
            if usage:
                self.usage = parse_usage(usage, self.model)
            return
        choice = choices[0]
        if usage or choice.get("usage"):
            self.usage = parse_usage(usage or choice["usage"], self.model)
        delta = choice.get("delta") or choice.get("message")
        if delta:
            for field in _REASONING_FIELDS:
                reasoning = delta.get(field)
                if isinstance(reasoning, str) and reasoning:
                    builder.thinking(reasoning, out, signature=field)
                    break
            content = delta.get("content")
            if content:
                if isinstance(content, str):
                    builder.text(content, out)
                elif isinstance(content, list):
                    for part in content:
                        if isinstance(part, dict) and isinstance(part.get("text"), str):
                            builder.text(part["text"], out)
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                builder.text(refusal, out)
            tool_calls = delta.get("tool_calls")
            if tool_calls:
                for call in tool_calls:
                    self._tool_call(call, out)
        finish = choice.get("finish_reason")
        if finish:
            self.finish_reason = finish

    def _tool_call(self, call: Any, out: list[AssistantMessageEvent]) -> None:
        if not isinstance(call, dict):
            return
        builder = self.builder
        index = call.get("index")
        call_id = call.get("id") or ""
        function = call.get("function") or {}
        name = function.get("name") or ""
        if isinstance(index, int):
            key: object = ("index", index)
        elif call_id:
            key = ("id", call_id)
        elif self.last_tool_key is not None:
            key = self.last_tool_key
        else:
            key = ("index", 0)
        if not builder.has_tool_call(key) and call_id:
            # an id-keyed continuation of a call first seen by index (or vice versa)
            key = builder.key_for_tool_call_id(call_id) or key
        if builder.has_tool_call(key):
            builder.tool_call_meta(key, call_id, name)
        else:
            builder.tool_call_start(key, call_id, name, out)
        self.last_tool_key = key
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            builder.tool_call_args(key, arguments, out)
        elif isinstance(arguments, dict):
            builder.tool_call_arguments(key, arguments)

    def end(self, out: list[AssistantMessageEvent]) -> None:
        """The body ended: finish, or fail with the reason it could not finish."""
        builder = self.builder
        if self.failure is not None:
            builder.fail(self.failure, out)
            return
        if self.finish_reason is None:
            builder.fail(
                ProviderFailure(EMPTY_STREAM_ERROR if self.events_seen == 0 else _NO_FINISH), out
            )
            return
        stop_reason, error = map_finish_reason(self.finish_reason)
        if error is not None:
            builder.fail(ProviderFailure(error), out)
            return
        builder.finish(stop_reason, out, usage=self.usage)  # type: ignore[arg-type]
