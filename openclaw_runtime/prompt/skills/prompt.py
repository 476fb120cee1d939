"""The Skills prompt block: ``<available_skills>`` as pi-coding-agent's
``formatSkillsForPrompt`` writes it, bounded like OpenClaw (150 skills, 30,000 characters).

Skills with ``disable-model-invocation: true`` are not listed. Paths under the home directory
are written ``~/...`` (``compactSkillPaths``). When the limits cut the list, the largest prefix
that fits is kept and a note says how many were left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final
from xml.sax.saxutils import escape

from .discovery import Skill

__all__ = ["MAX_SKILLS_IN_PROMPT", "MAX_SKILLS_PROMPT_CHARS", "format_skills_for_prompt"]

MAX_SKILLS_IN_PROMPT: Final = 150
MAX_SKILLS_PROMPT_CHARS: Final = 30_000

_HEADER: Final = (
    "The following skills provide specialized instructions for specific tasks.\n"
    "Use the read tool to load a skill's file when the task matches its description.\n"
    "When a skill file references a relative path, resolve it against the skill directory "
    "(the folder of its SKILL.md)."
)


def _location(path: Path, home: Path | None) -> str:
    if home is not None:
        try:
            return "~/" + path.relative_to(home).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def _render(skills: Sequence[Skill], home: Path | None) -> str:
    entries = [
        "  <skill>\n"
        f"    <name>{escape(s.name)}</name>\n"
        f"    <description>{escape(s.description)}</description>\n"
        f"    <location>{escape(_location(s.path, home))}</location>\n"
        "  </skill>"
        for s in skills
    ]
    return "\n".join([_HEADER, "", "<available_skills>", *entries, "</available_skills>"])


def format_skills_for_prompt(
    skills: Sequence[Skill],
    *,
    home: Path | None = None,
    max_skills: int = MAX_SKILLS_IN_PROMPT,
    max_chars: int = MAX_SKILLS_PROMPT_CHARS,
) -> str:
    """The skills block ("" when no skill may be offered to the model)."""
    visible = [s for s in skills if not s.disable_model_invocation]
    if not visible:
        return ""
    kept = visible[:max_skills]
    text = _render(kept, home)
    while len(kept) > 1 and len(text) > max_chars:
        kept = kept[:-1]
        text = _render(kept, home)
    if len(kept) < len(visible):
        text += f"\n(Skills truncated: included {len(kept)} of {len(visible)}.)"
    return text
