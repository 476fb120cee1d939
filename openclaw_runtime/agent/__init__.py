"""The kernel: the double loop, the ``Agent`` wrapper and tools.

It imports nothing from providers, auth, failover or the runner; the orchestrator reaches it
only through ``AgentLoopConfig`` callbacks and a ``StreamFn``.
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .agent import (  # noqa: I001 (packed: a face has at most 100 lines)
        Agent, AgentListener, AgentState, PendingMessageQueue,
    )
    from .interruption import (
        INTERRUPTED_TURN_CUSTOM_TYPE, create_failure_message, create_interrupted_turn_message,
    )
    from .loop import (
        agent_loop, agent_loop_continue, remove_non_executable_tool_calls, run_agent_loop,
        run_agent_loop_continue,
    )
    from .options import AgentOptions
    from .tools import (
        AgentTool, AgentToolResult, ToolArgumentError, ToolExecutionMode, tool,
        validate_tool_arguments,
    )
    from .types import (
        AfterToolCallContext, AfterToolCallResult, AgentContext, AgentLoopConfig,
        BeforeToolCallContext, BeforeToolCallResult, DeferredToolCallContext, QueueMode,
        TurnContext, TurnUpdate, default_convert_to_llm,
    )
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "agent": "Agent AgentListener AgentState PendingMessageQueue",
    "interruption": (
        "INTERRUPTED_TURN_CUSTOM_TYPE create_failure_message create_interrupted_turn_message"
    ),
    "loop": (
        "agent_loop agent_loop_continue remove_non_executable_tool_calls run_agent_loop "
        "run_agent_loop_continue"
    ),
    "options": "AgentOptions",
    "tools": (
        "AgentTool AgentToolResult ToolArgumentError ToolExecutionMode tool validate_tool_arguments"
    ),
    "types": (
        "AfterToolCallContext AfterToolCallResult AgentContext AgentLoopConfig "
        "BeforeToolCallContext BeforeToolCallResult DeferredToolCallContext QueueMode "
        "TurnContext TurnUpdate default_convert_to_llm"
    ),
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "INTERRUPTED_TURN_CUSTOM_TYPE", "AfterToolCallContext", "AfterToolCallResult", "Agent",
    "AgentContext", "AgentListener", "AgentLoopConfig", "AgentOptions", "AgentState", "AgentTool",
    "AgentToolResult", "BeforeToolCallContext", "BeforeToolCallResult", "DeferredToolCallContext",
    "PendingMessageQueue", "QueueMode", "ToolArgumentError", "ToolExecutionMode", "TurnContext",
    "TurnUpdate", "agent_loop", "agent_loop_continue", "create_failure_message",
    "create_interrupted_turn_message", "default_convert_to_llm", "remove_non_executable_tool_calls",
    "run_agent_loop", "run_agent_loop_continue", "tool", "validate_tool_arguments",
]  # fmt: skip
