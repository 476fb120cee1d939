"""The ``Agent`` options ``Runtime.create_agent`` passes through, as a ``TypedDict``.

``Runtime.create_agent(..., **options: Unpack[AgentOptions])`` gets mypy and editor help for
the kernel's callbacks and queue modes without repeating ``Agent``'s signature. The keys are
``Agent.__init__``'s keywords minus the ones ``create_agent`` decides itself (``model``,
``system_prompt``, ``tools``: its own parameters; ``before_run``: the plugin veto gate); a
test keeps them in step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypedDict

from ..llm import StreamFn, StreamOptions, ThinkingLevel
from .tools import ToolExecutionMode
from .types import MaybeAwaitable, QueueMode

__all__ = ["AGENT_OPTION_NAMES", "AgentOptions"]


class AgentOptions(TypedDict, total=False):
    """``Agent`` keywords ``create_agent`` forwards (see ``Agent`` and docs/runs.md)."""

    stream_fn: StreamFn
    messages: Iterable[Any]
    thinking_level: ThinkingLevel
    convert_to_llm: Callable[[list[Any]], MaybeAwaitable[list[Any]]]
    transform_context: Any
    get_api_key: Any
    before_tool_call: Any
    after_tool_call: Any
    resolve_deferred_tool: Any
    prepare_next_turn: Any
    should_stop_after_turn: Any
    steering_mode: QueueMode
    follow_up_mode: QueueMode
    tool_execution: ToolExecutionMode
    stream_options: StreamOptions | None


AGENT_OPTION_NAMES: frozenset[str] = frozenset(AgentOptions.__annotations__)
