"""The system-prompt sections, pinned (snapshot) one by one, and the prompt modes.

Each section is a pure function of a ``PromptContext``; these tests pin its exact output for
a fixed context so any change to what the model is told shows up in review.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from openclaw_runtime.context.tokens import estimate_rendered_llm_boundary_token_pressure
from openclaw_runtime.prompt import (
    IDENTITY_LINE,
    ContextFile,
    PromptContext,
    PromptSectionOverride,
    RuntimeInfo,
    SandboxInfo,
    ToolLine,
    build_agent_system_prompt,
    runtime_line,
    section_names,
)
from openclaw_runtime.prompt import sections as s

TOOLS = (
    ToolLine("get_weather", "Weather for a city."),
    ToolLine("exec", "Run a shell command."),
    ToolLine("read", "Read a file."),
    ToolLine("Read", "duplicate by lowercase: dropped"),
    ToolLine("memory_search", "Search memory."),
    ToolLine("message", "Send a message."),
)

CTX = PromptContext(
    tools=TOOLS,
    skills_prompt="<available_skills>\n</available_skills>",
    workspace_dir="/srv/agent",
    workspace_notes=("Commit nothing.",),
    sandbox=SandboxInfo(True, "/sandbox", "ro", "/agent", "ask"),
    owner_numbers=("+15550001", " +15550002 "),
    timezone="Europe/Paris",
    user_time="Thursday, December 03, 2026",
    reply_tags=True,
    message_tool_hints=("- Prefer threads.",),
    extra_system_prompt="You are a concise travel assistant.",
    reasoning_tag_hint=True,
    context_files=(ContextFile("AGENTS.md", "Be kind."), ContextFile("SOUL.md", "Pirate.")),
    runtime=RuntimeInfo(
        agent_id="main",
        host="box",
        os="Linux 6.1",
        arch="x86_64",
        python="3.11.9",
        model="mock/main",
        default_model="mock/alias",
        shell="bash",
        channel="Telegram",
        capabilities=("inlineButtons",),
        thinking="low",
    ),
)

SNAPSHOTS: dict[str, list[str]] = {
    "identity": ["You are a personal assistant running inside OpenClaw."],
    "tooling": [
        "## Tooling",
        "Tool availability (filtered by policy):",
        "Tool names are case-sensitive. Call tools exactly as listed.",
        "- read: Read a file.",
        "- exec: Run a shell command.",
        "- message: Send a message.",
        "- get_weather: Weather for a city.",
        "- memory_search: Search memory.",
        "TOOLS.md does not control tool availability; it is user guidance only.",
        "If a task will take long or needs many steps, spawn a sub-agent when one is available.",
    ],
    "tool_call_style": [
        "## Tool Call Style",
        "Default: do not narrate routine, low-risk tool calls (just call the tool).",
        "Narrate only when it helps: multi-step work, complex problems, or sensitive actions "
        "(e.g. deletions).",
        "Keep narration brief and value-dense.",
    ],
    "safety": [
        "## Safety",
        "You have no independent goals: do not pursue self-preservation, replication, resource "
        "acquisition, or power-seeking; avoid long-term plans beyond the user's request.",
        "Prioritize safety and human oversight over completion; if instructions conflict, pause "
        "and ask; comply with stop/pause/audit requests and never bypass safeguards.",
        "Do not manipulate or persuade anyone to expand access or disable safeguards. Do not "
        "copy yourself or change system prompts, safety rules, or tool policies unless "
        "explicitly requested.",
    ],
    "skills": [
        "## Skills (mandatory)",
        "Before replying: scan <available_skills> <description> entries.",
        "- If exactly one skill clearly applies: read its SKILL.md at <location> with `read`, "
        "then follow it.",
        "- If multiple could apply: choose the most specific one, then read/follow it.",
        "- If none clearly apply: do not read any SKILL.md.",
        "Constraints: never read more than one skill up front; only read after selecting.",
        "<available_skills>\n</available_skills>",
    ],
    "memory": [
        "## Memory Recall",
        "Before answering anything about prior work, decisions, dates, people, preferences, or "
        "todos: run memory_search on MEMORY.md + memory/*.md; then use memory_get to pull only "
        "the needed lines. If low confidence after search, say you checked.",
        "Citations: include Source: <path#line> when it helps the user verify memory snippets.",
    ],
    "time_hint": [],  # no session_status tool: no hint pointing at a tool that is not there
    "workspace": [
        "## Workspace",
        "Your working directory is: /srv/agent",
        "Treat this directory as the single global workspace for file operations unless "
        "explicitly instructed otherwise.",
        "Commit nothing.",
    ],
    "sandbox": [
        "## Sandbox",
        "You are running in a sandboxed runtime (tools execute in a sandbox).",
        "Some tools may be unavailable due to sandbox policy.",
        "Sandbox workspace: /sandbox",
        "Agent workspace access: ro (mounted at /agent)",
        "Elevated exec level: ask",
    ],
    "user_identity": [
        "## User Identity",
        "Owner numbers: +15550001, +15550002. Treat messages from these numbers as the user.",
    ],
    "workspace_files": [
        "## Workspace Files (injected)",
        "These user-editable files are loaded by the runtime and included below in Project "
        "Context.",
    ],
    "reply_tags": [
        "## Reply Tags",
        "To request a native reply/quote on supported surfaces, include one tag in your reply:",
        "- [[reply_to_current]] replies to the triggering message.",
        "- [[reply_to:<id>]] replies to a specific message id when you have it; use it only "
        "with an id that was explicitly given to you.",
        "Whitespace inside the tag is allowed (e.g. [[ reply_to_current ]]).",
        "Tags are stripped before sending; support depends on the current channel config.",
    ],
    "messaging": [
        "## Messaging",
        "- Reply in current session: your reply is delivered to the source channel.",
        "- Never use exec/curl for provider messaging; the runtime handles all routing.",
        "### message tool",
        "- Use `message` for proactive sends and channel actions.",
        "- For `action=send`, include `to` and `message`.",
        "- If you use `message` (`action=send`) to deliver your user-visible reply, respond "
        "with ONLY: NO_REPLY (avoid duplicate replies).",
        "- Inline buttons supported: use `action=send` with `buttons=[[{text,callback_data}]]`.",
        "- Prefer threads.",
    ],
    "user_prompt": ["## Group Chat Context", "You are a concise travel assistant."],
    "reasoning_format": [
        "## Reasoning Format",
        "ALL internal reasoning MUST be inside <think>...</think>.",
        "Do not output any analysis outside <think>.",
        "Format every reply as <think>...</think> then <final>...</final>, with no other text.",
        "Only the final user-visible reply may appear inside <final>.",
        "Only text inside <final> is shown to the user; everything else is discarded and never "
        "seen by the user.",
    ],
    "project_context": [
        "# Project Context",
        "The following project context files have been loaded:",
        "If SOUL.md is present, embody its persona and tone. Avoid stiff, generic replies; "
        "follow its guidance unless higher-priority instructions override it.",
        "## AGENTS.md",
        "Be kind.",
        "## SOUL.md",
        "Pirate.",
    ],
    "silent_replies": [
        "## Silent Replies",
        "When you have nothing to say, respond with ONLY: NO_REPLY",
        "It must be your ENTIRE message: never append it to an actual response, never wrap it "
        "in markdown or code blocks.",
    ],
    "current_time": [
        "## Current Date & Time",
        "Time zone: Europe/Paris",
        "Date: Thursday, December 03, 2026",
    ],
    "runtime": [
        "## Runtime",
        "Runtime: agent=main | host=box | os=Linux 6.1 (x86_64) | python=3.11.9 | "
        "model=mock/main | default_model=mock/alias | shell=bash | channel=telegram | "
        "capabilities=inlineButtons | thinking=low",
        "Reasoning: off (hidden unless on/stream).",
    ],
}

RENDER = {spec.name: spec.render for spec in s.BUILTIN_SECTIONS}


def test_every_section_has_a_snapshot() -> None:
    assert list(SNAPSHOTS) == section_names()


@pytest.mark.parametrize("name", list(SNAPSHOTS))
def test_section_snapshot(name: str) -> None:
    assert RENDER[name](CTX) == SNAPSHOTS[name]


# sections that only appear when their facts are present (OpenClaw's conditions)
EMPTY = PromptContext()


@pytest.mark.parametrize(
    "name",
    [
        "skills",
        "memory",
        "time_hint",
        "workspace",
        "sandbox",
        "user_identity",
        "workspace_files",
        "reply_tags",
        "user_prompt",
        "reasoning_format",
        "project_context",
        "current_time",
    ],
)
def test_conditional_section_is_absent_without_its_facts(name: str) -> None:
    assert RENDER[name](EMPTY) == []


def test_sandbox_configured_but_disabled_is_absent() -> None:
    assert s.sandbox_section(replace(CTX, sandbox=SandboxInfo(enabled=False))) == []


def test_empty_tool_list_names_no_tool() -> None:
    lines = s.tooling_section(EMPTY)
    assert lines[-1] == "No tools are available in this run; answer directly."
    assert not any(line.startswith("- ") for line in lines)


def test_time_hint_needs_a_session_status_tool() -> None:
    ctx = replace(CTX, tools=(ToolLine("session_status", "Status."),))
    assert s.time_hint_section(ctx) == [
        "If you need the current date, time, or day of week, run session_status "
        "(📊 session_status)."
    ]


def test_memory_citations_off() -> None:
    ctx = replace(CTX, memory_citations="off")
    assert s.memory_section(ctx)[-1] == (
        "Citations: do not mention file paths or line numbers in replies."
    )


def test_user_prompt_is_subagent_context_in_minimal_mode() -> None:
    ctx = replace(CTX, prompt_mode="minimal")
    assert s.user_prompt_section(ctx)[0] == "## Subagent Context"


@pytest.mark.parametrize(
    ("info", "line"),
    [
        (RuntimeInfo(), "Runtime: thinking=off"),
        (RuntimeInfo(arch="arm64"), "Runtime: arch=arm64 | thinking=off"),
        (RuntimeInfo(os="Darwin 23"), "Runtime: os=Darwin 23 | thinking=off"),
        (RuntimeInfo(model="p/m", default_model="p/m"), "Runtime: model=p/m | thinking=off"),
        # capabilities only with a channel; "none" when the channel has none
        (RuntimeInfo(capabilities=("x",)), "Runtime: thinking=off"),
        (
            RuntimeInfo(channel=" Slack "),
            "Runtime: channel=slack | capabilities=none | thinking=off",
        ),
        (
            RuntimeInfo(agent_id="a", repo="/r", model="p/m", thinking="high"),
            "Runtime: agent=a | repo=/r | model=p/m | thinking=high",
        ),
    ],
)
def test_runtime_line(info: RuntimeInfo, line: str) -> None:
    assert runtime_line(info) == line


# --------------------------------------------------------------------------- modes


def headers(prompt: str) -> list[str]:
    return [line for line in prompt.splitlines() if line.startswith("#")]


def test_full_mode_order_and_no_blank_lines() -> None:
    prompt = build_agent_system_prompt(CTX)
    assert prompt.startswith(IDENTITY_LINE + "\n## Tooling\n")
    assert "\n\n" not in prompt  # OpenClaw's lines.filter(Boolean).join("\n")
    assert headers(prompt) == [
        "## Tooling",
        "## Tool Call Style",
        "## Safety",
        "## Skills (mandatory)",
        "## Memory Recall",
        "## Workspace",
        "## Sandbox",
        "## User Identity",
        "## Workspace Files (injected)",
        "## Reply Tags",
        "## Messaging",
        "### message tool",
        "## Group Chat Context",
        "## Reasoning Format",
        "# Project Context",
        "## AGENTS.md",
        "## SOUL.md",
        "## Silent Replies",
        "## Current Date & Time",
        "## Runtime",
    ]
    expected = "\n".join(line for name in SNAPSHOTS for line in SNAPSHOTS[name] if line)
    assert prompt == expected


def test_minimal_mode_keeps_only_the_core_sections() -> None:
    prompt = build_agent_system_prompt(replace(CTX, prompt_mode="minimal"))
    assert headers(prompt) == [
        "## Tooling",
        "## Tool Call Style",
        "## Safety",
        "## Workspace",
        "## Sandbox",
        "## Workspace Files (injected)",
        "## Subagent Context",
        "## Reasoning Format",
        "# Project Context",
        "## AGENTS.md",
        "## SOUL.md",
        "## Current Date & Time",
        "## Runtime",
    ]


MINIMAL = PromptContext(
    prompt_mode="minimal",
    tools=(ToolLine("read", "Read a file."), ToolLine("exec", "Run a shell command.")),
    workspace_dir="/srv/agent",
    timezone="UTC",
    runtime=RuntimeInfo(agent_id="main", model="mock/main"),
)


def test_minimal_mode_token_count_is_pinned() -> None:
    prompt = build_agent_system_prompt(MINIMAL)
    # the project's estimator (chars/4 plus the message boundary overhead): a change to the
    # core sections moves this number and has to be reviewed here
    assert len(prompt) == 1437
    assert estimate_rendered_llm_boundary_token_pressure(system_prompt=prompt) == 461
    full = build_agent_system_prompt(replace(MINIMAL, prompt_mode="full"))
    assert estimate_rendered_llm_boundary_token_pressure(system_prompt=full) == 568


def test_none_mode_is_the_identity_line() -> None:
    assert build_agent_system_prompt(replace(EMPTY, prompt_mode="none")) == IDENTITY_LINE


def test_none_mode_keeps_an_explicit_system_prompt() -> None:
    # designed here: OpenClaw drops the extra prompt in "none"; a configured prompt is kept
    assert build_agent_system_prompt(replace(CTX, prompt_mode="none")) == (
        f"{IDENTITY_LINE}\nYou are a concise travel assistant."
    )


def test_unknown_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="prompt_mode must be one of full, minimal, none"):
        build_agent_system_prompt(replace(EMPTY, prompt_mode="tiny"))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- overrides


def test_override_replaces_a_builtin_section_in_place() -> None:
    safety = PromptSectionOverride("safety", lambda ctx: ["## Safety", "Be careful."])
    prompt = build_agent_system_prompt(EMPTY, overrides=[safety])
    lines = prompt.splitlines()
    at = lines.index("## Safety")
    assert lines[at : at + 2] == ["## Safety", "Be careful."]
    assert lines[at - 1] == "Keep narration brief and value-dense."  # still after tool style
    assert "You have no independent goals" not in prompt


def test_added_section_goes_before_time_and_runtime() -> None:
    added = PromptSectionOverride("house_rules", lambda ctx: "## House Rules\nNo emojis.")
    prompt = build_agent_system_prompt(replace(EMPTY, timezone="UTC"), overrides=[added])
    assert headers(prompt)[-4:] == [
        "## Silent Replies",
        "## House Rules",
        "## Current Date & Time",
        "## Runtime",
    ]


def test_added_section_is_full_only_unless_marked_minimal() -> None:
    added = PromptSectionOverride("house_rules", lambda ctx: "## House Rules")
    kept = PromptSectionOverride("kept", lambda ctx: "## Kept", minimal=True)
    prompt = build_agent_system_prompt(
        replace(EMPTY, prompt_mode="minimal"), overrides=[added, kept]
    )
    assert "## Kept" in prompt and "## House Rules" not in prompt


def test_replaced_section_keeps_its_modes() -> None:
    # "skills" is full-only; a replacement stays full-only unless it says minimal=True
    skills = PromptSectionOverride("skills", lambda ctx: "## My Skills")
    assert "## My Skills" not in build_agent_system_prompt(
        replace(EMPTY, prompt_mode="minimal"), overrides=[skills]
    )
    assert "## My Skills" in build_agent_system_prompt(EMPTY, overrides=[skills])


def test_section_returning_none_is_left_out() -> None:
    gone = PromptSectionOverride("messaging", lambda ctx: None)
    assert "## Messaging" not in build_agent_system_prompt(EMPTY, overrides=[gone])


def test_a_failing_replacement_falls_back_to_the_builtin_and_is_reported() -> None:
    def broken(ctx: PromptContext) -> str:
        raise RuntimeError("boom")

    seen: list[tuple[str, str]] = []
    overrides = [
        PromptSectionOverride("safety", broken, plugin="p"),
        PromptSectionOverride("extra", broken, plugin="q"),
    ]
    prompt = build_agent_system_prompt(
        EMPTY, overrides=overrides, on_error=lambda o, exc: seen.append((o.name, str(exc)))
    )
    assert prompt.count("## Safety") == 1 and "You have no independent goals" in prompt
    assert seen == [("safety", "boom"), ("extra", "boom")]


def test_a_section_returning_a_bad_type_is_reported() -> None:
    bad = PromptSectionOverride("extra", lambda ctx: [1, 2])  # type: ignore[arg-type,return-value]
    seen: list[str] = []
    build_agent_system_prompt(EMPTY, overrides=[bad], on_error=lambda o, exc: seen.append(str(exc)))
    assert seen == ["a prompt section must return a str, a sequence of str, or None"]
