"""Where a tool loop's cost goes: ``Runtime.run`` with one layer at a time made a pass-through.

``tool_loop.py`` says how far a tool-calling turn is from its target (a tenth of
pydantic-ai's). This script says what the rest is made of. It runs the same memory-mode
loop as ``tool_loop.py`` (the model calls ``read`` K times, then answers) on the runtime as
it is and on copies with **one layer replaced by a pass-through**, each in its own process:

* ``- transcript pipeline``: the per-request sanitizers and turn validation
  (``runner.attempt._Pipeline``) hand the history on as it is;
* ``- context guard``: no tool-result projection and no mid-turn overflow precheck
  (``context.guard.ToolResultContextGuard``: only the transform it wraps runs);
* ``- persistence``: no message reaches the session (``SessionWriter.append_message``
  returns a fresh id and stores nothing);
* ``- stream repair``: the provider's stream reaches the loop as it is (no plain-text
  tool-call repair, no reply-tag splitting: ``repair.compose``);
* ``- all four`` together;

next to the **kernel floor** (the bare agent loop, as in ``tool_loop.py``) and
**pydantic-ai**. None of the pass-throughs is a mode of the runtime: each drops a guarantee
(the transcript a provider accepts, a context that fits, a session that survives the
process, repaired tool calls), so they only measure what the guarantee costs.

Each process measures the median process CPU of a run at K = 10 and K = 50 (runs of both K
interleaved after a warm-up); processes alternate side by side, round by round. From the two
medians: the **marginal** cost of one more tool call ((T50 − T10) / 40), the **fixed** cost of
a run (T10 − 10 × marginal), and the cost per tool-calling turn at K = 10 (T10 / 10) as a
ratio to pydantic-ai's. A layer's share is the runtime's figure minus the figure without it.
The load average is printed with the result.

``--part concurrent`` asks the same of issue 13's other per-run row, **1,000 concurrent
runs** above a 10 ms model call (``agent_turn.py``'s part 3: a fresh session each, a text
answer, ``agent.max_concurrent = 1000``): each side but pydantic-ai in its own process runs
``--batches`` batches, each after a batch of the bare stream function (the floor), and its
figure is (process CPU of the side's batch − the floor's) ÷ runs, as a share of the 10 ms
call, with the time in the cyclic garbage collector apart. ``--part loop concurrent`` runs
both, one after the other. The concurrent part also passes through, one at a time and then
all of them with the four layers (``- everything``), the parts of the run's lifecycle that a
patch can remove, each again a guarantee:

* ``- lanes``: no session lane and no global lane (``InProcessLanes.hold`` grants at once:
  no one-run-per-session order, no ``agent.max_concurrent`` cap, no lane timeout);
* ``- live run``: the run is not registered as its session's live run (``Runtime.steer``,
  ``abort`` and follow-ups cannot reach it: ``runner.run.live_run_scope``);
* ``- steering lease``: sub-agent results waiting for the session are not leased into the
  prompt (``_Run._lease_steering``);
* ``- fallback chain``: the first model candidate only, no failover classification
  (``_Run._fallback_chain``);
* ``- maintenance``: no context-engine maintenance after the turn and no wait for a
  previous turn's (``runner.run.maintain_after_turn``,
  ``RunServices.wait_for_session_maintenance``).

``--part rest`` profiles what is left with all of them passed through: fresh memory-mode
text runs one after another (GC off) under ``cProfile``, printing the CPU of an unprofiled
run, the Python calls a run makes, how many functions they are spread over, and the
functions with the most time of their own.

Run:  .venv/bin/python benchmarks/tool_loop_parts.py [--rounds 5] [--runs 120]
      [--part loop|concurrent|rest ...] [--batches 3] [--concurrent-runs 1000]
      [--rest-runs 2000]
The loop part needs the peer: .venv/bin/pip install -r benchmarks/requirements.txt
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from peers import require_peer

KS = (10, 50)
SIDES = (
    "runtime",
    "- transcript pipeline",
    "- context guard",
    "- persistence",
    "- stream repair",
    "- all four",
    "kernel floor",
    "pydantic-ai",
)
LAYERS = ("transcript pipeline", "context guard", "persistence", "stream repair")
LIFECYCLE = ("lanes", "live run", "steering lease", "fallback chain", "maintenance")
CONCURRENT_SIDES = (
    *SIDES[:6],
    *(f"- {part}" for part in LIFECYCLE),
    "- everything",
    "kernel floor",
)


def _replace(owner: Any, name: str, value: Any) -> None:
    """Set ``owner.name`` after checking it exists (a renamed layer must fail loudly here,
    not leave the side measuring the runtime as it is)."""
    if name not in vars(owner):  # defined by that class itself (every class has a __call__)
        raise SystemExit(f"tool_loop_parts: {owner.__name__}.{name} no longer exists")
    setattr(owner, name, value)


def pass_through(layer: str) -> None:
    """Replace ``layer`` by a pass-through in this process."""
    if layer == "transcript pipeline":
        from openclaw_runtime.runner import attempt

        def pipeline(self: Any, messages: list[Any], _signal: Any) -> list[Any]:
            return messages

        _replace(attempt._Pipeline, "__call__", pipeline)
    elif layer == "context guard":
        import inspect

        from openclaw_runtime.context import guard

        async def guarded(self: Any, messages: list[Any], signal: Any = None) -> list[Any]:
            if self.inner is None:
                return messages
            out = self.inner(messages, signal)
            return await out if inspect.isawaitable(out) else list(out)

        _replace(guard.ToolResultContextGuard, "__call__", guarded)
    elif layer == "persistence":
        from openclaw_runtime.transcript import append

        async def append_message(self: Any, message: Any, *, append_mode: Any = None) -> str:
            return uuid.uuid4().hex[:8]

        _replace(append.SessionWriter, "append_message", append_message)
    elif layer == "stream repair":
        from openclaw_runtime.repair import compose

        def provider_stream(self: Any, model: Any, context: Any, options: Any) -> Any:
            return self.__wrapped__(model, context, options)

        _replace(compose._RepairedStreamFn, "__call__", provider_stream)
    elif layer in LIFECYCLE:
        _lifecycle_pass_through(layer)
    else:
        raise ValueError(layer)


def _passed_through(side: str) -> tuple[str, ...]:
    """The layers and lifecycle parts ``side`` runs without."""
    if side == "runtime":
        return ()
    if side == "- all four":
        return LAYERS
    if side == "- everything":
        return (*LAYERS, *LIFECYCLE)
    return (side[2:],)


class _Granted:
    """A lane hold that grants at once and holds nothing (the ``- lanes`` side)."""

    __slots__ = ()
    waited_s = 0.0

    async def __aenter__(self) -> _Granted:
        return self

    async def __aexit__(self, *exc: object) -> bool:
        return False

    def heartbeat(self) -> None:
        return None


class _NotLive:
    """A live-run scope that registers nothing (the ``- live run`` side)."""

    __slots__ = ()

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> bool:
        return False


def _lifecycle_pass_through(part: str) -> None:
    """Replace the lifecycle ``part`` by a pass-through in this process."""
    from openclaw_runtime.runner import run

    if part == "lanes":
        from openclaw_runtime.runner import lanes

        granted = _Granted()

        def hold(self: Any, lane: str, **options: Any) -> _Granted:
            return granted

        _replace(lanes.InProcessLanes, "hold", hold)
    elif part == "live run":
        not_live = _NotLive()
        _replace(run, "live_run_scope", lambda state: not_live)
    elif part == "steering lease":

        async def no_lease(self: Any) -> None:
            return None

        _replace(run._Run, "_lease_steering", no_lease)
    elif part == "fallback chain":

        async def first_candidate(self: Any) -> Any:
            answer = await self._run_candidate(self.candidates[0])
            return run.result_from_candidate(self, answer)

        _replace(run._Run, "_fallback_chain", first_candidate)
    elif part == "maintenance":
        from openclaw_runtime.runner import services

        async def nothing(*args: Any, **kwargs: Any) -> None:
            return None

        _replace(run, "maintain_after_turn", nothing)
        _replace(services.RunServices, "wait_for_session_maintenance", nothing)
    else:
        raise ValueError(part)


async def _side_runs(side: str, runs: int) -> dict[int, float]:
    """Median process CPU (µs) of one run of ``side`` at each K."""
    import tool_loop as tl
    from agent_turn import make_runtime

    fns: dict[int, Callable[[], Any]] = {}
    with tempfile.TemporaryDirectory() as name:
        runtimes = []
        if side == "kernel floor":
            kernel = tl.kernel_floor()
            for k in KS:
                fns[k] = functools.partial(kernel, k)
        elif side == "pydantic-ai":
            from pydantic_ai.usage import UsageLimits

            limits = UsageLimits(request_limit=max(KS) + 10)
            for k in KS:
                agent = tl.pydantic_ai_agent(k)
                fns[k] = functools.partial(agent.run, tl.PROMPT, usage_limits=limits)
        else:
            for layer in _passed_through(side):
                pass_through(layer)
            for k in KS:
                stream = _counted(tl.loop_stream(k))
                runtime = make_runtime(Path(name) / f"k{k}", stream, memory=True)
                runtimes.append(runtime)

                def run(runtime: Any = runtime) -> Any:
                    return runtime.run(
                        tl.PROMPT, session_id=uuid.uuid4().hex, tools=[tl.read], model="fake/m1"
                    )

                fns[k] = run
        for k in KS:  # validation: K tool calls, then the answer
            _MODEL_CALLS[0] = 0
            await _check(side, k, await fns[k]())
        for _ in range(20):  # warm-up
            for k in KS:
                await fns[k]()
        times: dict[int, list[float]] = {k: [] for k in KS}
        gc.collect()
        for _ in range(runs):
            for k in KS:
                start = time.process_time()
                await fns[k]()
                times[k].append(time.process_time() - start)
        for runtime in runtimes:
            await runtime.aclose()
    return {k: statistics.median(v) * 1e6 for k, v in times.items()}


_MODEL_CALLS = [0]


def _counted(stream_fn: Any) -> Any:
    """``stream_fn`` counting its calls in ``_MODEL_CALLS`` (one per model request)."""

    def stream(model: Any, context: Any, options: Any) -> Any:
        _MODEL_CALLS[0] += 1
        return stream_fn(model, context, options)

    return stream


async def _check(side: str, k: int, result: Any) -> None:
    """The run made K tool calls and answered (a pass-through that broke the loop would
    measure something else)."""
    if side == "pydantic-ai":
        calls = sum(1 for message in result.all_messages() if message.kind == "response") - 1
    elif side == "kernel floor":
        calls = sum(1 for message in result if message.role == "toolResult")
    else:
        if not (result.ok and result.attempts == 1 and result.payloads):
            raise SystemExit(f"tool_loop_parts: {side} K={k} did not answer in one attempt")
        calls = _MODEL_CALLS[0] - 1  # every request but the last one called the tool
    if calls != k:
        raise SystemExit(f"tool_loop_parts: {side} K={k} ran {calls} tool calls, not {k}")


async def _side_batches(side: str, runs: int, batches: int) -> dict[str, float]:
    """Median over ``batches`` of ``side``'s process CPU per concurrent run above the floor's,
    and of the CPU its batch spent in the collector, per run (µs)."""
    import agent_turn as at

    from openclaw_runtime.agent.loop import run_agent_loop
    from openclaw_runtime.agent.types import AgentContext, AgentLoopConfig
    from openclaw_runtime.llm import Context, StreamOptions
    from openclaw_runtime.messages import Message, UserMessage

    async def gather(one: Callable[[], Any]) -> list[Any]:
        results: list[Any] = []

        async def task() -> None:
            results.append(await one())

        async with anyio.create_task_group() as tg:
            for _ in range(runs):
                tg.start_soon(task)
        return results

    with tempfile.TemporaryDirectory() as name:
        runtime = at.make_runtime(
            Path(name) / "c", at.sleeping_stream, max_concurrent=runs, memory=True
        )
        model = runtime.resolve_model("fake/m1")
        prompt: list[Message] = [UserMessage(content=at.PROMPT)]

        def direct() -> Any:
            return at.sleeping_stream(model, Context("", prompt, []), StreamOptions()).result()

        if side == "kernel floor":
            config = AgentLoopConfig(model=model)

            async def ignore(event: Any) -> None:
                return None

            async def one() -> Any:
                new = await run_agent_loop(
                    list(prompt),
                    AgentContext("", [], []),
                    config,
                    ignore,
                    stream_fn=at.sleeping_stream,
                )
                return new[-1].stop_reason == "stop"
        else:
            for layer in _passed_through(side):
                pass_through(layer)

            async def one() -> Any:
                result = await runtime.run(at.PROMPT, session_id=uuid.uuid4().hex, model="fake/m1")
                return result.ok and result.attempts == 1 and result.text == at.ANSWER_TEXT

        for _ in range(2):  # warm-up, and validation: every run answered, in one attempt
            await gather(direct)
            if not all(await gather(one)):
                raise SystemExit(f"tool_loop_parts: a concurrent {side} run did not answer")
        above, in_gc = [], []
        for _ in range(batches):
            gc.collect()
            start = time.process_time()
            await gather(direct)
            floor = time.process_time() - start
            gc.collect()
            with at.GcClock(time.process_time) as clock:
                start = time.process_time()
                await gather(one)
                cpu = time.process_time() - start
            above.append((cpu - floor) / runs * 1e6)
            in_gc.append(clock.total / runs * 1e6)
        await runtime.aclose()
    return {"above": statistics.median(above), "gc": statistics.median(in_gc)}


def child(side: str, runs: int, batches: int = 0, profile: bool = False) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if profile:
        print(json.dumps(anyio.run(_profiled_rest, runs)))
    elif batches:
        print(json.dumps(anyio.run(_side_batches, side, runs, batches)))
    else:
        print(json.dumps(anyio.run(_side_runs, side, runs)))


def _fit(t: dict[int, float]) -> tuple[float, float]:
    marginal = (t[50] - t[10]) / 40
    return marginal, t[10] - 10 * marginal


def _run_child(side: str, *flags: str) -> dict[str, Any]:
    """One side's process; its JSON answer."""
    child_run = subprocess.run(
        [sys.executable, __file__, "--side", side, *flags], capture_output=True, text=True
    )
    if child_run.returncode != 0:
        sys.exit(f"tool_loop_parts: the {side!r} process failed:\n{child_run.stderr}")
    answer: dict[str, Any] = json.loads(child_run.stdout)
    return answer


