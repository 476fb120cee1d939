"""What every backend contract suite shares: the hang guard and condition polling."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ["HANG_GUARD_S", "until"]

#: Bounds a test that would otherwise hang on a broken backend (never an assertion on speed).
HANG_GUARD_S = 60.0


async def until(condition: Callable[[], Any], what: str) -> None:
    """Poll ``condition`` (sync or async) until it is true (a waiter queued, a write seen)."""
    with anyio.fail_after(HANG_GUARD_S):
        while True:
            value = condition()
            if hasattr(value, "__await__"):
                value = await value
            if value:
                return
            await anyio.sleep(0.005)
    raise AssertionError(what)  # pragma: no cover - fail_after raises first
