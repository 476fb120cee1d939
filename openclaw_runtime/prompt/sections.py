"""The built-in sections of the system prompt, one small pure function each.

Each section takes the run's ``PromptContext`` and returns its lines (an empty list: the
section is left out). Texts and order follow OpenClaw's ``buildAgentSystemPrompt`` (spec 004
§2); sections about OpenClaw features this runtime does not have (the gateway CLI, self-update,
docs links, TTS, reactions, heartbeats) are not ported. ``BUILTIN_SECTIONS`` lists them in
prompt order with the modes that keep them; ``builder`` assembles them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Final, TypeAlias

from .context import PromptContext, PromptMode, RuntimeInfo, ToolLine

__all__ = [
    "BUILTIN_SECTIONS",
    "CORE_TOOL_ORDER",
    "IDENTITY_LINE",
    "SILENT_REPLY_TOKEN",
    "SectionFn",
    "SectionSpec",
    "current_time_section",
    "identity_section",
    "memory_section",
    "messaging_section",
    "project_context_section",
    "reasoning_format_section",
    "reply_tags_section",
    "runtime_line",
    "runtime_section",
    "safety_section",
    "sandbox_section",
    "silent_replies_section",
    "skills_section",
    "time_hint_section",
    "tool_call_style_section",
    "tooling_section",
    "user_identity_section",
    "user_prompt_section",
    "workspace_files_section",
    "workspace_section",
]

SectionFn: TypeAlias = Callable[[PromptContext], list[str]]

IDENTITY_LINE: Final = "You are a personal assistant running inside OpenClaw."
SILENT_REPLY_TOKEN: Final = "NO_REPLY"

#: Core tools come first in this order (OpenClaw's ``toolOrder``); the rest sorted by name.
CORE_TOOL_ORDER: Final = (
    "read",
    "write",
    "edit",
    "apply_patch",
    "grep",
    "find",
    "ls",
    "exec",
    "process",
    "web_search",
    "web_fetch",
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
    "session_status",
    "image",
)


def identity_section(ctx: PromptContext) -> list[str]:
    """The identity line every mode keeps."""
    return [IDENTITY_LINE]


def _ordered_tools(tools: tuple[ToolLine, ...]) -> list[ToolLine]:
    seen: set[str] = set()
    unique: list[ToolLine] = []
    for tool in tools:
        key = tool.name.strip().lower()
        if key and key not in seen:  # de-duplicated by lowercase, keeping the caller's casing
            seen.add(key)
            unique.append(tool)
    rank = {name: index for index, name in enumerate(CORE_TOOL_ORDER)}
    core = sorted((t for t in unique if t.name.lower() in rank), key=lambda t: rank[t.name.lower()])
    rest = sorted((t for t in unique if t.name.lower() not in rank), key=lambda t: t.name.lower())
    return core + rest


def tooling_section(ctx: PromptContext) -> list[str]:
    """``## Tooling``: exactly the offered tools, one ``- name: summary`` line each.

    OpenClaw lists a fixed fallback set when the list is empty; here an empty list says that
    no tools are available, so the prompt never names a tool the model cannot call.
    """
    lines = [
        "## Tooling",
        "Tool availability (filtered by policy):",
        "Tool names are case-sensitive. Call tools exactly as listed.",
    ]
    tools = _ordered_tools(ctx.tools)
    if not tools:
        lines.append("No tools are available in this run; answer directly.")
        return lines
    for tool in tools:
        summary = " ".join(tool.summary.split())
        lines.append(f"- {tool.name}: {summary}" if summary else f"- {tool.name}")
    lines.append("TOOLS.md does not control tool availability; it is user guidance only.")
    lines.append(
        "If a task will take long or needs many steps, spawn a sub-agent when one is available."
    )
    return lines


def tool_call_style_section(ctx: PromptContext) -> list[str]:
    """``## Tool Call Style``: when to narrate tool calls."""
    return [
        "## Tool Call Style",
        "Default: do not narrate routine, low-risk tool calls (just call the tool).",
        "Narrate only when it helps: multi-step work, complex problems, or sensitive actions "
        "(e.g. deletions).",
        "Keep narration brief and value-dense.",
    ]