def _alternated(sides: tuple[str, ...], rounds: int, *flags: str) -> dict[str, list[Any]]:
    """Every side's answer per round, one process each, the order reversed every round."""
    results: dict[str, list[Any]] = {side: [] for side in sides}
    for round_ in range(rounds):
        for side in sides if round_ % 2 == 0 else tuple(reversed(sides)):
            results[side].append(_run_child(side, *flags))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=120, help="runs per K in each process")
    parser.add_argument(
        "--part",
        nargs="+",
        default=["loop"],
        choices=["loop", "concurrent", "rest"],
        help="the tool loop (K = 10 and 50), 1,000 concurrent runs, and/or a profile of a run"
        " without every part a patch can remove",
    )
    parser.add_argument("--batches", type=int, default=3, help="concurrent batches in each process")
    parser.add_argument(
        "--concurrent-runs", type=int, default=1_000, help="runs in one concurrent batch"
    )
    parser.add_argument(
        "--rest-runs", type=int, default=2_000, help="runs timed and profiled by --part rest"
    )
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--child-batches", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--child-profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if min(args.rounds, args.runs, args.batches, args.concurrent_runs, args.rest_runs) < 1:
        parser.error(
            "--rounds, --runs, --batches, --concurrent-runs and --rest-runs must be at least 1"
            f" (got {args.rounds}, {args.runs}, {args.batches}, {args.concurrent_runs},"
            f" {args.rest_runs})"
        )
    if args.side:
        child(args.side, args.runs, args.child_batches, args.child_profile)
        return
    if "loop" in args.part:  # the concurrent and rest parts have no pydantic-ai side
        require_peer(parser, "pydantic_ai", "pydantic-ai, the peer")
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    for part in dict.fromkeys(args.part):
        if part == "loop":
            loop_part(args)
        elif part == "concurrent":
            concurrent_part(args)
        else:
            rest_part(args)


