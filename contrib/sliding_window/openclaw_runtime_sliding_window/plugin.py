"""All hook implementations of openclaw-runtime-sliding-window (the entry-point target)."""

from __future__ import annotations

from openclaw_runtime import hookimpl
from openclaw_runtime.types import RegisterComponent

from ._engine import SlidingWindowEngine


@hookimpl
def register_context_engines(register: RegisterComponent) -> None:
    """The ``sliding_window`` engine."""
    register("sliding_window", SlidingWindowEngine)
