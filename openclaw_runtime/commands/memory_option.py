"""``--memory`` of ``openclaw-runtime run`` and ``chat``: ``[backends] default = "memory"``.

Sessions, lanes, the auth ledger and the steering queue then live in the command's process
only: nothing is read from or written under ``state_dir``, and the conversation is gone when
the command exits (a ``chat`` keeps it for as long as it runs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from .._memory_mode import with_memory_default
from ..config import RuntimeConfig

__all__ = ["apply_memory_option", "memory_option"]

F = TypeVar("F", bound=Callable[..., Any])


def memory_option(fn: F) -> F:
    """``--memory``: keep every backend the config leaves unset in this process."""
    return click.option(
        "--memory",
        is_flag=True,
        help="Keep sessions and all other state in this process only ([backends] default = "
        '"memory"): nothing is written under the state dir; everything is lost at exit.',
    )(fn)


def apply_memory_option(config: RuntimeConfig, memory: bool) -> RuntimeConfig:
    """``config`` with the in-memory backends when ``--memory`` was given."""
    return with_memory_default(config, memory)
