"""The run's system prompt: ``prepare_run_prompt`` fed from the runtime, config and request.

Kept out of ``run.py`` so the orchestrator only asks for a ``RunPrompt``. Plugin sections come
from the ``register_prompt_sections`` registry; a section that raises while rendering is
recorded as a fault of its plugin (it lands on the run's events and ``RunResult.faults``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..containment import component_unit
from ..llm import Model
from ..prompt import PromptSectionOverride, RunPrompt, prepare_run_prompt
from .request import RunRequest

if TYPE_CHECKING:
    from ..config import RuntimeConfig
    from .services import RunHost

__all__ = ["resolve_run_prompt"]


def resolve_run_prompt(
    runtime: RunHost, config: RuntimeConfig, request: RunRequest, model: Model, thinking: str
) -> RunPrompt:
    """The ``RunPrompt`` of one run: ``RunRequest.system_prompt`` (else ``[agent]
    system_prompt``) as the user's section, the request's tools, plugin sections."""
    overrides = [
        PromptSectionOverride(
            reg.name, reg.component, reg.options.get("minimal"), plugin=reg.plugin
        )
        for reg in runtime.prompt_sections()
    ]

    def fault(section: PromptSectionOverride, exc: Exception) -> None:
        exc.add_note(f"raised by prompt section {section.name!r}")
        runtime.hooks.record_fault(
            section.plugin,
            "register_prompt_sections",
            exc,
            unit=component_unit("prompt_section", section.name),
        )

    agent = config.agent
    return prepare_run_prompt(
        agent,
        system_prompt=request.system_prompt
        if request.system_prompt is not None
        else agent.system_prompt,
        tools=request.tools,
        model=model.ref,
        default_model=agent.model,
        thinking=thinking,
        overrides=overrides,
        # only a plugin section can fail: no callback (and no closure kept) without one
        on_error=fault if overrides else None,
    )
