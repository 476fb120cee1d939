"""``prepare_run_prompt``: the system prompt and skill environment of one run.

The runner calls it once per run with the configured ``[agent]`` keys, the request's
``system_prompt`` and tools, and the plugins' sections; the result renders the prompt for the
model of each attempt (the Runtime line names it) and carries the skill environment the
attempt applies (``skills.env.skill_env_scope``). Reading the workspace (bootstrap files,
skills) happens here, once per run; everything else is the pure builder.
"""

from __future__ import annotations

import functools
import os
import platform
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from ..llm import Tool
from .bootstrap import load_bootstrap_files
from .builder import PromptSectionOverride, build_agent_system_prompt
from .context import PromptContext, RuntimeInfo, SandboxInfo, ToolLine
from .refusal_scrub import resolve_attempt_base_prompt
from .settings import PromptSettings
from .skills import Skill, SkillProblem, format_skills_for_prompt, load_skills, skill_roots

__all__ = ["RunPrompt", "prepare_run_prompt", "system_timezone", "tool_lines"]


#: System prompts built without plugin sections, by their whole context: the builder is a
#: pure function of it then, and runs with the same configuration, tools, model and day
#: (every run of a service, mostly) share one build instead of one each.
_BUILT: dict[PromptContext, str] = {}
_BUILT_MAX = 256


