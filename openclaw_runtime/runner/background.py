"""Work that outlives the call that started it, on asyncio and on trio.

anyio has no fire-and-forget spawn: a task group waits for its children, which would put
background work back on the caller's path. ``spawn_background`` starts the coroutine as a
free task of the running event loop (an asyncio task kept referenced until it ends; a trio
system task), in a fresh ``contextvars`` context so nothing of the caller's context (the lanes
it holds, its fault scope) leaks into the work. The work must contain its own errors: one
that escapes is logged here (on trio it would otherwise crash the whole loop).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import sniffio

from ..redaction import package_logger

__all__ = ["spawn_background"]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))

#: asyncio keeps only weak references to tasks: hold them until they finish.
_running: set[Any] = set()


def spawn_background(work: Callable[[], Awaitable[None]], *, name: str) -> None:
    """Start ``work()`` now without waiting for it; it runs until it returns or the event
    loop shuts down."""

    async def contained() -> None:
        try:
            await work()
        except Exception:
            logger.warning("background work %s failed", name, exc_info=True)

    library = sniffio.current_async_library()
    if library == "trio":
        import trio  # lazy: only on the trio backend

        trio.lowlevel.spawn_system_task(contained, name=name, context=contextvars.Context())
        return
    import asyncio  # lazy: only on the asyncio backend

    task = asyncio.get_running_loop().create_task(
        contained(), name=name, context=contextvars.Context()
    )
    _running.add(task)
    task.add_done_callback(_running.discard)
