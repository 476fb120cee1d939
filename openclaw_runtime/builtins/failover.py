"""Built-in plugin ``builtin.failover``: the generic failure classifier (``trylast``).

The classifier and its pattern tables load with the first classification (start-up time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._markers import hookimpl

if TYPE_CHECKING:
    from ..failover.reasons import FailoverClassification, FailoverSignal

__all__ = ["classify_failover"]


@hookimpl(trylast=True)
def classify_failover(signal: FailoverSignal) -> FailoverClassification | None:
    """OpenClaw's generic classifier; provider plugins answer first for their providers."""
    from ..failover.classify import classify_failover_signal  # lazy: start-up time

    return classify_failover_signal(signal)
