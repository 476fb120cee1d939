"""``Runtime.run`` with K tool calls in one run against pydantic-ai, and the cost per extra call.

One run: user prompt → the model calls ``read(path)`` K times, one call per model response,
each answered by the real (async) tool → the model answers with text. Both models are as
close to free as they get (ours: a stream function pushing one precomputed ``done`` event;
pydantic-ai: ``FunctionModel`` with an async callback, so pydantic-ai runs no tool in a
thread). Ours runs on a fresh session (created by the run, persisted under the state dir;
with ``--mode memory`` or ``both`` also, or only, in memory mode: ``Runtime(memory=True)``,
nothing written); pydantic-ai's ``agent.run`` without history. Sides and K values are
interleaved round by round; the figure is the median run time (wall, and process CPU, which
other load on the machine disturbs less) divided by K (µs per tool-calling turn), the ratio
ours / pydantic-ai, and the marginal cost of one more tool call between two K values (flat
means the marginal cost does not grow with K). The load average is printed with the result.

With the durable mode, a **file floor** runs in the same process: for each of K turn ends
only the file work the durability guarantee needs (``durable_floor``: scan the turn's two lines,
taken from a session file the durable side wrote, for registered secrets, ``flock`` the lock
file, one ``write`` of both lines to an ``O_APPEND`` file, unlock; both files real, kept open,
in the same temporary folder as the state dirs). Twice: alone, K times in a row (``file
floor``: hot caches, its least), and with ``--mode both`` also **in place** (``memory +
floor``: a memory-mode runtime whose every session flush does that work, so ``(memory +
floor) − memory`` is the floor as a real run pays it, cold caches and all). Both are printed
next to ``durable − memory``: how far the durable mode's extra cost is from the least it
could be. Last, the cost of creating the fresh run's five files and removing two of them is
measured in the folders the durable side uses, and ``durable − memory`` is printed again
without it: on this project's machines one creation costs from 20 to 700 µs depending on the
folder, which swings the durable side's K = 1 figure by milliseconds between processes.

A third side, the **kernel floor**, runs the same loop on the bare kernel
(``agent.loop.run_agent_loop``: the same stream function, the same tool, no session, no
sanitizers, no context guard, no lanes, no recovery, events to a no-op). It is what any
``Runtime.run`` costs at least, so ``ours − kernel`` is what the runtime adds per tool call.

``--ids per-turn`` has the model name every call ``call_0`` (numbered afresh in every
response, as some OpenAI-compatible servers do) on every side, instead of one id per call.
``--thinking`` puts a thinking block before every call (a reasoning model), on every side.

Run:  .venv/bin/python benchmarks/tool_loop.py [--k 1 10 50] [--rounds 7] [--quick]
      [--mode durable|memory|both] [--ids unique|per-turn] [--thinking]
Needs the peer: .venv/bin/pip install -r benchmarks/requirements.txt
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import itertools
import os
import platform
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
from agent_turn import (  # type: ignore[import-not-found]
    ANSWER,
    POLICY_MODELS,
    _assistant,
    _done,
    make_runtime,
    model_ref,
    ours_modes,
)
from peers import require_peer  # type: ignore[import-not-found]

from openclaw_runtime import tool
from openclaw_runtime.agent.loop import run_agent_loop
from openclaw_runtime.agent.types import AgentContext, AgentLoopConfig
from openclaw_runtime.events import AgentEvent
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import ThinkingContent, ToolCall, UserMessage
from openclaw_runtime.redaction import contains_secret

PROMPT = "Read the files one after another."
MAX_K = 200


@tool
async def read(path: str) -> str:
    """Read a file of the workspace."""
    return f"contents of {path}"


#: How the model names its calls (``--ids``): ``unique`` (``call_0``, ``call_1``, …, one id
#: per call of the run), or ``per-turn`` (numbered afresh in every response, so every call of
#: a run is ``call_0``: what some OpenAI-compatible servers send).
ID_SCHEMES = ("unique", "per-turn")


def call_id(n: int, ids: str) -> str:
    """The id of the run's ``n``-th call under the ``ids`` scheme."""
    return f"call_{n}" if ids == "unique" else "call_0"


