"""The run's and the attempt's task groups, without a group where nothing runs in one.

A run held an anyio task group around its model chain for one purpose: the fire-and-forget
auth-profile success record (``attempt_loop._record_success``), started only when the run
used an auth profile; the attempt held one for its timer, which on asyncio is a loop
callback (``attempt_timer``). An empty group still costs, per run, a cancel scope, a
checkpoint when it closes (one more event-loop pass for every run) and, for the attempt's, a
cancellation that formats the task's repr. On asyncio both now run without one:

- ``as_task_group_body`` awaits the block as a childless group's body: its value, a
  cancellation as it is, any other exception wrapped in a ``BaseExceptionGroup`` the way
  anyio's asyncio task group wraps it (callers that unwrap, ``run._lone_backend_error``, see
  the same shapes);
- ``DeferredTasks`` stands in for the run's group: ``start_soon`` keeps the call, and
  ``run_pending`` starts what was kept in a real task group when the block has ended and
  waits for it — the group closed only after those tasks, as before (the record never
  raises; it was waited for before the run's result was returned, and still is). A block
  that raised drops them, as the group cancelled them.

On trio the groups stay (a group's exceptions read differently there, and the attempt's timer
is a task in its group): ``group_free()`` tells which.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import anyio
import sniffio

__all__ = ["DeferredTasks", "as_task_group_body", "group_free"]

T = TypeVar("T")
_Call = tuple[Callable[..., Coroutine[Any, Any, Any]], tuple[Any, ...], object]


def group_free() -> bool:
    """May the run and its attempts go without their task groups here (asyncio)?"""
    return sniffio.current_async_library() == "asyncio"


async def as_task_group_body(body: Awaitable[T]) -> T:
    """Await ``body`` as the body of an anyio task group without children would: the result,
    a cancellation as it is, any other exception wrapped in a ``BaseExceptionGroup``."""
    try:
        return await body
    except anyio.get_cancelled_exc_class():
        raise
    except BaseException as exc:
        raise BaseExceptionGroup("unhandled errors in a TaskGroup", [exc]) from None


class DeferredTasks:
    """``start_soon`` now, started when the block ends (``run_pending``); see the module doc."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: list[_Call] = []

    def start_soon(
        self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: object = None
    ) -> None:
        """Keep ``func(*args)`` for ``run_pending``."""
        self._calls.append((func, args, name))

    @property
    def pending(self) -> int:
        """How many calls wait for ``run_pending``."""
        return len(self._calls)

    async def run_pending(self) -> None:
        """Run the kept calls (and any they keep) as tasks of one group; wait for them."""
        while self._calls:
            calls, self._calls = self._calls, []
            async with anyio.create_task_group() as group:
                for func, args, name in calls:
                    group.start_soon(func, *args, name=name)

    def drop(self) -> None:
        """Forget the kept calls (the block raised: the group would have cancelled them)."""
        self._calls.clear()
