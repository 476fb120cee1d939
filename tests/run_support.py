"""Helpers shared by the ``Runtime.run`` concurrency and chaos tests.

* ``ProbeProvider``: a scripted provider (a ``FakeProvider`` underneath) that records every
  model call with its session and timing and counts the calls in flight, so a test can see
  how runs interleave; its ``respond`` callback builds each response (gates, delays, hangs).
* ``RunLog``: an ``on_event`` sink for one run that a test can wait on (``wait_for``).
* ``result_problems`` / ``event_problems`` / ``transcript_problems``: the invariants every
  run must keep, as lists of human-readable problems (empty when all hold).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from openclaw_runtime import tool
from openclaw_runtime._markers import hookimpl
from openclaw_runtime.events import AssistantMessageEvent, AssistantMessageEventStream, Event
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.providers.fake import FakeProvider, FakeRequest, FakeResponse, text
from openclaw_runtime.runner.request import RunResult
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer
from openclaw_runtime.transcript.jsonl import parse_session_bytes
from openclaw_runtime.transcript.repair import plan_session_repair

PROBE_API = "probe"

#: Lifecycle events that must come in start/end pairs within one run.
PAIRED_EVENTS: tuple[tuple[str, str], ...] = (
    ("agent_start", "agent_end"),
    ("message_start", "message_end"),
    ("tool_execution_start", "tool_execution_end"),
    ("attempt_start", "attempt_end"),
)


# --------------------------------------------------------------------------- configs


def probe_config(state_dir: Path, *, max_concurrent: int = 4, **agent: Any) -> dict[str, Any]:
    """A runtime config whose only model is served by a ``ProbeProvider``."""
    return {
        "state_dir": str(state_dir),
        "models": [
            {"id": "m1", "api": PROBE_API, "provider": PROBE_API, "contextWindow": 200_000},
        ],
        "agent": {"model": f"{PROBE_API}/m1", "max_concurrent": max_concurrent, **agent},
    }


def openai_config(
    state_dir: Path,
    base_url: str,
    *,
    provider: str,
    models: Mapping[str, int],
    keys: Sequence[str],
    fallbacks: Sequence[str] = (),
    max_concurrent: int = 4,
    **agent: Any,
) -> dict[str, Any]:
    """A runtime config whose models are served by a ``FaultInjectingOpenAIServer``, with
    one ``api_key`` auth profile per key (``<provider>:p0``, ``<provider>:p1``...)."""
    first = next(iter(models))
    return {
        "state_dir": str(state_dir),
        "models": [
            {
                "id": model_id,
                "api": "openai-completions",
                "provider": provider,
                "baseUrl": base_url,
                "contextWindow": window,
                "maxTokens": 1024,
            }
            for model_id, window in models.items()
        ],
        "agent": {
            "model": f"{provider}/{first}",
            "fallbacks": [f"{provider}/{m}" for m in fallbacks],
            "max_concurrent": max_concurrent,
            **agent,
        },
        "auth": {
            "profiles": [
                {
                    "id": f"{provider}:p{i}",
                    "provider": provider,
                    "mode": "api_key",
                    "credential": {"value": key},
                }
                for i, key in enumerate(keys)
            ]
        },
    }


def mock_openai_config(state_dir: Path, server: Any, **agent: Any) -> dict[str, Any]:
    """``openai_config`` for the usual test server: provider ``mock``, one model ``main``
    (64k context), one key ``key-a``; ``agent`` adds agent settings."""
    return openai_config(
        state_dir,
        server.base_url,
        provider="mock",
        models={"main": 64_000},
        keys=["key-a"],
        **agent,
    )


@contextmanager
def mock_openai_server() -> Iterator[FaultInjectingOpenAIServer]:
    """The fault-injecting server ``mock_openai_config`` describes (model ``main`` with a
    64k context, key ``key-a``), running for the ``with`` block."""
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as running:
        yield running


@tool
async def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


# --------------------------------------------------------------------------- the probe


@dataclass
class ProbeCall:
    """One model call the probe served."""

    index: int
    session_id: str | None
    prompt: str
    context_texts: list[tuple[str, str]]
    started: float
    ended: float | None = None


def message_text(message: Any) -> str:
    """The plain text of a user/assistant/tool-result message (any shape)."""
    content = getattr(message, "content", None)
    if content is None and isinstance(message, Mapping):
        content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or ():
        value = getattr(block, "text", None)
        if value is None and isinstance(block, Mapping):
            value = block.get("text")
        if isinstance(value, str):
            parts.append(value)
    return "".join(parts)


def last_user_text(request: FakeRequest) -> str:
    """The last user message of a request."""
    for message in reversed(request.context.messages):
        if getattr(message, "role", None) == "user":
            return message_text(message)
    return ""


class ProbeProvider:
    """A ``StreamFn`` that answers with ``respond(request)`` and records the interleaving.

    Build it inside the test's event loop (it owns anyio objects). ``in_flight`` counts the
    calls between their first event and their last; ``max_in_flight`` is its high-water mark.
    """

    def __init__(self, respond: Callable[[FakeRequest], FakeResponse] | None = None) -> None:
        self.fake = FakeProvider(api=PROBE_API, provider=PROBE_API)
        self.respond = respond or (lambda request: FakeResponse([text("ok")]))
        self.calls: list[ProbeCall] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.changes = Changes()

    def stream_fn(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        self.fake.enqueue(self.respond)
        inner = self.fake.stream_fn(model, context, options)
        request = self.fake.history[-1]
        call = ProbeCall(
            index=len(self.calls),
            session_id=options.session_id,
            prompt=last_user_text(request),
            context_texts=[
                (str(getattr(m, "role", "?")), message_text(m)) for m in request.context.messages
            ],
            started=time.monotonic(),
        )
        self.calls.append(call)
        return AssistantMessageEventStream(self._counted(inner, call))

    async def _counted(
        self, inner: AssistantMessageEventStream, call: ProbeCall
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.changes.notify()
        try:
            async for event in inner:
                yield event
        finally:
            self.in_flight -= 1
            call.ended = time.monotonic()
            self.changes.notify()
            with anyio.CancelScope(shield=True):
                await inner.aclose()

    def plugin(self) -> object:
        """A plugin object registering this provider under the ``probe`` api."""
        stream_fn = self.stream_fn

        class _ProbePlugin:
            @hookimpl
            def register_providers(self, register: Callable[..., Any]) -> None:
                register(PROBE_API, stream_fn)

        return _ProbePlugin()

    async def wait_in_flight(self, count: int) -> None:
        """Return once at least ``count`` calls are in flight (bound it with
        ``anyio.fail_after``)."""
        await self.changes.until(lambda: self.in_flight >= count)


class Changes:
    """Wake waiters whenever something they watch may have changed."""

    def __init__(self) -> None:
        self._waiters: list[anyio.Event] = []

    def notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.set()

    async def until(self, predicate: Callable[[], bool]) -> None:
        """Return once ``predicate()`` holds, re-checking it after every ``notify()``."""
        while not predicate():
            waiter = anyio.Event()
            self._waiters.append(waiter)
            await waiter.wait()


# --------------------------------------------------------------------------- run events


@dataclass
class RunLog:
    """The events of one run (``on_event=log``), optionally mirrored to a shared timeline
    as ``(label, event)`` pairs."""

    label: str = ""
    timeline: list[tuple[str, Event]] | None = None
    events: list[Event] = field(default_factory=list)
    changes: Changes = field(default_factory=Changes, repr=False)

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        if self.timeline is not None:
            self.timeline.append((self.label, event))
        self.changes.notify()

    def of(self, event_type: str, /) -> list[Any]:
        return [e for e in self.events if e.type == event_type]

    def types(self) -> list[str]:
        return [e.type for e in self.events if e.type != "message_update"]

    def has(self, event_type: str, /, **fields: Any) -> bool:
        """Whether an event of ``event_type`` whose attributes equal ``fields`` was seen."""
        return any(
            all(getattr(e, k, None) == v for k, v in fields.items()) for e in self.of(event_type)
        )

    async def wait_for(self, event_type: str, /, **fields: Any) -> None:
        """Return once an event of ``event_type`` with ``fields`` has been seen (bound it
        with ``anyio.fail_after``)."""
        await self.changes.until(lambda: self.has(event_type, **fields))


# --------------------------------------------------------------------------- invariants


def result_problems(result: object) -> list[str]:
    """A ``RunResult`` with one well-formed terminal outcome (empty list when it is)."""
    if not isinstance(result, RunResult):
        return [f"run returned {type(result).__name__}, not a RunResult"]
    problems: list[str] = []
    outcome = result.outcome
    if outcome.status not in ("ok", "error", "timeout"):
        problems.append(f"outcome.status {outcome.status!r}")
    if (outcome.reason == "completed") != (outcome.status == "ok"):
        problems.append(f"outcome reason {outcome.reason!r} with status {outcome.status!r}")
    if result.ok != (outcome.status == "ok"):
        problems.append(f"ok={result.ok} with outcome status {outcome.status!r}")
    if (result.error is None) != result.ok:
        problems.append(
            f"error={None if result.error is None else result.error.kind!r} "
            f"on a run with ok={result.ok} (outcome {outcome.reason!r})"
        )
    if not result.payloads:
        problems.append(f"no reply payloads (outcome {outcome.reason!r})")
    elif not result.ok and not any(p.is_error for p in result.payloads):
        problems.append(f"failed run ({outcome.reason!r}) without an error payload")
    return problems


def event_problems(
    events: Sequence[Event], result: RunResult, secrets: Iterable[str] = ()
) -> list[str]:
    """The run's event lifecycle: one ``run_start`` first, one ``run_end`` last carrying the
    result's outcome, every start closed by its end (in order), no secret anywhere."""
    problems: list[str] = []
    types = [e.type for e in events]
    if not types or types[0] != "run_start" or types.count("run_start") != 1:
        problems.append(f"run_start: {types.count('run_start')}, first event {types[:1]}")
    if not types or types[-1] != "run_end" or types.count("run_end") != 1:
        problems.append(f"run_end: {types.count('run_end')}, last event {types[-1:]}")
    ends = [e for e in events if e.type == "run_end"]
    if ends and getattr(ends[-1], "outcome", None) != result.outcome.to_dict():
        problems.append("run_end.outcome differs from result.outcome")
    for start, end in PAIRED_EVENTS:
        depth = 0
        for kind in types:
            if kind == start:
                depth += 1
            elif kind == end:
                depth -= 1
                if depth < 0:
                    problems.append(f"{end} without {start}")
                    depth = 0
        if depth:
            problems.append(f"{depth} {start} never closed by {end}")
    wanted = [s for s in secrets if s]
    if wanted:
        dumps = [json.dumps(e.to_dict(), default=str) for e in events]
        dumps.append(json.dumps(result.to_dict(), default=str))
        for secret in wanted:
            if any(secret in d for d in dumps):
                problems.append(f"API key {secret[:7]}... leaked into an event or the result")
    return problems


