"""The context guard per model request inside a tool loop: projections and the mid-turn
pre-check over a growing history of the runtime's own messages.

Each loop builds a fresh 50-call history (user prompt, then an assistant tool call and its
result per call) and sends every request of it through one ``ToolResultContextGuard`` with
the pre-check on, as a tool loop does; the figure is the process CPU per request, median of
the loops, for an ASCII system prompt and for one in CJK (whose token count is a regex pass
over the prompt). Compare two checkouts by running it with each one's ``PYTHONPATH``,
alternating processes.

Run:  .venv/bin/python benchmarks/guard_request.py [--loops 300] [--k 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import anyio

from openclaw_runtime.context.guard import MidTurnPrecheckOptions, ToolResultContextGuard
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

PROMPTS = {
    "ASCII system prompt": "You are a helpful assistant. " * 100,
    "CJK system prompt": "你是一个乐于助人的助手。" * 100,
}


def loop_messages(k: int) -> list[Any]:
    """A prompt and ``k`` tool calls with their results, as the runtime's models."""
    messages: list[Any] = [UserMessage(content="Read the files one after another.")]
    for n in range(k):
        call = ToolCall(id=f"call_{n}", name="read", arguments={"path": f"f{n}.txt"})
        messages.append(
            AssistantMessage(
                content=[call], api="bench", provider="fake", model="m1", stop_reason="toolUse"
            )
        )
        messages.append(
            ToolResultMessage(
                tool_call_id=f"call_{n}",
                tool_name="read",
                content=[TextContent(text=f"contents of f{n}.txt")],
            )
        )
    return messages


async def one_loop(k: int, system_prompt: str) -> float:
    """CPU µs per request of one loop of ``k`` requests."""
    messages = loop_messages(k)
    guard = ToolResultContextGuard(
        context_window_tokens=200_000,
        mid_turn_precheck=MidTurnPrecheckOptions(
            context_token_budget=200_000,
            reserve_tokens=16_384,
            get_system_prompt=lambda: system_prompt,
            get_pre_prompt_message_count=lambda: 1,
        ),
    )
    start = time.process_time()
    for n in range(1, k + 1):
        await guard(messages[: 1 + 2 * n])
    return (time.process_time() - start) / k * 1e6


async def amain(args: argparse.Namespace) -> None:
    for label, prompt in PROMPTS.items():
        samples = [await one_loop(args.k, prompt) for _ in range(args.loops)]
        warm = samples[len(samples) // 6 :]
        print(f"{label}: guard per request {statistics.median(warm):.1f} µs (K={args.k})")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=300)
    parser.add_argument("--k", type=int, default=50)
    anyio.run(amain, parser.parse_args())


if __name__ == "__main__":
    main()
