"""Event types and ``EventStream``, the container every level of the runtime streams through.

Two levels share one stream class:

* the **LLM level**: a provider's assistant-message events (``start``, text/thinking/toolcall
  ``*_start/_delta/_end``, then ``done`` or ``error``); the stream completes on ``done``/``error``
  and its result is the final ``AssistantMessage``;
* the **agent level**: ``agent_*``, ``turn_*``, ``message_*`` and ``tool_execution_*`` events;
  the stream completes on ``agent_end`` and its result is the list of new messages.

Events are slotted dataclasses, not pydantic models: one is created per streamed token, so
they must cost a few hundred nanoseconds. ``to_dict()`` renders them for JSON timelines.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar

import anyio

from ._exceptions import StreamError
from .messages import AssistantMessage, ToolCall, ToolResultMessage, WireModel

__all__ = [
    "AgentEnd",
    "AgentEvent",
    "AgentEventStream",
    "AgentStart",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "Done",
    "Error",
    "Event",
    "EventStream",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "Start",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingStart",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "TurnEnd",
    "TurnStart",
    "background_stream",
    "to_jsonable",
]


class Event:
    """Base of every event; ``type`` is the wire name (``"message_update"``...)."""

    __slots__ = ()
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``{"type": ..., <fields in camelCase>}``."""
        out: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            out[_camel(f.name)] = to_jsonable(value)
        return out


# --------------------------------------------------------------------------- LLM level


@dataclass(slots=True)
class Start(Event):
    """The provider accepted the request; ``partial`` is the message it streams into."""

    type: ClassVar[str] = "start"
    partial: AssistantMessage


@dataclass(slots=True)
class TextStart(Event):
    """A text block opened at ``content_index``."""

    type: ClassVar[str] = "text_start"
    content_index: int
    partial: AssistantMessage


@dataclass(slots=True)
class TextDelta(Event):
    """More text for the block at ``content_index``."""

    type: ClassVar[str] = "text_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


@dataclass(slots=True)
class TextEnd(Event):
    """The text block at ``content_index`` is complete."""

    type: ClassVar[str] = "text_end"
    content_index: int
    content: str
    partial: AssistantMessage


@dataclass(slots=True)
class ThinkingStart(Event):
    """A thinking block opened."""

    type: ClassVar[str] = "thinking_start"
    content_index: int
    partial: AssistantMessage


@dataclass(slots=True)
class ThinkingDelta(Event):
    """More reasoning text."""

    type: ClassVar[str] = "thinking_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


@dataclass(slots=True)
class ThinkingEnd(Event):
    """The thinking block is complete."""

    type: ClassVar[str] = "thinking_end"
    content_index: int
    content: str
    partial: AssistantMessage


@dataclass(slots=True)
class ToolCallStart(Event):
    """A tool-call block opened."""

    type: ClassVar[str] = "toolcall_start"
    content_index: int
    partial: AssistantMessage


@dataclass(slots=True)
class ToolCallDelta(Event):
    """More of a tool call's JSON arguments."""

    type: ClassVar[str] = "toolcall_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


@dataclass(slots=True)
class ToolCallEnd(Event):
    """A tool call is complete and parsed."""

    type: ClassVar[str] = "toolcall_end"
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage


@dataclass(slots=True)
class Done(Event):
    """The response finished normally (stop, length or toolUse)."""

    type: ClassVar[str] = "done"
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


@dataclass(slots=True)
class Error(Event):
    """The response failed or was aborted; ``error`` carries every fact about it."""

    type: ClassVar[str] = "error"
    reason: Literal["error", "aborted"]
    error: AssistantMessage


AssistantMessageEvent = (
    Start
    | TextStart
    | TextDelta
    | TextEnd
    | ThinkingStart
    | ThinkingDelta
    | ThinkingEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | Done
    | Error
)


# --------------------------------------------------------------------------- agent level


@dataclass(slots=True)
class AgentStart(Event):
    """A run began."""

    type: ClassVar[str] = "agent_start"


@dataclass(slots=True)
class AgentEnd(Event):
    """A run ended; no more events follow. ``messages`` are the run's new messages."""

    type: ClassVar[str] = "agent_end"
    messages: list[Any]


@dataclass(slots=True)
class TurnStart(Event):
    """A turn (one assistant response plus its tool executions) began."""

    type: ClassVar[str] = "turn_start"


@dataclass(slots=True)
class TurnEnd(Event):
    """A turn ended with ``message`` and the results of its tool calls."""

    type: ClassVar[str] = "turn_end"
    message: Any
    tool_results: list[ToolResultMessage]


