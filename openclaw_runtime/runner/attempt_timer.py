"""The attempt's timeout timer, without a task per attempt where the event loop offers one.

An attempt is bounded by ``timeout_s``: when it runs out, the attempt's timer marks the attempt
timed out and aborts its controller (the stream and the tools see the abort and end the turn
as they would on any abort; a deadline scope would cancel them instead, which reads
differently). The timer used to be a task sleeping in the attempt's task group, started and
cancelled by every attempt whatever its length: a task, its cancellation and the
``CancelledError`` with its traceback (cyclic garbage) cost ≈ 55 µs per attempt on asyncio —
a few per cent of a run. On asyncio the loop schedules the same callback at the same loop
time (``call_later``, what anyio's own deadlines use) and drops it when the attempt ends; on
other loops (trio) the sleeping task stays. Either way the callback runs at most once, and
never after ``disarm``.

On asyncio the attempt therefore needs no task group at all (``timer_needs_task_group``):
an empty group still costs a cancel scope, a cancellation that formats the task's repr and a
checkpoint (one more event-loop pass) per attempt; ``task_group_body.as_task_group_body``
keeps what the group did to the attempt's exceptions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anyio
import anyio.abc
import sniffio

from .task_group_body import group_free

__all__ = ["arm_attempt_timer", "timer_needs_task_group"]


def timer_needs_task_group() -> bool:
    """Does ``arm_attempt_timer`` need a task group here (every loop but asyncio's)?"""
    return not group_free()


def arm_attempt_timer(
    task_group: anyio.abc.TaskGroup | None, seconds: float, fire: Callable[[], None]
) -> Callable[[], None]:
    """Call ``fire()`` in ``seconds`` unless the returned ``disarm`` is called first.

    ``task_group`` is the attempt's own: where the loop has no timer callbacks, a task in it
    sleeps and fires (cancelling the group's scope, as the attempt does when it ends, stops
    it); on asyncio it may be None (``timer_needs_task_group``)."""
    if sniffio.current_async_library() == "asyncio":
        handle = asyncio.get_running_loop().call_later(seconds, fire)
        return handle.cancel
    if task_group is None:
        raise RuntimeError("arm_attempt_timer needs a task group outside asyncio")
    fired = False

    async def sleep_then_fire() -> None:
        await anyio.sleep(seconds)
        if not fired:
            fire()

    def disarm() -> None:
        nonlocal fired
        fired = True

    task_group.start_soon(sleep_then_fire)
    return disarm