def concurrent_part(args: argparse.Namespace) -> None:
    """The layers' and the lifecycle parts' share of the 1,000-concurrent-runs row."""
    sides = CONCURRENT_SIDES
    load_before = os.getloadavg()
    results = _alternated(
        sides,
        args.rounds,
        *("--runs", str(args.concurrent_runs), "--child-batches", str(args.batches)),
    )
    load = " ".join(f"{x:.2f}" for x in (*load_before, *os.getloadavg()))
    medians = {
        side: {key: statistics.median(r[key] for r in rows) for key in ("above", "gc")}
        for side, rows in results.items()
    }
    print(
        f"\n{args.concurrent_runs:,} concurrent runs above a 10 ms model call, memory mode;"
        f" {args.rounds} rounds × one process per side × {args.batches} batches;"
        f" load average before / after: {load}"
    )
    print("process CPU per run above the floor's batch, median of the processes' medians")
    print(f"  {'side':24s} {'per run':>9s} {'of 10 ms':>9s} {'in the GC':>10s}")
    for side in sides:
        above, in_gc = medians[side]["above"], medians[side]["gc"]
        print(f"  {side:24s} {above:7,.0f} µs {above / 100:8.1f}% {in_gc:7,.0f} µs")
    print(
        "\nwhat each layer and lifecycle part costs per run"
        " (the runtime's figure minus the figure without it)"
    )
    parts = (*LAYERS, "all four", *LIFECYCLE, "everything")
    rows = [(part, "runtime", f"- {part}") for part in parts]
    rows.append(("the rest above the kernel", "- everything", "kernel floor"))
    for label, with_it, without in rows:
        share = medians[with_it]["above"] - medians[without]["above"]
        gc_share = medians[with_it]["gc"] - medians[without]["gc"]
        print(
            f"  {label:26s} {share:7,.0f} µs {share / 100:5.1f}% of 10 ms"
            f" (of it in the GC {gc_share:,.0f} µs)"
        )
    print("\ntarget: ≤ 5 % of the 10 ms model call, 500 µs per run")


