"""The policy layers of one run, in OpenClaw's pipeline order (``resolveEffectiveToolPolicy``
+ ``applyToolPolicyPipeline``).

Steps, each narrowing what the step before left (so a tool must pass every layer, and any
layer's deny removes it for good):

1. profile — the agent's ``profile``, else ``[tools] profile``, with ``also_allow`` added;
2. provider profile — the same from the matching ``by_provider`` entry;
3. global — ``[tools]``;
4. provider — ``[tools.by_provider.<key>]``: ``<provider>/<model>`` first, else
   ``<provider>`` (first match wins, no merging);
5. agent — ``[agents.<id>.tools]`` when the run's agent has an entry, else ``[agent.tools]``;
6. agent provider — that agent layer's ``by_provider`` entry;
7. group — ``[groups.<group_id>.tools]``, else ``[groups."*".tools]`` (runs with a group id).

OpenClaw's sandbox and sub-agent layers have no counterpart here. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .matching import ToolPolicy
from .names import resolve_tool_profile_policy
from .settings import (
    AgentEntrySettings,
    GroupSettings,
    GroupToolPolicySettings,
    ProviderToolPolicySettings,
    ToolPolicySettings,
    pick_tool_policy,
)

__all__ = [
    "DEFAULT_GROUP_KEY",
    "PolicyStep",
    "ToolPolicyConfig",
    "agent_id_from_session_key",
    "resolve_effective_tool_policy",
    "resolve_provider_tool_policy",
]

#: ``[groups."*"]`` applies to a group run whose group has no entry of its own.
DEFAULT_GROUP_KEY = "*"


@dataclass(frozen=True, slots=True)
class ToolPolicyConfig:
    """The config the layers read (``from_config`` takes it from a ``RuntimeConfig``)."""

    tools: ToolPolicySettings
    agent_tools: ToolPolicySettings
    agents: Mapping[str, AgentEntrySettings]
    groups: Mapping[str, GroupSettings]

    @classmethod
    def from_config(cls, config: Any) -> ToolPolicyConfig:
        """From a ``RuntimeConfig`` (``tools``, ``agent.tools``, ``agents``, ``groups``)."""
        return cls(
            tools=config.tools,
            agent_tools=config.agent.tools,
            agents=config.agents,
            groups=config.groups,
        )


@dataclass(frozen=True, slots=True)
class PolicyStep:
    """One layer's policy: ``layer`` (profile, provider-profile, global, provider, agent,
    agent-provider, group), ``source`` the config key it came from, ``policy``."""

    layer: str
    source: str
    policy: ToolPolicy


def agent_id_from_session_key(session_key: str | None) -> str | None:
    """``<id>`` of an ``agent:<id>:…`` session key (lowercased), else None."""
    if not session_key:
        return None
    parts = session_key.strip().split(":")
    if len(parts) >= 3 and parts[0].lower() == "agent" and parts[1].strip():
        return parts[1].strip().lower()
    return None


def resolve_provider_tool_policy(
    by_provider: Mapping[str, ProviderToolPolicySettings], provider: str | None, model: str | None
) -> tuple[str, ProviderToolPolicySettings] | None:
    """The ``by_provider`` entry for this model: ``<provider>/<model>`` (a model id that has a
    ``/`` is used as it is), else ``<provider>``; keys compared trimmed and lowercased."""
    if not by_provider or not provider:
        return None
    entries = {key.strip().lower(): (key, value) for key, value in by_provider.items()}
    candidates: list[str] = []
    if model:
        full = model if "/" in model else f"{provider}/{model}"
        candidates.append(full.strip().lower())
    candidates.append(provider.strip().lower())
    for candidate in candidates:
        found = entries.get(candidate)
        if found is not None:
            return found
    return None


def _profile_step(
    layer: str, source: str, profile: str | None, also_allow: list[str] | None
) -> PolicyStep | None:
    allow = resolve_tool_profile_policy(profile)
    if allow is None:
        return None
    # alsoAllow joins at the profile stage, so the profile cannot filter those tools out
    merged = (*allow, *(also_allow or ()))
    return PolicyStep(layer, f"{source} profile {profile!r}", ToolPolicy(allow=merged))


def _layer_step(
    layer: str, source: str, settings: GroupToolPolicySettings | None
) -> PolicyStep | None:
    policy = pick_tool_policy(settings)
    return None if policy is None else PolicyStep(layer, source, policy)


def resolve_effective_tool_policy(
    config: ToolPolicyConfig,
    *,
    provider: str | None = None,
    model: str | None = None,
    agent_id: str | None = None,
    group_id: str | None = None,
) -> list[PolicyStep]:
    """The steps that apply to a run of ``provider``/``model`` for ``agent_id`` in
    ``group_id``, in order (layers that set nothing are left out)."""
    global_provider = resolve_provider_tool_policy(config.tools.by_provider, provider, model)
    named = config.agents.get(agent_id) if agent_id else None
    agent_source = f'[agents."{agent_id}".tools]' if named is not None else "[agent.tools]"
    agent_tools = named.tools if named is not None else config.agent_tools
    agent_provider = resolve_provider_tool_policy(agent_tools.by_provider, provider, model)

    profile, profile_source = agent_tools.profile, agent_source
    if profile is None:
        profile, profile_source = config.tools.profile, "[tools]"
    also_allow = (
        agent_tools.also_allow if agent_tools.also_allow is not None else config.tools.also_allow
    )
    provider_profile: tuple[str, ProviderToolPolicySettings] | None = None
    for source_prefix, entry in (
        (agent_source[:-1], agent_provider),
        ("[tools", global_provider),
    ):
        if entry is not None and entry[1].profile is not None:
            provider_profile = (f'{source_prefix}.by_provider."{entry[0]}"]', entry[1])
            break

    steps: list[PolicyStep | None] = [
        _profile_step("profile", profile_source, profile, also_allow),
        None
        if provider_profile is None
        else _profile_step(
            "provider-profile",
            provider_profile[0],
            provider_profile[1].profile,
            provider_profile[1].also_allow,
        ),
        _layer_step("global", "[tools]", config.tools),
        None
        if global_provider is None
        else _layer_step(
            "provider", f'[tools.by_provider."{global_provider[0]}"]', global_provider[1]
        ),
        _layer_step("agent", agent_source, agent_tools),
        None
        if agent_provider is None
        else _layer_step(
            "agent-provider",
            f'{agent_source[:-1]}.by_provider."{agent_provider[0]}"]',
            agent_provider[1],
        ),
        _group_step(config.groups, group_id),
    ]
    return [step for step in steps if step is not None]


def _group_step(groups: Mapping[str, GroupSettings], group_id: str | None) -> PolicyStep | None:
    if group_id is None:
        return None
    key = group_id if group_id in groups else DEFAULT_GROUP_KEY
    settings = groups.get(key)
    if settings is None:
        return None
    return _layer_step("group", f'[groups."{key}".tools]', settings.tools)
