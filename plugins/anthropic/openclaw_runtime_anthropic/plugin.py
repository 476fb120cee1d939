"""All hook implementations of openclaw-runtime-anthropic (the entry-point target)."""

from __future__ import annotations

from openclaw_runtime import hookimpl
from openclaw_runtime.failover import FailoverClassification, FailoverSignal

from ._failover import ANTHROPIC_FAILOVER_OWNER

__all__ = ["classify_failover"]


@hookimpl
def classify_failover(signal: FailoverSignal) -> FailoverClassification | None:
    """Classify failures of ``anthropic`` and ``claude-cli``; no opinion on other providers."""
    return ANTHROPIC_FAILOVER_OWNER.classify(signal)
