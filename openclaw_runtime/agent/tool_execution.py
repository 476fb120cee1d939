"""Executing one assistant message's tool calls: resolve, validate, gate, run, finalize.

Order of events (OpenClaw's): ``tool_execution_start`` for each call as it is prepared;
``tool_execution_end`` when a call finishes (completion order in a parallel batch); then the
``toolResult`` messages in the order the assistant made the calls. Any failure of a single call
(unknown tool, invalid arguments, a veto, an exception, an abort) becomes an error result the
model can read; nothing here raises for a tool's sake.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from ..abort import AbortSignal
from ..events import (
    MessageEnd,
    MessageStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
)
from ..messages import (
    AssistantMessage,
    ContentBlock,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    built_unvalidated,
    now_ms,
)
from .interruption import error_text
from .tools import (
    AgentTool,
    AgentToolResult,
    ToolArgumentError,
    ToolUpdateCallback,
    coerce_tool_result,
    error_tool_result,
    redact_tool_result,
    reports_updates,
    validate_tool_arguments,
)
from .types import (
    AfterToolCallContext,
    AgentContext,
    AgentLoopConfig,
    BeforeToolCallContext,
    DeferredToolCallContext,
    EmitFn,
    maybe_await,
)

__all__ = ["ToolBatchResult", "execute_tool_calls"]

ABORTED_TEXT = "Operation aborted"
BLOCKED_TEXT = "Tool execution was blocked"


@dataclass(slots=True)
class ToolBatchResult:
    """The result messages of a batch and whether every result asked to end the run."""

    messages: list[ToolResultMessage]
    terminate: bool


@dataclass(slots=True)
class _Resolution:
    tool: AgentTool | None = None
    error: BaseException | None = None


@dataclass(slots=True)
class _Prepared:
    tool_call: ToolCall
    tool: AgentTool
    args: dict[str, Any]


@dataclass(slots=True)
class _Finalized:
    tool_call: ToolCall
    result: AgentToolResult
    is_error: bool
    execution_started: bool
    error_kind: Literal["argument-validation"] | None = None
    hide: bool = False


class _Batch:
    """One batch of tool calls; holds what every step needs so the steps stay small."""

    def __init__(
        self,
        context: AgentContext,
        message: AssistantMessage,
        config: AgentLoopConfig,
        signal: AbortSignal | None,
        emit: EmitFn,
        wants: Callable[[str], bool] | None = None,
    ) -> None:
        self.context = context
        self.message = message
        self.config = config
        self.signal = signal
        self.emit = emit
        #: the loop's ``wants``: is a result's ``message_start`` needed (None: always)
        self.wants = wants
        self.resolutions: dict[int, _Resolution] = {}

    @property
    def aborted(self) -> bool:
        return self.signal is not None and self.signal.aborted

    # resolution -----------------------------------------------------------------------------

    async def resolve(self, call: ToolCall) -> _Resolution:
        cached = self.resolutions.get(id(call))
        if cached is not None:
            return cached
        resolution = _Resolution()
        try:
            resolution.tool = self._find(call.name)
            if resolution.tool is None and self.config.resolve_deferred_tool is not None:
                deferred = DeferredToolCallContext(self.message, call, self.context)
                found = await maybe_await(self.config.resolve_deferred_tool(deferred, self.signal))
                if found is not None and found.name != call.name:
                    raise ValueError(
                        f'Deferred tool resolver returned "{found.name}" for requested '
                        f'"{call.name}"'
                    )
                if found is not None:
                    # later turns of this run can call the hydrated tool directly
                    self.context.tools = [*self.context.tools, found]
                resolution.tool = found
        except Exception as exc:
            resolution = _Resolution(error=exc)
        self.resolutions[id(call)] = resolution
        return resolution

    def _find(self, name: str) -> AgentTool | None:
        for candidate in self.context.tools:
            if candidate.name == name:
                return candidate
        return None

    def hides(self, call: ToolCall) -> bool:
        resolution = self.resolutions.get(id(call))
        found = resolution.tool if resolution is not None else self._find(call.name)
        return bool(found is not None and found.hide_from_channel_progress)

    # preparation ----------------------------------------------------------------------------

    async def prepare(self, call: ToolCall) -> _Prepared | _Finalized:
        resolution = await self.resolve(call)
        if resolution.error is not None:
            text = ABORTED_TEXT if self.aborted else error_text(resolution.error)
            return self._immediate(call, text)
        found = resolution.tool
        if found is None:
            return self._immediate(call, f"Tool {call.name} not found")
        checked_call = call
        if found.prepare_arguments is not None:
            try:
                prepared_args = found.prepare_arguments(call.arguments)
            except Exception as exc:
                return self._immediate(call, error_text(exc))
            checked_call = call.model_copy(update={"arguments": prepared_args})
        try:
            args = validate_tool_arguments(found, checked_call)
        except ToolArgumentError as exc:
            return self._immediate(call, str(exc), error_kind="argument-validation")
        try:
            if self.config.before_tool_call is not None:
                gate = BeforeToolCallContext(self.message, call, args, self.context)
                verdict = await maybe_await(self.config.before_tool_call(gate, self.signal))
                if self.aborted:
                    return self._immediate(call, ABORTED_TEXT)
                if verdict is not None and verdict.block:
                    return self._immediate(call, verdict.reason or BLOCKED_TEXT)
        except Exception as exc:
            return self._immediate(call, error_text(exc))
        if self.aborted:
            return self._immediate(call, ABORTED_TEXT)
        return _Prepared(call, found, args)

    def _immediate(
        self,
        call: ToolCall,
        text: str,
        *,
        error_kind: Literal["argument-validation"] | None = None,
    ) -> _Finalized:
        return _Finalized(
            call, error_tool_result(text), True, False, error_kind, hide=self.hides(call)
        )

    # execution ------------------------------------------------------------------------------

    async def run(self, prepared: _Prepared) -> _Finalized:
        if self.aborted:
            # a later call's preflight aborted the run: an earlier prepared call must not start
            return _Finalized(prepared.tool_call, error_tool_result(ABORTED_TEXT), True, False)
        result, is_error = await self._execute(prepared)
        if self.config.after_tool_call is not None:
            try:
                after = AfterToolCallContext(
                    self.message, prepared.tool_call, prepared.args, result, is_error, self.context
                )
                override = await maybe_await(self.config.after_tool_call(after, self.signal))
                if override is not None:
                    result, is_error = override.apply(result, is_error)
            except Exception as exc:
                result, is_error = error_tool_result(error_text(exc)), True
        result = redact_tool_result(result)  # a tool may print a credential: never stored
        return _Finalized(
            prepared.tool_call,
            result,
            is_error,
            True,
            hide=prepared.tool.hide_from_channel_progress,
        )

    def _cancel_on_abort(self) -> Any:
        if self.signal is None:
            return nullcontext()
        return self.signal.linked_cancel_scope(ignore_handoff=True)

    async def _call(
        self, prepared: _Prepared, on_update: ToolUpdateCallback
    ) -> tuple[AgentToolResult, bool] | None:
        """Run the tool under the abort's cancel scope: its result, its error as an error
        result, or ``None`` when the abort cancelled it before it returned."""
        call = prepared.tool_call
        try:
            with self._cancel_on_abort():
                value = await prepared.tool.execute(call.id, prepared.args, self.signal, on_update)  # type: ignore[misc]
                return (coerce_tool_result(value), False)
        except Exception as exc:
            return (error_tool_result(error_text(exc)), True)
        return None

    async def _execute(self, prepared: _Prepared) -> tuple[AgentToolResult, bool]:
        call, found = prepared.tool_call, prepared.tool
        if not reports_updates(found.execute):
            # nothing to forward while it runs: no pump task, no task group (whose exit costs
            # an event-loop round trip)
            return await self._call(prepared, _no_update) or _aborted()
        hide = found.hide_from_channel_progress or None
        updates_send, updates_receive = anyio.create_memory_object_stream[ToolExecutionUpdate](
            math.inf
        )
        accepting = True

        def on_update(partial: AgentToolResult) -> None:
            if accepting:
                event = ToolExecutionUpdate(
                    call.id, call.name, call.arguments, redact_tool_result(partial), hide
                )
                updates_send.send_nowait(event)

        async def pump() -> None:
            async with updates_receive:
                async for event in updates_receive:
                    await self.emit(event)

        outcome = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            try:
                outcome = await self._call(prepared, on_update)
            finally:
                accepting = False
                updates_send.close()
        return outcome or _aborted()

    # events ---------------------------------------------------------------------------------

    async def start_event(self, call: ToolCall) -> None:
        hide = self.hides(call) or None
        await self.emit(ToolExecutionStart(call.id, call.name, call.arguments, hide))

    async def end_event(self, done: _Finalized) -> None:
        await self.emit(
            ToolExecutionEnd(
                done.tool_call.id,
                done.tool_call.name,
                done.result,
                done.is_error,
                done.execution_started,
                done.error_kind,
                done.hide or None,
            )
        )

    async def result_message(self, done: _Finalized) -> ToolResultMessage:
        message = _own_result_message(done) or _validated_result_message(done)
        wants = self.wants
        if wants is None or wants("message_start"):
            await self.emit(MessageStart(message))
        await self.emit(MessageEnd(message))
        return message


#: The blocks a tool result is made of, with the tag validation would route each to itself.
_OWN_BLOCK_TAGS: dict[type, str] = {TextContent: "text", ImageContent: "image"}
_RESULT_SET = frozenset(ToolResultMessage._always_written)
_RESULT_SET_DETAILS = _RESULT_SET | {"details"}


def _validated_result_message(done: _Finalized) -> ToolResultMessage:
    fields: dict[str, Any] = {
        "tool_call_id": done.tool_call.id,
        "tool_name": done.tool_call.name,
        "content": done.result.content,
        "is_error": done.is_error,
    }
    if done.result.details is not None:
        fields["details"] = done.result.details
    return ToolResultMessage(**fields)


def _own_result_message(done: _Finalized) -> ToolResultMessage | None:
    """``_validated_result_message(done)`` without validation, or None where it could differ.

    Validation would return every field here unchanged (a new list of the same block
    objects) when the ids are exact ``str``, the flag an exact ``bool`` and the content a
    ``list`` of exact text or image blocks tagged as their class; anything else (a tool's
    own ``AgentToolResult`` may hold dicts or subclasses) is validated as before.
    """
    call = done.tool_call
    call_id, name, is_error = call.id, call.name, done.is_error
    content = done.result.content
    if type(call_id) is not str or type(name) is not str or type(is_error) is not bool:
        return None
    if type(content) is not list:
        return None
    blocks: list[ContentBlock] = []
    for block in content:
        own = _OWN_BLOCK_TAGS.get(type(block))
        tag = getattr(block, "type", None)
        if own is None or type(tag) is not str or tag != own:
            return None
        blocks.append(block)
    details = done.result.details
    values = {
        "role": "toolResult",
        "tool_call_id": call_id,
        "tool_name": name,
        "content": blocks,
        "details": details,
        "is_error": is_error,
        "timestamp": now_ms(),  # the field's default factory
    }
    fields_set = set(_RESULT_SET if details is None else _RESULT_SET_DETAILS)
    return built_unvalidated(ToolResultMessage, values, fields_set)


def _aborted() -> tuple[AgentToolResult, bool]:
    """What stands when the abort cancelled a tool before it returned."""
    return error_tool_result(ABORTED_TEXT), True


def _no_update(partial: AgentToolResult) -> None:
    """The ``on_update`` handed to a tool marked as never calling it."""


async def execute_tool_calls(
    context: AgentContext,
    message: AssistantMessage,
    config: AgentLoopConfig,
    signal: AbortSignal | None,
    emit: EmitFn,
    wants: Callable[[str], bool] | None = None,
) -> ToolBatchResult:
    """Run the tool calls of ``message``; parallel unless configured or a tool says otherwise.
    ``wants(kind)`` answers whether an optional event (a result's ``message_start``) is built."""
    batch = _Batch(context, message, config, signal, emit, wants)
    calls = message.tool_calls()
    if len(calls) == 1:  # one call runs the same steps in either mode (``_one``)
        if config.tool_execution != "sequential":
            await batch.resolve(calls[0])  # what the mode check below does first
        finalized, messages = await _one(batch, calls)
        return ToolBatchResult(messages, finalized[0].result.terminate is True)
    sequential = config.tool_execution == "sequential"
    if not sequential:
        for call in calls:
            resolution = await batch.resolve(call)
            if resolution.tool is not None and resolution.tool.execution_mode == "sequential":
                sequential = True
                break
            if batch.aborted:
                break
    run_batch = _sequential if sequential else _parallel
    finalized, messages = await run_batch(batch, calls)
    terminate = bool(finalized) and all(done.result.terminate is True for done in finalized)
    return ToolBatchResult(messages, terminate)


async def _one(
    batch: _Batch, calls: list[ToolCall]
) -> tuple[list[_Finalized], list[ToolResultMessage]]:
    """A batch of a single call (most of a tool loop's): what ``_sequential`` and
    ``_parallel`` both do with one call — start, prepare, run, end, result — without their
    lists, closure and comprehensions."""
    (call,) = calls
    await batch.start_event(call)
    prepared = await batch.prepare(call)
    done = prepared if isinstance(prepared, _Finalized) else await batch.run(prepared)
    await batch.end_event(done)
    return [done], [await batch.result_message(done)]


async def _sequential(
    batch: _Batch, calls: list[ToolCall]
) -> tuple[list[_Finalized], list[ToolResultMessage]]:
    finalized: list[_Finalized] = []
    messages: list[ToolResultMessage] = []
    for call in calls:
        await batch.start_event(call)
        prepared = await batch.prepare(call)
        done = prepared if isinstance(prepared, _Finalized) else await batch.run(prepared)
        await batch.end_event(done)
        messages.append(await batch.result_message(done))
        finalized.append(done)
        if batch.aborted:
            break
    return finalized, messages


async def _parallel(
    batch: _Batch, calls: list[ToolCall]
) -> tuple[list[_Finalized], list[ToolResultMessage]]:
    slots: list[_Finalized | _Prepared] = []
    for call in calls:
        await batch.start_event(call)
        prepared = await batch.prepare(call)
        if isinstance(prepared, _Finalized):
            await batch.end_event(prepared)
        slots.append(prepared)
        if batch.aborted:
            break

    results: list[_Finalized | None] = [s if isinstance(s, _Finalized) else None for s in slots]

    async def run_one(index: int, prepared: _Prepared) -> None:
        done = await batch.run(prepared)
        await batch.end_event(done)
        results[index] = done

    runnable = [(index, slot) for index, slot in enumerate(slots) if isinstance(slot, _Prepared)]
    if len(runnable) == 1:  # nothing to run beside it: no task group, no task
        await run_one(*runnable[0])
    elif runnable:
        async with anyio.create_task_group() as tg:
            for index, slot in runnable:
                tg.start_soon(run_one, index, slot)
    finalized = [done for done in results if done is not None]
    # result messages follow the assistant's call order, whatever order the tools finished in
    return finalized, [await batch.result_message(done) for done in finalized]
