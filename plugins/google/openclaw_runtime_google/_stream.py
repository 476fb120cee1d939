"""The response side of Gemini ``streamGenerateContent?alt=sse``: SSE bytes → events.

Every SSE frame is one ``GenerateContentResponse``. ``GeminiStreamDecoder`` reads the first
candidate's parts: ``text`` (``thought: true`` marks thinking), ``functionCall`` (a whole call
per part: start, arguments and end at once; a missing or repeated id gets a fresh one) and
``thoughtSignature``, which is kept on the block it arrived with — a signature-only part (the
usual last chunk) signs the open text/thinking block or the tool call before it. A signature
that differs from the open block's starts a new block, so signatures never move between
parts. ``usageMetadata`` is cumulative; ``finishReason`` ends the candidate: ``STOP`` (→
``toolUse`` when calls were made), ``MAX_TOKENS`` (→ ``length``), everything else is an
error carrying the reason as its code. ``promptFeedback.blockReason`` without a candidate and
``{"error": ...}`` frames end the stream as errors.
"""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

import orjson

from openclaw_runtime.events import AssistantMessageEvent
from openclaw_runtime.llm import Model
from openclaw_runtime.messages import Cost, TextContent, ThinkingContent, ToolCall, Usage
from openclaw_runtime.providers.builder import MALFORMED_TOOL_ARGUMENTS, MessageBuilder
from openclaw_runtime.providers.errors import (
    MAX_ERROR_BODY_CHARS,
    ProviderFailure,
    failure_from_payload,
)
from openclaw_runtime.providers.sse import SSEDecoder, SSEEvent

__all__ = [
    "EMPTY_RESPONSE_ERROR",
    "GOOGLE_INCOMPLETE_FRAME_ERROR",
    "GOOGLE_STREAM_INCOMPLETE_ERROR",
    "MALFORMED_FRAME_ERROR",
    "GeminiStreamDecoder",
    "map_finish_reason",
]

GOOGLE_STREAM_INCOMPLETE_ERROR = "Google stream ended before a terminal finish reason"
GOOGLE_INCOMPLETE_FRAME_ERROR = "Google SSE stream ended with an incomplete frame"
EMPTY_RESPONSE_ERROR = "Provider returned an empty response (HTTP 200 without any stream event)"
MALFORMED_FRAME_ERROR = "Provider sent a malformed stream chunk (finish_reason: malformed_response)"
_FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "BLOCKLIST": "error",
    "PROHIBITED_CONTENT": "error",
    "SPII": "error",
    "SAFETY": "error",
    "IMAGE_SAFETY": "error",
    "IMAGE_PROHIBITED_CONTENT": "error",
    "IMAGE_RECITATION": "error",
    "IMAGE_OTHER": "error",
    "RECITATION": "error",
    "OTHER": "error",
    "LANGUAGE": "error",
    "MALFORMED_FUNCTION_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "NO_IMAGE": "error",
}
_MODEL_PREFIX = re.compile(
    r"^(?:(?:projects/[^/]+/locations/[^/]+/)?publishers/google/models/|google/|models/)"
)
_USAGE_FIELDS = (
    "promptTokenCount",
    "cachedContentTokenCount",
    "toolUsePromptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
)
_call_counter = itertools.count(1)


def map_finish_reason(reason: str, finish_message: str | None = None) -> tuple[str, str | None]:
    """``finishReason`` → (stop reason, error text or None)."""
    mapped = _FINISH_REASONS.get(reason)
    if mapped is None:
        return "error", f"Unhandled stop reason: {reason}"
    if mapped == "error":
        detail = f": {finish_message.strip()}" if finish_message and finish_message.strip() else ""
        return "error", f"Google generation stopped ({reason}){detail}"
    return mapped, None


def _new_call_id(name: str | None) -> str:
    return f"{name or 'call'}_{int(time.time() * 1000)}_{next(_call_counter)}"


