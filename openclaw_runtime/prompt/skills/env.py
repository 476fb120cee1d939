"""Skill environment overrides, scoped to one attempt without touching ``os.environ``.

OpenClaw's ``applySkillEnvOverrides`` writes the skills' variables into ``process.env`` for a
run and restores them afterwards. One Python process here runs many runs at once (tasks on one
event loop, and worker threads), and ``os.environ`` is shared by all of them: writing it would
leak one run's variables (often credentials) into another run that happens to overlap. So the
overrides live in a ``ContextVar`` instead: ``skill_env_scope`` sets them for the attempt and
resets them on the way out, failure or not; every task the attempt starts (tool calls) inherits
them, and nothing else sees them. Tools that spawn processes pass ``subprocess_env()`` as the
child's environment; ``current_skill_env()`` reads the overlay alone. ``os.environ`` itself is
never modified.

Variables that change how processes load code (``PATH``, ``LD_PRELOAD``, ``PYTHONPATH``...)
are refused: a skill file from a workspace must not be able to redirect every command.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from contextvars import ContextVar, Token
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "BLOCKED_ENV_KEYS",
    "current_skill_env",
    "skill_env_scope",
    "subprocess_env",
    "validate_env_overrides",
]

_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
BLOCKED_ENV_KEYS: Final = frozenset(
    {
        "PATH",
        "HOME",
        "SHELL",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "NODE_OPTIONS",
        "NODE_PATH",
        "BASH_ENV",
        "ENV",
        "IFS",
    }
)
_BLOCKED_PREFIXES: Final = ("DYLD_", "LD_")

_EMPTY: Final[Mapping[str, str]] = MappingProxyType({})
_SKILL_ENV: ContextVar[Mapping[str, str]] = ContextVar("openclaw_skill_env", default=_EMPTY)


def validate_env_overrides(env: Mapping[str, Any]) -> dict[str, str]:
    """``env`` as ``{NAME: str}``; raises ``ValueError`` naming a bad or refused variable."""
    out: dict[str, str] = {}
    for key, value in env.items():
        if not isinstance(key, str) or not _NAME.match(key):
            raise ValueError(f"env: {key!r} is not a valid environment variable name")
        if key.upper() in BLOCKED_ENV_KEYS or key.upper().startswith(_BLOCKED_PREFIXES):
            raise ValueError(f"env: {key} may not be overridden by a skill")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f"env: {key} must be a string, got {type(value).__name__}")
        out[key] = str(value)
    return out


def current_skill_env() -> Mapping[str, str]:
    """The skill variables of the current attempt (empty outside one)."""
    return _SKILL_ENV.get()


def subprocess_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) with the current attempt's skill variables on top:
    the environment to give a child process."""
    return {**(os.environ if base is None else base), **_SKILL_ENV.get()}


class skill_env_scope:
    """Apply ``overrides`` (on top of any enclosing scope) until the block exits.

    A small class rather than a generator context manager: every attempt enters one, and a
    run with no skill variables (the common case) sets nothing at all — the enclosing
    scope's variables are already what the block sees — so it keeps no generator, context
    token or new mapping while the attempt runs."""

    __slots__ = ("_overrides", "_token")

    def __init__(self, overrides: Mapping[str, str]) -> None:
        self._overrides = overrides
        self._token: Token[Mapping[str, str]] | None = None

    def __enter__(self) -> Mapping[str, str]:
        overrides = self._overrides
        if not overrides:
            return _SKILL_ENV.get()
        merged = MappingProxyType({**_SKILL_ENV.get(), **overrides})
        self._token = _SKILL_ENV.set(merged)
        return merged

    def __exit__(self, *_exc: object) -> None:
        token = self._token
        if token is not None:
            self._token = None
            _SKILL_ENV.reset(token)