def _role(entry: Mapping[str, Any]) -> str | None:
    message = entry.get("message")
    return message.get("role") if isinstance(message, Mapping) else None


def _stop(entry: Mapping[str, Any]) -> str | None:
    message = entry.get("message")
    return message.get("stopReason") if isinstance(message, Mapping) else None


def transcript_problems(branch: Sequence[Mapping[str, Any]]) -> list[str]:
    """The active branch of a session: every tool result follows the assistant message that
    called it (with only other tool results between), and a failed (error/aborted)
    assistant turn is never followed by another model turn without a user message between."""
    problems: list[str] = []
    messages = [e for e in branch if e.get("type") == "message"]
    open_calls: set[str] = set()
    failed_at: int | None = None
    for position, entry in enumerate(messages):
        role = _role(entry)
        message = entry["message"]
        if role == "assistant":
            if failed_at is not None:
                problems.append(
                    f"assistant turn at {position} follows the failed turn at {failed_at} "
                    "without a user message between"
                )
            failed_at = position if _stop(entry) in ("error", "aborted") else None
            open_calls = {
                str(block.get("id"))
                for block in message.get("content") or ()
                if isinstance(block, Mapping) and block.get("type") == "toolCall"
            }
        elif role == "toolResult":
            call_id = str(message.get("toolCallId"))
            if call_id not in open_calls:
                problems.append(
                    f"tool result {call_id} at {position} does not follow the assistant "
                    "message that called it"
                )
            open_calls.discard(call_id)
        else:
            open_calls = set()
            if role == "user":
                failed_at = None
    return problems


