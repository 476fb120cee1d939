"""All hook implementations of openclaw-runtime-openai (the entry-point target)."""

from __future__ import annotations
