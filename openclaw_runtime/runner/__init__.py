"""The orchestrator: run entry, lanes, the attempt loop, recovery chains and outcomes."""

from __future__ import annotations
