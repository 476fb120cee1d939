"""Tool policy: which tools a run offers the model (OpenClaw's tool-policy layers).

Layers ``[tools]`` → ``[tools.by_provider.<provider>[/<model>]]`` → ``[agent.tools]`` (or
``[agents.<id>.tools]``) → ``[groups.<id>.tools]``, each with ``allow``/``deny``/``also_allow``;
deny always wins, an allow list is a whitelist, ``group:*`` entries and ``*`` patterns expand;
owner-only tools are offered only to the owner. See docs/tools.md.

Pure modules: ``names`` (normalisation, aliases, groups, profiles), ``matching`` (one policy's
verdict), ``settings`` (the config sections), ``layers`` (a run's steps), ``owner``
(owner-only), ``pipeline`` (a decision per tool), ``explain`` (text for the ``tools`` command).
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .explain import format_tool_decisions  # noqa: I001 (packed: a face has at most 100 lines)
    from .layers import (
        DEFAULT_GROUP_KEY, PolicyStep, ToolPolicyConfig, agent_id_from_session_key,
        resolve_effective_tool_policy, resolve_provider_tool_policy,
    )
    from .matching import (
        PolicyVerdict, ToolPolicy, filter_tools_by_policy, is_tool_allowed_by_policies,
        tool_policy_verdict,
    )
    from .names import (
        TOOL_GROUPS, TOOL_NAME_ALIASES, TOOL_PROFILES, expand_tool_groups, known_tool_names,
        normalize_tool_name, resolve_tool_profile_policy,
    )
    from .owner import OWNER_ONLY_TOOL_NAMES, apply_owner_only_tool_policy, is_owner_only_tool
    from .pipeline import (
        MEMORY_FLUSH_TOOLS, ToolDecision, ToolPolicyInput, apply_tool_policy, decide_tools,
        offered_tools, tool_summary,
    )
    from .settings import (
        AgentEntrySettings, GroupSettings, GroupToolPolicySettings, ProviderToolPolicySettings,
        ToolPolicySettings, pick_tool_policy,
    )
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "explain": "format_tool_decisions",
    "layers": (
        "DEFAULT_GROUP_KEY PolicyStep ToolPolicyConfig agent_id_from_session_key "
        "resolve_effective_tool_policy resolve_provider_tool_policy"
    ),
    "matching": (
        "PolicyVerdict ToolPolicy filter_tools_by_policy is_tool_allowed_by_policies "
        "tool_policy_verdict"
    ),
    "names": (
        "TOOL_GROUPS TOOL_NAME_ALIASES TOOL_PROFILES expand_tool_groups known_tool_names "
        "normalize_tool_name resolve_tool_profile_policy"
    ),
    "owner": "OWNER_ONLY_TOOL_NAMES apply_owner_only_tool_policy is_owner_only_tool",
    "pipeline": (
        "MEMORY_FLUSH_TOOLS ToolDecision ToolPolicyInput apply_tool_policy decide_tools "
        "offered_tools tool_summary"
    ),
    "settings": (
        "AgentEntrySettings GroupSettings GroupToolPolicySettings ProviderToolPolicySettings "
        "ToolPolicySettings pick_tool_policy"
    ),
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "DEFAULT_GROUP_KEY", "MEMORY_FLUSH_TOOLS", "OWNER_ONLY_TOOL_NAMES", "TOOL_GROUPS",
    "TOOL_NAME_ALIASES", "TOOL_PROFILES", "AgentEntrySettings", "GroupSettings",
    "GroupToolPolicySettings", "PolicyStep", "PolicyVerdict", "ProviderToolPolicySettings",
    "ToolDecision", "ToolPolicy", "ToolPolicyConfig", "ToolPolicyInput", "ToolPolicySettings",
    "agent_id_from_session_key", "apply_owner_only_tool_policy", "apply_tool_policy",
    "decide_tools", "expand_tool_groups", "filter_tools_by_policy", "format_tool_decisions",
    "is_owner_only_tool", "is_tool_allowed_by_policies", "known_tool_names", "normalize_tool_name",
    "offered_tools", "pick_tool_policy", "resolve_effective_tool_policy",
    "resolve_provider_tool_policy", "resolve_tool_profile_policy", "tool_policy_verdict",
    "tool_summary",
]  # fmt: skip
