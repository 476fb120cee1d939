"""The providers' request bodies in a tool loop: converted whole at every request, or through
the provider's request memo (only the new tool groups), against ``orjson.dumps`` of the body.

For each ``--provider`` (``anthropic``: ``claude-opus-4-6`` with signed thinking, the
Anthropic plugin; ``anthropic-off``: the same with thinking off, the runtime's default;
``google``: ``gemini-2.5-pro`` with signed thoughts, the Google plugin; ``openai``:
``gpt-4o``, the core's OpenAI-compatible provider): a history of ``--history``
messages (the harness's plain user/assistant/tool turns, as the model's own), then a tool
loop of K calls (a thought where the model has them, a call, its result). Before every
request of the loop the body is built by the provider's ``build_body`` twice, interleaved:
with the memo (what a run does) and without it (``on_payload`` set: a hook that may rewrite
the body turns the memo off, the conversion before the memo). Printed per side: process CPU
per request, median over the rounds (the mean over the loop's requests in each round), and
its ratio to serializing that body (``orjson.dumps``, measured the same way): what building
costs above sending. The two bodies are checked equal once per request. A row ``turn``
times a turn's first request instead: after a five-call turn, the history with that turn
resent as copies (what a session's history is at a turn's start) and a new prompt. With
``--sessions N`` (N > 1) a row ``sN`` times N such conversations (each its own history)
taking turns request by request on one provider, as a service's open sessions do: every
request of the five-call turn and the next turn's first request, after each one's first.
``--ids per-turn`` names every call of the loops ``call_0``, as servers that number their
calls afresh in every answer do (the id rule then rewrites every one after the first).

Run:  .venv/bin/python benchmarks/provider_body.py
      [--provider anthropic anthropic-off google openai] [--history 0 1000 10000]
      [--k 10 50] [--rounds 5] [--sessions 1] [--ids unique|per-turn]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, replace
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


@dataclass(frozen=True)
class Target:
    """One provider's side of the benchmark."""

    name: str
    model: Model
    options: StreamOptions
    provider: str  #: ``module:Class`` of the provider
    install: str  #: what to install when the module is missing
    call_prefix: str
    thought: ThinkingContent | None

    def make_provider(self) -> Any:
        module, _, name = self.provider.partition(":")
        return getattr(importlib.import_module(module), name)()


def _model(model_id: str, api: str, provider: str, reasoning: bool) -> Model:
    return Model(
        id=model_id,
        api=api,
        provider=provider,
        base_url="http://127.0.0.1:9",
        context_window=1_000_000,
        max_tokens=8192,
        reasoning=reasoning,
    )


TARGETS = {
    "anthropic": Target(
        "anthropic",
        _model("claude-opus-4-6", "anthropic-messages", "anthropic", True),
        StreamOptions(reasoning="medium"),
        "openclaw_runtime_anthropic._provider:AnthropicProvider",
        "-e plugins/anthropic",
        "toolu_",
        ThinkingContent(thinking="The next file.", thinking_signature="c2ln"),
    ),
    "anthropic-off": Target(
        "anthropic-off",
        _model("claude-opus-4-6", "anthropic-messages", "anthropic", True),
        StreamOptions(),
        "openclaw_runtime_anthropic._provider:AnthropicProvider",
        "-e plugins/anthropic",
        "toolu_",
        None,
    ),
    "google": Target(
        "google",
        _model("gemini-2.5-pro", "google-generative-ai", "google", True),
        StreamOptions(reasoning="medium"),
        "openclaw_runtime_google._provider:GeminiProvider",
        "-e plugins/google",
        "call_",
        ThinkingContent(thinking="The next file.", thinking_signature="c2ln"),
    ),
    "openai": Target(
        "openai",
        _model("gpt-4o", "openai-completions", "openai", False),
        StreamOptions(),
        "openclaw_runtime.providers.openai_compat:OpenAICompatProvider",
        "-e .",
        "call_",
        None,
    ),
}


def history(target: Target, size: int) -> list[Any]:
    """``size`` messages of the harness's history, as the target model's own turns."""
    model = target.model
    wire = json.loads(json.dumps(at.history_wire(size)))
    for message in wire:
        if message["role"] == "assistant":
            message.update(api=model.api, provider=model.provider, model=model.id)
    return [load_entry_message(message) for message in wire]


