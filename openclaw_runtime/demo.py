"""``openclaw-runtime demo``: watch a real session save itself — offline, over real HTTP.

Nothing is mocked inside the runtime. A ``FaultInjectingOpenAIServer`` (standard library
only) plays an OpenAI-compatible provider on 127.0.0.1, and a ``Runtime`` configured in code
talks to it through the same provider, auth ledger, lanes and transcript store a production
run uses:

* the catalog says ``demo/gpt-demo`` has a 128k window, but the server enforces 3 000 tokens
  — the common "the catalog is wrong about this deployment" situation;
* provider ``demo`` has two auth profiles; the server rate-limits the first key, so the first
  attempt gets a 429, the run rotates to the second key and the ledger puts the first one in
  cooldown (later turns skip it);
* a turn calls the ``get_weather`` tool (canned data) and answers from its result;
* a pasted block of notes fills the window, so the next turn gets
  ``context_length_exceeded``: the run learns the real limit, compacts the history (the
  server writes the summary) and retries in the smaller context.

Each decision is printed as it happens, then where the transcript is, the ledger and the
usage. Only core dependencies are needed (no pytest, no network), and it takes about a second.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import click

from ._runtime import Runtime
from .agent import tool
from .commands.invocation import current_program_command
from .commands.profiles import profile_rows
from .commands.timeline import AnswerWriter, describe_event, text_delta
from .events import Event
from .runner.request import RunResult
from .testing.openai_server import FaultInjectingOpenAIServer

__all__ = ["SERVER_WINDOW", "demo_config", "get_weather", "run_demo"]

PROVIDER = "demo"
MODEL_ID = "gpt-demo"
FALLBACK_ID = "gpt-demo-mini"
#: The window the server enforces; the catalog claims ``CATALOG_WINDOW``.
SERVER_WINDOW = 3_000
CATALOG_WINDOW = 128_000
SESSION_KEY = "demo:lisbon-trip"
# (profile id, key, what the server does with it). Fake keys, local server; never printed.
PROFILES = (
    ("demo:primary", "sk-demo-primary-key-0000000001", "rate_limited"),
    ("demo:backup", "sk-demo-backup-key-0000000002", "ok"),
)
#: Events that are bookkeeping for the demo's purpose (the timeline shows decisions).
_QUIET = frozenset({"run_start", "lane_wait", "lane_acquired"})

_WEATHER = {"Lisbon": (21, "sunny", "light breeze from the Atlantic")}

_NOTES = (
    "Day {n}: tram 28 from Martim Moniz up to Graca before 9am, it gets packed later",
    "Day {n}: pasteis de nata at the old bakery in Belem, go early, bring cash",
    "Day {n}: the miradouros close to sunset are crowded, Senhora do Monte is calmer",
    "Day {n}: LX Factory on Sunday morning, then a walk along the river to the bridge",
    "Day {n}: ferry to Cacilhas for grilled fish, the last boat back leaves around midnight",
    "Day {n}: the hills are steep and the stones are slippery, wear shoes with grip",
)
_PACKING = (
    "packing list from my friend: light jacket for the evening wind, sunscreen, refillable "
    "bottle, comfortable shoes, a scarf for churches, an adapter plug, a small day bag"
)


@tool
async def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city (canned data: the demo is offline)."""
    temperature, sky, wind = _WEATHER.get(city, (18, "clear", "calm"))
    return {"city": city, "temp_c": temperature, "sky": sky, "wind": wind}


def demo_config(base_url: str, state_dir: Path) -> dict[str, Any]:
    """The demo's runtime configuration, as a config file would hold it."""

    def model(model_id: str) -> dict[str, Any]:
        return {
            "id": model_id,
            "api": "openai-completions",
            "provider": PROVIDER,
            "base_url": base_url,
            "context_window": CATALOG_WINDOW,
        }

    return {
        "state_dir": str(state_dir),
        "agent": {
            "model": f"{PROVIDER}/{MODEL_ID}",
            "fallbacks": [f"{PROVIDER}/{FALLBACK_ID}"],
            "system_prompt": "You are a concise travel assistant.",
            "timeout_seconds": 30,
        },
        "models": [model(MODEL_ID), model(FALLBACK_ID)],
        "auth": {
            "profiles": [
                {"id": pid, "provider": PROVIDER, "mode": "api_key", "credential": key}
                for pid, key, _ in PROFILES
            ]
        },
    }


