"""The cyclic collector's settings at 1,000 concurrent runs: measured, not changed by the runtime.

At 1,000 concurrent runs a large share of a run's CPU is CPython's cyclic garbage collector
(``agent_turn.py --part 3`` prints it per side). Its settings are the process's, not a library's,
so the runtime leaves them alone; this script measures what a service that owns its process
would get from changing them. One process per setting (``--setting``):

* ``default``: ``gc.get_threshold()`` as the interpreter starts, (700, 10, 10);
* ``threshold``: ``gc.set_threshold(10_000, 10, 10)`` after start-up (a warm-up batch);
* ``freeze``: ``gc.collect(); gc.freeze()`` after start-up;
* ``both``: the two together (freeze, then the higher threshold).

Each process runs ``--batches`` batches of 1,000 fresh-session runs of part 3's turn (the model
call sleeping 10 ms) and the same batch calling the stream function directly, and prints the
process CPU per run above that floor, the collector's CPU per run (and its split by
generation: most of it is the two or three full collections a batch makes, each walking every
run in flight), the collections per generation, and the CPU per run split into user and
system time (``os.times``; the floor's batch included, so the split is the whole process's).
Alternate settings process by process and compare within one sitting.

``--extra-objects N`` makes every run hold N more objects the collector tracks (empty lists
on its state) while it is in flight: how the collector's share moves with what a waiting run
holds. It moves in steps, one full collection per batch more at a time.

With ``--census`` it then holds one more batch at its model calls (``agent_turn._Census``) and
counts the objects the collector tracks (``gc.get_objects()``, after a collection) against the
count before the batch: what each in-flight run gives every collection to traverse, by type.
The number of young collections a batch makes follows from it (one per 700 net allocations of
tracked objects), and so does much of the full ones' work.

Run:  .venv/bin/python benchmarks/gc_settings.py --mode memory --setting threshold [--census]
      [--extra-objects N]
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_turn as at  # the harness's runtime and sleeping model

RUNS = 1_000


class _Collector:
    """CPU seconds in the collector, and collections and seconds per generation
    (``gc.callbacks``): the full collections (generation 2) walk every run in flight."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self.by_generation = [0.0, 0.0, 0.0]
        self._start = 0.0

    def reset(self) -> None:
        self.seconds, self.collections, self.by_generation = 0.0, [0, 0, 0], [0.0, 0.0, 0.0]

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            spent = time.process_time() - self._start
            self.seconds += spent
            self.collections[info["generation"]] += 1
            self.by_generation[info["generation"]] += spent


def hold_extra_objects(count: int) -> None:
    """Every run made from now on holds ``count`` more tracked objects while it runs."""
    from openclaw_runtime.runner.run_state import RunState

    if "__init__" not in vars(RunState):  # a renamed set-up must fail here, not measure nothing
        raise SystemExit("gc_settings: RunState.__init__ no longer exists")
    init = RunState.__init__

    def holding(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._extra_objects = [[] for _ in range(count)]

    RunState.__init__ = holding  # type: ignore[method-assign]


async def main(mode: str, setting: str, batches: int, census: bool, extra: int = 0) -> None:
    if extra:
        hold_extra_objects(extra)
    tmp = Path(tempfile.mkdtemp(prefix="gc-settings-"))
    runtime = at.make_runtime(
        tmp / "state", at.sleeping_stream, max_concurrent=RUNS, memory=mode == "memory"
    )
    model = runtime.resolve_model("fake/m1")

    async def ours() -> None:
        async def one() -> None:
            result = await runtime.run(at.PROMPT, session_id=uuid.uuid4().hex, model="fake/m1")
            assert result.ok, "a run failed"

        async with anyio.create_task_group() as tg:
            for _ in range(RUNS):
                tg.start_soon(one)

    async def direct() -> None:
        async def one() -> None:
            context = at.Context("", [at.UserMessage(content=at.PROMPT)], [])
            await at.sleeping_stream(model, context, at.StreamOptions()).result()

        async with anyio.create_task_group() as tg:
            for _ in range(RUNS):
                tg.start_soon(one)

    await ours()  # start-up: imports, caches, the first sessions
    if setting in ("freeze", "both"):
        gc.collect()
        gc.freeze()
    if setting in ("threshold", "both"):
        gc.set_threshold(10_000, 10, 10)
    collector = _Collector()
    gc.callbacks.append(collector)
    load = os.getloadavg()
    print(
        f"{mode}, {setting} (threshold {gc.get_threshold()}), {RUNS:,} concurrent runs, "
        f"{extra} extra objects per run, load average {load[0]:.2f}"
    )
    for _ in range(batches):
        times = os.times()
        cpu = time.process_time()
        await direct()
        floor = time.process_time() - cpu
        collector.reset()
        cpu = time.process_time()
        await ours()
        spent = time.process_time() - cpu - floor
        after = os.times()
        user, system = after.user - times.user, after.system - times.system
        per_generation = ", ".join(f"{s / RUNS * 1e6:,.0f}" for s in collector.by_generation)
        print(
            f"  {spent / RUNS * 1e6:,.0f} µs per run above the floor, "
            f"{collector.seconds / RUNS * 1e6:,.0f} µs of it in the collector "
            f"({per_generation} µs by generation); "
            f"collections per generation {collector.collections}; "
            f"user / system {user / RUNS * 1e6:,.0f} / {system / RUNS * 1e6:,.0f} µs per run"
        )
    gc.callbacks.remove(collector)
    if census:
        await _census(runtime)
    await runtime.aclose()


def _tracked() -> collections.Counter[str]:
    gc.collect()
    return collections.Counter(
        f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects()
    )


async def _census(runtime: Any) -> None:
    """Tracked objects per in-flight run: a batch held at its model calls, by type."""
    before = _tracked()
    held = at._Census(RUNS)
    at._census = held
    try:
        async with anyio.create_task_group() as tg:
            for _ in range(RUNS):
                tg.start_soon(
                    lambda: runtime.run(at.PROMPT, session_id=uuid.uuid4().hex, model="fake/m1")
                )
            with anyio.fail_after(300):  # a run that never reaches its model call
                await held.all_in.wait()
            during = _tracked()
            held.release.set()
    finally:
        at._census = None
    grown = during - before
    print(f"  objects the collector tracks, per in-flight run: {grown.total() / RUNS:,.1f}")
    for name, count in grown.most_common(12):
        print(f"    {count / RUNS:6.2f}  {name.removeprefix('builtins.')}")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["memory", "durable"], default="memory")
    parser.add_argument(
        "--setting", choices=["default", "threshold", "freeze", "both"], default="default"
    )
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument(
        "--census", action="store_true", help="count what an in-flight run holds for the GC"
    )
    parser.add_argument(
        "--extra-objects",
        type=int,
        default=0,
        metavar="N",
        help="every run holds N more tracked objects while in flight",
    )
    args = parser.parse_args()
    if args.batches < 1:
        parser.error(f"--batches must be at least 1, got {args.batches}")
    if args.extra_objects < 0:
        parser.error(f"--extra-objects must be at least 0, got {args.extra_objects}")
    anyio.run(main, args.mode, args.setting, args.batches, args.census, args.extra_objects)


if __name__ == "__main__":
    cli()
