"""The tool policy applied to a run: which of ``RunRequest.tools`` the model is offered.

The attempt loop asks once per model (the provider layer depends on it, so a fallback model
can be offered a different list); the decision itself lives in ``openclaw_runtime.toolpolicy``.
A call to a tool that was filtered out finds nothing in the agent's tool list, so the kernel
answers it with an error tool result and never runs it.
"""

from __future__ import annotations

from typing import Any

from ..agent.tools import AgentTool
from ..llm import Model
from ..toolpolicy import ToolPolicyConfig, ToolPolicyInput, apply_tool_policy, offered_tools
from .request import RunRequest

__all__ = ["offered_run_tool_summaries", "offered_run_tools", "run_tool_policy_input"]


def run_tool_policy_input(request: RunRequest, model: Model) -> ToolPolicyInput:
    """What the policy needs from a run on ``model``."""
    return ToolPolicyInput(
        provider=model.provider,
        model=model.id,
        group_id=request.group_id,
        sender_is_owner=request.sender_is_owner,
        trigger=request.trigger,
        session_key=request.session_key,
    )


def offered_run_tools(config: Any, request: RunRequest, model: Model) -> list[AgentTool]:
    """``request.tools`` that the policy of ``config`` (a ``RuntimeConfig``) offers on
    ``model``."""
    return apply_tool_policy(
        request.tools, ToolPolicyConfig.from_config(config), run_tool_policy_input(request, model)
    )


def offered_run_tool_summaries(
    config: Any, request: RunRequest, model: Model
) -> list[tuple[str, str]]:
    """``(name, one-line summary)`` of the offered tools, for the system prompt."""
    return offered_tools(
        request.tools, ToolPolicyConfig.from_config(config), run_tool_policy_input(request, model)
    )
