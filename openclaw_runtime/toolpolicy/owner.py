"""Owner-only tools (OpenClaw's ``applyOwnerOnlyToolPolicy``).

A tool is owner-only when it says so (``@tool(owner_only=True)``, ``AgentTool.owner_only``) or
its normalized name is one of OpenClaw's fallback names (``whatsapp_login``, ``cron``,
``gateway``). A sender counts as the owner only on a literal ``True`` (opt-in, as upstream);
for anyone else owner-only tools are removed before the model sees the list.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from .names import normalize_tool_name

__all__ = ["OWNER_ONLY_TOOL_NAMES", "apply_owner_only_tool_policy", "is_owner_only_tool"]

T = TypeVar("T")

#: Tools that are owner-only by name even when they do not say so (OpenClaw's fallback set).
OWNER_ONLY_TOOL_NAMES: frozenset[str] = frozenset({"whatsapp_login", "cron", "gateway"})


def is_owner_only_tool(tool: Any) -> bool:
    """Whether ``tool`` (anything with a ``name``, maybe an ``owner_only`` flag) is owner-only."""
    if getattr(tool, "owner_only", False) is True:
        return True
    return normalize_tool_name(str(getattr(tool, "name", ""))) in OWNER_ONLY_TOOL_NAMES


def apply_owner_only_tool_policy(tools: Iterable[T], sender_is_owner: bool | None) -> list[T]:
    """``tools`` without the owner-only ones unless ``sender_is_owner is True``."""
    if sender_is_owner is True:
        return list(tools)
    return [tool for tool in tools if not is_owner_only_tool(tool)]
