"""Turns on a kept-open session: how a turn's cost grows with the session, and what one lost
tool result does to it.

Every turn: user prompt → the model calls ``read`` ``--calls`` times (a fresh id each, as most
providers give; ``--ids per-turn``: ``call_0`` every time, as some OpenAI-compatible servers
number them afresh in every response) → a text answer. Memory mode
(``Runtime(memory=True)``), sessions kept open between their turns. Three sides, interleaved
turn by turn, each on ``--sessions`` sessions of ``--turns`` turns:

* **clean**: the session as the runtime writes it;
* **lost result**: the same, but after its first turn the session gets an assistant turn
  calling a tool whose result never came (what a process killed mid-tool leaves);
* **kernel floor**: the same turn on the bare agent loop (``agent.loop.run_agent_loop``:
  no session, no sanitizer, no guard), what no turn can cost less than.

Printed: process CPU per turn (median over the sessions) for the first turns and the last
ones, and the ratios lost ÷ clean and clean ÷ kernel floor in the same windows; with the
load average. Compare code versions by running it once per version, alternating
(``PYTHONPATH=<checkout>``).

Run:  .venv/bin/python benchmarks/session_turns.py [--sessions 30] [--turns 40] [--calls 3]
      [--ids unique|per-turn] [--model bench|openai-completions|claude-…] [--thinking]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_turn as at  # the harness's runtimes and model
from tool_loop import (  # the same tool, the bare loop, the id schemes, the thought
    ID_SCHEMES,
    PROMPT,
    calls_answered,
    kernel_floor,
    read,
    thought_of,
)

from openclaw_runtime.messages import AssistantMessage, TextContent, ToolCall, UserMessage


def calling_stream(
    calls: int, ids: str = "unique", model: str = "bench", thinking: bool = False
) -> Any:
    """A stream function calling ``read`` ``calls`` times, then answering: a fresh id for
    every call (``ids="unique"``), or ``call_0`` every time (``"per-turn"``: numbered afresh in
    every response, as some OpenAI-compatible servers do); as the ``--model`` ``model``, with
    a thinking block before every call and the answer (``tool_loop.thought_of``)."""
    before = [thought_of(model)] if thinking else []
    answer = at._assistant(*before, TextContent(text=at.ANSWER_TEXT), stop="stop", model=model)

    def stream(_model: Any, context: Any, options: Any) -> Any:
        done = calls_answered(context)
        if done < calls:
            call_id = f"call_{uuid.uuid4().hex[:16]}" if ids == "unique" else "call_0"
            call = ToolCall(id=call_id, name="read", arguments={"path": f"f{done}.txt"})
            return at._done(at._assistant(*before, call, stop="toolUse", model=model))
        return at._done(answer)

    return stream


async def lose_a_result(runtime: Any, session_id: str, cwd: str) -> None:
    """Append a prompt and an assistant turn whose call never got its result."""
    session = await runtime.checkout_session(session_id, cwd=cwd)
    await session.append_message(UserMessage(content="read it"))
    lost = ToolCall(id=f"lost_{uuid.uuid4().hex[:8]}", name="read", arguments={"path": "lost.txt"})
    await session.append_message(AssistantMessage(content=[lost], stop_reason="toolUse"))
    await runtime.checkin_session(session)


async def amain(args: argparse.Namespace) -> None:
    stream = calling_stream(args.calls, args.ids, args.model, args.thinking)
    floor_loop = kernel_floor(args.ids, args.thinking, args.model)
    with tempfile.TemporaryDirectory(prefix="session-turns-") as name:
        runtime = at.make_runtime(Path(name), stream, memory=True, model=args.model)
        runtime.max_open_sessions = 4 * args.sessions
        cpu: dict[str, list[list[int]]] = {side: [] for side in ("clean", "lost", "floor")}
        for _ in range(args.sessions):
            ids = {"clean": uuid.uuid4().hex, "lost": uuid.uuid4().hex}
            rows: dict[str, list[int]] = {side: [] for side in cpu}
            for turn in range(args.turns):
                for side in ("clean", "lost"):
                    start = time.process_time_ns()
                    result = await runtime.run(
                        PROMPT, session_id=ids[side], tools=[read], model=at.model_ref(args.model)
                    )
                    rows[side].append(time.process_time_ns() - start)
                    assert result.error is None, result.error
                    if turn == 0 and side == "lost":
                        await lose_a_result(runtime, ids[side], name)
                start = time.process_time_ns()
                await floor_loop(args.calls)
                rows["floor"].append(time.process_time_ns() - start)
            for side, row in rows.items():
                cpu[side].append(row)
        await runtime.aclose()

    def window(side: str, turns: range) -> float:
        per_session = [statistics.median(row[t] for t in turns) for row in cpu[side]]
        return statistics.median(per_session) / 1_000

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{args.sessions} kept-open memory sessions × {args.turns} turns, {args.calls} tool "
        f"call(s) a turn (ids {args.ids}{', thinking' if args.thinking else ''}, model "
        f"{args.model}), interleaved; process CPU per turn, median; "
        f"load average {load}"
    )
    last = args.turns
    windows = [("turns 2–5", range(1, 5)), (f"turns {last - 3}–{last}", range(last - 4, last))]
    for label, turns in windows:
        clean, lost, floor = (window(side, turns) for side in ("clean", "lost", "floor"))
        print(
            f"  {label:12} clean {clean:8,.0f} µs   lost result {lost:8,.0f} µs "
            f"({lost / clean:.2f}× clean)   kernel floor {floor:6,.0f} µs "
            f"(clean {clean / floor:.1f}× the floor)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument(
        "--ids",
        choices=ID_SCHEMES,
        default="unique",
        help="the model's tool-call ids: a fresh one per call, or call_0 in every response",
    )
    parser.add_argument(
        "--model",
        choices=sorted(at.POLICY_MODELS),
        default="bench",
        help="the model's name and API: its transcript policy (Claude's thinking is signed)",
    )
    parser.add_argument(
        "--thinking",
        action="store_true",
        help="a thinking block before every call and answer (a reasoning model)",
    )
    args = parser.parse_args()
    if args.turns < 9 or args.sessions < 1 or args.calls < 1:
        parser.error("--turns must be at least 9, --sessions and --calls at least 1")
    anyio.run(amain, args)


if __name__ == "__main__":
    main()
