"""The kernel's contract: loop context, the callbacks of ``AgentLoopConfig`` and their inputs.

The kernel knows nothing about providers, credentials, retries or compaction; everything the
orchestrator wants to change about a run it changes through these callbacks. Callbacks may be
plain functions or coroutines. Apart from ``resolve_deferred_tool`` they are not supposed to
raise; if one does anyway, the loop still closes its event lifecycle with an error message.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import CoroutineType
from typing import Any, Literal, TypeAlias, TypeVar

from ..abort import AbortSignal
from ..events import AgentEvent, AssistantMessageEventStream
from ..llm import Model, StreamOptions, ThinkingLevel
from ..messages import AssistantMessage, ContentBlock, ToolCall, ToolResultMessage
from .interruption import convert_agent_message_to_llm
from .thinking_levels import clamp_thinking_level
from .tools import AgentTool, AgentToolResult, ToolExecutionMode

__all__ = [
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentContext",
    "AgentLoopConfig",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "DeferredToolCallContext",
    "EmitFn",
    "QueueMode",
    "TurnContext",
    "TurnUpdate",
    "maybe_await",
    "resolve_reasoning",
]

T = TypeVar("T")
MaybeAwaitable: TypeAlias = T | Awaitable[T]
QueueMode: TypeAlias = Literal["all", "one-at-a-time"]
EmitFn: TypeAlias = Callable[[AgentEvent], Awaitable[None]]


#: Exact types that are never awaitable: what the loop's callbacks usually return (a list
#: of messages, a key, ``None``, a flag, a provider's event stream). For anything that is
#: not a coroutine ``inspect.isawaitable`` asks the ``Awaitable`` ABC, and that was most of
#: what ``maybe_await`` cost (five calls per tool call).
_PLAIN: frozenset[type] = frozenset(
    {list, tuple, dict, str, bool, int, float, type(None), AssistantMessageEventStream}
)


async def maybe_await(value: MaybeAwaitable[T]) -> T:
    """Await ``value`` if it is awaitable (datasette's ``await_me_maybe``)."""
    kind = type(value)
    if kind is CoroutineType or (kind not in _PLAIN and inspect.isawaitable(value)):
        return await value  # type: ignore[misc]
    return value  # type: ignore[return-value]


@dataclass(slots=True)
class AgentContext:
    """What the loop works on: the system prompt, the transcript and the tools."""

    system_prompt: str = ""
    messages: list[Any] = field(default_factory=list)
    tools: list[AgentTool] = field(default_factory=list)


@dataclass(slots=True)
class TurnContext:
    """Passed to ``should_stop_after_turn`` and ``prepare_next_turn`` after ``turn_end``."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[Any]


@dataclass(slots=True)
class TurnUpdate:
    """Returned by ``prepare_next_turn`` to change context, model or thinking level."""

    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


@dataclass(slots=True)
class DeferredToolCallContext:
    """Passed to ``resolve_deferred_tool`` for a call to a tool not in the context."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    context: AgentContext


@dataclass(slots=True)
class BeforeToolCallContext:
    """Passed to ``before_tool_call`` with arguments already validated."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    context: AgentContext


@dataclass(slots=True)
class BeforeToolCallResult:
    """``block=True`` turns the call into an error result with ``reason``."""

    block: bool = False
    reason: str | None = None


@dataclass(slots=True)
class AfterToolCallContext:
    """Passed to ``after_tool_call`` with the executed result."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    result: AgentToolResult
    is_error: bool
    context: AgentContext


_KEEP: Any = object()


@dataclass(slots=True)
class AfterToolCallResult:
    """Field replacements for an executed result (no deep merge); unset fields are kept."""

    content: list[ContentBlock] | None = None
    details: Any = _KEEP
    is_error: bool | None = None
    terminate: bool | None = None

    def apply(self, result: AgentToolResult, is_error: bool) -> tuple[AgentToolResult, bool]:
        """The replaced result and error flag."""
        return (
            AgentToolResult(
                content=self.content if self.content is not None else result.content,
                details=result.details if self.details is _KEEP else self.details,
                terminate=self.terminate if self.terminate is not None else result.terminate,
            ),
            self.is_error if self.is_error is not None else is_error,
        )


def default_convert_to_llm(messages: list[Any]) -> list[Any]:
    """Keep provider messages; replay custom and summary messages as user messages."""
    out = []
    for message in messages:
        converted = convert_agent_message_to_llm(message)
        if converted is not None:
            out.append(converted)
    return out


@dataclass
class AgentLoopConfig:
    """Model, request options and the callbacks through which the orchestrator steers a run."""

    model: Model
    convert_to_llm: Callable[[list[Any]], MaybeAwaitable[list[Any]]] = default_convert_to_llm
    transform_context: (
        Callable[[list[Any], AbortSignal | None], MaybeAwaitable[list[Any]]] | None
    ) = None
    get_api_key: Callable[[str], MaybeAwaitable[str | None]] | None = None
    should_stop_after_turn: Callable[[TurnContext], MaybeAwaitable[bool]] | None = None
    prepare_next_turn: Callable[[TurnContext], MaybeAwaitable[TurnUpdate | None]] | None = None
    get_steering_messages: Callable[[], MaybeAwaitable[list[Any]]] | None = None
    get_follow_up_messages: Callable[[], MaybeAwaitable[list[Any]]] | None = None
    tool_execution: ToolExecutionMode = "parallel"
    before_tool_call: (
        Callable[
            [BeforeToolCallContext, AbortSignal | None],
            MaybeAwaitable[BeforeToolCallResult | None],
        ]
        | None
    ) = None
    after_tool_call: (
        Callable[
            [AfterToolCallContext, AbortSignal | None],
            MaybeAwaitable[AfterToolCallResult | None],
        ]
        | None
    ) = None
    resolve_deferred_tool: (
        Callable[[DeferredToolCallContext, AbortSignal | None], MaybeAwaitable[AgentTool | None]]
        | None
    ) = None
    thinking_level: ThinkingLevel | None = None
    stream_options: StreamOptions = field(default_factory=StreamOptions)


def resolve_reasoning(model: Model, level: ThinkingLevel | None) -> ThinkingLevel | None:
    """The reasoning option to request: the level clamped to what ``model`` supports (its
    ``thinking_level_map``), or None when off or unsupported by the model."""
    if level is None or level == "off" or not model.reasoning:
        return None
    clamped = clamp_thinking_level(model, level)
    return None if clamped == "off" else clamped
