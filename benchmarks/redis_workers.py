"""Redis backends against the embedded default: per-turn overhead and multi-process throughput.

    .venv/bin/python benchmarks/redis_workers.py [--turns 300] [--workers 4] [--sessions 8]

Needs ``redis-server`` on PATH (or ``OPENCLAW_RUNTIME_REDIS_URL``). The model is free (a stream
function that returns one precomputed ``done`` event), so what is measured is the runtime and
its backends: lanes, session index, session store, ledger.

1. **Per-turn overhead** (one process, one session key, turns one after another): a full
   ``Runtime.run`` turn on the embedded default (in-process lanes, JSONL file, JSON index and
   ledger) and on the five Redis backends over loopback; the difference is what Redis adds.
2. **Throughput**, ``--workers`` processes × ``--sessions`` session keys, ``--turns`` turns per
   worker: on Redis every worker takes turns on *every* session (shared sessions, serialized by
   the Redis session lanes); on the embedded default each worker owns its own share of the
   sessions (it cannot share a session with another process). Turns per second in total.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime.events import AssistantMessageEventStream, Done
from openclaw_runtime.messages import AssistantMessage, TextContent, Usage

MODEL = {
    "id": "m1",
    "api": "bench",
    "provider": "fake",
    "contextWindow": 50_000_000,
    "maxTokens": 8_192,
}
ANSWER = AssistantMessage(
    content=[TextContent(text="It is sunny in Paris, 21 °C.")],
    api="bench",
    provider="fake",
    model="m1",
    stop_reason="stop",
    usage=Usage(input=1_200, output=40, total_tokens=1_240),
)
REDIS_BACKENDS = dict.fromkeys(
    ("lanes", "auth_store", "steering_store", "session_index", "session_store"), "redis"
)


def text_stream(model: Any, context: Any, options: Any) -> Any:
    stream = AssistantMessageEventStream()
    stream.push(Done("stop", ANSWER.model_copy(update={"content": list(ANSWER.content)})))
    return stream


class BenchProvider:
    @hookimpl
    def register_providers(self, register: Any) -> None:
        register("bench", text_stream)


def make_runtime(state_dir: Path, redis: bool) -> Runtime:
    import openclaw_runtime_redis.plugin as redis_plugin

    config: dict[str, Any] = {"state_dir": str(state_dir), "models": [MODEL]}
    plugins: list[Any] = [("bench-provider", BenchProvider())]
    if redis:
        config["backends"] = REDIS_BACKENDS
        plugins.append(("redis", redis_plugin))
    return Runtime(config, plugins=plugins, load_entrypoints=False, env={})


async def turns(runtime: Runtime, keys: list[str], count: int) -> list[float]:
    took = []
    for i in range(count):
        start = time.perf_counter()
        result = await runtime.run(
            "What is the weather?", session_key=keys[i % len(keys)], model="fake/m1"
        )
        took.append(time.perf_counter() - start)
        assert result.ok, result
    return took


def overhead(turn_count: int, url: str) -> dict[str, float]:
    out = {}
    for name, redis in (("embedded", False), ("redis", True)):
        os.environ["OPENCLAW_RUNTIME_REDIS_PREFIX"] = f"bench:{uuid.uuid4().hex[:8]}:"

        async def main(redis: bool = redis) -> list[float]:
            with tempfile.TemporaryDirectory() as tmp:
                async with make_runtime(Path(tmp), redis) as runtime:
                    await turns(runtime, ["warm"], 20)
                    return await turns(runtime, ["k"], turn_count)

        out[name] = statistics.median(anyio.run(main))
    return out


def _worker(args: tuple[str, bool, str, list[str], int, str]) -> float:
    state, redis, url, keys, count, prefix = args
    os.environ["OPENCLAW_RUNTIME_REDIS_URL"] = url
    os.environ["OPENCLAW_RUNTIME_REDIS_PREFIX"] = prefix

    async def main() -> float:
        async with make_runtime(Path(state), redis) as runtime:
            start = time.perf_counter()
            await turns(runtime, keys, count)
            return time.perf_counter() - start

    return anyio.run(main)


def throughput(workers: int, sessions: int, count: int, url: str) -> dict[str, float]:
    out = {}
    keys = [f"chat-{i}" for i in range(sessions)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        multiprocessing.get_context("spawn").Pool(workers) as pool,
    ):
        for name, redis in (("embedded", False), ("redis", True)):
            prefix = f"bench:{uuid.uuid4().hex[:8]}:"
            jobs = []
            for w in range(workers):
                own = keys if redis else keys[w::workers] or [f"solo-{w}"]
                jobs.append((f"{tmp}/{name}-{w}", redis, url, own, count, prefix))
            pool.map(_worker, [(*job[:4], 5, job[5]) for job in jobs])  # warm up (imports)
            elapsed = pool.map(_worker, jobs)  # each worker times its own turns
            out[name] = workers * count / max(elapsed)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=8)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "plugins" / "redis"))
    from openclaw_runtime_redis.testing import redis_server_url

    with redis_server_url() as url:
        os.environ["OPENCLAW_RUNTIME_REDIS_URL"] = url
        per_turn = overhead(args.turns, url)
        print(f"per turn, one process, median of {args.turns} turns on one session key:")
        for name, seconds in per_turn.items():
            print(f"  {name:<9} {seconds * 1e6:9.0f} µs/turn")
        added = per_turn["redis"] - per_turn["embedded"]
        ratio = per_turn["redis"] / per_turn["embedded"]
        print(f"  Redis adds {added * 1e6:.0f} µs/turn ({ratio:.2f}×)")
        rate = throughput(args.workers, args.sessions, args.turns, url)
        print(
            f"throughput, {args.workers} processes × {args.sessions} sessions, "
            f"{args.turns} turns each:"
        )
        for name, value in rate.items():
            print(f"  {name:<9} {value:9.0f} turns/s")
        print(f"  ratio redis/embedded {rate['redis'] / rate['embedded']:.2f}×")


if __name__ == "__main__":
    main()