def jsonl_problems(path: Path) -> list[str]:
    """Every line of a session file is a JSON object, and no line was ever thrown out as
    unreadable (no ``*.invalid.jsonl`` side file)."""
    problems: list[str] = []
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            problems.append(f"{path.name}:{number}: {exc}")
            continue
        if not isinstance(value, dict):
            problems.append(f"{path.name}:{number}: not an object")
    for side in path.parent.glob(f"{path.name}*.invalid*"):
        problems.append(f"malformed lines were set aside in {side.name}")
    return problems


def pending_repairs(path: Path) -> dict[str, int]:
    """What opening the session file would repair (nothing written): non-zero counts of
    the repair plan's changes."""
    plan = plan_session_repair(parse_session_bytes(path.read_bytes()), keep_error_turns=True)
    counts = {
        "invalid_lines": len(plan.invalid),
        "rewritten_assistant_messages": plan.rewritten_assistant_messages,
        "rewritten_user_messages": plan.rewritten_user_messages,
        "dropped_blank_user_messages": plan.dropped_blank_user_messages,
        "dropped_trailing_assistant_messages": plan.dropped_trailing_assistant_messages,
    }
    return {name: count for name, count in counts.items() if count}


def repair_backups(path: Path) -> list[Path]:
    """The ``<file>.bak-*`` copies repairs of this session file left behind."""
    return sorted(path.parent.glob(f"{path.name}.bak*"))
