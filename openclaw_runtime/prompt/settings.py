"""The ``[agent]`` keys of the system prompt and skills, as a pydantic mixin.

``config.AgentDefaults`` inherits ``PromptSettings``, so these keys sit directly in
``[agent]`` (``prompt_mode``, ``workspace``, ``skills_dir``, ``timezone``...), are validated
with the rest of the config, and an error names the key (``agent.timezone: ...``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .bootstrap import (
    DEFAULT_BOOTSTRAP_FILES,
    DEFAULT_BOOTSTRAP_MAX_CHARS,
    DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS,
)
from .context import PromptMode
from .skills.env import validate_env_overrides

__all__ = ["PromptSettings", "SandboxSettings"]


class SandboxSettings(BaseModel):
    """``[agent.sandbox]``: what the Sandbox section tells the model (shown when enabled)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    enabled: bool = False
    workspace: str | None = None
    access: Literal["none", "ro", "rw"] = "none"
    mount: str | None = None
    elevated: Literal["on", "off", "ask", "full"] | None = None


class PromptSettings(BaseModel):
    """System-prompt and skills keys of ``[agent]`` (docs/prompt.md).

    ``prompt_mode``: ``full`` (default), ``minimal`` (sub-agents) or ``none``;
    ``workspace``: the agent's working directory (Workspace section, bootstrap files,
    workspace skills; unset: none of them); ``skills_dir``: an extra skills root;
    ``skills``: only these skill names (unset: all; empty: none); ``skill_env``: per-skill
    environment overrides (``{skill = {NAME = "value"}}``, over what SKILL.md declares);
    ``timezone``: the user's IANA time zone (default: the system's); ``agent_id``,
    ``owner_numbers``, ``sandbox``, ``reply_tags``, ``reasoning_tags``, ``memory_citations``,
    ``bootstrap_files`` / ``bootstrap_max_chars`` / ``bootstrap_total_max_chars``: as named.
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    prompt_mode: PromptMode = "full"
    agent_id: str = "main"
    workspace: Path | None = None
    skills_dir: Path | None = None
    skills: list[str] | None = None
    skill_env: dict[str, dict[str, str]] = Field(default_factory=dict)
    timezone: str | None = None
    owner_numbers: list[str] = Field(default_factory=list)
    sandbox: SandboxSettings | None = None
    reply_tags: bool = False
    reasoning_tags: bool = False
    memory_citations: Literal["on", "off"] = "on"
    bootstrap_files: list[str] = Field(default_factory=lambda: list(DEFAULT_BOOTSTRAP_FILES))
    bootstrap_max_chars: int = Field(default=DEFAULT_BOOTSTRAP_MAX_CHARS, gt=0)
    bootstrap_total_max_chars: int = Field(default=DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS, gt=0)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (expected an IANA name)") from None
        return value

    @field_validator("skill_env")
    @classmethod
    def _valid_env(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        return {skill: validate_env_overrides(env) for skill, env in value.items()}

    @field_validator("bootstrap_files")
    @classmethod
    def _plain_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or Path(name).name != name or name in (".", ".."):
                raise ValueError(f"{name!r} must be a file name inside the workspace")
        return value
