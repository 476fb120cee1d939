"""What holding a session lane across processes costs per turn, against the in-process lane.

Run: ``python benchmarks/file_lanes.py [--holds 2000] [--repeat 3]``

Both sides hold ``session:<n>`` then ``main`` (capacity 4), as every run does, uncontended,
``--holds`` times, on asyncio, in the same process. The peer is ``InProcessLanes`` (what the
embedded default was before lanes held across processes); the measured side is ``FileLanes``
on a temp state dir (the session lane's shared record: a worker-thread step under the file
lock to take it, another to release it). Also shown: ``FileLanes`` with the machine-wide
global cap, which pays the same for the global lane. Reported: microseconds per turn (best of
``--repeat``) and the added cost per turn.

``FileLanes, a new session each turn`` holds a different ``session:f<n>`` every turn (each
makes its lane's lock file; where ``FileLanes`` sweeps unused lock files, sweeps run in a
thread meanwhile), in a fresh directory each repeat, and counts the lock files left.

``--sweep N`` (where ``openclaw_runtime.runner.lane_sweep`` exists) also times the sweep: one
over N unused lock files, one over N lock files whose lanes have records (nothing to remove),
and a lock file's creation against its reopening (``FlockLock`` taken and let go).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from openclaw_runtime.runner.file_lanes import FileLanes
from openclaw_runtime.runner.lanes import InProcessLanes


async def holds(lanes: Any, count: int, sessions: int = 50) -> float:
    """µs per turn holding ``session:s<n % sessions>`` then ``main`` (0: a new session each)."""
    start = time.perf_counter()
    for n in range(count):
        async with (
            lanes.hold(f"session:s{n % sessions if sessions else n}", timeout_s=600),
            lanes.hold("main", capacity=4, timeout_s=600),
        ):
            pass
    return (time.perf_counter() - start) / count * 1e6


def best(make: Any, count: int, repeat: int) -> float:
    return min(anyio.run(holds, make(), count) for _ in range(repeat))


def fresh(root: Path, count: int, repeat: int) -> tuple[float, int]:
    """Best µs per turn holding a new session each turn, and the lock files the last left."""
    times, left = [], 0
    for index in range(repeat):
        directory = root / f"fresh{index}"
        times.append(anyio.run(holds, FileLanes(directory), count, 0))
        time.sleep(0.5)  # let a sweep started at the end finish
        left = sum(1 for name in os.listdir(directory) if name.endswith(".lock"))
    return min(times), left


def sweep_costs(root: Path, entries: int) -> None:
    try:
        from openclaw_runtime.runner.lane_sweep import sweep_lane_locks  # lazy: branch only
    except ImportError:
        print("sweep: not in this version")
        return
    from openclaw_runtime._flock import FlockLock  # lazy: with the sweep only

    unused, used = root / "unused", root / "used"
    for directory, with_records in ((unused, False), (used, True)):
        directory.mkdir()
        for n in range(entries):
            os.close(os.open(directory / f"{n:032x}.json.lock", os.O_CREAT | os.O_WRONLY, 0o600))
            if with_records:
                os.close(os.open(directory / f"{n:032x}.json", os.O_CREAT | os.O_WRONLY, 0o600))
    for label, directory, count in (
        ("unused lock files, all removed", unused, entries),
        ("lock files of lanes with records, none removed", used, 2 * entries),
    ):
        start = time.perf_counter()
        done = sweep_lane_locks(directory, max_entries=count + 1)
        took = time.perf_counter() - start
        print(
            f"sweep of {count:,} entries ({label}): {took * 1e3:8.1f} ms, "
            f"{took / count * 1e6:6.2f} µs an entry, removed {done.removed:,}"
        )
    new, old = root / "create", root / "reopen"
    new.mkdir()
    old.mkdir()
    paths = [os.fspath(old / f"{n}.lock") for n in range(2000)]
    for path in paths:
        with FlockLock(path):
            pass
    for label, make in (
        ("a new lock file (created)", lambda n: os.fspath(new / f"{n}.lock")),
        ("an existing lock file (reopened)", lambda n: paths[n]),
    ):
        start = time.perf_counter()
        for n in range(2000):
            with FlockLock(make(n)):
                pass
        print(f"FlockLock on {label}: {(time.perf_counter() - start) / 2000 * 1e6:6.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--holds", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sweep", type=int, default=0, metavar="N")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        peer = best(InProcessLanes, args.holds, args.repeat)
        shared = best(lambda: FileLanes(root / "a"), args.holds, args.repeat)
        machine = best(
            lambda: FileLanes(root / "b", global_cap_scope="machine"), args.holds, args.repeat
        )
        new_each, left = fresh(root, args.holds, args.repeat)
        if args.sweep:
            sweep_costs(root, args.sweep)
    print(f"InProcessLanes (peer)                {peer:9.1f} µs/turn")
    print(f"FileLanes (session lane shared)      {shared:9.1f} µs/turn  +{shared - peer:.1f} µs")
    print(f"FileLanes (+ machine-wide global)    {machine:9.1f} µs/turn  +{machine - peer:.1f} µs")
    print(
        f"FileLanes, a new session each turn   {new_each:9.1f} µs/turn  +{new_each - peer:.1f} µs"
        f"  ({left:,} lock files left after {args.holds:,} sessions)"
    )


if __name__ == "__main__":
    main()
