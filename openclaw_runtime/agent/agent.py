"""``Agent``: a stateful wrapper around the loop, for applications.

It holds the transcript, the tools, two ``PendingMessageQueue``s (steering and follow-up), the
abort controller of the running prompt, and subscribers. Events are first reduced into
``agent.state`` and then handed to every subscriber in subscription order. A subscriber that
raises is logged and skipped: a broken UI callback never takes a run down.

``agent_end`` means "no more events"; the agent is idle only after every subscriber finished
handling it, which is when ``wait_for_idle()`` returns.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import anyio

from .._exceptions import AgentBusyError, TranscriptError, TranscriptNotContinuableError
from ..abort import AbortController, AbortError, AbortSignal
from ..events import (
    AgentEnd,
    AgentEvent,
    AgentEventStream,
    MessageEnd,
    MessageStart,
    TurnEnd,
    TurnStart,
    background_stream,
)
from ..llm import Model, StreamFn, StreamOptions, ThinkingLevel
from ..messages import AssistantMessage, ContentBlock, ImageContent, TextContent, UserMessage
from ..redaction import package_logger
from .interruption import create_failure_message
from .loop import run_agent_loop, run_agent_loop_continue
from .tools import AgentTool, ToolExecutionMode
from .types import (
    AgentContext,
    AgentLoopConfig,
    MaybeAwaitable,
    QueueMode,
    default_convert_to_llm,
    maybe_await,
)

__all__ = ["Agent", "AgentListener", "AgentState", "PendingMessageQueue"]

logger = package_logger(logging.getLogger("openclaw_runtime.agent"))

AgentListener: TypeAlias = Callable[[AgentEvent, AbortSignal], MaybeAwaitable[None]]
BUSY_TEXT = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion."
)


class PendingMessageQueue:
    """Messages waiting for a drain point; ``one-at-a-time`` releases only the oldest.

    The deque is made with the first message: every live run has two queues, and most never
    get a message while the run waits on its model."""

    __slots__ = ("_messages", "mode")

    def __init__(self, mode: QueueMode = "one-at-a-time") -> None:
        self.mode: QueueMode = mode
        self._messages: deque[Any] | None = None

    def enqueue(self, message: Any) -> None:
        """Add a message at the back."""
        messages = self._messages
        if messages is None:
            messages = self._messages = deque()
        messages.append(message)

    def has_items(self) -> bool:
        """True when something waits."""
        return bool(self._messages)

    def __len__(self) -> int:
        return len(self._messages) if self._messages is not None else 0

    def drain(self) -> list[Any]:
        """Take everything (``all``) or the oldest message (``one-at-a-time``)."""
        messages = self._messages
        if not messages:
            return []
        if self.mode == "all":
            drained = list(messages)
            messages.clear()
            return drained
        return [messages.popleft()]

    def clear(self) -> None:
        """Drop everything."""
        if self._messages is not None:
            self._messages.clear()


@dataclass
class AgentState:
    """What the agent knows now; reduced from events as they happen."""

    system_prompt: str
    model: Model
    thinking_level: ThinkingLevel
    tools: list[AgentTool] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    is_streaming: bool = False
    streaming_message: Any = None
    pending_tool_calls: frozenset[str] = frozenset()
    error_message: str | None = None


@dataclass(slots=True)
class _ActiveRun:
    controller: AbortController
    idle: anyio.Event
    turn_open: bool = False
    ended: bool = False


class Agent:
    """Run prompts against a model with tools; steer, queue follow-ups, abort, subscribe."""

    def __init__(
        self,
        *,
        model: Model,
        stream_fn: StreamFn,
        system_prompt: str = "",
        tools: Iterable[AgentTool] = (),
        messages: Iterable[Any] = (),
        thinking_level: ThinkingLevel = "off",
        convert_to_llm: Callable[[list[Any]], MaybeAwaitable[list[Any]]] = default_convert_to_llm,
        transform_context: Any = None,
        get_api_key: Any = None,
        before_tool_call: Any = None,
        after_tool_call: Any = None,
        resolve_deferred_tool: Any = None,
        prepare_next_turn: Any = None,
        should_stop_after_turn: Any = None,
        before_run: Callable[[list[Any]], MaybeAwaitable[None]] | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        tool_execution: ToolExecutionMode = "parallel",
        stream_options: StreamOptions | None = None,
    ) -> None:
        self.state = AgentState(
            system_prompt=system_prompt,
            model=model,
            thinking_level=thinking_level,
            tools=list(tools),
            messages=list(messages),
        )
        self.stream_fn = stream_fn
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.get_api_key = get_api_key
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.resolve_deferred_tool = resolve_deferred_tool
        self.prepare_next_turn = prepare_next_turn
        self.should_stop_after_turn = should_stop_after_turn
        self.before_run = before_run
        self.tool_execution: ToolExecutionMode = tool_execution
        self.stream_options = stream_options or StreamOptions()
        self.steering_queue = PendingMessageQueue(steering_mode)
        self.follow_up_queue = PendingMessageQueue(follow_up_mode)
        self._listeners: list[AgentListener] = []
        self._active: _ActiveRun | None = None

    # subscribers ------------------------------------------------------------------------------

    def subscribe(self, listener: AgentListener) -> Callable[[], None]:
        """Call ``listener(event, signal)`` for every event; returns an unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    # queues -----------------------------------------------------------------------------------

    def steer(self, message: Any) -> None:
        """Inject ``message`` after the current turn's tools finish, before the next model call."""
        self.steering_queue.enqueue(_as_message(message))

    def follow_up(self, message: Any) -> None:
        """Run ``message`` once the agent would otherwise stop."""
        self.follow_up_queue.enqueue(_as_message(message))

    def clear_steering_queue(self) -> None:
        """Forget queued steering messages."""
        self.steering_queue.clear()

    def clear_follow_up_queue(self) -> None:
        """Forget queued follow-ups."""
        self.follow_up_queue.clear()

    def clear_all_queues(self) -> None:
        """Forget everything queued."""
        self.clear_steering_queue()
        self.clear_follow_up_queue()

    def has_queued_messages(self) -> bool:
        """True when either queue holds a message."""
        return self.steering_queue.has_items() or self.follow_up_queue.has_items()

    # run control ------------------------------------------------------------------------------

    @property
    def signal(self) -> AbortSignal | None:
        """The abort signal of the running prompt, if any."""
        return self._active.controller.signal if self._active else None

    @property
    def is_running(self) -> bool:
        """True from the start of a prompt until its last listener returned."""
        return self._active is not None

    def abort(self, reason: Any = None) -> None:
        """Abort the running prompt; it ends with an aborted assistant message."""
        if self._active is not None:
            self._active.controller.abort(reason)

    async def wait_for_idle(self) -> None:
        """Return once the running prompt and all its ``agent_end`` listeners finished."""
        if self._active is not None:
            await self._active.idle.wait()

    def reset(self) -> None:
        """Clear the transcript, run state and queues."""
        self.state.messages = []
        self.state.is_streaming = False
        self.state.streaming_message = None
        self.state.pending_tool_calls = frozenset()
        self.state.error_message = None
        self.clear_all_queues()

    # running ----------------------------------------------------------------------------------

    async def prompt(
        self, message: str | Any | Sequence[Any], images: Sequence[ImageContent] = ()
    ) -> list[Any]:
        """Run a prompt to completion; returns the messages it added to the transcript."""
        if self._active is not None:
            raise AgentBusyError(BUSY_TEXT)
        return await self._run(_normalize_prompt(message, images), skip_initial_steering=False)

    async def continue_(self) -> list[Any]:
        """Continue from the transcript (OpenClaw's ``continue()``).

        From a user or tool-result message the model is asked again. From an assistant
        message queued steering (then follow-up) messages start the run, if any.
        """
        if self._active is not None:
            raise AgentBusyError("Agent is already processing. Wait for completion.")
        if not self.state.messages:
            raise TranscriptError("No messages to continue from")
        if isinstance(self.state.messages[-1], AssistantMessage):
            steering = self.steering_queue.drain()
            if steering:
                return await self._run(steering, skip_initial_steering=True)
            follow_ups = self.follow_up_queue.drain()
            if follow_ups:
                return await self._run(follow_ups, skip_initial_steering=False)
            raise TranscriptNotContinuableError("assistant")
        return await self._run(None, skip_initial_steering=False)

    @asynccontextmanager
    async def stream(
        self, message: str | Any | Sequence[Any] | None = None, images: Sequence[ImageContent] = ()
    ) -> AsyncIterator[AgentEventStream]:
        """Run a prompt (or ``continue_()`` when ``message`` is None) and stream its events.

        ``async with agent.stream("hi") as events: async for event in events: ...`` — the body
        may steer, queue follow-ups or abort while the run is live.
        """
        if self._active is not None:
            raise AgentBusyError(BUSY_TEXT)
        events = AgentEventStream()

        def forward(event: AgentEvent, signal: AbortSignal) -> None:
            events.push(event)

        unsubscribe = self.subscribe(forward)

        async def produce() -> list[Any]:
            try:
                if message is None:
                    return await self.continue_()
                return await self.prompt(message, images)
            finally:
                unsubscribe()

        async with background_stream(events, produce):
            yield events

    # internals --------------------------------------------------------------------------------

    def _loop_config(self, skip_initial_steering: bool) -> AgentLoopConfig:
        skip = skip_initial_steering

        def steering() -> list[Any]:
            nonlocal skip
            if skip:
                skip = False
                return []
            return self.steering_queue.drain()

        return AgentLoopConfig(
            model=self.state.model,
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            get_api_key=self.get_api_key,
            should_stop_after_turn=self.should_stop_after_turn,
            prepare_next_turn=self.prepare_next_turn,
            get_steering_messages=steering,
            get_follow_up_messages=self.follow_up_queue.drain,
            tool_execution=self.tool_execution,
            before_tool_call=self.before_tool_call,
            after_tool_call=self.after_tool_call,
            resolve_deferred_tool=self.resolve_deferred_tool,
            thinking_level=self.state.thinking_level,
            stream_options=self.stream_options,
        )

    async def _run(self, prompts: list[Any] | None, *, skip_initial_steering: bool) -> list[Any]:
        if self.before_run is not None:
            await maybe_await(self.before_run(list(prompts or [])))
        if self._active is not None:
            raise AgentBusyError(BUSY_TEXT)
        active = self._active = _ActiveRun(AbortController(), anyio.Event())
        self.state.is_streaming = True
        self.state.streaming_message = None
        self.state.error_message = None
        context = AgentContext(
            self.state.system_prompt, list(self.state.messages), list(self.state.tools)
        )
        config = self._loop_config(skip_initial_steering)
        signal = active.controller.signal
        new_messages: list[Any] = []
        try:
            if prompts is None:
                new_messages = await run_agent_loop_continue(
                    context, config, self._process_event, stream_fn=self.stream_fn, signal=signal
                )
            else:
                new_messages = await run_agent_loop(
                    prompts,
                    context,
                    config,
                    self._process_event,
                    stream_fn=self.stream_fn,
                    signal=signal,
                )
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._close_lifecycle(AbortError("Agent run cancelled"), aborted=True)
            raise
        except Exception as exc:
            # the kernel rejected (OpenClaw's handleRunFailure): close the lifecycle with one
            # failure message, which is the run's result; a broken precondition still raises
            failure = await self._close_lifecycle(exc, aborted=signal.aborted)
            if isinstance(exc, TranscriptError) or failure is None:
                raise
            self.state.error_message = failure.error_message
            new_messages = [failure]
        finally:
            self.state.is_streaming = False
            self.state.streaming_message = None
            self.state.pending_tool_calls = frozenset()
            self._active = None
            active.idle.set()
        return new_messages

    async def _close_lifecycle(
        self, error: BaseException, *, aborted: bool
    ) -> AssistantMessage | None:
        """The loop itself failed or was cancelled: close whatever lifecycle is still open;
        returns the failure message (None when the lifecycle was already closed)."""
        active = self._active
        if active is None or active.ended:
            return None
        partial = self.state.streaming_message
        if isinstance(partial, AssistantMessage):
            failure = partial.model_copy(
                update={
                    "stop_reason": "aborted" if aborted else "error",
                    "error_message": str(error) or type(error).__name__,
                }
            )
        else:
            failure = create_failure_message(self.state.model, error, aborted=aborted)
            partial = None
        if not active.turn_open:
            await self._process_event(TurnStart())
        if partial is None:
            await self._process_event(MessageStart(failure))
        await self._process_event(MessageEnd(failure))
        await self._process_event(TurnEnd(failure, []))
        await self._process_event(AgentEnd([failure]))
        return failure

    async def _process_event(self, event: AgentEvent) -> None:
        state, active = self.state, self._active
        kind = event.type
        if kind == "message_start" or kind == "message_update":
            state.streaming_message = event.message  # type: ignore[union-attr]
        elif kind == "message_end":
            state.streaming_message = None
            state.messages.append(event.message)  # type: ignore[union-attr]
        elif kind == "tool_execution_start":
            state.pending_tool_calls = state.pending_tool_calls | {event.tool_call_id}  # type: ignore[union-attr]
        elif kind == "tool_execution_end":
            state.pending_tool_calls = state.pending_tool_calls - {event.tool_call_id}  # type: ignore[union-attr]
        elif kind == "turn_start":
            if active is not None:
                active.turn_open = True
        elif kind == "turn_end":
            if active is not None:
                active.turn_open = False
            message = event.message  # type: ignore[union-attr]
            if isinstance(message, AssistantMessage) and message.error_message:
                state.error_message = message.error_message
        elif kind == "agent_end":
            state.streaming_message = None
            if active is not None:
                active.ended = True
        signal = active.controller.signal if active is not None else AbortSignal()
        for listener in list(self._listeners):
            try:
                await maybe_await(listener(event, signal))
            except Exception:
                logger.exception("agent listener %r raised while handling %s", listener, kind)


def _as_message(message: Any) -> Any:
    return UserMessage(content=[TextContent(text=message)]) if isinstance(message, str) else message


def _normalize_prompt(message: Any, images: Sequence[ImageContent]) -> list[Any]:
    if isinstance(message, str):
        content: list[ContentBlock] = [TextContent(text=message), *images]
        return [UserMessage(content=content)]
    if isinstance(message, list | tuple):
        return [_as_message(m) for m in message]
    return [message]
