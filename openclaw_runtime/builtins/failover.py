"""Built-in plugin ``builtin.failover``: the generic failure classifier (``trylast``)."""

from __future__ import annotations

from .._markers import hookimpl
from ..failover.classify import classify_failover_signal
from ..failover.reasons import FailoverClassification, FailoverSignal

__all__ = ["classify_failover"]


@hookimpl(trylast=True)
def classify_failover(signal: FailoverSignal) -> FailoverClassification | None:
    """OpenClaw's generic classifier; provider plugins answer first for their providers."""
    return classify_failover_signal(signal)
