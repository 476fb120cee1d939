"""Skill discovery: ``SKILL.md`` folders from the configured skills dir and the workspace.

Sources, lowest precedence first (a later skill with the same ``name`` replaces an earlier
one, as in OpenClaw's ``loadSkillEntries``, spec 004 §3): the configured ``skills_dir``
(``extra``), ``<workspace>/.agents/skills`` (``agents-skills-project``), then
``<workspace>/skills`` (``workspace``). Per root: if ``<root>/skills/*/SKILL.md`` exists,
``<root>/skills`` is the root; a root with its own SKILL.md is one skill; otherwise its
sorted subfolders (not ``.*`` nor ``node_modules``) that hold a SKILL.md are skills. A skill
whose real path leaves its root, a SKILL.md over 256,000 bytes, or one whose front matter does
not parse is skipped and reported in ``SkillsLoad.problems`` (naming the file) and the log;
discovery goes on. OpenClaw's bundled, managed (``~/.openclaw/skills``) and personal
(``~/.agents/skills``) sources are not read: this runtime ships no skills and reads no home
directories on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ...redaction import package_logger
from .env import validate_env_overrides
from .frontmatter import FrontmatterError, parse_frontmatter

__all__ = [
    "MAX_CANDIDATES_PER_ROOT",
    "MAX_SKILLS_LOADED_PER_SOURCE",
    "MAX_SKILL_FILE_BYTES",
    "Skill",
    "SkillProblem",
    "SkillsLoad",
    "load_skill",
    "load_skills",
    "skill_roots",
]

logger = package_logger(logging.getLogger(__name__))

MAX_CANDIDATES_PER_ROOT: Final = 300
MAX_SKILLS_LOADED_PER_SOURCE: Final = 200
MAX_SKILL_FILE_BYTES: Final = 256_000
SKILL_FILE: Final = "SKILL.md"


@dataclass(frozen=True, slots=True)
class Skill:
    """One loaded skill: its front matter facts and where it came from."""

    name: str
    description: str
    path: Path
    source: str
    env: Mapping[str, str] = field(default_factory=dict)
    disable_model_invocation: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        """The skill's folder (relative paths in SKILL.md resolve against it)."""
        return self.path.parent


@dataclass(frozen=True, slots=True)
class SkillProblem:
    """A SKILL.md that was skipped, and why."""

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(slots=True)
class SkillsLoad:
    """What discovery found: skills by precedence-resolved name, and the skipped files."""

    skills: list[Skill] = field(default_factory=list)
    problems: list[SkillProblem] = field(default_factory=list)


def skill_roots(workspace: Path | None, skills_dir: Path | None) -> list[tuple[Path, str]]:
    """The ``(root, source)`` pairs to scan, lowest precedence first."""
    roots: list[tuple[Path, str]] = []
    if skills_dir is not None:
        roots.append((skills_dir, "extra"))
    if workspace is not None:
        roots.append((workspace / ".agents" / "skills", "agents-skills-project"))
        roots.append((workspace / "skills", "workspace"))
    return roots


def _str_field(fields: Mapping[str, Any], key: str) -> str:
    value = fields.get(key, "")
    if not isinstance(value, str):
        raise FrontmatterError(f"{key!r} must be a string, got {type(value).__name__}")
    return value.strip()


def load_skill(skill_file: Path, source: str) -> Skill:
    """Parse one SKILL.md; raises ``FrontmatterError`` / ``OSError`` naming what is wrong."""
    size = skill_file.stat().st_size
    if size > MAX_SKILL_FILE_BYTES:
        raise FrontmatterError(f"SKILL.md is {size} bytes, over the {MAX_SKILL_FILE_BYTES} limit")
    fields, _body = parse_frontmatter(skill_file.read_bytes().decode("utf-8", errors="replace"))
    name = _str_field(fields, "name") or skill_file.parent.name
    description = _str_field(fields, "description")
    if not description:
        raise FrontmatterError("front matter has no 'description'")
    env = fields.get("env", {})
    if not isinstance(env, Mapping):
        raise FrontmatterError("'env' must be a mapping of NAME: value")
    metadata = fields.get("metadata", {})
    if not isinstance(metadata, Mapping):
        raise FrontmatterError("'metadata' must be a JSON object")
    disable = fields.get("disable-model-invocation", False)
    if not isinstance(disable, bool):
        raise FrontmatterError("'disable-model-invocation' must be true or false")
    try:
        overrides = validate_env_overrides(env)
    except ValueError as exc:
        raise FrontmatterError(str(exc)) from None
    return Skill(name, description, skill_file, source, overrides, disable, dict(metadata))


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def _candidates(root: Path) -> list[Path]:
    nested = root / "skills"
    if nested.is_dir() and any((d / SKILL_FILE).is_file() for d in nested.iterdir() if d.is_dir()):
        root = nested
    if (root / SKILL_FILE).is_file():
        return [root / SKILL_FILE]
    folders = sorted(
        d
        for d in root.iterdir()
        if d.is_dir() and not d.name.startswith(".") and d.name != "node_modules"
    )
    return [d / SKILL_FILE for d in folders[:MAX_CANDIDATES_PER_ROOT] if (d / SKILL_FILE).is_file()]


def load_skills(roots: Sequence[tuple[Path, str]]) -> SkillsLoad:
    """Discover and parse every skill under ``roots`` (lowest precedence first)."""
    result = SkillsLoad()
    by_name: dict[str, Skill] = {}
    for root, source in roots:
        if not root.is_dir():
            continue
        loaded = 0
        for skill_file in _candidates(root):
            if loaded >= MAX_SKILLS_LOADED_PER_SOURCE:
                break
            if not _inside(skill_file, root):
                problem = SkillProblem(skill_file, f"resolves outside its skills root {root}")
            else:
                try:
                    skill = load_skill(skill_file, source)
                except (FrontmatterError, OSError) as exc:
                    problem = SkillProblem(skill_file, f"skipped: {exc}")
                else:
                    by_name.pop(skill.name, None)  # a later source wins, at its own position
                    by_name[skill.name] = skill
                    loaded += 1
                    continue
            logger.warning("skill %s", problem)
            result.problems.append(problem)
    result.skills = list(by_name.values())
    return result
