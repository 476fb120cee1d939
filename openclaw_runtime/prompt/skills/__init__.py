"""Skills: ``SKILL.md`` folders discovered in the workspace, listed in the prompt, and the
environment overrides they declare, scoped to one attempt (see ``env``)."""

import typing as _typing

from ..._lazy_face import lazy_getattr as _lazy_getattr

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
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "FrontmatterError", "Skill", "SkillProblem", "SkillsLoad", "current_skill_env",
    "format_skills_for_prompt", "load_skill", "load_skills", "parse_frontmatter", "skill_env_scope",
    "skill_roots", "subprocess_env", "validate_env_overrides",
]  # fmt: skip
