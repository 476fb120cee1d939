"""Failure classification and failover decisions."""

from __future__ import annotations

from .reasons import FAILOVER_REASONS, FailoverClassification, FailoverReason, FailoverSignal

__all__ = ["FAILOVER_REASONS", "FailoverClassification", "FailoverReason", "FailoverSignal"]
