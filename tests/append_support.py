"""Helpers shared by the append fast-path tests (memory and durable sessions).

Each test runs the same appends through the fast path and the old locked path and compares
the results byte for byte, so both sides need the same timestamps and entry ids: ``Clock``
gives a repeatable ``now`` (7 ms per call) and ``fixed_entry_ids`` makes entry ids count up.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest


class Clock:
    """A ``now`` for a session store: 2026-12-04 00:00 UTC, then 7 ms later at each call."""

    def __init__(self) -> None:
        self.moment = datetime(2026, 12, 4, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.moment += timedelta(milliseconds=7)
        return self.moment


def fixed_entry_ids(monkeypatch: pytest.MonkeyPatch, start: int = 0) -> None:
    """Entry ids ``start``, ``start + 1``... (8 hex digits) for the appends that follow."""
    ids = iter(f"{n:08x}" for n in range(start, start + 10_000))
    monkeypatch.setattr("openclaw_runtime.transcript.append.generate_entry_id", lambda _: next(ids))