@dataclass(frozen=True, slots=True)
class RunPrompt:
    """One run's prompt facts: ``render(model)`` gives the system prompt for an attempt."""

    context: PromptContext
    overrides: tuple[PromptSectionOverride, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    skills: tuple[Skill, ...] = ()
    problems: tuple[SkillProblem, ...] = ()
    on_error: Callable[[PromptSectionOverride, Exception], None] | None = None
    _rendered: dict[tuple[str | None, tuple[ToolLine, ...] | None], str] = field(
        default_factory=dict, repr=False, compare=False
    )

    def render(self, model: str | None = None, tools: Sequence[Tool] | None = None) -> str:
        """The system prompt, with ``model`` (``provider/id``) on the Runtime line and
        ``tools`` (the ones the tool policy offers this model; default the run's tools) in
        the Tooling section; built once per model and tool set, so every attempt on one
        model sends the same prompt (and a failing plugin section is reported once)."""
        ctx = self.context
        model_key = None if model is None or model == ctx.runtime.model else model
        lines = None if tools is None else tool_lines(tools)
        key = (model_key, None if lines is None or lines == ctx.tools else lines)
        cached = self._rendered.get(key)
        if cached is not None:
            return cached
        if model_key is not None:
            ctx = replace(ctx, runtime=replace(ctx.runtime, model=model_key))
        if key[1] is not None:
            ctx = replace(ctx, tools=key[1])
        text = _BUILT.get(ctx) if not self.overrides else None
        if text is None:
            text = build_agent_system_prompt(ctx, overrides=self.overrides, on_error=self.on_error)
            text = resolve_attempt_base_prompt((ctx.runtime.model or "").split("/", 1)[0], text)
            if not self.overrides:
                if len(_BUILT) >= _BUILT_MAX:
                    _BUILT.clear()
                _BUILT[ctx] = text
        self._rendered[key] = text
        return text

    @property
    def system_prompt(self) -> str:
        """The system prompt for the run's primary model."""
        return self.render()


def tool_lines(tools: Sequence[Tool]) -> tuple[ToolLine, ...]:
    """``(name, one-line summary)`` of each tool: the first non-blank line of its description."""
    out = []
    for tool in tools:
        summary = next(
            (ln.strip() for ln in (tool.description or "").splitlines() if ln.strip()), ""
        )
        out.append(ToolLine(tool.name, summary))
    return tuple(out)


#: ``system_timezone``'s answers by ``$TZ`` value (a handful at most).
_TIMEZONE_MEMO: dict[str, str] = {}


def system_timezone() -> str:
    """The system's IANA time zone: ``$TZ``, else ``/etc/localtime``'s target, else UTC.

    Every run asks; the answer is remembered per value of ``$TZ`` (resolving the link and
    loading the zone each time was a measurable part of a short run), so a change of
    ``$TZ`` is seen at once and a change of ``/etc/localtime`` at the next process start."""
    env = os.environ.get("TZ", "")
    known = _TIMEZONE_MEMO.get(env)
    if known is None:
        if len(_TIMEZONE_MEMO) >= 64:
            _TIMEZONE_MEMO.clear()
        known = _TIMEZONE_MEMO[env] = _resolve_system_timezone(env)
    return known


def _resolve_system_timezone(env: str) -> str:
    candidates = [env.lstrip(":")]
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for name in candidates:
        if not name:
            continue
        try:
            ZoneInfo(name)
        except (ValueError, KeyError, OSError):
            continue
        return name
    return "UTC"


@functools.cache
def _platform_facts() -> tuple[str | None, str | None, str]:
    """The OS, the machine and the Python version: fixed for the process, asked once."""
    system = f"{platform.system()} {platform.release()}".strip() or None
    return system, platform.machine() or None, platform.python_version()


def _runtime_info(
    settings: PromptSettings, *, model: str, default_model: str | None, thinking: str
) -> RuntimeInfo:
    shell = os.environ.get("SHELL", "")
    system, arch, python = _platform_facts()
    return RuntimeInfo(
        agent_id=settings.agent_id,
        host=socket.gethostname() or None,
        os=system,
        arch=arch,
        python=python,
        model=model,
        default_model=default_model,
        shell=os.path.basename(shell.rstrip("/")) if shell else None,
        thinking=thinking,
    )


def _skills(settings: PromptSettings) -> tuple[list[Skill], list[SkillProblem], dict[str, str]]:
    workspace = settings.workspace.expanduser() if settings.workspace else None
    skills_dir = settings.skills_dir.expanduser() if settings.skills_dir else None
    loaded = load_skills(skill_roots(workspace, skills_dir))
    skills = loaded.skills
    if settings.skills is not None:
        wanted = set(settings.skills)
        skills = [s for s in skills if s.name in wanted]
    env: dict[str, str] = {}
    for skill in skills:
        env.update(skill.env)
        env.update(settings.skill_env.get(skill.name, {}))
    return skills, loaded.problems, env


def prepare_run_prompt(
    settings: PromptSettings,
    *,
    system_prompt: str,
    tools: Sequence[Tool],
    model: str,
    default_model: str | None = None,
    thinking: str = "off",
    overrides: Sequence[PromptSectionOverride] = (),
    on_error: Callable[[PromptSectionOverride, Exception], None] | None = None,
    now: datetime | None = None,
) -> RunPrompt:
    """Read the workspace and build the run's ``RunPrompt``.

    ``system_prompt`` (config ``[agent] system_prompt`` or ``RunRequest.system_prompt``) is
    the user's own section of the built prompt; ``tools`` the tools the model is offered.
    """
    mode = settings.prompt_mode
    workspace = settings.workspace.expanduser() if settings.workspace else None
    skills, problems, env = _skills(settings) if mode != "none" else ([], [], {})
    timezone = settings.timezone or system_timezone()
    moment = (now or datetime.now(tz=ZoneInfo("UTC"))).astimezone(ZoneInfo(timezone))
    files = (
        load_bootstrap_files(
            workspace,
            names=settings.bootstrap_files,
            mode=mode,
            max_chars=settings.bootstrap_max_chars,
            total_max_chars=settings.bootstrap_total_max_chars,
        )
        if workspace is not None
        else []
    )
    box = settings.sandbox
    context = PromptContext(
        prompt_mode=mode,
        tools=tool_lines(tools),
        # the home directory only shortens skill paths: not looked up when there are none
        skills_prompt=format_skills_for_prompt(skills, home=Path.home()) if skills else "",
        workspace_dir=str(workspace) if workspace is not None else None,
        sandbox=SandboxInfo(box.enabled, box.workspace, box.access, box.mount, box.elevated)
        if box is not None
        else None,
        owner_numbers=tuple(settings.owner_numbers),
        timezone=timezone,
        user_time=moment.strftime("%A, %B %d, %Y"),
        reply_tags=settings.reply_tags,
        extra_system_prompt=system_prompt,
        reasoning_tag_hint=settings.reasoning_tags,
        reasoning_level=thinking,
        memory_citations=settings.memory_citations,
        context_files=tuple(files),
        runtime=_runtime_info(
            settings, model=model, default_model=default_model, thinking=thinking
        ),
    )
    return RunPrompt(context, tuple(overrides), env, tuple(skills), tuple(problems), on_error)
