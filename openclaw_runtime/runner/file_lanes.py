"""``FileLanes``: lanes that hold across the processes of one machine (the embedded default).

Several ``openclaw-runtime run`` processes (or workers) on one state dir must still run one
turn per session at a time, or their transcripts fork and turns drop off the active branch.
So a **session lane** (``session:<key>``) is held in two steps:

1. the in-process queue (``InProcessLanes``): priority and first-come order among this
   process's runs, lease timeout, progress heartbeat;
2. then the lane's shared record ``<state_dir>/lanes/<sha256 of the lane>.json``, read and
   changed only under the OS file lock ``<that file>.lock`` (``flock`` on POSIX; a first
   record is written straight into its new file, later ones replace it atomically). The record
   lists the holder (pid, host, started, last beat) and the waiters of every process in
   arrival order; a waiter polls it (5 ms growing to 100 ms, in a worker thread, so the event
   loop never blocks) until it is first in line and the lane is free.

The holder's beat follows its progress heartbeats (written at most every 5 s); a holder whose
process is gone (same host) or that went longer than its lane timeout plus a 15 s margin
without a beat is stale, and the next waiter takes the lane over (the rule is
``file_lane_policy.is_stale_lane_record``). A holder that finds at its next beat that it was
taken over is cancelled (``LaneTimeoutError``) instead of running on beside the new holder.

A lane's lock file outlives its record (reopening it is cheaper than creating it again): the
lock files of lanes nobody holds, waits on or used lately are removed in bulk by a sweep
(``lane_sweep``) in a thread after every ``sweep_every`` distinct lanes this process released,
and when the runtime closes (``aclose``), sparing the lanes this process holds, waits on or
released since its last sweep.

The **global lane**'s cap is per process by default (each process runs up to
``[agent] max_concurrent`` turns); ``[agent] global_cap_scope = "machine"`` makes it a counted
semaphore across the machine in the same way (one record with up to N holders).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import filelock
import orjson

from .._files import (
    DamagedStateFile,
    _pid_alive,
    atomic_write,
    load_or_set_aside,
    remove_stale_temps,
    write_new_file,
)
from .._flock import FlockLock
from ..backends.lanes import LaneLease, Priority, is_session_lane
from ..redaction import package_logger
from .file_lane_policy import (
    FileLaneClaimant,
    FileLaneState,
    FileLaneStep,
    beat_file_lane,
    release_file_lane,
    step_file_lane,
)
from .lane_sweep import SWEEP_MAX_ENTRIES, LaneSweep, sweep_lane_locks
from .lanes import InProcessLanes

__all__ = [
    "HOLDER_BEAT_EVERY_S",
    "HOLD_STALE_MARGIN_S",
    "SWEEP_EVERY_LANES",
    "FileLaneLease",
    "FileLaneStore",
    "FileLanes",
    "GlobalCapScope",
]

logger = package_logger(logging.getLogger("openclaw_runtime.runner.lanes"))

GlobalCapScope = Literal["process", "machine"]

#: How much longer than its lane timeout a holder may go without a beat before it is stale
#: (OpenClaw's lane heartbeat interval: half of the 30 s grace).
HOLD_STALE_MARGIN_S = 15.0
#: A holder writes its progress beat to the shared record at most this often.
HOLDER_BEAT_EVERY_S = 5.0
_POLL_FIRST_S = 0.005
_POLL_MAX_S = 0.1
#: How long one step waits for the record's file lock before trying again later.
_LOCK_WAIT_S = 1.0
#: A sweep of unused lock files starts after this many distinct lanes were released by this
#: process since the last one (a fresh session adds one lock file; see ``FileLanes.sweep``).
SWEEP_EVERY_LANES = 1024
#: Lanes whose record path ``FileLaneStore.path`` remembers (then it starts over).
_PATH_MEMO_SIZE = 4096


def _lane_file_name(lane: str) -> str:
    return hashlib.sha256(lane.encode("utf-8")).hexdigest()[:32] + ".json"


def create_record(path: str | os.PathLike[str], data: bytes) -> bool:
    """Write a lane's first record straight into a new file (held under the record's lock).

    A record that did not exist needs no temporary file and rename: every reader holds the
    lock, and a writer killed half-way leaves a damaged record that the next reader sets
    aside as empty — the state before it, since the record did not exist. ``False`` when a
    file is there after all (the caller replaces it atomically instead)."""
    try:
        write_new_file(path, data)
    except FileExistsError:
        return False
    return True


def _parse_state(data: bytes) -> FileLaneState:
    try:
        raw = orjson.loads(data)
        return FileLaneState.from_dict(raw)
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise DamagedStateFile(str(exc).splitlines()[0] if str(exc) else "not JSON") from None


class FileLaneStore:
    """The shared lane records of one directory; every change happens under the record's
    file lock. Blocking: call from a worker thread (``FileLanes`` does)."""

    def __init__(
        self,
        directory: str | Path,
        *,
        host: str | None = None,
        pid_alive: Callable[[int], bool] = _pid_alive,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = Path(directory)
        self.host = host if host is not None else socket.gethostname()
        self.pid_alive = pid_alive
        self.clock = clock
        self._ready = False
        self._dir = os.fspath(self.directory)
        #: lane → record path: a run asks for its session lane's at the grant, at each beat
        #: and at the release (a SHA-256 and a join each time); forgotten at the release.
        #: Plain strings: every use is an ``os`` call
        self._paths: dict[str, str] = {}
        #: lane → (the bytes this store last wrote to its record, its one holder) when that
        #: record had one holder and no waiters: a release that reads it back unchanged
        #: (nobody else wrote since) leaves it empty without parsing it. Bytes and a string
        #: (no objects for the garbage collector to visit while a run holds the lane)
        self._sole: dict[str, tuple[bytes, str]] = {}

    def path(self, lane: str) -> Path:
        """The record of ``lane`` (its lock is ``<path>.lock``)."""
        return Path(self._path(lane))

    def _path(self, lane: str) -> str:
        paths = self._paths
        known = paths.get(lane)
        if known is None:
            if len(paths) >= _PATH_MEMO_SIZE:
                paths.clear()
            known = paths[lane] = os.path.join(self._dir, _lane_file_name(lane))
        return known

    def _lock(self, path: str, timeout: float) -> FlockLock:
        return FlockLock(f"{path}.lock", timeout=timeout, mode=0o600)

    def _read(self, path: str) -> FileLaneState:
        return load_or_set_aside(
            path, _parse_state, FileLaneState, what="lane state file", logger=logger
        )

    def _write(self, path: str, lane: str, before: FileLaneState, after: FileLaneState) -> None:
        if after == before:
            return
        if after.empty:
            self._sole.pop(lane, None)
            with suppress(FileNotFoundError):
                os.unlink(path)
            return
        data = self._encode(lane, after)
        if not (before.empty and create_record(path, data)):
            atomic_write(path, data, tag="lane", fsync=False)
        self._remember(lane, data, after)

    def _remember(self, lane: str, data: bytes, state: FileLaneState) -> None:
        sole = self._sole
        if len(state.holders) != 1 or state.queue:
            sole.pop(lane, None)
            return
        if len(sole) >= _PATH_MEMO_SIZE and lane not in sole:
            sole.clear()
        sole[lane] = (data, state.holders[0].id)

    @staticmethod
    def _encode(lane: str, state: FileLaneState) -> bytes:
        return orjson.dumps({"lane": lane, **state.to_dict()})

    def read(self, lane: str) -> FileLaneState:
        """The current record, read under its lock (a record is created in place, so a
        reader without the lock could find it half written)."""
        path = self._path(lane)
        if not os.path.exists(path):
            return FileLaneState()
        with self._lock(path, -1):
            return self._read(path)

    def step(
        self,
        lane: str,
        claimant: FileLaneClaimant,
        capacity: int,
        lock_wait_s: float = _LOCK_WAIT_S,
        *,
        expect_new: bool = False,
    ) -> FileLaneStep | None:
        """One attempt to take a slot (``step_file_lane``); ``None`` when the record's lock
        stayed busy for ``lock_wait_s`` (try again).

        ``expect_new``: the record most likely does not exist (a claim's first step: an idle
        lane leaves none), so the step for an empty record is written straight into a new
        file, and the record is read only when one was there after all (the same outcome as
        reading a missing record first, one file operation fewer)."""
        path = self._path(lane)
        if not self._ready:
            self._make_directory()
        try:
            return self._step_locked(path, lane, claimant, capacity, lock_wait_s, expect_new)
        except FileNotFoundError:
            if os.path.isdir(self._dir):
                raise
            # the folder was removed since this store made it (a clean-up, a repair): a
            # fresh process would make it again, and so does this one, once
            self._make_directory()
            return self._step_locked(path, lane, claimant, capacity, lock_wait_s, expect_new)

    def _make_directory(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(self.directory)  # records a killed process was replacing
        self._ready = True

    def _step_locked(
        self,
        path: str,
        lane: str,
        claimant: FileLaneClaimant,
        capacity: int,
        lock_wait_s: float,
        expect_new: bool,
    ) -> FileLaneStep | None:
        try:
            with self._lock(path, lock_wait_s):
                if expect_new:
                    step = self._step(FileLaneState(), claimant, capacity)
                    data = self._encode(lane, step.state)
                    if create_record(path, data):
                        self._remember(lane, data, step.state)
                        return step
                before = self._read(path)
                step = self._step(before, claimant, capacity)
                self._write(path, lane, before, step.state)
                return step
        except filelock.Timeout:
            return None

    def _step(
        self, before: FileLaneState, claimant: FileLaneClaimant, capacity: int
    ) -> FileLaneStep:
        return step_file_lane(
            before,
            claimant,
            capacity=capacity,
            now=self.clock(),
            host=self.host,
            pid_alive=self.pid_alive,
        )

    def beat(self, lane: str, claim_id: str) -> bool | None:
        """Record a holder's beat without waiting for the lock: ``True`` done, ``False`` the
        claim holds the lane no longer, ``None`` the lock was busy (beat again later)."""
        path = self._path(lane)
        try:
            with self._lock(path, 0):
                before = self._read(path)
                after = beat_file_lane(before, claim_id, now=self.clock())
                if after is None:
                    return False
                self._write(path, lane, before, after)
                return True
        except filelock.Timeout:
            return None

    def release(self, lane: str, claim_id: str, lock_wait_s: float = -1) -> bool:
        """Leave the lane (as holder or waiter); ``False`` when the record's lock stayed busy
        for ``lock_wait_s`` (default: wait as long as it takes)."""
        path = self._path(lane)
        sole = self._sole.pop(lane, None)  # forgotten at the release, like the path

        def parse(data: bytes) -> FileLaneState | None:
            if sole is not None and data == sole[0] and sole[1] == claim_id:
                return None  # our own record, unchanged since: this claim was all it held
            return _parse_state(data)

        try:
            with self._lock(path, lock_wait_s):
                before = load_or_set_aside(
                    path, parse, FileLaneState, what="lane state file", logger=logger
                )
                if before is None:  # what releasing the parsed record gives: an empty lane
                    with suppress(FileNotFoundError):
                        os.unlink(path)
                else:
                    self._write(path, lane, before, release_file_lane(before, claim_id))
        except filelock.Timeout:
            if sole is not None:
                self._sole[lane] = sole  # released later: still ours to compare with
            return False
        self._sole.pop(lane, None)
        self._paths.pop(lane, None)  # remembered while held: a fresh session's lane is done
        return True


@dataclass
class FileLaneLease(LaneLease):
    """A lease on a shared lane: ``heartbeat()`` also refreshes the shared record's beat
    (at most every ``beat_every_s``), and cancels the block if another process took the
    lane over meanwhile (this holder was judged stale)."""

    beat: Callable[[], bool | None] = field(default=lambda: True, repr=False)
    beat_every_s: float = HOLDER_BEAT_EVERY_S
    lost: bool = False
    _last_beat: float = field(default_factory=time.monotonic, repr=False)

    def heartbeat(self) -> None:
        super().heartbeat()
        now = time.monotonic()
        if self.lost or now - self._last_beat < self.beat_every_s:
            return
        outcome = self.beat()
        if outcome is None:
            return  # the record was busy: beat again at the next progress
        self._last_beat = now
        if outcome is False:
            self.lost = True
            logger.warning(
                "lane %r was taken over by another process while this one held it "
                "(judged stale); cancelling this run",
                self.lane,
            )
            self.scope.cancel()


class FileLanes:
    """Lanes for the processes of one machine: session lanes (``session:*``) always hold
    across processes; other (global) lanes only with ``global_cap_scope="machine"``."""

    def __init__(
        self,
        directory: str | Path,
        *,
        global_cap_scope: GlobalCapScope = "process",
        stale_margin_s: float = HOLD_STALE_MARGIN_S,
        beat_every_s: float = HOLDER_BEAT_EVERY_S,
        store: FileLaneStore | None = None,
        sweep_every: int = SWEEP_EVERY_LANES,
        sweep_max_entries: int = SWEEP_MAX_ENTRIES,
    ) -> None:
        if global_cap_scope not in ("process", "machine"):
            raise ValueError(
                f"global_cap_scope must be 'process' or 'machine', got {global_cap_scope!r}"
            )
        self.store = store or FileLaneStore(directory)
        self.global_cap_scope: GlobalCapScope = global_cap_scope
        self.stale_margin_s = stale_margin_s
        self.beat_every_s = beat_every_s
        self._local = InProcessLanes()
        #: the sweep's trigger (0: never in the background) and its budget of entries
        self.sweep_every = sweep_every
        self.sweep_max_entries = sweep_max_entries
        #: shared lanes released since the last sweep: it spares them (likely taken again)
        self._released: set[str] = set()
        self._sweep_lock = threading.Lock()  # one sweep at a time
        self._sweep_pid = os.getpid()  # whose lock it is (``_sweep_lock_here``)
        self._sweep_from = 0  # where the next sweep starts (the last one stopped at its budget)

    def shares(self, lane: str) -> bool:
        """Whether ``lane`` is held across processes (else only in this one)."""
        return is_session_lane(lane) or self.global_cap_scope == "machine"

    def stats(self) -> dict[str, tuple[int, int]]:
        """lane → (running, waiting) in this process, for diagnostics."""
        return self._local.stats()

    def status(self, lane: str) -> FileLaneState:
        """The shared record of ``lane``: holders and waiters of every process."""
        return self.store.read(lane)

    def sweep(self, spare_lanes: Collection[str] = ()) -> LaneSweep:
        """Remove the lock files of lanes with no record and no lock holder, except those of
        ``spare_lanes`` (``lane_sweep.sweep_lane_locks``), after any sweep running now.
        Blocking: call from a worker thread."""
        with self._sweep_lock_here():
            return self._swept(spare_lanes)

    def _sweep_lock_here(self) -> threading.Lock:
        """The sweep lock of this process: a child forked while a sweep ran would inherit it
        held by a thread it does not have, so a new process starts with a new lock."""
        if self._sweep_pid != os.getpid():
            self._sweep_lock, self._sweep_pid = threading.Lock(), os.getpid()
        return self._sweep_lock

    def _swept(self, spare_lanes: Collection[str]) -> LaneSweep:
        try:
            done = sweep_lane_locks(
                self.store.directory,
                spare={_lane_file_name(lane) for lane in spare_lanes},
                max_entries=self.sweep_max_entries,
                start_at=self._sweep_from,
            )
        except OSError as exc:  # housekeeping: never a failure of a run or of the close
            logger.debug("lane sweep of %s stopped: %s", self.store.directory, exc)
            return LaneSweep()
        self._sweep_from = done.resume_at
        if done.removed or not done.complete:
            logger.debug(
                "lane sweep of %s: removed %d unused lock files, looked at %d entries%s",
                self.store.directory,
                done.removed,
                done.looked_at,
                "" if done.complete else " (stopped at its budget)",
            )
        return done

    def _lanes_to_spare(self) -> frozenset[str]:
        """This process's lanes: released since the last sweep, held or waited on (a new
        period of releases starts)."""
        spare = frozenset(self._released).union(self._local.stats())
        self._released = set()
        return spare

    def _sweep_in_background(self) -> None:
        # the lock is taken here, on the loop, and let go by the thread: a sweep started and
        # not yet running still counts as running (``sweep`` waits for it)
        if not self._sweep_lock_here().acquire(blocking=False):
            return  # one is running: this period's lanes are swept next time
        thread = threading.Thread(
            target=self._sweep_then_unlock,
            args=(self._lanes_to_spare(),),
            name="openclaw-lane-sweep",
            daemon=True,
        )
        try:
            thread.start()
        except RuntimeError:  # no new threads at interpreter shutdown: skip it
            self._sweep_lock.release()

    def _sweep_then_unlock(self, spare_lanes: frozenset[str]) -> None:
        try:
            # and the lanes released since the trigger (one C-level copy of the set: atomic
            # against the loop's adds under the GIL, and under a free-threaded build's locks)
            self._swept(spare_lanes.union(self._released))
        finally:
            self._sweep_lock.release()

    async def aclose(self) -> None:
        """Sweep the unused lock files (in a worker thread) if this process released a shared
        lane since the last sweep (``Runtime.aclose`` calls this)."""
        if self._released:
            await anyio.to_thread.run_sync(self.sweep, self._lanes_to_spare())

    def hold(
        self,
        lane: str,
        *,
        capacity: int = 1,
        priority: Priority = "normal",
        timeout_s: float | None = None,
    ) -> AbstractAsyncContextManager[LaneLease]:
        """``InProcessLanes.hold``, plus the shared record for shared lanes (module docstring).

        The lease's timeout runs from when the shared lane is granted, not while waiting
        for other processes. A lane held in this process only (the global lane by default)
        is the in-process hold itself (no generator layer around it: every run holds one).
        """
        if not self.shares(lane):
            return self._local.hold(lane, capacity=capacity, priority=priority, timeout_s=timeout_s)
        return self._hold_shared(lane, capacity, priority, timeout_s)

    @asynccontextmanager
    async def _hold_shared(
        self, lane: str, capacity: int, priority: Priority, timeout_s: float | None
    ) -> AsyncIterator[LaneLease]:
        async with self._local.hold(
            lane, capacity=capacity, priority=priority, timeout_s=timeout_s
        ) as local:
            local.scope.deadline = math.inf  # waiting for other processes is not holding
            started = anyio.current_time()
            claimant = FileLaneClaimant(
                uuid.uuid4().hex,
                os.getpid(),
                self.store.host,
                None if timeout_s is None else timeout_s + self.stale_margin_s,
            )
            await self._acquire(lane, claimant, capacity)
            lease = FileLaneLease(
                lane,
                timeout_s,
                local.waited_s + anyio.current_time() - started,
                local.scope,
                beat=lambda: self.store.beat(lane, claimant.id),
                beat_every_s=self.beat_every_s,
            )
            local.heartbeat()  # the timeout starts now
            try:
                yield lease
            finally:
                # usually the record's lock is free: released right here, synchronously (no
                # shielded scope needed for code that cannot be cancelled)
                if not self.store.release(lane, claimant.id, 0):
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(self.store.release, lane, claimant.id)
                released = self._released
                released.add(lane)
                if len(released) >= self.sweep_every > 0:
                    self._sweep_in_background()

    async def _release(self, lane: str, claim_id: str) -> None:
        # usually nobody else holds the record's lock: a small read and write right here
        # instead of a worker-thread hop at every turn end
        if not self.store.release(lane, claim_id, 0):
            await anyio.to_thread.run_sync(self.store.release, lane, claim_id)

    async def _acquire(self, lane: str, claimant: FileLaneClaimant, capacity: int) -> None:
        delay = _POLL_FIRST_S
        try:
            # the first look happens right here when the record's lock is free (usually)
            step = self.store.step(lane, claimant, capacity, 0, expect_new=True)
            while True:
                if step is None:
                    step = await anyio.to_thread.run_sync(self.store.step, lane, claimant, capacity)
                if step is not None:
                    for record in step.reclaimed:
                        logger.warning(
                            "lane %r: took over the slot of stale holder pid %s on %s",
                            lane,
                            record.pid,
                            record.host,
                        )
                    if step.granted:
                        return
                await anyio.sleep(delay)
                delay = min(delay * 1.5, _POLL_MAX_S)
                step = None
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                try:
                    await self._release(lane, claimant.id)
                except OSError as error:
                    # e.g. the claim failed before its record or lock file existed (disk
                    # full, folder gone): the claim's own error is what the caller sees
                    logger.warning(
                        "lane %r: could not withdraw the claim after %s: %s",
                        lane,
                        type(exc).__name__,
                        error,
                    )
            raise
