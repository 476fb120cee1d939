"""The Anthropic plugin's request body in a tool loop: converted whole at every request, or
through the provider's memo (only the new tool groups), against ``orjson.dumps`` of the body.

A history of ``--history`` messages (the harness's plain user/assistant/tool turns, as
Claude's own), then a tool loop of K calls (Claude's signed thinking, a call, its result).
Before every request of the loop the body is built by ``AnthropicProvider.build_body``
twice, interleaved: with the memo (what a run does) and without it (``on_payload`` set: a
hook that may rewrite the body turns the memo off, the conversion before session 21).
Printed per side: process CPU per request, median over the rounds (the mean over the
loop's requests in each round), and its ratio to serializing that body (``orjson.dumps``,
measured the same way): what building costs above sending. The two bodies are checked
equal once per request.

Run:  .venv/bin/python benchmarks/provider_body.py [--history 0 1000 10000] [--k 10 50]
      [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_turn as at  # the harness's histories

from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.transcript.session_context import load_entry_message

MODEL = Model(
    id="claude-opus-4-6",
    api="anthropic-messages",
    provider="anthropic",
    base_url="http://127.0.0.1:9",
    context_window=1_000_000,
    max_tokens=8192,
    reasoning=True,
)
OPTIONS = StreamOptions(reasoning="medium")


def history(size: int) -> list[Any]:
    """``size`` messages of the harness's history, as Claude's own turns."""
    wire = json.loads(json.dumps(at.history_wire(size)))
    for message in wire:
        if message["role"] == "assistant":
            message.update(api=MODEL.api, provider=MODEL.provider, model=MODEL.id)
    return [load_entry_message(message) for message in wire]


def loop(start: list[Any], k: int) -> list[list[Any]]:
    """The messages of each request of a K-call loop after ``start`` and a prompt."""
    messages = [*start, UserMessage(content="Read the files one after another.")]
    requests = [list(messages)]
    for n in range(k):
        call = ToolCall(id=f"toolu_{n:06d}", name="read", arguments={"path": f"f{n}.txt"})
        thought = ThinkingContent(thinking="The next file.", thinking_signature="c2ln")
        messages.append(
            AssistantMessage(
                content=[thought, call],
                api=MODEL.api,
                provider=MODEL.provider,
                model=MODEL.id,
                stop_reason="toolUse",
            )
        )
        messages.append(
            ToolResultMessage(
                tool_call_id=call.id, tool_name="read", content=[TextContent(text=f"file {n}")]
            )
        )
        requests.append(list(messages))
    return requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, nargs="+", default=[0, 1_000, 10_000])
    parser.add_argument("--k", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if min(args.history) < 0 or min(args.k) < 1 or args.rounds < 1:
        parser.error("--history must be at least 0, --k and --rounds at least 1")
    try:
        from openclaw_runtime_anthropic._provider import AnthropicProvider
    except ImportError:
        parser.error(
            "the Anthropic plugin is not installed: .venv/bin/pip install -e plugins/anthropic"
        )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"Anthropic request bodies in a tool loop; {args.rounds} rounds; load average {load}")
    print(
        f"  {'history':>8} {'K':>4} {'memo µs/req':>12} {'whole µs/req':>13} {'dumps µs/req':>13} "
        f"{'memo/dumps':>11} {'whole/dumps':>12}"
    )
    no_memo = StreamOptions(reasoning="medium", on_payload=lambda body, model: None)
    gc.disable()
    for size in args.history:
        start = history(size)
        for k in args.k:
            requests = loop(start, k)
            sides: dict[str, list[float]] = {"memo": [], "whole": [], "dumps": []}
            for _ in range(args.rounds):
                provider = AnthropicProvider()
                spent = {name: 0.0 for name in sides}
                for messages in requests:
                    context = Context("You are a helpful agent.", messages, [])
                    begin = time.process_time()
                    body = provider.build_body(MODEL, context, OPTIONS)
                    spent["memo"] += time.process_time() - begin
                    begin = time.process_time()
                    whole = provider.build_body(MODEL, context, no_memo)
                    spent["whole"] += time.process_time() - begin
                    begin = time.process_time()
                    orjson.dumps(whole)
                    spent["dumps"] += time.process_time() - begin
                    assert body == whole, "the memo's body differs"
                for name in sides:
                    sides[name].append(spent[name] / len(requests))
            med = {name: statistics.median(values) * 1e6 for name, values in sides.items()}
            print(
                f"  {size:>8,} {k:>4} {med['memo']:>12,.0f} {med['whole']:>13,.0f} "
                f"{med['dumps']:>13,.0f} {med['memo'] / med['dumps']:>10.1f}× "
                f"{med['whole'] / med['dumps']:>11.1f}×"
            )
            gc.collect()


if __name__ == "__main__":
    main()
