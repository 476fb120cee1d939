"""openclaw-runtime-anthropic: Anthropic Messages API provider, Anthropic failure dialect and turn validation for openclaw-runtime."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
