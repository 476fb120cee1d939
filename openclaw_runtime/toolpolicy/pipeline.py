"""Which tools one run offers, and for every other tool the layer and rule that removed it.

OpenClaw's order (``createOpenClawCodingTools``): a memory-flush run (``trigger = "memory"``)
keeps only ``read`` and ``write``; then owner-only tools go for a sender who is not the owner;
then the policy layers (``layers.resolve_effective_tool_policy``) narrow the list one after
the other. The first step that removes a tool is the one reported. Every decision is made
before the model sees the list: a tool that is not offered is not in the request, and the
kernel answers a call to it with an error tool result (it cannot be found), never a run.

Unlike OpenClaw, an allow list that names only unknown tools is *not* dropped (upstream drops
plugin-only allow lists so core tools stay available; this runtime has no core tools — every
tool is the caller's — so it fails closed). Unknown entries are logged as a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..redaction import package_logger
from .layers import (
    PolicyStep,
    ToolPolicyConfig,
    agent_id_from_session_key,
    resolve_effective_tool_policy,
)
from .matching import compile_pattern, tool_policy_verdict
from .names import known_tool_names, normalize_tool_name
from .owner import is_owner_only_tool

__all__ = [
    "MEMORY_FLUSH_TOOLS",
    "ToolDecision",
    "ToolPolicyInput",
    "apply_tool_policy",
    "decide_tools",
    "offered_tools",
    "tool_summary",
]

logger = package_logger(logging.getLogger("openclaw_runtime.toolpolicy"))

T = TypeVar("T")

#: A memory-flush run keeps only these.
MEMORY_FLUSH_TOOLS: frozenset[str] = frozenset({"read", "write"})


@dataclass(frozen=True, slots=True)
class ToolPolicyInput:
    """What the policy needs to know about a run. ``sender_is_owner`` counts only when
    ``True``; ``agent_id`` falls back to the ``agent:<id>:…`` session key."""

    provider: str | None = None
    model: str | None = None
    agent_id: str | None = None
    group_id: str | None = None
    sender_is_owner: bool | None = None
    trigger: str | None = None
    session_key: str | None = None

    @property
    def resolved_agent_id(self) -> str | None:
        """``agent_id``, else the session key's agent."""
        return self.agent_id or agent_id_from_session_key(self.session_key)


@dataclass(frozen=True, slots=True)
class ToolDecision:
    """One tool's fate: offered, or removed by ``layer`` (memory-flush, owner-only, profile,
    provider-profile, global, provider, agent, agent-provider, group) from ``source`` by
    ``rule``. ``summary`` is the first line of its description."""

    name: str
    offered: bool
    summary: str = ""
    owner_only: bool = False
    layer: str | None = None
    source: str | None = None
    rule: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``openclaw-runtime tools --json``)."""
        out: dict[str, Any] = {
            "name": self.name,
            "offered": self.offered,
            "summary": self.summary,
            "ownerOnly": self.owner_only,
        }
        if not self.offered:
            out.update(layer=self.layer, source=self.source, rule=self.rule)
        return out


def tool_summary(tool: Any) -> str:
    """The first non-empty line of the tool's description ("" when it has none)."""
    for line in str(getattr(tool, "description", "") or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _removal(
    tool: Any, steps: Sequence[PolicyStep], inputs: ToolPolicyInput
) -> tuple[str, str, str] | None:
    name = normalize_tool_name(str(tool.name))
    if inputs.trigger == "memory" and name not in MEMORY_FLUSH_TOOLS:
        return ("memory-flush", "trigger=memory", "memory-flush runs keep only read and write")
    if inputs.sender_is_owner is not True and is_owner_only_tool(tool):
        return ("owner-only", "sender_is_owner=False", "the tool is owner-only")
    for step in steps:
        verdict = tool_policy_verdict(step.policy, name)
        if not verdict.allowed:
            return (step.layer, step.source, verdict.rule)
    return None


def _names_only_unknown(entry: str, known: set[str]) -> bool:
    patterns = compile_pattern(entry)
    return bool(patterns) and all(p.exact is not None and p.exact not in known for p in patterns)


def _warn_unknown_entries(steps: Sequence[PolicyStep], names: Iterable[str]) -> None:
    if all(step.policy.allow is None and not step.policy.deny for step in steps):
        return  # no entry to check (the common config): the known names are not needed
    known = set(known_tool_names()) | {normalize_tool_name(n) for n in names}
    for step in steps:
        unknown = [
            entry
            for entry in (*(step.policy.allow or ()), *step.policy.deny)
            if _names_only_unknown(entry, known)
        ]
        if step.policy.allow is not None and not any(map(compile_pattern, step.policy.allow)):
            _warn_once(f"tools: {step.source} has an empty allow list; it restricts nothing")
        if unknown:
            _warn_once(
                f"tools: {step.source} names unknown tools ({', '.join(unknown)}); "
                "they match nothing"
            )


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """Log ``message`` once per process (the policy is worked out for every model of every
    run; the config does not change between them)."""
    if message in _warned:
        return
    if len(_warned) < 1024:
        _warned.add(message)
    logger.warning("%s", message)


def decide_tools(
    tools: Sequence[Any], config: ToolPolicyConfig, inputs: ToolPolicyInput
) -> list[ToolDecision]:
    """A decision for every tool in ``tools`` (anything with ``name``, ``description`` and
    maybe ``owner_only``), in their order."""
    steps = resolve_effective_tool_policy(
        config,
        provider=inputs.provider,
        model=inputs.model,
        agent_id=inputs.resolved_agent_id,
        group_id=inputs.group_id,
    )
    _warn_unknown_entries(steps, (str(t.name) for t in tools))
    decisions: list[ToolDecision] = []
    for tool in tools:
        removal = _removal(tool, steps, inputs)
        layer, source, rule = removal if removal is not None else (None, None, None)
        decisions.append(
            ToolDecision(
                name=str(tool.name),
                offered=removal is None,
                summary=tool_summary(tool),
                owner_only=is_owner_only_tool(tool),
                layer=layer,
                source=source,
                rule=rule,
            )
        )
    return decisions


def apply_tool_policy(
    tools: Sequence[T], config: ToolPolicyConfig, inputs: ToolPolicyInput
) -> list[T]:
    """The tools the run may offer the model, in their order."""
    decisions = decide_tools(tools, config, inputs)
    return [tool for tool, decision in zip(tools, decisions, strict=True) if decision.offered]


def offered_tools(
    tools: Sequence[Any], config: ToolPolicyConfig, inputs: ToolPolicyInput
) -> list[tuple[str, str]]:
    """``(name, one-line summary)`` of every offered tool — what a system prompt lists."""
    return [(d.name, d.summary) for d in decide_tools(tools, config, inputs) if d.offered]