def loop(target: Target, start: list[Any], k: int, per_turn: bool = False) -> list[list[Any]]:
    """The messages of each request of a K-call loop after ``start`` and a prompt (every
    call ``call_0`` with ``per_turn``)."""
    model = target.model
    messages = [*start, UserMessage(content="Read the files one after another.")]
    requests = [list(messages)]
    for n in range(k):
        call_id = "call_0" if per_turn else f"{target.call_prefix}{n:06d}"
        call = ToolCall(id=call_id, name="read", arguments={"path": f"f{n}.txt"})
        thought = [target.thought] if target.thought is not None else []
        messages.append(
            AssistantMessage(
                content=[*thought, call],
                api=model.api,
                provider=model.provider,
                model=model.id,
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
    parser.add_argument("--provider", nargs="+", choices=sorted(TARGETS), default=list(TARGETS))
    parser.add_argument("--history", type=int, nargs="+", default=[0, 1_000, 10_000])
    parser.add_argument("--k", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=1)
    parser.add_argument("--ids", choices=["unique", "per-turn"], default="unique")
    args = parser.parse_args()
    if min(args.history) < 0 or min(args.k) < 1 or args.rounds < 1 or args.sessions < 1:
        parser.error("--history must be at least 0, --k, --rounds and --sessions at least 1")
    targets = [TARGETS[name] for name in args.provider]
    for target in targets:
        try:
            target.make_provider()
        except ImportError:
            parser.error(
                f"the {target.name} provider is not installed: "
                f".venv/bin/pip install {target.install}"
            )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"Request bodies in a tool loop; {args.rounds} rounds; load average {load}")
    print(
        f"  {'provider':<13} {'history':>8} {'K':>4} {'memo µs/req':>12} {'whole µs/req':>13} "
        f"{'dumps µs/req':>13} {'memo/dumps':>11} {'whole/dumps':>12}"
    )
    per_turn = args.ids == "per-turn"
    if per_turn:
        print("  every call of the loops named call_0 (--ids per-turn)")
    gc.disable()
    for target in targets:
        for size in args.history:
            start = history(target, size)
            for k in args.k:
                report(target, size, str(k), [loop(target, start, k, per_turn)], args.rounds)
            requests = turn_start(target, start, per_turn)
            report(target, size, "turn", [requests], args.rounds, timed=len(requests) - 1)
            if args.sessions > 1:
                others = [history(target, size) for _ in range(args.sessions - 1)]
                sessions = [turn_start(target, one, per_turn) for one in [start, *others]]
                report(target, size, f"s{args.sessions}", sessions, args.rounds, timed=1)


def turn_start(target: Target, start: list[Any], per_turn: bool = False) -> list[list[Any]]:
    """The requests of a tool-loop turn of five calls after ``start``, then the next turn's
    first request: the previous turn resent as copies (what a session's history is at a
    turn's start), a new prompt."""
    requests = loop(target, start, 5, per_turn)
    turn = requests[-1]
    model = target.model
    answer = AssistantMessage(
        content=[TextContent(text="Done.")],
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="stop",
    )
    previous = [message.model_copy() for message in turn[len(start) :]] + [answer]
    return [*requests, [*start, *previous, UserMessage(content="And now the next one.")]]


def report(
    target: Target,
    size: int,
    label: str,
    conversations: list[list[list[Any]]],
    rounds: int,
    timed: int = 0,
) -> None:
    """Build every request's body with and without the memo, the conversations' requests
    taking turns on one provider; print the per-request costs of each one's requests from
    ``timed`` on."""
    options = target.options
    no_memo = replace(options, on_payload=lambda body, model: None)
    sides: dict[str, list[float]] = {"memo": [], "whole": [], "dumps": []}
    for _ in range(rounds):
        provider = target.make_provider()
        spent = {name: 0.0 for name in sides}
        for index, messages in _taking_turns(conversations):
            context = Context("You are a helpful agent.", messages, [])
            begin = time.process_time()
            body = provider.build_body(target.model, context, options)
            memo = time.process_time() - begin
            begin = time.process_time()
            whole = provider.build_body(target.model, context, no_memo)
            middle = time.process_time()
            orjson.dumps(whole)
            end = time.process_time()
            assert body == whole, f"{target.name}: the memo's body differs"
            if index >= timed:
                spent["memo"] += memo
                spent["whole"] += middle - begin
                spent["dumps"] += end - middle
        counted = sum(len(requests) - timed for requests in conversations)
        for name in sides:
            sides[name].append(spent[name] / counted)
    med = {name: statistics.median(values) * 1e6 for name, values in sides.items()}
    print(
        f"  {target.name:<13} {size:>8,} {label:>4} {med['memo']:>12,.0f} "
        f"{med['whole']:>13,.0f} {med['dumps']:>13,.0f} "
        f"{med['memo'] / med['dumps']:>10.1f}× {med['whole'] / med['dumps']:>11.1f}×"
    )
    gc.collect()


def _taking_turns(conversations: list[list[list[Any]]]) -> list[tuple[int, list[Any]]]:
    """Each conversation's requests with their index, the conversations taking turns."""
    return [
        (index, requests[index])
        for index in range(max(len(requests) for requests in conversations))
        for requests in conversations
        if index < len(requests)
    ]


if __name__ == "__main__":
    main()
