"""Transcript policy: what a provider accepts on replay, resolved from api/provider/model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TranscriptPolicy"]


@dataclass(frozen=True, slots=True)
class TranscriptPolicy:
    """Which sanitizers and replay rules apply to one model.

    ``enabled`` / ``disabled`` name sanitizers to force on or off; ``options`` carries
    provider-specific switches (for example ``merge_consecutive_user_turns``).
    """

    api: str
    provider: str
    model_id: str
    enabled: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()
    options: dict[str, Any] = field(default_factory=dict)