def rest_part(args: argparse.Namespace) -> None:
    """What a run is made of with the four layers and the lifecycle parts passed through."""
    load_before = os.getloadavg()
    answer = _run_child("- everything", "--runs", str(args.rest_runs), "--child-profile")
    load = " ".join(f"{x:.2f}" for x in (*load_before, *os.getloadavg()))
    runs = answer["runs"]
    print(
        f"\nthe rest: fresh memory-mode text runs without the four layers and the"
        f" {len(LIFECYCLE)} lifecycle parts, {runs:,} one after another, GC off;"
        f" load average before / after: {load}"
    )
    print(
        f"  unprofiled: {answer['cpu_us']:,.0f} µs per run; {answer['calls']:,.0f} Python calls"
        f" per run to {answer['functions']:,} functions"
        f" ({answer['runtime_functions']:,} of them in openclaw_runtime)"
    )
    print("  the functions with the most time of their own (share of the profiled run):")
    for share, name in answer["top"]:
        print(f"    {share:5.1f} %  {name}")


async def _profiled_rest(runs: int) -> dict[str, Any]:
    """``rest_part``'s figures, measured in this process (a child)."""
    import cProfile

    import agent_turn as at

    for part in _passed_through("- everything"):
        pass_through(part)
    with tempfile.TemporaryDirectory() as name:
        runtime = at.make_runtime(Path(name) / "r", at.text_stream, memory=True)

        async def batch() -> None:
            for _ in range(runs):
                result = await runtime.run(at.PROMPT, session_id=uuid.uuid4().hex, model="fake/m1")
                if not (result.ok and result.text == at.ANSWER_TEXT):
                    raise SystemExit("tool_loop_parts: a run without everything did not answer")

        await batch()  # warm-up
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            await batch()
            cpu = time.process_time() - start
            profile = cProfile.Profile()
            profile.enable()
            await batch()
            profile.disable()
        finally:
            gc.enable()
        await runtime.aclose()
    return _rest_figures(profile, runs, cpu)


