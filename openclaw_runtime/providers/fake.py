"""A scripted provider: deterministic model responses for tests, demos and benchmarks.

Enqueue responses built from steps (text, thinking, tool calls, delays, gates, errors); each
request consumes the next one and is recorded in ``history`` with exactly what was sent. It
honours the provider contract: it never raises, encodes failures as ``error`` events, and
stops promptly with ``stop_reason="aborted"`` when the request's signal fires.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import anyio

from ..events import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
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
from ..llm import Context, Model, StreamOptions
from ..messages import (
    AssistantMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

__all__ = [
    "FakeError",
    "FakeProvider",
    "FakeRequest",
    "FakeResponse",
    "delay",
    "gate",
    "text",
    "thinking",
    "tool_call",
]


@dataclass(slots=True)
class _Text:
    text: str
    chunk: int | None


@dataclass(slots=True)
class _Thinking:
    text: str
    signature: str | None


@dataclass(slots=True)
class _ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str | None


@dataclass(slots=True)
class _Delay:
    seconds: float


@dataclass(slots=True)
class _Gate:
    """Pause the response until ``event`` is set (tests use it to act mid-stream)."""

    event: Any


Step: TypeAlias = _Text | _Thinking | _ToolCall | _Delay | _Gate


def text(value: str, *, chunk: int | None = None) -> _Text:
    """A text block streamed in ``chunk``-character deltas (whitespace-split words if None)."""
    return _Text(value, chunk)


def thinking(value: str, *, signature: str | None = None) -> _Thinking:
    """A thinking block."""
    return _Thinking(value, signature)


def tool_call(
    name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None
) -> _ToolCall:
    """A structured tool call; its JSON arguments stream in two deltas."""
    return _ToolCall(name, dict(arguments or {}), id)


def delay(seconds: float) -> _Delay:
    """Wait before the next step (interrupted at once by an abort)."""
    return _Delay(seconds)


def gate(event: Any) -> _Gate:
    """Wait for an ``anyio.Event`` before the next step."""
    return _Gate(event)


@dataclass(slots=True)
class FakeError:
    """How a scripted response fails: the facts a real provider would report."""

    message: str
    status: int | None = None
    code: str | None = None
    error_type: str | None = None
    retry_after_ms: float | None = None


@dataclass(slots=True)
class FakeResponse:
    """One scripted response: steps, then a stop reason or an error.

    ``raise_exception`` makes the stream raise instead (a provider breaking its contract),
    so the kernel's failure handling can be tested.
    """

    steps: list[Step] = field(default_factory=list)
    stop_reason: Literal["stop", "length", "toolUse"] | None = None
    error: FakeError | None = None
    usage: Usage | None = None
    raise_exception: BaseException | None = None


@dataclass(slots=True)
class FakeRequest:
    """What one request sent: model, a copy of the context, and the options."""

    model: Model
    context: Context
    options: StreamOptions


Scripted: TypeAlias = FakeResponse | Callable[[FakeRequest], FakeResponse]


class FakeProvider:
    """A provider whose responses are scripted; its ``stream_fn`` is a ``StreamFn``."""

    def __init__(self, *, api: str = "fake", provider: str = "fake") -> None:
        self.api = api
        self.provider = provider
        self.history: list[FakeRequest] = []
        self._script: deque[Scripted] = deque()
        self._call_ids = 0

    # scripting --------------------------------------------------------------------------------

    def enqueue(self, *responses: Scripted) -> FakeProvider:
        """Append responses; a callable gets the request and returns the response."""
        self._script.extend(responses)
        return self

    def reply(
        self, *steps: Step | str, stop_reason: Literal["stop", "length"] | None = None
    ) -> FakeProvider:
        """Enqueue a response made of ``steps`` (a plain string is a text step)."""
        parsed = [text(s) if isinstance(s, str) else s for s in steps]
        return self.enqueue(FakeResponse(parsed, stop_reason=stop_reason))

    def fail(self, message: str, **facts: Any) -> FakeProvider:
        """Enqueue a response that ends in an error with ``facts`` (status, code, ...)."""
        return self.enqueue(FakeResponse(error=FakeError(message, **facts)))

    @property
    def pending(self) -> int:
        """Responses not consumed yet."""
        return len(self._script)

    # the StreamFn -----------------------------------------------------------------------------

    def stream_fn(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        """Answer one request with the next scripted response."""
        request = FakeRequest(
            model,
            Context(context.system_prompt, list(context.messages), list(context.tools)),
            options,
        )
        self.history.append(request)
        return AssistantMessageEventStream(self._events(request))

    __call__ = stream_fn

    async def _events(self, request: FakeRequest) -> AsyncIterator[AssistantMessageEvent]:
        model, signal = request.model, request.options.signal
        message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
        yield Start(message)
        if not self._script:
            message.stop_reason = "error"
            message.error_message = "FakeProvider: no scripted response left"
            yield Error("error", message)
            return
        scripted = self._script.popleft()
        response = scripted(request) if callable(scripted) else scripted
        tool_calls = 0
        for step in response.steps:
            if signal is not None and signal.aborted:
                break
            if isinstance(step, _Delay | _Gate):
                await self._pause(step, signal)
                continue
            index = len(message.content)
            if isinstance(step, _Text):
                block = TextContent(text="")
                message.content.append(block)
                yield TextStart(index, message)
                for piece in _chunks(step.text, step.chunk):
                    block.text += piece
                    yield TextDelta(index, piece, message)
                yield TextEnd(index, block.text, message)
            elif isinstance(step, _Thinking):
                thought = ThinkingContent(thinking="")
                message.content.append(thought)
                yield ThinkingStart(index, message)
                for piece in _chunks(step.text, None):
                    thought.thinking += piece
                    yield ThinkingDelta(index, piece, message)
                if step.signature is not None:
                    thought.thinking_signature = step.signature
                yield ThinkingEnd(index, thought.thinking, message)
            else:
                tool_calls += 1
                self._call_ids += 1
                call = ToolCall(id=step.id or f"call_{self._call_ids}", name=step.name)
                message.content.append(call)
                yield ToolCallStart(index, message)
                encoded = json.dumps(step.arguments)
                half = len(encoded) // 2
                for piece in (encoded[:half], encoded[half:]):
                    yield ToolCallDelta(index, piece, message)
                call.arguments = step.arguments
                yield ToolCallEnd(index, call, message)
        if response.raise_exception is not None:
            raise response.raise_exception
        if response.usage is not None:
            message.usage = response.usage
        if signal is not None and signal.aborted:
            message.stop_reason = "aborted"
            message.error_message = "Request was aborted"
            yield Error("aborted", message)
        elif response.error is not None:
            _apply_error(message, response.error, output_started=bool(message.content))
            yield Error("error", message)
        else:
            reason: StopReason = response.stop_reason or ("toolUse" if tool_calls else "stop")
            message.stop_reason = reason
            yield Done(reason, message)  # type: ignore[arg-type]

    async def _pause(self, step: _Delay | _Gate, signal: Any) -> None:
        async def wait() -> None:
            if isinstance(step, _Delay):
                await anyio.sleep(step.seconds)
            else:
                await step.event.wait()

        if signal is None:
            await wait()
            return
        with signal.linked_cancel_scope():
            await wait()


def _apply_error(message: AssistantMessage, error: FakeError, *, output_started: bool) -> None:
    message.stop_reason = "error"
    message.error_message = error.message
    message.error_output_started = output_started
    facts = {
        "error_status": error.status,
        "error_code": error.code,
        "error_type": error.error_type,
        "error_retry_after_ms": error.retry_after_ms,
    }
    for name, value in facts.items():
        if value is not None:  # unset facts stay absent on the wire
            setattr(message, name, value)


def _chunks(value: str, size: int | None) -> Sequence[str]:
    if size is not None:
        return [value[i : i + size] for i in range(0, len(value), size)] or [""]
    words = value.split(" ")
    return [w if i == len(words) - 1 else w + " " for i, w in enumerate(words)]
