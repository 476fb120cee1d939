"""The lane seam: the protocol every lane backend meets, and the vocabulary it speaks.

A run enters its **session lane** (capacity 1: one session never runs two turns at once) and
then a **global lane** (capacity N: a cap on concurrent model work), in that order. Lane names
tell the two apart: a session lane is named ``session:<key>`` (``is_session_lane``), anything
else is a global lane. Waiters are served by priority (``foreground`` before ``normal`` before
``background``), then first come first served.

This module holds only what every backend shares (the protocol, the lease, the errors, the
re-entry guard), so it imports nothing from the runner: the embedded default
(``runner.lanes.InProcessLanes``), the file-locked session lane and the Redis plugin all build
on it, and ``openclaw_runtime.testing.LaneBackendContract`` checks them all the same way.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import anyio

from .._exceptions import OpenClawRuntimeError

__all__ = [
    "PRIORITY_RANK",
    "SESSION_LANE_PREFIX",
    "HeldLane",
    "LaneBackend",
    "LaneLease",
    "LaneReentryError",
    "LaneTimeoutError",
    "Priority",
    "held_lanes",
    "holding",
    "is_session_lane",
    "mark_held",
    "unmark_held",
]

Priority = Literal["foreground", "normal", "background"]
#: Lower is served first.
PRIORITY_RANK: dict[str, int] = {"foreground": 0, "normal": 1, "background": 2}
SESSION_LANE_PREFIX = "session:"

_held: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "openclaw_runtime_held_lanes", default=frozenset()
)


def is_session_lane(lane: str) -> bool:
    """Whether ``lane`` is a session lane (``session:<key>``) rather than a global one."""
    return lane.startswith(SESSION_LANE_PREFIX)


def held_lanes() -> frozenset[str]:
    """Lanes the current task holds (a task inherits its parent's view)."""
    return _held.get()


@contextmanager
def holding(lane: str) -> Iterator[None]:
    """Mark ``lane`` held by the current task for the block; ``LaneReentryError`` if it
    already is (waiting for a lane you hold would deadlock). Every backend's ``hold`` uses
    this, so re-entry is refused the same way whatever the backend."""
    token = mark_held(lane)
    try:
        yield
    finally:
        _held.reset(token)


def mark_held(lane: str) -> contextvars.Token[frozenset[str]]:
    """``holding``'s entry, for a ``hold`` written as a class: mark ``lane`` held (or raise
    ``LaneReentryError``); pass the token to ``unmark_held`` when the block ends."""
    held = _held.get()
    if lane in held:
        raise LaneReentryError(lane)
    return _held.set(held | {lane})


def unmark_held(token: contextvars.Token[frozenset[str]]) -> None:
    """``holding``'s exit: the lanes held before ``mark_held``."""
    _held.reset(token)


class LaneTimeoutError(OpenClawRuntimeError):
    """A lease outlived its timeout without progress; its work was cancelled."""

    def __init__(self, lane: str, timeout_s: float) -> None:
        super().__init__(f"lane {lane!r} task timed out after {timeout_s:g}s without progress")
        self.lane = lane
        self.timeout_s = timeout_s


class LaneReentryError(OpenClawRuntimeError):
    """A task asked for a lane it already holds: waiting would deadlock, so it is refused."""

    def __init__(self, lane: str) -> None:
        super().__init__(
            f"lane {lane!r} is already held by this task; waiting for it would deadlock "
            "(use the direct variant from inside the lane)"
        )
        self.lane = lane


@runtime_checkable
class HeldLane(Protocol):
    """What ``hold`` yields: proof of holding a lane."""

    @property
    def lane(self) -> str:
        """The lane's name."""
        ...

    @property
    def waited_s(self) -> float:
        """Seconds spent waiting before the lane was granted."""
        ...

    def heartbeat(self) -> None:
        """Progress happened: the lease may run its whole timeout again from now. Cheap and
        synchronous (called on streamed tokens, at most every half second); a backend that
        renews a remote lease does so without blocking the caller."""
        ...


@dataclass
class LaneLease:
    """A ``HeldLane`` whose timeout is an anyio cancel scope (in-process backends use it)."""

    lane: str
    timeout_s: float | None
    waited_s: float
    scope: anyio.CancelScope = field(repr=False)

    def heartbeat(self) -> None:
        """Progress happened: the lease may run ``timeout_s`` more from now."""
        if self.timeout_s is not None:
            self.scope.deadline = anyio.current_time() + self.timeout_s


@runtime_checkable
class LaneBackend(Protocol):
    """Something that can hold lanes: ``async with backend.hold(lane, ...) as lease: ...``.

    Guarantees every backend gives (``LaneBackendContract`` checks them):

    * **mutual exclusion up to capacity**: at most ``capacity`` blocks hold one lane at a time
      (a session lane always has capacity 1); the lane is released when the block exits, however
      it exits (return, exception, cancellation);
    * **order**: waiters are granted by priority rank (``PRIORITY_RANK``), then in arrival order;
    * **timeout**: a block that runs ``timeout_s`` past the grant or past its last
      ``heartbeat()`` is cancelled, its lane freed, and ``hold`` raises ``LaneTimeoutError``
      when the block exits; ``timeout_s=None`` means no timeout;
    * **re-entry**: asking for a lane the current task already holds raises
      ``LaneReentryError`` at once instead of deadlocking (use ``holding(lane)``);
    * **cancellation while waiting** leaves no trace: the waiter's place is given up and a grant
      that raced with the cancellation is passed on to the next waiter;
    * ``capacity < 1`` raises ``ValueError``. When holders ask for different capacities of one
      lane, the largest one asked for applies.

    Errors of the backend itself (a lost connection) are raised as they are; the runtime wraps
    plugin backends so such errors name the plugin (``PluginBackendError``).
    """

    def hold(
        self,
        lane: str,
        *,
        capacity: int = 1,
        priority: Priority = "normal",
        timeout_s: float | None = None,
    ) -> AbstractAsyncContextManager[HeldLane]:
        """Wait for ``lane``, hold it for the ``async with`` block, release it on the way out."""
        ...
