"""Optimistic read-modify-write on Redis: read, apply the pure update, compare-and-set.

The ledger and the steering store keep their policy in pure functions of the core (the same
ones the file backends run under a file lock). Here the state is read in one round trip, the
pure function runs locally, and the write is one Lua script that applies it only if the state
is still the version that was read; otherwise the function runs again on the fresh state. So
no update is lost and none is applied twice, an update that changes nothing costs one round
trip and one that changes something two (``WATCH``/``MULTI``/``EXEC`` would cost three).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

__all__ = ["MAX_ATTEMPTS", "cas_update"]

T = TypeVar("T")
S = TypeVar("S")
#: A contended key is retried this often before the update gives up (never silently).
MAX_ATTEMPTS: Final = 200


async def cas_update(
    read: Callable[[], Awaitable[tuple[Any, S]]],
    apply: Callable[[S], tuple[T, Any]],
    commit: Callable[[Any, Any], Awaitable[bool]],
    *,
    what: str,
) -> T:
    """``read()`` → (version, state); ``apply(state)`` → (result, change or None);
    ``commit(version, change)`` → whether the state was still at ``version`` (then written)."""
    for _ in range(MAX_ATTEMPTS):
        version, state = await read()
        result, change = apply(state)
        if change is None or await commit(version, change):
            return result
    raise RuntimeError(f"{what}: gave up after {MAX_ATTEMPTS} conflicting concurrent updates")
