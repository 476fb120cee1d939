"""The kernel: the double loop, the ``Agent`` wrapper and tools.

It imports nothing from providers, auth, failover or the runner; the orchestrator reaches it
only through ``AgentLoopConfig`` callbacks and a ``StreamFn``.
"""

from __future__ import annotations

from .agent import Agent, AgentListener, AgentState, PendingMessageQueue
from .interruption import (
    INTERRUPTED_TURN_CUSTOM_TYPE,
    create_failure_message,
    create_interrupted_turn_message,
)
from .loop import (
    agent_loop,
    agent_loop_continue,
    remove_non_executable_tool_calls,
    run_agent_loop,
    run_agent_loop_continue,
)
from .tools import (
    AgentTool,
    AgentToolResult,
    ToolArgumentError,
    ToolExecutionMode,
    tool,
    validate_tool_arguments,
)
from .types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
    DeferredToolCallContext,
    QueueMode,
    TurnContext,
    TurnUpdate,
    default_convert_to_llm,
)

__all__ = [
    "INTERRUPTED_TURN_CUSTOM_TYPE",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentContext",
    "AgentListener",
    "AgentLoopConfig",
    "AgentState",
    "AgentTool",
    "AgentToolResult",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "DeferredToolCallContext",
    "PendingMessageQueue",
    "QueueMode",
    "ToolArgumentError",
    "ToolExecutionMode",
    "TurnContext",
    "TurnUpdate",
    "agent_loop",
    "agent_loop_continue",
    "create_failure_message",
    "create_interrupted_turn_message",
    "default_convert_to_llm",
    "remove_non_executable_tool_calls",
    "run_agent_loop",
    "run_agent_loop_continue",
    "tool",
    "validate_tool_arguments",
]
