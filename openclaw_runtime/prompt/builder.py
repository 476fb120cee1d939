"""``build_agent_system_prompt``: assemble the named sections for a prompt mode.

Assembly is OpenClaw's: every section's lines go into one list, empty lines are dropped, and
the rest are joined by newlines. Plugins add or replace sections by name (the
``register_prompt_sections`` hook hands them in as ``PromptSectionOverride``-s): a built-in
name replaces that section in place (keeping its modes unless the plugin says otherwise); a
new name is inserted before ``current_time`` and ``runtime``, which stay last so the stable
part of the prompt is a cacheable prefix. A plugin section that raises is skipped and
reported through ``on_error``; a replaced built-in falls back to the built-in text (so a broken
plugin never removes e.g. the Safety section), an added one is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from .context import PromptContext, PromptMode
from .sections import BUILTIN_SECTIONS, IDENTITY_LINE

__all__ = [
    "PROMPT_MODES",
    "PromptSectionOverride",
    "SectionRender",
    "build_agent_system_prompt",
    "section_names",
]

PROMPT_MODES: tuple[PromptMode, ...] = ("full", "minimal", "none")

#: What a plugin section returns: text, lines, or None / "" to leave the section out.
SectionRender: TypeAlias = Callable[[PromptContext], "str | Sequence[str] | None"]

_TAIL = ("current_time", "runtime")


@dataclass(frozen=True, slots=True)
class PromptSectionOverride:
    """A plugin's section: ``name`` (a built-in name replaces it), its render function,
    ``minimal`` (also kept in minimal mode; default: the replaced section's modes, else full
    only) and the plugin that registered it."""

    name: str
    render: SectionRender
    minimal: bool | None = None
    plugin: str | None = None


@dataclass(frozen=True, slots=True)
class _Slot:
    name: str
    render: SectionRender
    minimal: bool
    plugin: str | None
    fallback: SectionRender | None = None


def section_names() -> list[str]:
    """The built-in section names in prompt order."""
    return [spec.name for spec in BUILTIN_SECTIONS]


def _slots(overrides: Sequence[PromptSectionOverride]) -> list[_Slot]:
    by_name = {o.name: o for o in overrides}
    slots: list[_Slot] = []
    for spec in BUILTIN_SECTIONS:
        override = by_name.pop(spec.name, None)
        keeps_minimal = "minimal" in spec.modes
        if override is None:
            slots.append(_Slot(spec.name, spec.render, keeps_minimal, None))
        else:
            minimal = keeps_minimal if override.minimal is None else override.minimal
            slots.append(_Slot(spec.name, override.render, minimal, override.plugin, spec.render))
    tail_at = next(i for i, slot in enumerate(slots) if slot.name == _TAIL[0])
    added = [_Slot(o.name, o.render, bool(o.minimal), o.plugin) for o in by_name.values()]
    return slots[:tail_at] + added + slots[tail_at:]


def _lines(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not all(isinstance(line, str) for line in value):
        raise TypeError("a prompt section must return a str, a sequence of str, or None")
    return list(value)


def build_agent_system_prompt(
    ctx: PromptContext,
    *,
    overrides: Sequence[PromptSectionOverride] = (),
    on_error: Callable[[PromptSectionOverride, Exception], None] | None = None,
) -> str:
    """The system prompt for ``ctx`` (``ctx.prompt_mode``: ``full``, ``minimal`` or ``none``).

    ``none`` gives the identity line only, followed by the configured ``system_prompt`` when
    there is one (OpenClaw drops it; here an explicitly configured prompt is never silently
    ignored).
    """
    if ctx.prompt_mode not in PROMPT_MODES:
        raise ValueError(
            f"prompt_mode must be one of {', '.join(PROMPT_MODES)}, got {ctx.prompt_mode!r}"
        )
    if ctx.prompt_mode == "none":
        extra = ctx.extra_system_prompt.strip()
        return f"{IDENTITY_LINE}\n{extra}" if extra else IDENTITY_LINE
    by_name = {o.name: o for o in overrides}
    lines: list[str] = []
    for slot in _slots(overrides):
        if ctx.prompt_mode == "minimal" and not slot.minimal:
            continue
        try:
            lines += _lines(slot.render(ctx))
        except Exception as exc:
            override = by_name.get(slot.name)
            if override is None:  # a built-in section failing is a bug: let it surface
                raise
            if on_error is not None:
                on_error(override, exc)
            if slot.fallback is not None:
                lines += _lines(slot.fallback(ctx))
    return "\n".join(line for line in lines if line)
