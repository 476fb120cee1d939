"""Context: engines, compaction, truncation, limits and token estimation."""

from __future__ import annotations
