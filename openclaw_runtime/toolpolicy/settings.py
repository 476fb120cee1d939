"""The tool-policy config sections, validated: ``[tools]``, ``[tools.by_provider.<key>]``,
``[agent.tools]``, ``[agents.<id>.tools]`` and ``[groups.<id>.tools]``.

Every layer has ``allow``, ``deny``, ``also_allow`` and (global and agent layers) ``profile``.
A typo in a security setting must not silently widen access, so beyond OpenClaw (which keeps
an unknown ``group:`` entry as a literal that matches nothing and treats an unknown profile
as "no restriction") an unknown ``group:`` entry, an unknown profile, an empty entry and two
``by_provider`` keys that are the same after trimming and lowercasing are config errors that
name the key. ``pick_tool_policy`` is OpenClaw's ``pickToolPolicy`` (``also_allow`` joins
``allow``; without ``allow`` it means ``["*", ...also_allow]``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .matching import ToolPolicy
from .names import TOOL_GROUPS, TOOL_PROFILES

__all__ = [
    "AgentEntrySettings",
    "GroupSettings",
    "GroupToolPolicySettings",
    "ProviderToolPolicySettings",
    "ToolPolicySettings",
    "pick_tool_policy",
]


class _Section(BaseModel):
    # as config.py's sections: unknown keys are errors, inputs stay out of error text
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, hide_input_in_errors=True
    )


def _check_entries(value: list[str] | None) -> list[str] | None:
    if value is None:
        return None
    for index, entry in enumerate(value):
        stripped = entry.strip()
        if not stripped:
            raise ValueError(f"entry {index} is empty")
        lowered = stripped.lower()
        if lowered.startswith("group:") and lowered not in TOOL_GROUPS:
            known = ", ".join(sorted(TOOL_GROUPS))
            raise ValueError(f"unknown tool group {stripped!r} (known: {known})")
    return value


class GroupToolPolicySettings(_Section):
    """``allow`` / ``deny`` / ``also_allow`` of one layer (the group layer has no more)."""

    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)
    also_allow: list[str] | None = Field(default=None, alias="alsoAllow")

    @field_validator("allow", "deny", "also_allow")
    @classmethod
    def _entries(cls, value: list[str] | None) -> list[str] | None:
        return _check_entries(value)


class ProviderToolPolicySettings(GroupToolPolicySettings):
    """A layer that may also name a ``profile`` (``minimal``, ``coding``, ``messaging``,
    ``full``)."""

    profile: str | None = None

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is not None and value.strip().lower() not in TOOL_PROFILES:
            raise ValueError(f"unknown tool profile {value!r} (known: {', '.join(TOOL_PROFILES)})")
        return value


class ToolPolicySettings(ProviderToolPolicySettings):
    """``[tools]`` and ``[agent.tools]``: a layer plus per-provider layers keyed by
    ``<provider>`` or ``<provider>/<model>`` (trimmed, lowercased; the full id wins, no
    merging)."""

    by_provider: dict[str, ProviderToolPolicySettings] = Field(
        default_factory=dict, alias="byProvider"
    )

    @field_validator("by_provider")
    @classmethod
    def _unique_keys(
        cls, value: dict[str, ProviderToolPolicySettings]
    ) -> dict[str, ProviderToolPolicySettings]:
        seen: dict[str, str] = {}
        for key in value:
            normalized = key.strip().lower()
            if not normalized:
                raise ValueError("a provider key is empty")
            if normalized in seen:
                raise ValueError(
                    f"provider keys {seen[normalized]!r} and {key!r} are the same "
                    "(keys are compared trimmed and lowercased)"
                )
            seen[normalized] = key
        return value


class GroupSettings(_Section):
    """``[groups.<id>]``: what applies to runs with that ``group_id`` (``"*"``: any group
    without an entry of its own)."""

    tools: GroupToolPolicySettings = Field(default_factory=GroupToolPolicySettings)


class AgentEntrySettings(_Section):
    """``[agents.<id>]``: a named agent (the id from an ``agent:<id>:…`` session key); its
    ``tools`` replace ``[agent.tools]`` for that agent's runs."""

    tools: ToolPolicySettings = Field(default_factory=ToolPolicySettings)


def pick_tool_policy(settings: GroupToolPolicySettings | None) -> ToolPolicy | None:
    """OpenClaw's ``pickToolPolicy``: the layer's policy, or None when it sets no allow,
    ``also_allow`` or deny."""
    if settings is None:
        return None
    allow = None if settings.allow is None else list(settings.allow)
    if settings.also_allow:
        allow = [*(allow if allow is not None else ["*"]), *settings.also_allow]
    if allow is None and not settings.deny:
        return None
    return ToolPolicy(allow=None if allow is None else tuple(allow), deny=tuple(settings.deny))
