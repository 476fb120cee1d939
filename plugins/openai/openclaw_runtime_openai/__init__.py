"""openclaw-runtime-openai: OpenAI / Codex failure dialect for openclaw-runtime."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