def _rest_figures(profile: Any, runs: int, cpu: float) -> dict[str, Any]:
    """``rest_part``'s figures from ``runs`` profiled runs and their unprofiled CPU."""
    import pstats

    import openclaw_runtime

    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in stats.values())
    package = os.path.dirname(openclaw_runtime.__file__)
    ranked = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)
    top = [
        (row[2] / total * 100, f"{_short(file)}:{line} {function}")
        for (file, line, function), row in ranked[:15]
    ]
    return {
        "runs": runs,
        "cpu_us": cpu / runs * 1e6,
        "calls": sum(row[1] for row in stats.values()) / runs,
        "functions": len(stats),
        "runtime_functions": sum(1 for file, _, _ in stats if file.startswith(package)),
        "top": top,
    }


def _short(file: str) -> str:
    """A profiled file's name from its package down (``~`` for a built-in)."""
    if file == "~":
        return "(built-in)"
    parts = Path(file).parts
    for anchor in ("openclaw_runtime", "site-packages", "benchmarks"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) + (anchor != "openclaw_runtime") :])
    return Path(file).name


def loop_part(args: argparse.Namespace) -> None:
    """The layers' share of a tool-calling turn at K = 10 and K = 50."""
    load_before = os.getloadavg()
    results = _alternated(SIDES, args.rounds, "--runs", str(args.runs))
    load_after = os.getloadavg()
    medians = {
        side: {k: statistics.median(r[str(k)] for r in rows) for k in KS}
        for side, rows in results.items()
    }
    load = " ".join(f"{x:.2f}" for x in (*load_before, *load_after))
    print(
        f"\nmemory mode, {args.rounds} rounds × one process per side × {args.runs} runs per K;"
        f" load average before / after: {load}"
    )
    print("process CPU, median of the processes' medians (µs)")
    theirs = medians["pydantic-ai"][10] / 10
    print(
        f"  {'side':24s} {'run K=10':>9s} {'run K=50':>9s} {'per call':>9s} {'fixed':>8s}"
        f" {'K=10 per turn':>14s}"
    )
    for side in SIDES:
        t = medians[side]
        marginal, fixed = _fit(t)
        print(
            f"  {side:24s} {t[10]:9,.0f} {t[50]:9,.0f} {marginal:9,.1f} {fixed:8,.0f}"
            f" {t[10] / 10:8,.0f} ({t[10] / 10 / theirs:.3f}×)"
        )
    marginal, fixed = _fit(medians["runtime"])
    print("\nwhat each layer costs (the runtime's figure minus the figure without it)")
    print(f"  {'layer':26s} {'per call':>9s} {'fixed':>8s} {'K=10 per turn':>14s}")
    rows = [(layer, medians["runtime"], medians[f"- {layer}"]) for layer in (*LAYERS, "all four")]
    rows.append(("the rest above the kernel", medians["- all four"], medians["kernel floor"]))
    for label, with_it, without in rows:
        m_with, f_with = _fit(with_it)
        m_without, f_without = _fit(without)
        share = (with_it[10] - without[10]) / 10
        print(
            f"  {label:26s} {m_with - m_without:9,.1f} {f_with - f_without:8,.0f}"
            f" {share:8,.0f} ({share / theirs:.3f}×)"
        )
    ours = medians["runtime"][10] / 10
    print(
        f"\ntarget: 0.1× of pydantic-ai's {theirs:,.0f} µs per turn at K=10,"
        f" {theirs / 10:,.0f} µs; the runtime: {ours:,.0f} µs"
    )


if __name__ == "__main__":
    main()
