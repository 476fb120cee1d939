"""Skills: ``SKILL.md`` folders discovered in the workspace, listed in the prompt, and the
environment overrides they declare, scoped to one attempt (see ``env``)."""

from .discovery import Skill, SkillProblem, SkillsLoad, load_skill, load_skills, skill_roots
from .env import current_skill_env, skill_env_scope, subprocess_env, validate_env_overrides
from .frontmatter import FrontmatterError, parse_frontmatter
from .prompt import format_skills_for_prompt

__all__ = [
    "FrontmatterError",
    "Skill",
    "SkillProblem",
    "SkillsLoad",
    "current_skill_env",
    "format_skills_for_prompt",
    "load_skill",
    "load_skills",
    "parse_frontmatter",
    "skill_env_scope",
    "skill_roots",
    "subprocess_env",
    "validate_env_overrides",
]
