"""Hook markers shared by the hookspecs and plugins (kept apart to avoid an import cycle)."""

from __future__ import annotations

import pluggy

#: The pluggy project name, the same string as the entry-point group.
PROJECT_NAME = "openclaw_runtime"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec"]
