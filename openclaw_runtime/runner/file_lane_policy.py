"""The rules of a lane shared by the processes of one machine, as pure functions.

A shared lane is a small state record (``runner/file_lanes.py`` keeps it in a JSON file in the
state dir and changes it only under an OS file lock): the **holders** (at most ``capacity``;
1 for a session lane) and the **queue** of waiters in arrival order. Every record names its
process (pid, host), when it started and when it last beat, and after how many seconds
without a beat it may be declared stale.

* :func:`is_stale_lane_record`: a record is stale when its process is gone (same host, pid
  not alive) or its last beat is older than its own ``stale_after_s``. A stale holder's slot
  is taken back, a stale waiter leaves the queue.
* :func:`step_file_lane`: one attempt of a claimant to get in: stale records are dropped, the
  claimant joins the queue at the end (or refreshes its beat there), and it is moved into the
  holders when it is among the first ``free slots`` of the queue. So waiters are served
  first come first served across processes; priorities only order the waiters of one
  process (their in-process queue sits in front of this one).
* :func:`beat_file_lane` / :func:`release_file_lane`: a holder's heartbeat and its exit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "WAITER_BEAT_EVERY_S",
    "WAITER_STALE_AFTER_S",
    "FileLaneClaimant",
    "FileLaneState",
    "FileLaneStep",
    "LaneRecord",
    "beat_file_lane",
    "is_stale_lane_record",
    "release_file_lane",
    "step_file_lane",
]

#: A waiter refreshes its place in the queue at most this often (it polls more often).
WAITER_BEAT_EVERY_S = 1.0
#: A waiter whose beat is older than this has stopped polling (hung or gone): it loses its place.
WAITER_STALE_AFTER_S = 30.0


@dataclass(frozen=True, slots=True)
class LaneRecord:
    """Who holds or waits for a shared lane.

    ``id`` is unique per claim; ``started`` is when it took the lane (holders) or arrived
    (waiters); ``beat`` its last heartbeat; ``stale_after_s`` how long it may go without one
    (``None``: never stale by age, only when its process is gone). Times are wall-clock
    seconds (``time.time()``): the record is read by other processes.
    """

    id: str
    pid: int
    host: str
    started: float
    beat: float
    stale_after_s: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pid": self.pid,
            "host": self.host,
            "started": self.started,
            "beat": self.beat,
            "staleAfterS": self.stale_after_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LaneRecord:
        """Raises ``ValueError`` naming the field that is missing or of the wrong type."""
        record_id, pid, host = data.get("id"), data.get("pid"), data.get("host")
        if not isinstance(record_id, str) or not record_id:
            raise ValueError("lane record: 'id' must be a non-empty string")
        if not isinstance(pid, int) or isinstance(pid, bool):
            raise ValueError("lane record: 'pid' must be an integer")
        if not isinstance(host, str):
            raise ValueError("lane record: 'host' must be a string")
        started = _seconds(data, "started")
        beat = _seconds(data, "beat")
        stale = data.get("staleAfterS")
        if stale is not None:
            stale = _seconds(data, "staleAfterS")
        return cls(record_id, pid, host, started, beat, stale)


def _seconds(data: Mapping[str, Any], name: str) -> float:
    value = data.get(name)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"lane record: {name!r} must be a finite number")
    return float(value)


@dataclass(frozen=True, slots=True)
class FileLaneState:
    """The holders of a shared lane, its waiters in arrival order, and its capacity (the
    largest any current claim asked for)."""

    holders: tuple[LaneRecord, ...] = ()
    queue: tuple[LaneRecord, ...] = ()
    capacity: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "holders": [record.to_dict() for record in self.holders],
            "queue": [record.to_dict() for record in self.queue],
        }

    @classmethod
    def from_dict(cls, data: Any) -> FileLaneState:
        """Raises ``ValueError`` naming what is wrong."""
        if not isinstance(data, Mapping):
            raise ValueError("lane state must be a JSON object")
        parts = []
        for name in ("holders", "queue"):
            records = data.get(name, [])
            if not isinstance(records, list) or not all(isinstance(r, Mapping) for r in records):
                raise ValueError(f"lane state: {name!r} must be a list of objects")
            parts.append(tuple(LaneRecord.from_dict(record) for record in records))
        capacity = data.get("capacity", 1)
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise ValueError("lane state: 'capacity' must be a positive integer")
        return cls(parts[0], parts[1], capacity)

    @property
    def empty(self) -> bool:
        return not self.holders and not self.queue


@dataclass(frozen=True, slots=True)
class FileLaneClaimant:
    """One claim on a lane: who asks, and how long its hold may go without a beat."""

    id: str
    pid: int
    host: str
    hold_stale_after_s: float | None


@dataclass(frozen=True, slots=True)
class FileLaneStep:
    """What one attempt did: the new state, whether the claimant now holds the lane, and
    the stale holders whose slots were taken back."""

    state: FileLaneState
    granted: bool
    reclaimed: tuple[LaneRecord, ...] = ()


def is_stale_lane_record(
    record: LaneRecord, *, now: float, host: str, pid_alive: Callable[[int], bool]
) -> bool:
    """Stale: its process is gone (checked on its own host only), or it went more than
    ``stale_after_s`` without a beat. A beat in the future (clock skew) is not stale."""
    if record.host == host and not pid_alive(record.pid):
        return True
    return record.stale_after_s is not None and now - record.beat > record.stale_after_s


def step_file_lane(
    state: FileLaneState,
    claimant: FileLaneClaimant,
    *,
    capacity: int,
    now: float,
    host: str,
    pid_alive: Callable[[int], bool],
) -> FileLaneStep:
    """One attempt of ``claimant`` to take a slot of the lane (see the module docstring)."""
    if capacity < 1:
        raise ValueError(f"lane capacity must be at least 1, got {capacity}")

    def stale(record: LaneRecord) -> bool:
        if record.id == claimant.id:
            return False
        return is_stale_lane_record(record, now=now, host=host, pid_alive=pid_alive)

    reclaimed = tuple(record for record in state.holders if stale(record))
    holders = [record for record in state.holders if not stale(record)]
    queue = [record for record in state.queue if not stale(record)]
    if holders or queue:
        capacity = max(capacity, state.capacity)  # the largest capacity asked for applies

    def result(granted: bool) -> FileLaneStep:
        return FileLaneStep(
            FileLaneState(tuple(holders), tuple(queue), capacity), granted, reclaimed
        )

    if any(record.id == claimant.id for record in holders):
        queue = [record for record in queue if record.id != claimant.id]
        return result(True)
    position = next((i for i, r in enumerate(queue) if r.id == claimant.id), None)
    if position is None:
        queue.append(
            LaneRecord(claimant.id, claimant.pid, claimant.host, now, now, WAITER_STALE_AFTER_S)
        )
        position = len(queue) - 1
    elif now - queue[position].beat >= WAITER_BEAT_EVERY_S:
        queue[position] = replace(queue[position], beat=now)
    if position < capacity - len(holders):
        queue.pop(position)
        holders.append(
            LaneRecord(
                claimant.id, claimant.pid, claimant.host, now, now, claimant.hold_stale_after_s
            )
        )
        return result(True)
    return result(False)


def beat_file_lane(state: FileLaneState, claim_id: str, *, now: float) -> FileLaneState | None:
    """The state with the holder ``claim_id``'s beat set to ``now``; ``None`` when it holds
    the lane no longer (it was declared stale and its slot taken)."""
    holders = list(state.holders)
    for index, record in enumerate(holders):
        if record.id == claim_id:
            holders[index] = replace(record, beat=max(record.beat, now))
            return replace(state, holders=tuple(holders))
    return None


def release_file_lane(state: FileLaneState, claim_id: str) -> FileLaneState:
    """The state without ``claim_id``, whether it held the lane or still waited."""
    return FileLaneState(
        tuple(record for record in state.holders if record.id != claim_id),
        tuple(record for record in state.queue if record.id != claim_id),
        state.capacity,
    )
