"""All hook implementations of openclaw-runtime-anthropic (the entry-point target)."""

from __future__ import annotations
