"""openclaw-runtime-sliding-window: an example context engine."""

from __future__ import annotations

from ._engine import DEFAULT_MAX_MESSAGES, SlidingWindowEngine, window_start

__version__ = "0.1.0"
__all__ = ["DEFAULT_MAX_MESSAGES", "SlidingWindowEngine", "__version__", "window_start"]
