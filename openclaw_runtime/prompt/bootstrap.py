"""Bootstrap (project-context) files: which workspace files are injected, and how they are cut.

OpenClaw injects AGENTS.md, SOUL.md, TOOLS.md, IDENTITY.md, USER.md, HEARTBEAT.md, BOOTSTRAP.md
and MEMORY.md (or memory.md) from the workspace under ``# Project Context``, each bounded to
``bootstrap_max_chars`` (20,000) and all together to ``bootstrap_total_max_chars`` (150,000)
(``buildBootstrapContextFiles`` / ``trimBootstrapContent``, spec 004 §2.1). Sub-agents
(``minimal`` mode) get AGENTS.md and TOOLS.md only.

Designed here: a missing file is left out (OpenClaw writes ``[MISSING] Expected at: ...``
because its onboarding seeds every file; a plain project directory has most of them missing,
and eight such lines would cost tokens and say nothing). Files are read as UTF-8 with
undecodable bytes replaced; a file that cannot be read is skipped with a warning.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ..redaction import package_logger
from .context import ContextFile, PromptMode

__all__ = [
    "DEFAULT_BOOTSTRAP_FILES",
    "DEFAULT_BOOTSTRAP_MAX_CHARS",
    "DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS",
    "MIN_BOOTSTRAP_REMAINING_CHARS",
    "SUBAGENT_BOOTSTRAP_FILES",
    "build_bootstrap_context_files",
    "load_bootstrap_files",
    "trim_bootstrap_content",
]

logger = package_logger(logging.getLogger(__name__))

DEFAULT_BOOTSTRAP_FILES: Final = (
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "HEARTBEAT.md",
    "BOOTSTRAP.md",
    "MEMORY.md",
)
SUBAGENT_BOOTSTRAP_FILES: Final = frozenset({"AGENTS.md", "TOOLS.md"})
DEFAULT_BOOTSTRAP_MAX_CHARS: Final = 20_000
DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS: Final = 150_000
MIN_BOOTSTRAP_REMAINING_CHARS: Final = 64
_HEAD_RATIO: Final = 0.7
_TAIL_RATIO: Final = 0.2


def _limit(value: int | None, default: int) -> int:
    if value is None or not math.isfinite(value) or value <= 0:
        return default
    return int(value)


def trim_bootstrap_content(content: str, name: str, max_chars: int) -> str:
    """OpenClaw's ``trimBootstrapContent``: keep the first 70% and the last 20% of the limit,
    with a marker naming the file and what was kept."""
    content = content.rstrip()
    if len(content) <= max_chars:
        return content
    head = math.floor(max_chars * _HEAD_RATIO)
    tail = math.floor(max_chars * _TAIL_RATIO)
    marker = (
        f"[...truncated, read {name} for full content...]\n"
        f"…(truncated {name}: kept {head}+{tail} chars of {len(content)})…"
    )
    return f"{content[:head]}\n{marker}\n{content[len(content) - tail :] if tail else ''}"


def build_bootstrap_context_files(
    files: Sequence[tuple[str, str]],
    *,
    max_chars: int | None = None,
    total_max_chars: int | None = None,
) -> list[ContextFile]:
    """Bound ``(path, content)`` pairs in order: each to ``max_chars``, all to
    ``total_max_chars`` (the last one cut with ``…``); stop when under 64 chars remain."""
    per_file = _limit(max_chars, DEFAULT_BOOTSTRAP_MAX_CHARS)
    remaining = _limit(total_max_chars, DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS)
    out: list[ContextFile] = []
    for path, content in files:
        if remaining < MIN_BOOTSTRAP_REMAINING_CHARS:
            break
        trimmed = trim_bootstrap_content(content, Path(path).name, per_file)
        if len(trimmed) > remaining:
            trimmed = trimmed[: remaining - 1] + "…"
        remaining -= len(trimmed)
        out.append(ContextFile(path, trimmed))
    return out


def load_bootstrap_files(
    workspace: Path,
    *,
    names: Sequence[str] = DEFAULT_BOOTSTRAP_FILES,
    mode: PromptMode = "full",
    max_chars: int | None = None,
    total_max_chars: int | None = None,
) -> list[ContextFile]:
    """The workspace's bootstrap files that exist, bounded (``MEMORY.md`` falls back to
    ``memory.md``); ``minimal`` mode keeps AGENTS.md and TOOLS.md only; ``none`` none."""
    if mode == "none":
        return []
    found: list[tuple[str, str]] = []
    for name in names:
        if mode == "minimal" and name not in SUBAGENT_BOOTSTRAP_FILES:
            continue
        candidates = [name, "memory.md"] if name == "MEMORY.md" else [name]
        for candidate in candidates:
            path = workspace / candidate
            if not path.is_file():
                continue
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
            except OSError as exc:
                logger.warning("bootstrap file %s could not be read: %s", path, exc)
                break
            found.append((candidate, text))
            break
    return build_bootstrap_context_files(
        found, max_chars=max_chars, total_max_chars=total_max_chars
    )
