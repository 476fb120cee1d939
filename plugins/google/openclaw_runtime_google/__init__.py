"""openclaw-runtime-google: Google Gemini provider, Gemini failure dialect and turn rules for openclaw-runtime."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
