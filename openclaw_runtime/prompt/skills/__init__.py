"""Skills: ``SKILL.md`` folders discovered in the workspace, listed in the prompt, and the
environment overrides they declare, scoped to one attempt (see ``env``)."""

import typing as _typing

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .discovery import (  # noqa: I001 (packed: a face has at most 100 lines)
        Skill, SkillProblem, SkillsLoad, load_skill, load_skills, skill_roots,
    )
    from .env import current_skill_env, skill_env_scope, subprocess_env, validate_env_overrides
    from .frontmatter import FrontmatterError, parse_frontmatter
    from .prompt import format_skills_for_prompt
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "discovery": "Skill SkillProblem SkillsLoad load_skill load_skills skill_roots",
    "env": "current_skill_env skill_env_scope subprocess_env validate_env_overrides",
    "frontmatter": "FrontmatterError parse_frontmatter",
    "prompt": "format_skills_for_prompt",
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names.split()}


def __getattr__(name: str) -> _typing.Any:
    """Import the module behind a public name on first use, then keep the name here."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module  # lazy: start-up time

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "FrontmatterError", "Skill", "SkillProblem", "SkillsLoad", "current_skill_env",
    "format_skills_for_prompt", "load_skill", "load_skills", "parse_frontmatter", "skill_env_scope",
    "skill_roots", "subprocess_env", "validate_env_overrides",
]  # fmt: skip