@dataclass(slots=True)
class MessageStart(Event):
    """A message (user, assistant, toolResult or custom) entered the transcript."""

    type: ClassVar[str] = "message_start"
    message: Any


@dataclass(slots=True)
class MessageUpdate(Event):
    """The streamed assistant message changed; ``message`` is the live partial."""

    type: ClassVar[str] = "message_update"
    message: Any
    assistant_message_event: Any


@dataclass(slots=True)
class MessageEnd(Event):
    """A message is final."""

    type: ClassVar[str] = "message_end"
    message: Any


@dataclass(slots=True)
class ToolExecutionStart(Event):
    """The loop started handling a tool call."""

    type: ClassVar[str] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: Any
    hide_from_channel_progress: bool | None = None


@dataclass(slots=True)
class ToolExecutionUpdate(Event):
    """A running tool reported partial output."""

    type: ClassVar[str] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: Any
    partial_result: Any
    hide_from_channel_progress: bool | None = None


@dataclass(slots=True)
class ToolExecutionEnd(Event):
    """A tool call finished; ``execution_started`` is False when it never ran."""

    type: ClassVar[str] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: Any
    is_error: bool
    execution_started: bool = True
    error_kind: Literal["argument-validation"] | None = None
    hide_from_channel_progress: bool | None = None


AgentEvent = (
    AgentStart
    | AgentEnd
    | TurnStart
    | TurnEnd
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
)


# --------------------------------------------------------------------------- EventStream

E = TypeVar("E")
R = TypeVar("R")
_UNSET: Any = object()


class EventStream(Generic[E, R]):
    """An async-iterable queue of events that can also be awaited for its final result.

    ``is_complete(event)`` says which event completes the stream; ``extract_result(event)``
    turns that event into the value ``await stream.result()`` returns. The completing event is
    still delivered to the iterator; events pushed after it are dropped.

    Two ways to feed it: a producer task calls ``push()``/``end()``/``fail()``, or the stream
    wraps an async iterator (``source=``) and pulls from it on demand, so a provider written
    as an async generator needs no background task. Iterate it from one consumer; any number
    of tasks may await ``result()``.
    """

    #: The event a subclass's streams carry most (one per token) and that can never complete
    #: them: pulling one skips the completion test (a call per token). ``None``: no such type.
    _never_completes: ClassVar[type | None] = None

    def __init__(
        self,
        is_complete: Callable[[E], bool],
        extract_result: Callable[[E], R],
        *,
        source: AsyncIterator[E] | None = None,
    ) -> None:
        self._is_complete = is_complete
        self._extract_result = extract_result
        self._source = source
        #: made with the first ``push`` (a stream fed by a source never queues anything)
        self._queue: deque[E] | None = None
        self._done = False
        self._result: Any = _UNSET
        self._error: BaseException | None = None
        self._wakeup: anyio.Event | None = None

    # producer side ------------------------------------------------------------------------

    def push(self, event: E) -> None:
        """Queue an event; an event that completes the stream also resolves ``result()``."""
        if self._done:
            return
        if self._is_complete(event):
            self._done = True
            self._result = self._extract_result(event)
        queue = self._queue
        if queue is None:
            queue = self._queue = deque()
        queue.append(event)
        self._notify()

    def end(self, result: Any = _UNSET) -> None:
        """No more events; resolve ``result()`` with ``result`` unless already resolved."""
        if self._result is _UNSET and result is not _UNSET:
            self._result = result
        self._done = True
        self._notify()

    def fail(self, error: BaseException) -> None:
        """No more events; ``result()`` raises ``error`` unless a result already exists."""
        if self._result is _UNSET and self._error is None:
            self._error = error
        self._done = True
        self._notify()

    @property
    def done(self) -> bool:
        """True once no more events will be queued."""
        return self._done

    @property
    def settled(self) -> bool:
        """True once done with no source left to close: ``aclose()`` then waits for nothing."""
        return self._done and self._source is None

    @property
    def failure(self) -> BaseException | None:
        """What failed the stream (``fail()``, or its source raising), if anything did.

        Iterating a failed stream just ends (``result()`` raises the failure); a layer that
        only iterates it (a stream repairer) checks this to pass the failure on."""
        return self._error

    # consumer side ------------------------------------------------------------------------

    def __aiter__(self) -> EventStream[E, R]:
        return self

    async def __anext__(self) -> E:
        while True:
            queue = self._queue
            if queue:
                return queue.popleft()
            if self._done:
                raise StopAsyncIteration
            source = self._source
            if source is None:
                await self._wait()
                continue
            # pull mode, straight from the source: no queue round trip per token
            try:
                event = await source.__anext__()
            except StopAsyncIteration:
                self._source = None
                self.end()
                raise
            except Exception as exc:
                self._source = None
                self.fail(exc)
                raise StopAsyncIteration from None
            if type(event) is not self._never_completes and self._is_complete(event):
                self._done = True
                self._result = self._extract_result(event)
                await self._close_source()
            return event

    async def result(self) -> R:
        """The final result; waits for (or, with a source, drives) the stream to completion."""
        while not self._done:
            if self._source is not None:
                await self._pull()
            else:
                await self._wait()
        if self._result is not _UNSET:
            return self._result
        if self._error is not None:
            raise self._error
        raise StreamError("event stream ended without a completion event")

    async def aclose(self) -> None:
        """Stop the stream and close its source (releases an HTTP response, for example)."""
        self._done = True
        source, self._source = self._source, None
        if source is not None:
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                await aclose()
        self._notify()

    async def __aenter__(self) -> EventStream[E, R]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # internals ------------------------------------------------------------------------------

    async def _pull(self) -> None:
        assert self._source is not None
        try:
            event = await self._source.__anext__()
        except StopAsyncIteration:
            self._source = None
            self.end()
            return
        except Exception as exc:
            self._source = None
            self.fail(exc)
            return
        self.push(event)
        if self._done:
            await self._close_source()

    async def _close_source(self) -> None:
        source, self._source = self._source, None
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()

    def _notify(self) -> None:
        wakeup, self._wakeup = self._wakeup, None
        if wakeup is not None:
            wakeup.set()

    async def _wait(self) -> None:
        if self._wakeup is None:
            self._wakeup = anyio.Event()
        await self._wakeup.wait()