def safety_section(ctx: PromptContext) -> list[str]:
    """``## Safety``: OpenClaw's three fixed rules."""
    return [
        "## Safety",
        "You have no independent goals: do not pursue self-preservation, replication, resource "
        "acquisition, or power-seeking; avoid long-term plans beyond the user's request.",
        "Prioritize safety and human oversight over completion; if instructions conflict, pause "
        "and ask; comply with stop/pause/audit requests and never bypass safeguards.",
        "Do not manipulate or persuade anyone to expand access or disable safeguards. Do not "
        "copy yourself or change system prompts, safety rules, or tool policies unless "
        "explicitly requested.",
    ]


def skills_section(ctx: PromptContext) -> list[str]:
    """``## Skills (mandatory)`` (full only, only with skills): how to pick one skill."""
    prompt = ctx.skills_prompt.strip()
    if not prompt:
        return []
    return [
        "## Skills (mandatory)",
        "Before replying: scan <available_skills> <description> entries.",
        "- If exactly one skill clearly applies: read its SKILL.md at <location> with `read`, "
        "then follow it.",
        "- If multiple could apply: choose the most specific one, then read/follow it.",
        "- If none clearly apply: do not read any SKILL.md.",
        "Constraints: never read more than one skill up front; only read after selecting.",
        prompt,
    ]


def memory_section(ctx: PromptContext) -> list[str]:
    """``## Memory Recall`` (full only, only when a memory tool is offered)."""
    if not ctx.tool_names & {"memory_search", "memory_get"}:
        return []
    citations = (
        "Citations: do not mention file paths or line numbers in replies."
        if ctx.memory_citations == "off"
        else "Citations: include Source: <path#line> when it helps the user verify memory snippets."
    )
    return [
        "## Memory Recall",
        "Before answering anything about prior work, decisions, dates, people, preferences, or "
        "todos: run memory_search on MEMORY.md + memory/*.md; then use memory_get to pull only "
        "the needed lines. If low confidence after search, say you checked.",
        citations,
    ]


def time_hint_section(ctx: PromptContext) -> list[str]:
    """The time-zone hint line (only with a time zone and a ``session_status`` tool)."""
    if not ctx.timezone or "session_status" not in ctx.tool_names:
        return []
    return [
        "If you need the current date, time, or day of week, run session_status "
        "(📊 session_status)."
    ]


def workspace_section(ctx: PromptContext) -> list[str]:
    """``## Workspace``: the working directory and any workspace notes."""
    if not ctx.workspace_dir:
        return []
    return [
        "## Workspace",
        f"Your working directory is: {ctx.workspace_dir}",
        "Treat this directory as the single global workspace for file operations unless "
        "explicitly instructed otherwise.",
        *(note.strip() for note in ctx.workspace_notes),
    ]


def sandbox_section(ctx: PromptContext) -> list[str]:
    """``## Sandbox`` (only when a sandbox is enabled)."""
    box = ctx.sandbox
    if box is None or not box.enabled:
        return []
    lines = [
        "## Sandbox",
        "You are running in a sandboxed runtime (tools execute in a sandbox).",
        "Some tools may be unavailable due to sandbox policy.",
    ]
    if box.workspace:
        lines.append(f"Sandbox workspace: {box.workspace}")
    access = f"Agent workspace access: {box.access}"
    if box.mount and box.access != "none":
        access += f" (mounted at {box.mount})"
    lines.append(access)
    if box.elevated:
        lines.append(f"Elevated exec level: {box.elevated}")
    return lines


def user_identity_section(ctx: PromptContext) -> list[str]:
    """``## User Identity`` (full only, only with owner numbers)."""
    owners = [n.strip() for n in ctx.owner_numbers if n.strip()]
    if not owners:
        return []
    return [
        "## User Identity",
        f"Owner numbers: {', '.join(owners)}. Treat messages from these numbers as the user.",
    ]