def _count(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return int(value)
    return None


class GeminiStreamDecoder:
    """Decodes one ``streamGenerateContent`` SSE stream into assistant-message events."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.builder = MessageBuilder(model)
        self.failure: ProviderFailure | None = None
        self.frames = 0
        self.finish_reason: str | None = None
        self.stop_reason: str | None = None
        self.terminal_error: ProviderFailure | None = None
        self.truncated_frame = False
        self._sse = SSEDecoder()
        self._open: str | None = None  # "text" | "thinking" while a block takes more parts
        self._call_keys = itertools.count()
        self._call_ids: set[str] = set()
        self._usage_counts = dict.fromkeys(_USAGE_FIELDS, 0)
        self._saw_prompt_count = False
        self._usage: Usage | None = None

    @property
    def failed(self) -> bool:
        """The stream reported an error; nothing more is decoded."""
        return self.failure is not None

    def feed(self, chunk: bytes, out: list[AssistantMessageEvent]) -> None:
        """Decode a network chunk; events it completes are appended to ``out``."""
        for sse in self._sse.feed(chunk):
            if self.failure is not None:
                return
            self._frame(sse, out, final=False)

    def close(self, out: list[AssistantMessageEvent]) -> None:
        """The body ended: decode a last unterminated frame, then finish or fail."""
        if self.failure is None:
            for sse in self._sse.close():
                self._frame(sse, out, final=True)
        self._finish(out)

    # frames ---------------------------------------------------------------------------------

    def _frame(self, sse: SSEEvent, out: list[AssistantMessageEvent], *, final: bool) -> None:
        data = sse.data
        if not data.strip() or data == b"[DONE]":
            return
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            if final:
                self.truncated_frame = True
            elif data.lstrip()[:1] in (b"{", b"["):
                self.failure = ProviderFailure(
                    MALFORMED_FRAME_ERROR, body=sse.text[:MAX_ERROR_BODY_CHARS]
                )
            return
        if isinstance(payload, list):  # a JSON-array stream (no ?alt=sse) sends lists
            for item in payload:
                if isinstance(item, dict) and self.failure is None:
                    self._response(item, out)
            return
        if isinstance(payload, dict):
            self._response(payload, out)

    def _response(self, payload: dict[str, Any], out: list[AssistantMessageEvent]) -> None:
        self.frames += 1
        builder = self.builder
        error = payload.get("error")
        if error:
            status = error.get("code") if isinstance(error, dict) else None
            valid = isinstance(status, int) and 400 <= status < 600
            self.failure = failure_from_payload(payload, status=status if valid else None)
            return
        if not builder.started:
            out.append(builder.start())
        message = builder.message
        if message.response_id is None and isinstance(payload.get("responseId"), str):
            message.response_id = payload["responseId"]
        version = payload.get("modelVersion")
        if isinstance(version, str) and message.response_model is None:
            served = version.strip()
            if served and _MODEL_PREFIX.sub("", served) != _MODEL_PREFIX.sub("", self.model.id):
                message.response_model = served
        if isinstance(payload.get("usageMetadata"), dict):
            self._apply_usage(payload["usageMetadata"])
        candidates = payload.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        feedback = payload.get("promptFeedback")
        if not isinstance(candidate, dict):
            if isinstance(feedback, dict):
                reason = feedback.get("blockReason") or "PROMPT_BLOCKED"
                detail = feedback.get("blockReasonMessage")
                suffix = f": {detail.strip()}" if isinstance(detail, str) and detail.strip() else ""
                self.failure = ProviderFailure(
                    f"Google prompt blocked ({reason}){suffix}",
                    code=str(reason),
                    error_type="google_prompt_blocked",
                )
            return
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if isinstance(parts, list):
            for index, part in enumerate(parts):
                if isinstance(part, dict):
                    self._part(part, index, out)
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason and reason != "FINISH_REASON_UNSPECIFIED":
            self.finish_reason = reason
            stop, error_text = map_finish_reason(reason, candidate.get("finishMessage"))
            self.stop_reason = stop
            self.terminal_error = (
                ProviderFailure(error_text, code=reason, error_type="google_generation_failed")
                if error_text is not None
                else None
            )

    def _part(self, part: dict[str, Any], index: int, out: list[AssistantMessageEvent]) -> None:
        builder = self.builder
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        call = part.get("functionCall")
        if isinstance(call, dict):
            self._function_call(call, signature, out)
            return
        text = part.get("text")
        thought = part.get("thought") is True
        if not isinstance(text, str) or not text:
            if signature is not None:
                self._sign(signature, thought, index, out)
            return
        kind = "thinking" if thought else "text"
        if self._open == kind and signature is not None:
            current = self._current_signature()
            if current is not None and current != signature:
                self._end_blocks(out)  # a differently signed part is a new block
        if thought:
            builder.thinking(text, out, signature=signature)
        else:
            builder.text(text, out)
            if signature is not None:
                self._last_block().text_signature = signature
        self._open = kind

    def _sign(
        self, signature: str, thought: bool, index: int, out: list[AssistantMessageEvent]
    ) -> None:
        """A signature-only part: it belongs to what was just streamed."""
        last = self._last_block()
        if isinstance(last, ToolCall) and not thought and index == 0 and not last.thought_signature:
            last.thought_signature = signature
            return
        if self._open == "thinking" or (thought and self._open is None):
            self.builder.thinking("", out, signature=signature)
            self._open = "thinking"
        elif self._open == "text" and isinstance(last, TextContent):
            if last.text_signature is None:
                last.text_signature = signature
            elif last.text_signature != signature:
                self._end_blocks(out)
        elif thought:
            self.builder.thinking("", out, signature=signature)
            self._open = "thinking"

    def _function_call(
        self, call: dict[str, Any], signature: str | None, out: list[AssistantMessageEvent]
    ) -> None:
        builder = self.builder
        name = call.get("name") if isinstance(call.get("name"), str) else ""
        provided = call.get("id")
        call_id = (
            provided
            if isinstance(provided, str) and provided and provided not in self._call_ids
            else _new_call_id(name)
        )
        self._call_ids.add(call_id)
        args = call.get("args")
        arguments = args if isinstance(args, dict) else {}
        key = ("functionCall", next(self._call_keys))
        builder.tool_call_start(key, call_id, name or "", out)
        if signature is not None:
            self._last_block().thought_signature = signature
        builder.tool_call_args(key, orjson.dumps(arguments).decode(), out)
        builder.tool_call_arguments(key, arguments)
        self._end_blocks(out)

    def _apply_usage(self, raw: dict[str, Any]) -> None:
        counts = self._usage_counts
        for name in _USAGE_FIELDS:
            value = _count(raw.get(name))
            if value is not None:
                counts[name] = value
        self._saw_prompt_count = (
            self._saw_prompt_count or _count(raw.get("promptTokenCount")) is not None
        )
        prompt = counts["promptTokenCount"]
        cached = counts["cachedContentTokenCount"]
        tool_prompt = counts["toolUsePromptTokenCount"]
        output = counts["candidatesTokenCount"] + counts["thoughtsTokenCount"]
        total = _count(raw.get("totalTokenCount"))
        if total is None:
            total = prompt + output + tool_prompt
        fresh = max(0, prompt - cached) + tool_prompt
        price = self.model.cost
        cost = Cost(
            input=fresh * price.input / 1e6,
            output=output * price.output / 1e6,
            cache_read=cached * price.cache_read / 1e6,
        )
        cost.total = cost.input + cost.output + cost.cache_read
        context_prompt = prompt + tool_prompt
        available = self._saw_prompt_count and context_prompt > 0 and cached <= prompt
        self._usage = Usage(
            input=fresh,
            output=output,
            cache_read=cached,
            total_tokens=total,
            cost=cost,
            context_usage={
                "state": "available",
                "promptTokens": context_prompt,
                "totalTokens": max(total, context_prompt + output),
            }
            if available
            else {"state": "unavailable"},
        )
        self.builder.message.usage = self._usage

    # helpers -----------------------------------------------------------------------------------

    def _last_block(self) -> Any:
        content = self.builder.message.content
        return content[-1] if content else None

    def _current_signature(self) -> str | None:
        last = self._last_block()
        if isinstance(last, ThinkingContent):
            return last.thinking_signature
        if isinstance(last, TextContent):
            return last.text_signature
        return None

    def _end_blocks(self, out: list[AssistantMessageEvent]) -> None:
        self._open = None
        try:
            self.builder.close_blocks(out)
        except ValueError:  # the builder's malformed-arguments signal
            self.failure = ProviderFailure(MALFORMED_TOOL_ARGUMENTS)

    # the end ---------------------------------------------------------------------------------

    def _finish(self, out: list[AssistantMessageEvent]) -> None:
        builder = self.builder
        if self.failure is not None:
            builder.fail(self.failure, out)
        elif self.terminal_error is not None:
            builder.fail(self.terminal_error, out)
        elif self.stop_reason is None:
            if self.frames == 0 and not self.truncated_frame:
                builder.fail(ProviderFailure(EMPTY_RESPONSE_ERROR), out)
            elif self.truncated_frame:
                builder.fail(ProviderFailure(GOOGLE_INCOMPLETE_FRAME_ERROR), out)
            else:
                builder.fail(
                    ProviderFailure(
                        GOOGLE_STREAM_INCOMPLETE_ERROR,
                        code="STREAM_INCOMPLETE",
                        error_type="google_incomplete_stream",
                    ),
                    out,
                )
        else:
            builder.finish(self.stop_reason, out, usage=self._usage)  # type: ignore[arg-type]
