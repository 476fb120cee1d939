"""Tool names as the policy sees them: normalisation, aliases, groups and profiles.

A policy entry and a tool name are compared only after both went through
``normalize_tool_name`` (OpenClaw's ``normalizeToolName``: trim, lowercase, ``bash`` → ``exec``,
``apply-patch`` → ``apply_patch``), so ``Bash`` in a deny list removes the ``exec`` tool.
``group:*`` entries expand to OpenClaw's tool groups (``TOOL_GROUPS``, early-2026 upstream);
``profile`` names a starting allow list (``TOOL_PROFILES``). Pure data and functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

__all__ = [
    "TOOL_GROUPS",
    "TOOL_NAME_ALIASES",
    "TOOL_PROFILES",
    "expand_tool_groups",
    "known_tool_names",
    "normalize_tool_name",
    "resolve_tool_profile_policy",
]

#: ``normalizeToolName``'s alias table (after trimming and lowercasing).
TOOL_NAME_ALIASES: Mapping[str, str] = MappingProxyType(
    {"bash": "exec", "apply-patch": "apply_patch"}
)

#: OpenClaw's ``TOOL_GROUPS``: a ``group:<name>`` entry stands for these tools.
TOOL_GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "group:memory": ("memory_search", "memory_get"),
        "group:web": ("web_search", "web_fetch"),
        "group:fs": ("read", "write", "edit", "apply_patch"),
        "group:runtime": ("exec", "process"),
        "group:sessions": (
            "sessions_list",
            "sessions_history",
            "sessions_send",
            "sessions_spawn",
            "session_status",
        ),
        "group:ui": ("browser", "canvas"),
        "group:automation": ("cron", "gateway"),
        "group:messaging": ("message",),
        "group:nodes": ("nodes",),
        "group:openclaw": (
            "browser",
            "canvas",
            "nodes",
            "cron",
            "message",
            "gateway",
            "agents_list",
            "sessions_list",
            "sessions_history",
            "sessions_send",
            "sessions_spawn",
            "session_status",
            "memory_search",
            "memory_get",
            "web_search",
            "web_fetch",
            "image",
        ),
    }
)

#: OpenClaw's ``TOOL_PROFILES``: ``profile = "<id>"`` starts from this allow list
#: (``full`` is no restriction; an unknown id is no restriction too, as upstream).
TOOL_PROFILES: Mapping[str, tuple[str, ...] | None] = MappingProxyType(
    {
        "minimal": ("session_status",),
        "coding": ("group:fs", "group:runtime", "group:sessions", "group:memory", "image"),
        "messaging": (
            "group:messaging",
            "sessions_list",
            "sessions_history",
            "sessions_send",
            "session_status",
        ),
        "full": None,
    }
)


def normalize_tool_name(name: str) -> str:
    """``name`` trimmed, lowercased and with aliases applied (``" Bash "`` → ``"exec"``)."""
    key = name.strip().lower()
    return TOOL_NAME_ALIASES.get(key, key)


def expand_tool_groups(entries: Iterable[str]) -> list[str]:
    """Normalize each entry and replace ``group:<name>`` by its members; de-duplicated, first
    occurrence wins. An unknown ``group:`` entry stays as it is (it then matches nothing)."""
    out: list[str] = []
    seen: set[str] = set()
    for entry in entries:
        normalized = normalize_tool_name(entry)
        for name in TOOL_GROUPS.get(normalized, (normalized,)):
            if name not in seen:
                seen.add(name)
                out.append(name)
    return out


def resolve_tool_profile_policy(profile: str | None) -> tuple[str, ...] | None:
    """The allow list of tool profile ``profile`` (None: no restriction — unset, ``full``,
    or an id OpenClaw does not know)."""
    if profile is None:
        return None
    return TOOL_PROFILES.get(profile.strip().lower())


def known_tool_names() -> list[str]:
    """Every tool name a built-in group mentions, sorted (the catalogue ``tools`` explains
    when the caller names no tools of its own)."""
    return sorted({name for members in TOOL_GROUPS.values() for name in members})