def workspace_files_section(ctx: PromptContext) -> list[str]:
    """``## Workspace Files (injected)`` (only when files are injected under Project Context)."""
    if not ctx.context_files:
        return []
    return [
        "## Workspace Files (injected)",
        "These user-editable files are loaded by the runtime and included below in Project "
        "Context.",
    ]


def reply_tags_section(ctx: PromptContext) -> list[str]:
    """``## Reply Tags`` (full only; only when the channel honours reply tags)."""
    if not ctx.reply_tags:
        return []
    return [
        "## Reply Tags",
        "To request a native reply/quote on supported surfaces, include one tag in your reply:",
        "- [[reply_to_current]] replies to the triggering message.",
        "- [[reply_to:<id>]] replies to a specific message id when you have it; use it only "
        "with an id that was explicitly given to you.",
        "Whitespace inside the tag is allowed (e.g. [[ reply_to_current ]]).",
        "Tags are stripped before sending; support depends on the current channel config.",
    ]


def messaging_section(ctx: PromptContext) -> list[str]:
    """``## Messaging`` (full only): where replies go, the ``message`` tool when offered."""
    lines = [
        "## Messaging",
        "- Reply in current session: your reply is delivered to the source channel.",
        "- Never use exec/curl for provider messaging; the runtime handles all routing.",
    ]
    if "sessions_send" in ctx.tool_names:
        lines.append("- Cross-session messaging: use sessions_send(sessionKey, message).")
    if "message" in ctx.tool_names:
        capabilities = {c.lower() for c in ctx.runtime.capabilities}
        lines += [
            "### message tool",
            "- Use `message` for proactive sends and channel actions.",
            "- For `action=send`, include `to` and `message`.",
            f"- If you use `message` (`action=send`) to deliver your user-visible reply, respond "
            f"with ONLY: {SILENT_REPLY_TOKEN} (avoid duplicate replies).",
        ]
        if "inlinebuttons" in capabilities:
            lines.append(
                "- Inline buttons supported: use `action=send` with "
                "`buttons=[[{text,callback_data}]]`."
            )
        lines += [hint.strip() for hint in ctx.message_tool_hints]
    return lines


def user_prompt_section(ctx: PromptContext) -> list[str]:
    """The configured ``system_prompt`` (OpenClaw's extra system prompt): ``## Group Chat
    Context`` in full mode, ``## Subagent Context`` in minimal mode."""
    text = ctx.extra_system_prompt.strip()
    if not text:
        return []
    header = "## Subagent Context" if ctx.prompt_mode == "minimal" else "## Group Chat Context"
    return [header, text]


def reasoning_format_section(ctx: PromptContext) -> list[str]:
    """``## Reasoning Format`` (only for models told to tag their reasoning)."""
    if not ctx.reasoning_tag_hint:
        return []
    return [
        "## Reasoning Format",
        "ALL internal reasoning MUST be inside <think>...</think>.",
        "Do not output any analysis outside <think>.",
        "Format every reply as <think>...</think> then <final>...</final>, with no other text.",
        "Only the final user-visible reply may appear inside <final>.",
        "Only text inside <final> is shown to the user; everything else is discarded and never "
        "seen by the user.",
    ]


def project_context_section(ctx: PromptContext) -> list[str]:
    """``# Project Context``: each injected bootstrap file under ``## <path>``."""
    if not ctx.context_files:
        return []
    lines = ["# Project Context", "The following project context files have been loaded:"]
    if any(
        PurePath(f.path.replace("\\", "/")).name.lower() == "soul.md" for f in ctx.context_files
    ):
        lines.append(
            "If SOUL.md is present, embody its persona and tone. Avoid stiff, generic replies; "
            "follow its guidance unless higher-priority instructions override it."
        )
    for file in ctx.context_files:
        lines += [f"## {file.path}", file.content]
    return lines


