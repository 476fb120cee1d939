"""The kernel: OpenClaw's double loop.

Inner loop: while the model keeps calling tools or steering messages wait, run a turn (inject
pending messages, stream one assistant response, execute its tool calls, poll steering).
Outer loop: when the inner loop would end, follow-up messages revive it.

Guarantees the rest of the runtime builds on:

* the abort signal is checked at every boundary and an abort is persisted as an assistant
  message with ``stop_reason="aborted"`` (plus hidden interruption guidance);
* a stream that fails after streaming something keeps it: the partial message ends with
  ``stop_reason="error"`` and the run ends normally;
* anything else that raises (a ``stream_fn`` that throws, a stream that fails before its first
  event, a callback, a listener) rejects the run, as OpenClaw's ``runAgentLoop`` does: the
  caller (``Agent``) closes the lifecycle with one failure message. With
  ``on_failure="close"`` the loop closes it itself: ``message_start → message_end → turn_end
  → agent_end``, never a hung stream; a prompt run that fails before any answer then reports
  only the failure message (the prompt was already committed by its own events);
* tool calls run only when ``stop_reason == "toolUse"``; otherwise they are stripped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Container, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, Literal, Protocol, TypeAlias

from .._exceptions import StreamError, TranscriptError, TranscriptNotContinuableError
from ..abort import AbortSignal
from ..events import (
    AgentEnd,
    AgentEvent,
    AgentEventStream,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    Start,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
    background_stream,
)
from ..llm import Context, StreamFn
from ..messages import AssistantMessage, ToolCall
from .convert import PrefixConverter
from .deltas import apply_stream_delta
from .interruption import (
    abort_reason,
    create_failure_message,
    create_interrupted_turn_message,
    error_text,
    should_append_interruption,
)
from .tool_execution import execute_tool_calls
from .types import (
    AgentContext,
    AgentLoopConfig,
    EmitFn,
    TurnContext,
    default_convert_to_llm,
    maybe_await,
    resolve_reasoning,
)

__all__ = [
    "EventGate",
    "FailureMode",
    "agent_loop",
    "agent_loop_continue",
    "remove_non_executable_tool_calls",
    "run_agent_loop",
    "run_agent_loop_continue",
]


#: ``"reject"``: a failure with nothing streamed propagates (OpenClaw); ``"close"``: the loop
#: turns it into a failure message and closes the lifecycle itself (the runner's mode).
FailureMode: TypeAlias = Literal["reject", "close"]


class EventGate(Protocol):
    """Which of the loop's optional events (agent and turn starts, message starts and
    updates: ``OPTIONAL_KINDS``) its emitter needs. The loop reads ``needed_kinds`` before each
    of them, so it may change while the loop runs, and builds and emits only the ones named
    there; for each one left out it calls ``heartbeat()`` (the run made progress all the same).
    Every other event is always emitted."""

    @property
    def needed_kinds(self) -> Container[str]: ...

    def heartbeat(self) -> None: ...


#: The kinds an ``EventGate`` may leave out: the loop keeps no state of its own in them but
#: ``turn_open`` (set directly when a turn start is left out).
OPTIONAL_KINDS: frozenset[str] = frozenset(
    {"agent_start", "turn_start", "message_start", "message_update"}
)


def remove_non_executable_tool_calls(message: AssistantMessage) -> AssistantMessage:
    """Strip tool-call blocks from any message whose stop reason is not ``toolUse``."""
    if message.stop_reason == "toolUse":
        return message
    kept = [block for block in message.content if not isinstance(block, ToolCall)]
    if len(kept) == len(message.content):
        return message
    return message.model_copy(update={"content": kept})


async def run_agent_loop(
    prompts: Sequence[Any],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EmitFn,
    *,
    stream_fn: StreamFn,
    signal: AbortSignal | None = None,
    on_failure: FailureMode = "reject",
    gate: EventGate | None = None,
) -> list[Any]:
    """Run a loop started by ``prompts``; events go to ``emit`` (the optional ones only when
    ``gate`` needs them); returns the new messages."""
    run = _LoopRun(
        AgentContext(context.system_prompt, [*context.messages, *prompts], list(context.tools)),
        list(prompts),
        config,
        emit,
        stream_fn,
        signal,
        on_failure,
        gate,
    )
    await run.start(prompts)
    return run.new_messages


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EmitFn,
    *,
    stream_fn: StreamFn,
    signal: AbortSignal | None = None,
    on_failure: FailureMode = "reject",
    gate: EventGate | None = None,
) -> list[Any]:
    """Continue from ``context`` without a new prompt (retries); returns the new messages.

    The last message must be a user or tool-result message once converted for the model.
    """
    _check_continuable(context)
    run = _LoopRun(
        AgentContext(context.system_prompt, list(context.messages), list(context.tools)),
        [],
        config,
        emit,
        stream_fn,
        signal,
        on_failure,
        gate,
    )
    await run.start(())
    return run.new_messages


@asynccontextmanager
async def agent_loop(
    prompts: Sequence[Any],
    context: AgentContext,
    config: AgentLoopConfig,
    *,
    stream_fn: StreamFn,
    signal: AbortSignal | None = None,
    on_failure: FailureMode = "reject",
) -> AsyncIterator[AgentEventStream]:
    """Run the loop in the background and yield its live ``AgentEventStream``.

    ``async with agent_loop(...) as events: async for event in events: ...``; leaving the
    block waits for the loop to finish. ``await events.result()`` gives the new messages.
    """
    stream = AgentEventStream()

    async def produce() -> list[Any]:
        return await run_agent_loop(
            prompts,
            context,
            config,
            _pusher(stream),
            stream_fn=stream_fn,
            signal=signal,
            on_failure=on_failure,
        )

    async with background_stream(stream, produce):
        yield stream


@asynccontextmanager
async def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    *,
    stream_fn: StreamFn,
    signal: AbortSignal | None = None,
    on_failure: FailureMode = "reject",
) -> AsyncIterator[AgentEventStream]:
    """``run_agent_loop_continue`` in the background; preconditions are checked up front."""
    _check_continuable(context)
    stream = AgentEventStream()

    async def produce() -> list[Any]:
        return await run_agent_loop_continue(
            context,
            config,
            _pusher(stream),
            stream_fn=stream_fn,
            signal=signal,
            on_failure=on_failure,
        )

    async with background_stream(stream, produce):
        yield stream


def _has_streamed_content(message: AssistantMessage) -> bool:
    """Whether a partial message holds anything worth keeping (text, thinking, a tool call)."""
    for block in message.content:
        if (
            isinstance(block, ToolCall)
            or getattr(block, "text", None)
            or getattr(block, "thinking", None)
        ):
            return True
    return False


def _pusher(stream: AgentEventStream) -> EmitFn:
    async def push(event: AgentEvent) -> None:
        stream.push(event)

    return push


def _check_continuable(context: AgentContext) -> None:
    if not context.messages:
        raise TranscriptError("Cannot continue: no messages in context")
    last = context.messages[-1]
    if isinstance(last, AssistantMessage):
        raise TranscriptNotContinuableError(last.role)


#: Event classes that are none of ``TurnStart``, ``TurnEnd``, ``AgentEnd`` (by exact type: a
#: subclass of one of them is still checked): ``_LoopRun.emit`` has no state to move for them.
_NO_LIFECYCLE: frozenset[type] = frozenset(
    {AgentStart, MessageStart, MessageUpdate, MessageEnd}
    | {ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd}
)


class _LoopRun:
    """State of one loop invocation; the methods are the phases of the double loop."""

    def __init__(
        self,
        context: AgentContext,
        new_messages: list[Any],
        config: AgentLoopConfig,
        emit: EmitFn,
        stream_fn: StreamFn,
        signal: AbortSignal | None,
        on_failure: FailureMode = "reject",
        gate: EventGate | None = None,
    ) -> None:
        self.context = context
        self.new_messages = new_messages
        self.on_failure = on_failure
        self._prompt_count = len(new_messages)
        self.config = config
        self._emit = emit
        self.stream_fn = stream_fn
        self.signal = signal
        self.turn_open = False
        self.open_partial: AssistantMessage | None = None
        self.ended = False
        #: the default conversion, keeping the converted prefix across this run's requests
        #: (made at the first request that uses it: the runner passes a session's own)
        self.converter: PrefixConverter | None = None
        self.gate = gate

    def wants(self, kind: str) -> bool:
        """Build and emit an optional event of ``kind`` (one of ``OPTIONAL_KINDS``)? Its
        emitter needs it (or has no gate); else the gate's ``heartbeat`` stands for it."""
        gate = self.gate
        if gate is None or kind in gate.needed_kinds:
            return True
        gate.heartbeat()
        return False

    async def emit(self, event: AgentEvent) -> None:
        if type(event) not in _NO_LIFECYCLE:  # six of a tool call's eight events are
            if isinstance(event, TurnStart):
                self.turn_open = True
            elif isinstance(event, TurnEnd):
                self.turn_open = False
            elif isinstance(event, AgentEnd):
                self.ended = True
        await self._emit(event)

    @property
    def aborted(self) -> bool:
        return self.signal is not None and self.signal.aborted

    async def start(self, prompts: Sequence[Any]) -> None:
        try:
            if self.wants("agent_start"):
                await self._emit(AgentStart())
            await self.turn_start()
            for prompt in prompts:
                if self.wants("message_start"):
                    await self._emit(MessageStart(prompt))
                await self._emit(MessageEnd(prompt))
            await self.run()
        except Exception as exc:
            if self.ended or (self.on_failure == "reject" and not self.aborted):
                raise
            await self.close_after_failure(exc)

    async def run(self) -> None:
        config, signal = self.config, self.signal
        first_turn = True
        pending = await self.poll(config.get_steering_messages)
        while True:
            more_tool_calls = True
            while more_tool_calls or pending:
                if signal is not None and signal.aborted and await self.stop_if_aborted():
                    return
                if first_turn:
                    first_turn = False
                elif self.gate is None or "turn_start" in self.gate.needed_kinds:
                    await self.emit(TurnStart())
                else:  # left out (``wants``, inline: once per tool call)
                    self.gate.heartbeat()
                    self.turn_open = True
                for message in pending:
                    if self.wants("message_start"):
                        await self._emit(MessageStart(message))
                    await self._emit(MessageEnd(message))
                    self.context.messages.append(message)
                    self.new_messages.append(message)
                pending = []
                if signal is not None and signal.aborted and await self.stop_if_aborted():
                    return

                message = await self.stream_assistant_response()
                self.new_messages.append(message)
                if message.stop_reason in ("error", "aborted"):
                    await self.emit(TurnEnd(message, []))
                    if message.stop_reason == "aborted" and should_append_interruption(self.signal):
                        await self.append_interruption()
                    await self.emit(AgentEnd(self.new_messages))
                    return

                tool_results = []
                more_tool_calls = False
                if message.stop_reason == "toolUse" and message.tool_calls():
                    # the batch emits no lifecycle event: straight to the emitter
                    batch = await execute_tool_calls(
                        self.context, message, self.config, self.signal, self._emit, self.wants
                    )
                    tool_results = batch.messages
                    more_tool_calls = not batch.terminate
                    self.context.messages.extend(tool_results)
                    self.new_messages.extend(tool_results)
                await self.emit(TurnEnd(message, tool_results))
                if signal is not None and signal.aborted and await self.stop_if_aborted():
                    return

                turn = TurnContext(message, tool_results, self.context, self.new_messages)
                await self.prepare_next_turn(turn)
                if signal is not None and signal.aborted and await self.stop_if_aborted():
                    return
                stop = self.config.should_stop_after_turn
                if stop is not None and await maybe_await(stop(turn)):
                    await self.emit(AgentEnd(self.new_messages))
                    return
                pending = await self.poll(self.config.get_steering_messages)
                if signal is not None and signal.aborted and await self.stop_if_aborted():
                    return

            follow_ups = await self.poll(self.config.get_follow_up_messages)
            if not follow_ups:
                break
            pending = follow_ups  # same injection path as steering, same event order
        await self.emit(AgentEnd(self.new_messages))

    async def turn_start(self) -> None:
        """Open a turn: its event if the gate needs it, the flag either way."""
        if self.wants("turn_start"):
            await self.emit(TurnStart())
        else:
            self.turn_open = True

    async def poll(self, source: Any) -> list[Any]:
        if source is None:
            return []
        return list(await maybe_await(source()) or [])

    async def prepare_next_turn(self, turn: TurnContext) -> None:
        if self.config.prepare_next_turn is None:
            return
        update = await maybe_await(self.config.prepare_next_turn(turn))
        if update is None:
            return
        if update.context is not None:
            self.context = update.context
        if update.model is not None or update.thinking_level is not None:
            model = update.model or self.config.model
            level = (
                update.thinking_level
                if update.thinking_level is not None
                else self.config.thinking_level
            )
            self.config = replace(self.config, model=model, thinking_level=level)

    async def stream_assistant_response(self) -> AssistantMessage:
        config, context = self.config, self.context
        messages = context.messages
        if config.transform_context is not None:
            messages = await maybe_await(config.transform_context(messages, self.signal))
        convert = config.convert_to_llm
        if convert is default_convert_to_llm:
            if self.converter is None:
                self.converter = PrefixConverter()
            convert = self.converter
        llm_messages = await maybe_await(convert(messages))
        request = Context(context.system_prompt, llm_messages, list(context.tools))
        api_key = None
        if config.get_api_key is not None:
            api_key = await maybe_await(config.get_api_key(config.model.provider))
        options = config.stream_options.with_request(signal=self.signal, api_key=api_key)
        options.reasoning = resolve_reasoning(config.model, config.thinking_level)

        response = await maybe_await(self.stream_fn(config.model, request, options))
        partial: AssistantMessage | None = None
        # message events move no lifecycle flag (``_NO_LIFECYCLE``): straight to the emitter
        emit, gate = self._emit, self.gate
        try:
            async for event in response:
                kind = event.type
                if isinstance(event, Start):
                    partial = event.partial
                    context.messages.append(partial)
                    self.open_partial = partial
                    if self.wants("message_start"):
                        await emit(MessageStart(partial))
                elif kind == "done" or kind == "error":
                    break
                elif partial is not None:
                    current = getattr(event, "partial", None)
                    if current is None:  # a bare delta: apply it to the live message
                        current = apply_stream_delta(partial, event)
                    if current is not None and current is not partial:
                        self._replace_in_context(partial, current)
                        partial = self.open_partial = current
                    if gate is None or "message_update" in gate.needed_kinds:
                        await emit(MessageUpdate(partial, event))
                    else:  # left out (``wants``, inline: once per streamed event)
                        gate.heartbeat()
            final = await response.result()
        except Exception as exc:
            if partial is None or not _has_streamed_content(partial):
                raise  # nothing to keep: the run rejects (or closes, in "close" mode)
            # keep what was streamed; record why it stopped
            final = partial.model_copy(
                update={
                    "stop_reason": "aborted" if self.aborted else "error",
                    "error_message": error_text(exc),
                }
            )
        finally:
            await response.aclose()
        if not isinstance(final, AssistantMessage):
            raise StreamError(f"stream_fn produced {type(final).__name__}, not an AssistantMessage")

        final = remove_non_executable_tool_calls(final)
        if partial is not None:
            self._replace_in_context(partial, final)
        else:
            context.messages.append(final)
            if self.wants("message_start"):
                await emit(MessageStart(final))
        self.open_partial = None
        await emit(MessageEnd(final))
        return final

    def _replace_in_context(self, old: AssistantMessage, new: AssistantMessage) -> None:
        messages = self.context.messages
        for index in range(len(messages) - 1, -1, -1):
            if messages[index] is old:
                messages[index] = new
                return
        messages.append(new)

    async def stop_if_aborted(self) -> bool:
        """At a boundary: if aborted, persist the abort and close the lifecycle."""
        if not self.aborted:
            return False
        assert self.signal is not None
        aborted = create_failure_message(self.config.model, abort_reason(self.signal), aborted=True)
        self.new_messages.append(aborted)
        if not self.turn_open:
            await self.turn_start()
        if self.wants("message_start"):
            await self._emit(MessageStart(aborted))
        await self._emit(MessageEnd(aborted))
        await self.emit(TurnEnd(aborted, []))
        if should_append_interruption(self.signal):
            await self.append_interruption()
        await self.emit(AgentEnd(self.new_messages))
        return True

    async def append_interruption(self) -> None:
        message = create_interrupted_turn_message()
        self.new_messages.append(message)
        if self.wants("message_start"):
            await self._emit(MessageStart(message))
        await self._emit(MessageEnd(message))

    async def close_after_failure(self, error: Exception) -> None:
        """A callback or the stream broke its contract: still close every open lifecycle."""
        aborted = self.aborted
        partial, self.open_partial = self.open_partial, None
        if partial is not None:
            failure = partial.model_copy(
                update={
                    "stop_reason": "aborted" if aborted else "error",
                    "error_message": error_text(error),
                }
            )
            self._replace_in_context(partial, failure)
        else:
            failure = create_failure_message(self.config.model, error, aborted=aborted)
            if len(self.new_messages) == self._prompt_count:
                self.new_messages = []  # nothing answered yet: the run's result is the failure
        self.new_messages.append(failure)
        if not self.turn_open:
            await self.turn_start()
        if partial is None and self.wants("message_start"):
            await self._emit(MessageStart(failure))
        await self._emit(MessageEnd(failure))
        await self.emit(TurnEnd(failure, []))
        if aborted and should_append_interruption(self.signal):
            await self.append_interruption()
        await self.emit(AgentEnd(self.new_messages))