#: What a reasoning model says before each call (``--thinking``).
THOUGHT = "The next file may hold the answer; read it."
#: The signature an Anthropic-API model (``--model claude-…``) gives it, as Claude signs its
#: thinking; elsewhere the field the reasoning came in, as the OpenAI-compatible provider
#: records it.
SIGNATURE = "EqQBCkYIBxgCKkD3c2lnbmF0dXJlIG9mIHRoZSB0aG91Z2h0"


def thought_of(model: str) -> ThinkingContent:
    """The thinking block ``model`` (a ``--model`` name) says before each call."""
    signed = POLICY_MODELS[model]["api"] == "anthropic-messages"
    return ThinkingContent(
        thinking=THOUGHT, thinking_signature=SIGNATURE if signed else "reasoning_content"
    )


@functools.cache
def calls_of(ids: str, thinking: bool, model: str = "bench") -> list[Any]:
    """The run's assistant turns, one call each (made once per scheme and model)."""
    thought = thought_of(model)
    return [
        _assistant(
            *([thought.model_copy()] if thinking else []),
            ToolCall(id=call_id(n, ids), name="read", arguments={"path": f"f{n}.txt"}),
            stop="toolUse",
            model=model,
        )
        for n in range(MAX_K)
    ]


def calls_answered(context: Context) -> int:
    """The tool results since the last user message: the calls this turn made so far."""
    done = 0
    for message in reversed(context.messages):
        role = getattr(message, "role", None)
        if role == "user":
            break
        done += role == "toolResult"
    return done


def loop_stream(k: int, ids: str = "unique", thinking: bool = False, model: str = "bench") -> Any:
    """A stream function calling ``read`` ``k`` times, then answering with text."""
    calls = calls_of(ids, thinking, model)

    def stream(model: Model, context: Context, options: StreamOptions) -> Any:
        done = calls_answered(context)
        return _done(calls[done] if done < k else ANSWER)

    return stream


def pydantic_ai_agent(k: int, ids: str = "unique", thinking: bool = False) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import RequestUsage

    usage = RequestUsage(input_tokens=1_200, output_tokens=40)
    calls = [
        ModelResponse(
            parts=[
                *([ThinkingPart(THOUGHT)] if thinking else []),
                ToolCallPart("read", {"path": f"f{n}.txt"}, tool_call_id=call_id(n, ids)),
            ],
            usage=usage,
        )
        for n in range(k)
    ]
    answer = ModelResponse(parts=[TextPart(ANSWER.content[0].text)], usage=usage)  # type: ignore[union-attr]

    async def model_fn(messages: list[Any], info: Any) -> Any:
        done = sum(1 for m in messages if isinstance(m, ModelResponse))
        return calls[done] if done < k else answer

    async def read_file(path: str) -> str:
        """Read a file of the workspace."""
        return f"contents of {path}"

    agent = Agent(FunctionModel(model_fn))
    agent.tool_plain(name="read")(read_file)
    return agent


def kernel_floor(ids: str = "unique", thinking: bool = False, model: str = "bench") -> Any:
    """The bare kernel running the same loop: what a ``Runtime.run`` costs at least."""
    config = AgentLoopConfig(model=Model(**POLICY_MODELS[model]))

    async def ignore(event: AgentEvent) -> None:
        return None

    async def kernel(k: int) -> Any:
        context = AgentContext("", [], [read])
        prompt = UserMessage(content=PROMPT)
        stream = loop_stream(k, ids, thinking, model)
        return await run_agent_loop([prompt], context, config, ignore, stream_fn=stream)

    return kernel


