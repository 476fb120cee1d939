"""``RuntimeConfig``: the runtime's settings, from ``openclaw-runtime.toml``, a dict, or defaults.

Unknown keys are errors that name the key, so a typo never silently does nothing.
Environment variables for plugins (``OPENCLAW_RUNTIME_PLUGINS``...) override the file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._exceptions import ConfigurationError
from .llm import Model, ThinkingLevel

__all__ = ["CONFIG_FILENAME", "AgentDefaults", "PluginSettings", "RuntimeConfig"]

CONFIG_FILENAME = "openclaw-runtime.toml"
ENV_CONFIG = "OPENCLAW_RUNTIME_CONFIG"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)


class PluginSettings(_Section):
    """``[plugins]``: which entry-point plugins load, and how strictly."""

    allow: list[str] | None = None
    disable: list[str] = Field(default_factory=list)
    strict: bool = False
    trace: bool = False


class AgentDefaults(_Section):
    """``[agent]``: defaults for runs that do not say otherwise."""

    model: str | None = None
    thinking_level: ThinkingLevel = "off"
    system_prompt: str = ""


class RuntimeConfig(_Section):
    """All runtime settings."""

    plugins: PluginSettings = Field(default_factory=PluginSettings)
    agent: AgentDefaults = Field(default_factory=AgentDefaults)
    models: list[Model] = Field(default_factory=list)
    context_engine: str = "legacy"
    state_dir: Path = Field(default_factory=lambda: Path.home() / ".openclaw-runtime")

    @classmethod
    def coerce(cls, value: RuntimeConfig | Mapping[str, Any] | None) -> RuntimeConfig:
        """Accept a config, a plain mapping (e.g. parsed TOML) or None (defaults)."""
        if isinstance(value, RuntimeConfig):
            return value
        try:
            return cls.model_validate(dict(value or {}))
        except ValidationError as exc:
            raise ConfigurationError(_describe(exc)) from exc

    @classmethod
    def load(cls, path: str | Path | None = None) -> RuntimeConfig:
        """Read ``path``, else ``$OPENCLAW_RUNTIME_CONFIG``, else ``./openclaw-runtime.toml``.

        A missing default file gives the defaults; a missing explicit file is an error.
        """
        explicit = path is not None or ENV_CONFIG in os.environ
        target = Path(path or os.environ.get(ENV_CONFIG) or CONFIG_FILENAME)
        if not target.exists():
            if explicit:
                raise ConfigurationError(f"config file {str(target)!r} does not exist")
            return cls()
        try:
            data = tomllib.loads(target.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigurationError(f"cannot read config file {str(target)!r}: {exc}") from exc
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigurationError(f"{target}: {_describe(exc)}") from exc


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "config"
        parts.append(f"{where}: {error['msg']}")
    return "invalid configuration: " + "; ".join(parts)
