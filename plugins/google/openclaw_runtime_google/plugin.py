"""All hook implementations of openclaw-runtime-google (the entry-point target)."""

from __future__ import annotations