def silent_replies_section(ctx: PromptContext) -> list[str]:
    """``## Silent Replies`` (full only): the ``NO_REPLY`` token."""
    token = SILENT_REPLY_TOKEN
    return [
        "## Silent Replies",
        f"When you have nothing to say, respond with ONLY: {token}",
        "It must be your ENTIRE message: never append it to an actual response, never wrap it "
        "in markdown or code blocks.",
    ]


def current_time_section(ctx: PromptContext) -> list[str]:
    """``## Current Date & Time`` (only with a time zone; kept near the end for caching)."""
    if not ctx.timezone:
        return []
    lines = ["## Current Date & Time", f"Time zone: {ctx.timezone}"]
    if ctx.user_time:
        lines.append(f"Date: {ctx.user_time}")
    return lines


def runtime_line(info: RuntimeInfo) -> str:
    """OpenClaw's ``buildRuntimeLine``: the present parts joined by `` | ``.

    ``python=`` takes the place of OpenClaw's ``node=``; ``default_model=`` is left out when it
    is the model itself (a fallback attempt shows both); ``thinking=`` is always last.
    """
    parts: list[str] = []
    if info.agent_id:
        parts.append(f"agent={info.agent_id}")
    if info.host:
        parts.append(f"host={info.host}")
    if info.repo:
        parts.append(f"repo={info.repo}")
    if info.os:
        parts.append(f"os={info.os} ({info.arch})" if info.arch else f"os={info.os}")
    elif info.arch:
        parts.append(f"arch={info.arch}")
    if info.python:
        parts.append(f"python={info.python}")
    if info.model:
        parts.append(f"model={info.model}")
    if info.default_model and info.default_model != info.model:
        parts.append(f"default_model={info.default_model}")
    if info.shell:
        parts.append(f"shell={info.shell}")
    if info.channel:
        parts.append(f"channel={info.channel.strip().lower()}")
        caps = ",".join(info.capabilities) if info.capabilities else "none"
        parts.append(f"capabilities={caps}")
    parts.append(f"thinking={info.thinking or 'off'}")
    return "Runtime: " + " | ".join(parts)


def runtime_section(ctx: PromptContext) -> list[str]:
    """``## Runtime``: the runtime line and the reasoning level."""
    level = ctx.reasoning_level or "off"
    return [
        "## Runtime",
        runtime_line(ctx.runtime),
        f"Reasoning: {level} (hidden unless on/stream).",
    ]


@dataclass(frozen=True, slots=True)
class SectionSpec:
    """A named section, its function, and the modes that keep it."""

    name: str
    render: SectionFn
    modes: frozenset[PromptMode]


_FULL: Final[frozenset[PromptMode]] = frozenset({"full"})
_BOTH: Final[frozenset[PromptMode]] = frozenset({"full", "minimal"})

#: The built-in sections in prompt order (OpenClaw's order; [M] sections keep ``minimal``).
BUILTIN_SECTIONS: Final[tuple[SectionSpec, ...]] = (
    SectionSpec("identity", identity_section, _BOTH),
    SectionSpec("tooling", tooling_section, _BOTH),
    SectionSpec("tool_call_style", tool_call_style_section, _BOTH),
    SectionSpec("safety", safety_section, _BOTH),
    SectionSpec("skills", skills_section, _FULL),
    SectionSpec("memory", memory_section, _FULL),
    SectionSpec("time_hint", time_hint_section, _BOTH),
    SectionSpec("workspace", workspace_section, _BOTH),
    SectionSpec("sandbox", sandbox_section, _BOTH),
    SectionSpec("user_identity", user_identity_section, _FULL),
    SectionSpec("workspace_files", workspace_files_section, _BOTH),
    SectionSpec("reply_tags", reply_tags_section, _FULL),
    SectionSpec("messaging", messaging_section, _FULL),
    SectionSpec("user_prompt", user_prompt_section, _BOTH),
    SectionSpec("reasoning_format", reasoning_format_section, _BOTH),
    SectionSpec("project_context", project_context_section, _BOTH),
    SectionSpec("silent_replies", silent_replies_section, _FULL),
    SectionSpec("current_time", current_time_section, _BOTH),
    SectionSpec("runtime", runtime_section, _BOTH),
)
