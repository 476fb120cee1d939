"""Lanes: the queues a run waits in before it may touch a session or spend a global slot.

A run enters its **session lane** (capacity 1: one session never runs two turns at once) and
then the **global lane** (capacity N: a cap on concurrent model work), in that order, so other
sessions keep starting while one session waits for its own turn. Waiters are served by
priority (``foreground`` before ``normal`` before ``background``), then first come first served.

A lease holds its lane for at most its timeout (the run timeout plus a grace period); progress
heartbeats push the deadline out. A lease that overruns is cancelled and its lane freed, so one
stuck run never blocks the queue behind it.

``LaneBackend`` (``backends.lanes``) is the seam for other implementations (the Redis plugin
shares lanes across processes); ``InProcessLanes`` holds them within one process, and the
embedded default ``file_lanes.FileLanes`` builds on it to hold session lanes across processes.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections.abc import Callable
from types import TracebackType

import anyio
import sniffio

from ..backends.lanes import (
    PRIORITY_RANK,
    LaneBackend,
    LaneLease,
    LaneReentryError,
    LaneTimeoutError,
    Priority,
    held_lanes,
    mark_held,
    unmark_held,
)

__all__ = [
    "PRIORITY_RANK",
    "InProcessLanes",
    "LaneBackend",
    "LaneLease",
    "LaneReentryError",
    "LaneTimeoutError",
    "Priority",
    "held_lanes",
]


class _Waiter:
    __slots__ = ("cancelled", "event", "granted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.granted = False
        self.cancelled = False


class _Lane:
    """A priority semaphore."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.active = 0
        self.waiters: list[tuple[int, int, _Waiter]] = []

    def idle(self) -> bool:
        return self.active == 0 and not self.waiters


class InProcessLanes:
    """Lanes for one process (the embedded default)."""

    def __init__(self) -> None:
        self._lanes: dict[str, _Lane] = {}
        self._sequence = itertools.count()

    def stats(self) -> dict[str, tuple[int, int]]:
        """lane → (running, waiting), for diagnostics (waiters that gave up not counted)."""
        return {
            name: (lane.active, sum(1 for *_, waiter in lane.waiters if not waiter.cancelled))
            for name, lane in self._lanes.items()
        }

    def hold(
        self,
        lane: str,
        *,
        capacity: int = 1,
        priority: Priority = "normal",
        timeout_s: float | None = None,
    ) -> _Hold:
        """Wait for ``lane``, hold it for the block, release it on the way out.

        The block is cancelled (``LaneTimeoutError``) if it runs past ``timeout_s`` since the
        lease began or since its last ``heartbeat()``.
        """
        return _Hold(self, lane, capacity, priority, timeout_s)

    @staticmethod
    def _try_acquire(state: _Lane) -> bool:
        """Take a free slot at once (nobody waiting before us); whether it was taken."""
        while state.waiters and state.waiters[0][2].cancelled:
            heapq.heappop(state.waiters)
        if state.active < state.capacity and not state.waiters:
            state.active += 1
            return True
        return False

    async def _acquire(self, state: _Lane, rank: int) -> None:
        if self._try_acquire(state):
            return
        waiter = _Waiter()
        heapq.heappush(state.waiters, (rank, next(self._sequence), waiter))
        try:
            await waiter.event.wait()
        except BaseException:
            waiter.cancelled = True
            if waiter.granted:  # granted just as we were cancelled: pass the slot on
                state.active -= 1
                self._grant(state)
            raise

    def _release(self, name: str, state: _Lane) -> None:
        state.active -= 1
        self._grant(state)
        if state.idle() and self._lanes.get(name) is state:
            del self._lanes[name]

    def _grant(self, state: _Lane) -> None:
        while state.waiters and state.active < state.capacity:
            _, _, waiter = heapq.heappop(state.waiters)
            if waiter.cancelled:
                continue
            waiter.granted = True
            state.active += 1
            waiter.event.set()


def loop_clock() -> Callable[[], float]:
    """``anyio.current_time`` looked up once: the asyncio loop's ``time`` (what anyio's
    asyncio backend returns), anyio's on other loops. A hold reads the clock twice; anyio's
    function finds the backend again at every call."""
    if sniffio.current_async_library() == "asyncio":
        return asyncio.get_running_loop().time
    return anyio.current_time


class _Hold:
    """``InProcessLanes.hold``'s block, written as a class: what the generator-based
    ``asynccontextmanager`` did (wait, mark the lane held, the lease's deadline scope, release
    however the block ends, ``LaneTimeoutError`` when the deadline cancelled it), without
    the generator, the context-manager wrappers and ``holding``'s own generator: two holds
    a run."""

    __slots__ = (
        "_capacity",
        "_lane",
        "_lanes",
        "_priority",
        "_scope",
        "_state",
        "_timeout_s",
        "_token",
    )

    def __init__(
        self,
        lanes: InProcessLanes,
        lane: str,
        capacity: int,
        priority: Priority,
        timeout_s: float | None,
    ) -> None:
        self._lanes = lanes
        self._lane = lane
        self._capacity = capacity
        self._priority = priority
        self._timeout_s = timeout_s

    async def __aenter__(self) -> LaneLease:
        lane, capacity, timeout_s = self._lane, self._capacity, self._timeout_s
        if capacity < 1:
            raise ValueError(f"lane capacity must be at least 1, got {capacity}")
        if lane in held_lanes():
            raise LaneReentryError(lane)
        lanes = self._lanes
        state = lanes._lanes.get(lane)
        if state is None:
            state = lanes._lanes[lane] = _Lane(capacity)
        state.capacity = max(state.capacity, capacity)
        clock = loop_clock()
        started = clock()
        # a free lane is taken without the waiting coroutine (it would not have suspended)
        if not lanes._try_acquire(state):
            await lanes._acquire(state, PRIORITY_RANK.get(self._priority, 1))
        granted = clock()
        deadline = math.inf if timeout_s is None else granted + timeout_s
        scope = anyio.CancelScope(deadline=deadline)
        lease = LaneLease(lane, timeout_s, granted - started, scope)
        try:
            self._token = mark_held(lane)
            scope.__enter__()
        except BaseException:
            if hasattr(self, "_token"):
                unmark_held(self._token)
            lanes._release(lane, state)
            raise
        self._state, self._scope = state, scope
        return lease

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        scope = self._scope
        try:
            try:
                suppressed = bool(scope.__exit__(exc_type, exc, tb))
            finally:
                unmark_held(self._token)
        finally:
            self._lanes._release(self._lane, self._state)
        if scope.cancelled_caught and self._timeout_s is not None:
            raise LaneTimeoutError(self._lane, self._timeout_s) from None
        return suppressed