def _notes(tokens: int) -> str:
    """About ``tokens`` tokens (4 characters each) of trip notes."""
    lines: list[str] = []
    size, n = 0, 0
    while size < tokens * 4:
        line = _NOTES[n % len(_NOTES)].format(n=n // len(_NOTES) + 1)
        lines.append(line)
        size += len(line) + 1
        n += 1
    return "\n".join(lines)


@dataclass
class _Turn:
    """One user message; ``prompt`` may depend on what the server has seen so far."""

    title: str
    prompt: Callable[[FaultInjectingOpenAIServer], str]


def _turns() -> list[_Turn]:
    def fill_window(server: FaultInjectingOpenAIServer) -> str:
        # leave ~400 tokens free: this turn fits, the next one (with a second paste) won't
        used = server.requests[-1].estimated_tokens + 60 if server.requests else 0
        budget = max(200, SERVER_WINDOW - used - 400)
        return "Here are my notes from last time, keep them in mind:\n" + _notes(budget)

    return [
        _Turn("a rate-limited key", lambda _: "Hi! I'm planning a weekend in Lisbon."),
        _Turn("a tool call", lambda _: "What's the weather in Lisbon? Use get_weather."),
        _Turn("a long paste fills the window", fill_window),
        _Turn(
            "the history no longer fits",
            lambda _: (
                "And the "
                + " ".join([_PACKING] * 12)
                + ". Based on all my notes, what should I pack?"
            ),
        ),
    ]


@dataclass
class _Output:
    """Prints the session: decisions one per line, answers streamed inline (or JSON lines)."""

    as_json: bool
    turn: int = 0
    answer: AnswerWriter = field(default_factory=lambda: AnswerWriter(lambda: sys.stdout))
    in_answer: bool = False

    def line(self, text: str, **style: Any) -> None:
        if self.as_json:
            return
        self.end_answer()
        click.echo(click.style(text, **style) if style else text)

    def end_answer(self) -> None:
        if self.in_answer:
            self.answer.end_line()
            self.in_answer = False

    def json(self, payload: dict[str, Any]) -> None:
        click.echo(json.dumps(payload, ensure_ascii=False, default=str))

    def __call__(self, event: Event) -> None:
        delta = text_delta(event)
        if self.as_json:
            if event.type != "message_update":
                self.json({"turn": self.turn, **event.to_dict()})
            return
        if delta is not None:
            if not self.in_answer:
                self.answer.write("  assistant ▸ ")
                self.in_answer = True
            self.answer.write(delta.replace("\n", "\n    "))  # keep answers indented
            return
        if event.type in _QUIET:
            return
        text = describe_event(event)
        if text is not None:
            self.line(f"  {text}")


async def _session(
    runtime: Runtime, server: FaultInjectingOpenAIServer, out: _Output
) -> list[RunResult]:
    results = []
    for number, turn in enumerate(_turns(), start=1):
        out.turn = number
        prompt = turn.prompt(server)
        shown = prompt if len(prompt) <= 70 else f"{prompt[:60]}… ({len(prompt):,} characters)"
        out.line("")
        out.line(f"── turn {number}: {turn.title}", bold=True)
        out.line(f"  user ▸ {shown.splitlines()[0]}")
        result = await runtime.run(
            prompt, session_key=SESSION_KEY, tools=[get_weather], on_event=out
        )
        out.end_answer()
        results.append(result)
        if not result.ok:
            message = result.error.message if result.error else result.outcome.error
            out.line(f"  ✗ the turn failed: {message}", fg="red")
    return results


def _summary(
    runtime: Runtime,
    server: FaultInjectingOpenAIServer,
    results: list[RunResult],
    ledger_state: Any,
    state_dir: Path,
    seconds: float,
) -> dict[str, Any]:
    """What the demo leaves behind: transcript, ledger, usage, what the server saw."""
    ledger = profile_rows(runtime.config, ledger_state)
    served: dict[str, int] = {}
    for request in server.requests:
        served[request.outcome] = served.get(request.outcome, 0) + 1
    last = results[-1] if results else None
    return {
        "ok": bool(results) and all(r.ok for r in results),
        "sessionId": last.session_id if last else None,
        "sessionKey": SESSION_KEY,
        "transcript": last.session_file if last else None,
        "stateDir": str(state_dir),
        "ledger": [
            {"profile": row["id"], "status": row["status"], "description": row["description"]}
            for row in ledger
        ],
        "usage": {
            "input": sum(r.usage.input for r in results),
            "output": sum(r.usage.output for r in results),
            "total": sum(r.usage.total_tokens for r in results),
        },
        "attempts": sum(r.attempts for r in results),
        "compactions": sum(r.compactions for r in results),
        "httpRequests": served,
        "seconds": round(seconds, 2),
    }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _print_summary(summary: dict[str, Any]) -> None:
    click.echo("")
    click.echo(click.style("── summary", bold=True))
    click.echo(f"  transcript  {summary['transcript']}")
    click.echo(
        f"              read it: OPENCLAW_RUNTIME_STATE_DIR={summary['stateDir']} "
        f"{current_program_command()} sessions show {summary['sessionKey']}"
    )
    width = max(len(row["profile"]) for row in summary["ledger"])
    for index, row in enumerate(summary["ledger"]):
        label = "ledger" if index == 0 else ""
        click.echo(f"  {label:<10}  {row['profile']:<{width}}  {row['description']}")
    usage = summary["usage"]
    click.echo(
        f"  usage       {usage['input']:,} input + {usage['output']:,} output tokens "
        f"over {summary['attempts']} attempts, {_count(summary['compactions'], 'compaction')}"
    )
    requests = ", ".join(f"{count} {kind}" for kind, count in summary["httpRequests"].items())
    click.echo(f"  server      {sum(summary['httpRequests'].values())} requests: {requests}")
    verdict = "every turn answered" if summary["ok"] else "some turns failed"
    click.echo(f"  done        {verdict} in {summary['seconds']:.1f} s")


def run_demo(*, as_json: bool = False, state_dir: Path | None = None) -> dict[str, Any]:
    """Run the demo session and print it; returns the summary (also printed)."""
    state = state_dir or Path(tempfile.mkdtemp(prefix="openclaw-runtime-demo-"))
    keys = {key: behavior for _, key, behavior in PROFILES}
    out = _Output(as_json)
    started = time.perf_counter()
    with FaultInjectingOpenAIServer(
        models={MODEL_ID: SERVER_WINDOW, FALLBACK_ID: SERVER_WINDOW}, keys=keys
    ) as server:
        runtime = Runtime(demo_config(server.base_url, state), load_entrypoints=False)
        runtime.retry_backoff_scale = 0.01  # same-model rate-limit waits: 30 s → 0.3 s
        if not as_json:
            click.echo(
                click.style("openclaw-runtime demo", bold=True)
                + " · a real session over real HTTP, offline"
            )
            click.echo(
                f"  server  {server.base_url} · OpenAI-compatible, enforces a "
                f"{SERVER_WINDOW:,}-token window (the catalog says {CATALOG_WINDOW:,})"
            )
            click.echo("  keys    demo:primary → rate limited, demo:backup → ok")

        async def main() -> tuple[list[RunResult], Any]:
            async with runtime:
                results = await _session(runtime, server, out)
                return results, await runtime.auth_store.load()

        results, ledger_state = anyio.run(main)
        summary = _summary(
            runtime, server, results, ledger_state, state, time.perf_counter() - started
        )
    if as_json:
        out.json({"type": "demo_summary", **summary})
    else:
        _print_summary(summary)
    return summary
