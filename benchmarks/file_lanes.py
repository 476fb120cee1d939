"""What holding a session lane across processes costs per turn, against the in-process lane.

Run: ``python benchmarks/file_lanes.py [--holds 2000] [--repeat 3]``

Both sides hold ``session:<n>`` then ``main`` (capacity 4), as every run does, uncontended,
``--holds`` times, on asyncio, in the same process. The peer is ``InProcessLanes`` (what the
embedded default was before lanes held across processes); the measured side is ``FileLanes``
on a temp state dir (the session lane's shared record: a worker-thread step under the file
lock to take it, another to release it). Also shown: ``FileLanes`` with the machine-wide
global cap, which pays the same for the global lane. Reported: microseconds per turn (best of
``--repeat``) and the added cost per turn.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from openclaw_runtime.runner.file_lanes import FileLanes
from openclaw_runtime.runner.lanes import InProcessLanes


async def holds(lanes: Any, count: int) -> float:
    start = time.perf_counter()
    for n in range(count):
        async with (
            lanes.hold(f"session:s{n % 50}", timeout_s=600),
            lanes.hold("main", capacity=4, timeout_s=600),
        ):
            pass
    return (time.perf_counter() - start) / count * 1e6


def best(make: Any, count: int, repeat: int) -> float:
    return min(anyio.run(holds, make(), count) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--holds", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        peer = best(InProcessLanes, args.holds, args.repeat)
        shared = best(lambda: FileLanes(root / "a"), args.holds, args.repeat)
        machine = best(
            lambda: FileLanes(root / "b", global_cap_scope="machine"), args.holds, args.repeat
        )
    print(f"InProcessLanes (peer)                {peer:9.1f} µs/turn")
    print(f"FileLanes (session lane shared)      {shared:9.1f} µs/turn  +{shared - peer:.1f} µs")
    print(f"FileLanes (+ machine-wide global)    {machine:9.1f} µs/turn  +{machine - peer:.1f} µs")


if __name__ == "__main__":
    main()