def _assistant_is_complete(event: Any) -> bool:
    return event.type == "done" or event.type == "error"


def _assistant_result(event: Any) -> AssistantMessage:
    return event.message if event.type == "done" else event.error


class AssistantMessageEventStream(EventStream[AssistantMessageEvent, AssistantMessage]):
    """The LLM-level stream a ``StreamFn`` returns: completes on ``done``/``error``."""

    _never_completes = TextDelta  # its ``type`` is a class constant, never "done"/"error"

    def __init__(self, source: AsyncIterator[AssistantMessageEvent] | None = None) -> None:
        super().__init__(_assistant_is_complete, _assistant_result, source=source)


def _agent_is_complete(event: Any) -> bool:
    return event.type == "agent_end"


def _agent_result(event: Any) -> list[Any]:
    return event.messages


class AgentEventStream(EventStream[AgentEvent, list[Any]]):
    """The agent-level stream: completes on ``agent_end`` with the run's new messages."""

    _never_completes = MessageUpdate  # its ``type`` is a class constant, never "agent_end"

    def __init__(self, source: AsyncIterator[AgentEvent] | None = None) -> None:
        super().__init__(_agent_is_complete, _agent_result, source=source)


S = TypeVar("S", bound=EventStream[Any, Any])


@asynccontextmanager
async def background_stream(stream: S, producer: Callable[[], Awaitable[Any]]) -> AsyncIterator[S]:
    """Run ``producer`` in a task while the caller consumes ``stream``.

    The producer pushes into ``stream``; its return value ends the stream, its exception fails
    it and is re-raised here unwrapped once the block exits. Leaving the block waits for the
    producer; an exception in the block cancels it.
    """
    error: Exception | None = None

    async def main() -> None:
        nonlocal error
        try:
            result = await producer()
        except Exception as exc:
            error = exc
            stream.fail(exc)
            return
        except BaseException:
            stream.fail(StreamError("event stream producer was cancelled"))
            raise
        stream.end(result)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(main)
            yield stream
    except BaseExceptionGroup as group:
        # the block's own exception (or a lone failure) surfaces as itself, not as a group
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from group.exceptions[0].__cause__
        raise
    if error is not None:
        raise error


# --------------------------------------------------------------------------- JSON rendering


def to_jsonable(value: Any) -> Any:
    """Render events, messages and plain values as JSON-ready data."""
    if isinstance(value, WireModel):
        return value.to_dict()
    if isinstance(value, Event):
        return value.to_dict()
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            _camel(f.name): to_jsonable(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if getattr(value, f.name) is not None
        }
    return repr(value)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
