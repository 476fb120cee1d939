"""One allow/deny policy and the decision it makes for one tool name.

OpenClaw's ``compilePattern`` / ``makeToolPolicyMatcher``: every entry is normalized and its
groups expanded; ``*`` matches everything, an entry with ``*`` is an anchored wildcard, any
other entry matches exactly. For one policy: a matching **deny** blocks (deny always wins);
then no allow list (missing *or empty*) allows; a matching allow entry allows; ``apply_patch``
counts as allowed when ``exec`` is; anything else is blocked — an allow list is a whitelist.
Each decision names the entry that made it, so ``explain`` can say which rule removed a tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from .names import expand_tool_groups, normalize_tool_name

__all__ = [
    "PolicyVerdict",
    "ToolPolicy",
    "compile_pattern",
    "filter_tools_by_policy",
    "is_tool_allowed_by_policies",
    "tool_policy_verdict",
]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """``allow`` (None: no whitelist) and ``deny`` entries, as written in the config."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """Whether one policy lets a tool through, and the rule that decided
    (``deny "group:runtime"``, ``allow "read"``, ``not in allow list``, ``no allow list``)."""

    allowed: bool
    rule: str


class _Pattern:
    """One compiled entry: ``*``, an anchored wildcard, or an exact name."""

    __slots__ = ("exact", "regex")

    def __init__(self, pattern: str) -> None:
        self.exact: str | None = None
        self.regex: re.Pattern[str] | None = None
        if pattern == "*":
            self.regex = re.compile(r".*", re.DOTALL)
        elif "*" in pattern:
            body = ".*".join(re.escape(part) for part in pattern.split("*"))
            self.regex = re.compile(f"^{body}$", re.DOTALL)
        else:
            self.exact = pattern

    def matches(self, name: str) -> bool:
        if self.exact is not None:
            return name == self.exact
        assert self.regex is not None
        return self.regex.match(name) is not None


def compile_pattern(entry: str) -> list[_Pattern]:
    """The patterns one config entry stands for (a group gives one per member; an empty entry
    none)."""
    return [_Pattern(p) for p in expand_tool_groups([entry]) if p]


def _first_match(entries: Iterable[str], name: str) -> str | None:
    for entry in entries:
        if any(pattern.matches(name) for pattern in compile_pattern(entry)):
            return entry
    return None


def tool_policy_verdict(policy: ToolPolicy | None, name: str) -> PolicyVerdict:
    """What ``policy`` decides for tool ``name`` (normalized here); None allows everything."""
    if policy is None:
        return PolicyVerdict(True, "no policy")
    normalized = normalize_tool_name(name)
    denied_by = _first_match(policy.deny, normalized)
    if denied_by is not None:
        return PolicyVerdict(False, f'deny "{denied_by}"')
    allow = [entry for entry in policy.allow or () if compile_pattern(entry)]
    if not allow:
        return PolicyVerdict(True, "no allow list")
    allowed_by = _first_match(allow, normalized)
    if allowed_by is not None:
        return PolicyVerdict(True, f'allow "{allowed_by}"')
    if normalized == "apply_patch":
        exec_by = _first_match(allow, "exec")
        if exec_by is not None:
            return PolicyVerdict(True, f'allow "{exec_by}" (apply_patch follows exec)')
    return PolicyVerdict(False, "not in allow list")


def is_tool_allowed_by_policies(name: str, policies: Sequence[ToolPolicy | None]) -> bool:
    """OpenClaw's ``isToolAllowedByPolicies``: every policy must allow ``name`` (AND)."""
    return all(tool_policy_verdict(policy, name).allowed for policy in policies)


def filter_tools_by_policy(tools: Iterable[T], policy: ToolPolicy | None) -> list[T]:
    """The tools (anything with a ``name``) that ``policy`` allows, in their order."""
    return [tool for tool in tools if tool_policy_verdict(policy, tool.name).allowed]
