"""The system prompt: named sections, prompt modes, bootstrap files and skills.

``build_agent_system_prompt(ctx)`` assembles the sections of a ``PromptContext`` for its
``prompt_mode`` (OpenClaw's ``buildAgentSystemPrompt``); ``prepare_run_prompt`` fills the
context for one run from the ``[agent]`` settings and the workspace. Plugins add or replace
sections through the ``register_prompt_sections`` hook. See docs/prompt.md.
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .bootstrap import (  # noqa: I001 (packed: a face has at most 100 lines)
        build_bootstrap_context_files, load_bootstrap_files, trim_bootstrap_content,
    )
    from .builder import (
        PROMPT_MODES, PromptSectionOverride, build_agent_system_prompt, section_names,
    )
    from .context import ContextFile, PromptContext, PromptMode, RuntimeInfo, SandboxInfo, ToolLine
    from .plan import RunPrompt, prepare_run_prompt, system_timezone, tool_lines
    from .sections import BUILTIN_SECTIONS, IDENTITY_LINE, runtime_line
    from .settings import PromptSettings, SandboxSettings
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "bootstrap": "build_bootstrap_context_files load_bootstrap_files trim_bootstrap_content",
    "builder": "PROMPT_MODES PromptSectionOverride build_agent_system_prompt section_names",
    "context": "ContextFile PromptContext PromptMode RuntimeInfo SandboxInfo ToolLine",
    "plan": "RunPrompt prepare_run_prompt system_timezone tool_lines",
    "sections": "BUILTIN_SECTIONS IDENTITY_LINE runtime_line",
    "settings": "PromptSettings SandboxSettings",
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "BUILTIN_SECTIONS", "IDENTITY_LINE", "PROMPT_MODES", "ContextFile", "PromptContext",
    "PromptMode", "PromptSectionOverride", "PromptSettings", "RunPrompt", "RuntimeInfo",
    "SandboxInfo", "SandboxSettings", "ToolLine", "build_agent_system_prompt",
    "build_bootstrap_context_files", "load_bootstrap_files", "prepare_run_prompt", "runtime_line",
    "section_names", "system_timezone", "tool_lines", "trim_bootstrap_content",
]  # fmt: skip