def turn_lines(state_dir: Path) -> tuple[bytes, bytes]:
    """One tool-calling turn's two lines (the assistant's call, the tool's result) as the
    durable side wrote them to a session file under ``state_dir``."""
    session = next(state_dir.glob("**/*.jsonl"))
    lines = session.read_bytes().splitlines(keepends=True)
    call, result = lines[2], lines[3]  # after the header and the prompt
    assert b'"toolCall"' in call and b'"toolResult"' in result, (call, result)
    return call, result


def durable_floor(directory: Path, lines: tuple[bytes, bytes]) -> Any:
    """Only the file work a durable turn end needs: the floor of ``durable − memory``.

    ``turn_end()``: each line scanned for registered secrets (``contains_secret``, what the
    durable append does before a line may reach the file), the lock file's ``flock`` taken,
    one ``write`` of both lines to the ``O_APPEND`` session file, the lock let go. The two
    descriptors stay open (as a session that flushes often keeps them); nothing else is
    checked (no other writer, no replaced file), which the runtime must check. Returns
    ``(turn_end, close)``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "floor.jsonl"
    flags = os.O_CREAT | os.O_CLOEXEC
    lock_fd = os.open(f"{path}.runtime.lock", os.O_RDWR | flags, 0o600)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | flags, 0o600)
    first, second = lines

    def turn_end() -> None:
        contains_secret(first)
        contains_secret(second)
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        os.write(fd, first + second)
        fcntl.flock(lock_fd, fcntl.LOCK_UN)

    def close() -> None:
        os.close(fd)
        os.close(lock_fd)

    return turn_end, close


#: where a fresh durable run creates files today, under its state dir: (created, removed)
#: the session lane's lock file (kept) and record (removed at the end), the session file and
#: its write lock (kept), the live run's owner file (removed at the end)
FRESH_RUN_FILES = {"lanes": (2, 1), "sessions": (2, 0), "subagents/live": (1, 1)}
CREATIONS = 100


def creation_cost(state_dir: Path) -> float:
    """Median process CPU of the file creations and removals a fresh durable run makes, in
    the folders it makes them in under ``state_dir`` (probes: ``O_CREAT | O_EXCL`` then
    ``close`` of new files nobody reads, then their ``unlink``), in seconds. On one file system the
    cost depends on the folder (seen on this project's machines: 20 µs per creation in one
    new folder, 700 µs in the next, on the same ext4 file system), so it is measured where
    the run writes."""
    total = 0.0
    for folder, (created, removed) in FRESH_RUN_FILES.items():
        directory = state_dir / folder
        probes = [directory / f".creation-probe-{n}" for n in range(CREATIONS)]
        creations, removals = [], []
        for probe in probes:  # new files, kept meanwhile, as a run's new files are
            cpu = time.process_time()
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            creations.append(time.process_time() - cpu)
        for probe in probes:
            cpu = time.process_time()
            probe.unlink()
            removals.append(time.process_time() - cpu)
        total += created * statistics.median(creations) + removed * statistics.median(removals)
    return total


def floor_in_place(runtime: Any, turn_end: Any, model: str = "bench") -> Any:
    """A side running memory-mode ``runtime`` with ``turn_end`` done at every session flush
    (memory mode's own flush does nothing): the file floor paid inside a real run."""
    from openclaw_runtime.transcript.memory import MemorySession

    async def flush(self: MemorySession) -> None:
        turn_end()

    async def ours(k: int) -> Any:
        plain = MemorySession.flush
        MemorySession.flush = flush  # type: ignore[method-assign]
        try:
            return await runtime[k].run(
                PROMPT, session_id=uuid.uuid4().hex, tools=[read], model=model_ref(model)
            )
        finally:
            MemorySession.flush = plain  # type: ignore[method-assign]

    return ours


async def amain(args: argparse.Namespace) -> None:
    ks: list[int] = args.k
    modes = ours_modes(args.mode)
    with tempfile.TemporaryDirectory(prefix="tool-loop-") as name:
        runtimes = {
            (mode, k): make_runtime(
                Path(name) / f"{mode}-k{k}",
                loop_stream(k, args.ids, args.thinking, args.model),
                memory=mode == "memory",
                model=args.model,
            )
            for mode in modes
            for k in ks
        }
        agents = {k: pydantic_ai_agent(k, args.ids, args.thinking) for k in ks}

        def ours_in(mode: str) -> Any:
            async def ours(k: int) -> Any:
                return await runtimes[(mode, k)].run(
                    PROMPT, session_id=uuid.uuid4().hex, tools=[read], model=model_ref(args.model)
                )

            return ours

        from pydantic_ai.usage import UsageLimits

        limits = UsageLimits(request_limit=MAX_K + 10)

        async def theirs(k: int) -> Any:
            return await agents[k].run(PROMPT, usage_limits=limits)

        kernel = kernel_floor(args.ids, args.thinking, args.model)
        sides = [(f"ours {mode}", ours_in(mode)) for mode in modes]
        close_floor = None
        if "durable" in modes:  # the file floor, with lines the durable side writes
            await sides[0][1](ks[0])
            lines = turn_lines(Path(name) / f"durable-k{ks[0]}")
            turn_end, close_floor = durable_floor(Path(name) / "floor", lines)
            if "memory" in modes:
                in_place = {
                    k: make_runtime(
                        Path(name) / f"floor-k{k}",
                        loop_stream(k, args.ids, args.thinking, args.model),
                        memory=True,
                        model=args.model,
                    )
                    for k in ks
                }
                runtimes.update({("floor", k): runtime for k, runtime in in_place.items()})
                sides.append(("memory + floor", floor_in_place(in_place, turn_end, args.model)))

            async def floor(k: int) -> None:
                for _ in range(k):
                    turn_end()

            sides.append(("file floor", floor))
        runs = [(side, fn) for side, fn in sides if side != "file floor"]
        sides.append(("kernel floor", kernel))
        sides.append(("pydantic-ai", theirs))
        ours_sides = [side for side, _ in sides[:-1]]
        for k in ks:  # validation, untimed
            new = await kernel(k)
            kernel_calls = sum(1 for m in new if m.role == "toolResult")
            print(f"validation kernel floor K={k}: tools={kernel_calls}")
            assert kernel_calls == k and new[-1].stop_reason == "stop", [m.role for m in new]
            for side, fn in runs:
                result = await fn(k)
                roles = [m.role for m in result.messages]
                calls = roles.count("toolResult")
                print(
                    f"validation {side} K={k}: ok={result.ok} attempts={result.attempts} "
                    f"tools={calls}"
                )
                assert result.ok and result.attempts == 1 and calls == k, roles
            out = await theirs(k)
            assert out.output == ANSWER.content[0].text, out.output  # type: ignore[union-attr]
            assert sum(1 for m in out.all_messages() if m.kind == "response") == k + 1
        samples: dict[tuple[str, int], list[float]] = {}
        cpu_samples: dict[tuple[str, int], list[float]] = {}
        for _ in range(args.rounds):
            for k in ks:
                for side, fn in sides:
                    for _ in range(args.batch):
                        start, cpu = time.perf_counter(), time.process_time()
                        await fn(k)
                        cpu_samples.setdefault((side, k), []).append(time.process_time() - cpu)
                        samples.setdefault((side, k), []).append(time.perf_counter() - start)
        for runtime in runtimes.values():
            await runtime.aclose()
        if close_floor is not None:
            close_floor()
        # the fresh run's file creations, in the first K's durable state dir
        creation = creation_cost(Path(name) / f"durable-k{ks[0]}") if "durable" in modes else None
    load = os.getloadavg()
    print(
        f"\nK tool calls per run (ids {args.ids}{', thinking' if args.thinking else ''}, "
        f"model {args.model}), "
        f"{args.rounds} interleaved rounds × "
        f"{args.batch} runs per side; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    for title, data in (("wall time", samples), ("process CPU time", cpu_samples)):
        med = {key: statistics.median(xs) for key, xs in data.items()}
        print(f"  {title}, median per run / K (µs per tool-calling turn; ratio to pydantic-ai):")
        print(f"  {'K':>4s} " + " ".join(f"{side:>22s}" for side, _ in sides))
        for k in ks:
            theirs_us = med[("pydantic-ai", k)] / k * 1e6
            cells = [
                f"{med[(side, k)] / k * 1e6:>12,.0f} ({med[(side, k)] / k * 1e6 / theirs_us:4.2f}×)"
                for side in ours_sides
            ]
            print(f"  {k:>4d} " + " ".join(f"{c:>22s}" for c in cells) + f" {theirs_us:>22,.0f}")
        if len(runs) == 3:
            durable, memory = runs[0][0], runs[1][0]
            print(
                "  memory / durable: "
                + ", ".join(f"K={k} {med[(memory, k)] / med[(durable, k)]:.2f}×" for k in ks)
            )
            print(
                "  durable − memory (µs per tool call); the file floor in place ((memory + "
                "floor) − memory) and alone: "
                + ", ".join(
                    f"K={k} {(med[(durable, k)] - med[(memory, k)]) / k * 1e6:,.1f} "
                    f"(floor {(med[('memory + floor', k)] - med[(memory, k)]) / k * 1e6:,.1f} "
                    f"in place, {med[('file floor', k)] / k * 1e6:,.1f} alone)"
                    for k in ks
                )
            )
        for side, _ in runs:
            print(
                f"  {side} above the kernel floor (µs per tool call): "
                + ", ".join(
                    f"K={k} {(med[(side, k)] - med[('kernel floor', k)]) / k * 1e6:,.0f}"
                    for k in ks
                )
            )
        print("  marginal cost of one more tool call (µs), between consecutive K:")
        for low, high in itertools.pairwise(ks):
            for side, _ in sides:
                extra = (med[(side, high)] - med[(side, low)]) / (high - low) * 1e6
                print(f"    {side:12s} K {low}→{high}: {extra:,.0f} µs")
    if creation is not None:
        durable_cpu = {
            key[1]: statistics.median(xs)
            for key, xs in cpu_samples.items()
            if key[0] == "ours durable"
        }
        memory_cpu = {
            key[1]: statistics.median(xs)
            for key, xs in cpu_samples.items()
            if key[0] == "ours memory"
        }
        print(
            "  a fresh run's 5 file creations and 2 removals where it makes them (process "
            f"CPU, medians of {CREATIONS} per folder): {creation * 1e6:,.1f} µs per run (the "
            "least a durable session can create is its own file)"
        )
        if memory_cpu:
            files = creation
            print(
                "  durable − memory − those file operations (process CPU, µs per tool call): "
                + ", ".join(
                    f"K={k} {(durable_cpu[k] - memory_cpu[k] - files) / k * 1e6:,.1f}" for k in ks
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="smoke check: 2 rounds × 2 runs")
    parser.add_argument(
        "--mode",
        choices=["durable", "memory", "both"],
        default="durable",
        help="our runtime's backends: the durable default, memory mode, or both interleaved",
    )
    parser.add_argument(
        "--ids",
        choices=ID_SCHEMES,
        default="unique",
        help="the model's tool-call ids: one per call, or call_0 in every response",
    )
    parser.add_argument(
        "--thinking",
        action="store_true",
        help="every call comes after a thinking block (a reasoning model), on every side",
    )
    parser.add_argument(
        "--model",
        choices=sorted(POLICY_MODELS),
        default="bench",
        help="our side's model: its transcript policy (Claude's thinking is signed)",
    )
    args = parser.parse_args()
    require_peer(parser, "pydantic_ai", "pydantic-ai, the peer")
    if args.quick:
        args.rounds, args.batch = 2, 2
    assert all(0 < k <= MAX_K for k in args.k), f"K must be in 1..{MAX_K}"
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    anyio.run(amain, args)


if __name__ == "__main__":
    main()
