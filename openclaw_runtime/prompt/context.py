"""``PromptContext``: every fact the system-prompt sections read, as one frozen value.

The sections are pure functions of this value, so what the model is told is decided in one
place the tests can pin (OpenClaw passes the same facts to ``buildAgentSystemPrompt`` as
loose parameters). The runner fills it from the config, the run request and the workspace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = [
    "ContextFile",
    "PromptContext",
    "PromptMode",
    "RuntimeInfo",
    "SandboxInfo",
    "ToolLine",
]

PromptMode: TypeAlias = Literal["full", "minimal", "none"]


@dataclass(frozen=True, slots=True)
class ToolLine:
    """One offered tool as the Tooling section lists it."""

    name: str
    summary: str = ""


@dataclass(frozen=True, slots=True)
class ContextFile:
    """A bootstrap file injected under Project Context (already size-bounded)."""

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class SandboxInfo:
    """What the Sandbox section says about the run's sandbox (shown only when enabled)."""

    enabled: bool = False
    workspace: str | None = None
    access: Literal["none", "ro", "rw"] = "none"
    mount: str | None = None
    elevated: Literal["on", "off", "ask", "full"] | None = None


@dataclass(frozen=True, slots=True)
class RuntimeInfo:
    """The facts of the ``Runtime:`` line (OpenClaw's ``buildRuntimeLine``)."""

    agent_id: str | None = None
    host: str | None = None
    repo: str | None = None
    os: str | None = None
    arch: str | None = None
    python: str | None = None
    model: str | None = None
    default_model: str | None = None
    shell: str | None = None
    channel: str | None = None
    capabilities: tuple[str, ...] = ()
    thinking: str = "off"


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptContext:
    """Everything the sections of ``build_agent_system_prompt`` may read.

    ``tools`` is the list of offered tools (after policy); ``skills_prompt`` the rendered
    ``<available_skills>`` block (empty: no Skills section); ``extra_system_prompt`` the
    configured ``system_prompt`` (the user's own section); ``user_time`` an optional
    preformatted date shown under Current Date & Time.
    """

    prompt_mode: PromptMode = "full"
    tools: tuple[ToolLine, ...] = ()
    skills_prompt: str = ""
    workspace_dir: str | None = None
    workspace_notes: tuple[str, ...] = ()
    sandbox: SandboxInfo | None = None
    owner_numbers: tuple[str, ...] = ()
    timezone: str | None = None
    user_time: str | None = None
    reply_tags: bool = False
    message_tool_hints: tuple[str, ...] = ()
    extra_system_prompt: str = ""
    reasoning_tag_hint: bool = False
    reasoning_level: str = "off"
    memory_citations: Literal["on", "off"] = "on"
    context_files: tuple[ContextFile, ...] = ()
    runtime: RuntimeInfo = field(default_factory=RuntimeInfo)

    @property
    def tool_names(self) -> frozenset[str]:
        """The offered tool names, lowercased (what the conditional sections test)."""
        return frozenset(t.name.strip().lower() for t in self.tools)
