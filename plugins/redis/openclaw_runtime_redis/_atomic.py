"""Optimistic read-modify-write on Redis (``WATCH`` / ``MULTI`` / ``EXEC`` with retry).

The ledger and the steering store keep their policy in pure functions of the core (the same
ones the file backends run under a file lock). Here the pure function runs between ``WATCH``
and ``EXEC``: if another worker changed the watched keys meanwhile, ``EXEC`` aborts and the
function runs again on the fresh state, so no update is ever lost and none is applied twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import WatchError

__all__ = ["MAX_ATTEMPTS", "watch_update"]

T = TypeVar("T")
#: A contended key is retried this often before the update gives up (never silently).
MAX_ATTEMPTS: Final = 200


async def watch_update(
    client: aioredis.Redis,
    keys: list[str],
    read: Callable[[Any], Awaitable[Any]],
    apply: Callable[[Any], tuple[T, Callable[[Any], None] | None]],
    *,
    what: str,
) -> T:
    """``read(pipe)`` the watched state, ``apply`` it (returns the result and a function that
    queues the writes on the pipeline, or None for "no change"), commit atomically."""
    for _ in range(MAX_ATTEMPTS):
        async with client.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(*keys)
                state = await read(pipe)
                result, write = apply(state)
                if write is None:
                    await pipe.unwatch()
                    return result
                pipe.multi()
                write(pipe)
                await pipe.execute()
                return result
            except WatchError:
                continue
    raise RuntimeError(f"{what}: gave up after {MAX_ATTEMPTS} conflicting concurrent updates")
