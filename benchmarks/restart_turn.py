"""The 10 000-message rows of ``agent_turn.py --part 2`` alone, in wall *and* process CPU time.

On a shared machine the wall-clock medians of ``agent_turn.py --part 2`` move with the load
of other jobs (the floor itself varies 2x between runs); the process CPU time of a turn moves
much less. This measures, in one process, only the rows the cold-turn work is about, at one
size: the floor (``json.dumps`` of the request body), a cold turn on a session without a side
file, a cold turn on a session a previous runtime closed (its replay checkpoint), and a warm
turn (the session kept open), interleaved turn by turn, with the time spent in the cyclic GC.
The runtime keeps one session open: before each cold turn the one it kept (another N-message
session) is closed, timed as a side of its own ("evict"), so a cold turn is only the turn a
restarted process runs (up to 2026-12-05 the cold rows included that eviction: freeing an
N-message session, ≈ 30 ms at N = 10 000).
Run it once per code version, alternating (``PYTHONPATH=<checkout>``), to compare versions:

    .venv/bin/python benchmarks/restart_turn.py [--size 10000] [--rounds 9] [--model …]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_turn as at  # the harness's histories, runtimes and model
from peers import require_peer


async def measure(size: int, rounds: int, model: str = "bench") -> None:
    tmp = Path(tempfile.mkdtemp(prefix="restart-turn-"))
    runtime = at.make_runtime(tmp / "p2", at.text_stream, model=model)
    runtime.max_open_sessions = 1
    history = at.make_history(size)
    copies = at.SessionCopies(runtime, history.wire, f"h{size}")

    async def ours(session_id: str) -> None:
        result = await runtime.run(
            at.PROMPT, session_id=session_id, tools=[at.read], model=at.model_ref(model)
        )
        assert result.ok and result.attempts == 1 and result.text == at.ANSWER_TEXT, result

    async def restarted() -> str:
        (session_id,) = copies.make(1)
        previous = at.make_runtime(tmp / "p2", at.text_stream, model=model)
        result = await previous.run(
            at.PROMPT, session_id=session_id, tools=[at.read], model=at.model_ref(model)
        )
        assert result.ok, result
        await previous.aclose()
        del previous
        gc.collect()  # the previous runtime is another process's: not this one's garbage
        return session_id

    async def floor() -> None:
        json.dumps(history.openai_body)

    async def evict() -> None:
        # what checking a new session in would do to the one kept open (max_open_sessions=1)
        await runtime.services.close_sessions()

    sides = ["floor", "cold", "cold, checkpoint", "warm", "evict"]
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    in_gc: dict[str, list[float]] = {name: [] for name in sides}
    await ours((copies.make(1))[0])  # warm-up
    with at.GcClock() as clock:
        for _ in range(rounds):
            restarted_id = await restarted()
            (session_id,) = copies.make(1)
            turns: list[tuple[str, Callable[..., Awaitable[Any]], tuple[Any, ...]]] = [
                ("floor", floor, ()),
                ("evict", evict, ()),  # the previous round's checkpointed session
                ("cold", ours, (session_id,)),
                ("warm", ours, (session_id,)),
                ("evict", evict, ()),  # the warm one
                ("cold, checkpoint", ours, (restarted_id,)),
            ]
            for name, turn, args in turns:
                gc_before = clock.total
                start_cpu, start = time.process_time(), time.perf_counter()
                await turn(*args)
                wall[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
                in_gc[name].append(clock.total - gc_before)
            copies.clean()
    await runtime.aclose()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"N={size:,}, {rounds} rounds, model {model}, load average {load}, "
        f"python {sys.version.split()[0]}"
    )
    heads = f"{'wall':>10s} {'/ floor':>8s} {'CPU':>10s} {'/ floor':>8s} {'in GC':>9s}"
    print(f"  {'side':18s} {heads}")
    for name in sides:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        w0, c0 = statistics.median(wall["floor"]), statistics.median(cpu["floor"])
        print(
            f"  {name:18s} {w * 1e3:8.1f}ms {w / w0:7.1f}× {c * 1e3:8.1f}ms {c / c0:7.1f}× "
            f"{statistics.median(in_gc[name]) * 1e3:7.1f}ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--model",
        choices=sorted(at.POLICY_MODELS),
        default="bench",
        help="the model's name and API: its transcript policy and turn validation",
    )
    args = parser.parse_args()
    require_peer(parser, "pydantic_ai", "pydantic-ai (its histories are built for both sides)")
    asyncio.run(measure(args.size, args.rounds, args.model))


if __name__ == "__main__":
    main()
