"""The context engine's whole lifecycle in the run path (issue 15 §2), end to end.

Each test registers a recording engine through the real plugin manager and runs real turns
against the fault-injecting OpenAI-compatible server over local HTTP (asyncio and trio):
bootstrap of a session that existed before, foreground and background turn maintenance (the
next run waits for it), a quarantined maintenance failure, budget compaction deferred to the
background, the compaction successor, the pre-compaction snapshot after a timeout during
compaction, and ``after_turn`` → ``ingest_batch`` → ``ingest``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime._markers import hookimpl
from openclaw_runtime.context.engine import (
    AssembleResult,
    BootstrapResult,
    CompactResult,
    ContextEngineInfo,
    IngestBatchResult,
    IngestResult,
    MaintenanceResult,
)
from openclaw_runtime.context.lifecycle_policy import DEFERRED_BACKGROUND_COMPACTION_REASON
from openclaw_runtime.context.successor import CompactionSuccessor
from openclaw_runtime.messages import AssistantMessage, UserMessage
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer
from tests.test_run_recovery import KEYS, Recorder, build_runtime, seed_history

pytestmark = pytest.mark.anyio

HANG_GUARD_S = 60  # only turns a hang into a failure; nothing is timed against it


class LifecycleEngine:
    """Records every lifecycle call; behaviour is tuned per test through attributes."""

    def __init__(self, info: ContextEngineInfo, *, methods: tuple[str, ...] = ()) -> None:
        self.info = info
        self.calls: list[tuple[str, Any]] = []
        self.maintain_gate: anyio.Event | None = None
        self.maintain_started: anyio.Event | None = None
        self.maintain_error: Exception | None = None
        self.rewrite_text: str | None = None
        self.compact_behaviour: Any = None
        self._methods = set(methods)

    def __getattr__(self, name: str) -> Any:
        optional = {
            "bootstrap": self._bootstrap,
            "maintain": self._maintain,
            "after_turn": self._after_turn,
            "ingest_batch": self._ingest_batch,
        }
        if name in optional and name in self._methods:
            return optional[name]
        raise AttributeError(name)

    async def _bootstrap(self, params: Any) -> BootstrapResult:
        self.calls.append(("bootstrap", params))
        return BootstrapResult(bootstrapped=True)

    async def _maintain(self, params: Any) -> MaintenanceResult:
        self.calls.append(("maintain", params))
        if self.maintain_started is not None:
            self.maintain_started.set()
        if self.maintain_gate is not None:
            await self.maintain_gate.wait()
        if self.maintain_error is not None:
            raise self.maintain_error
        context = params.runtime_context
        if self.rewrite_text is not None and context is not None:
            entries = [
                json.loads(line)
                for line in (await anyio.Path(params.session_file).read_text()).splitlines()
                if line.strip()
            ]
            first_user = next(
                e for e in entries if e.get("type") == "message" and e["message"]["role"] == "user"
            )
            result = await context.rewrite_transcript_entries(
                {first_user["id"]: UserMessage(content=self.rewrite_text)}
            )
            self.calls.append(("maintain_done", result))
            return result
        self.calls.append(("maintain_done", None))
        return MaintenanceResult(changed=False)

    async def _after_turn(self, params: Any) -> None:
        self.calls.append(("after_turn", params))

    async def _ingest_batch(self, params: Any) -> IngestBatchResult:
        self.calls.append(("ingest_batch", params))
        return IngestBatchResult(ingested_count=len(params.messages))

    async def ingest(self, params: Any) -> IngestResult:
        self.calls.append(("ingest", params))
        return IngestResult(ingested=True)

    async def assemble(self, params: Any) -> AssembleResult:
        self.calls.append(("assemble", params))
        return AssembleResult(messages=list(params.messages))

    async def compact(self, params: Any) -> CompactResult:
        self.calls.append(("compact", params))
        if self.compact_behaviour is not None:
            result: CompactResult = await self.compact_behaviour(params)
            return result
        assert params.runtime_context.compact_session is not None
        return await params.runtime_context.compact_session(force=params.force)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


class EnginePlugin:
    def __init__(self, engine: LifecycleEngine) -> None:
        self.engine = engine

    @hookimpl
    def register_context_engines(self, register: Any) -> None:
        register("recording", lambda *_args, **_kw: self.engine)


def engine_of(
    *,
    methods: tuple[str, ...] = ("bootstrap", "maintain", "after_turn"),
    background: bool = False,
    owns_compaction: bool = False,
) -> LifecycleEngine:
    info = ContextEngineInfo(
        id="recording",
        name="Recording engine",
        owns_compaction=owns_compaction,
        turn_maintenance_mode="background" if background else "foreground",
    )
    return LifecycleEngine(info, methods=methods)


async def runtime_with(
    tmp_path: Path, server: FaultInjectingOpenAIServer, engine: LifecycleEngine, **options: Any
) -> Runtime:
    runtime = build_runtime(tmp_path, server, plugins=(EnginePlugin(engine),), **options)
    runtime.config.context_engine = "recording"
    return runtime


@pytest.fixture
def server() -> Any:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as running:
        yield running


# --------------------------------------------------------------------------- bootstrap


async def test_bootstrap_runs_once_for_a_session_that_existed_before(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of()
    runtime = await runtime_with(tmp_path, server, engine)
    try:
        await seed_history(runtime, "s-old", turns=2, size=50)
        first = await runtime.run("hello", session_id="s-old")
        second = await runtime.run("again", session_id="s-old")
        fresh = await runtime.run("new one", session_id="s-new")
    finally:
        await runtime.aclose()
    assert first.ok and second.ok and fresh.ok
    bootstraps = [p for name, p in engine.calls if name == "bootstrap"]
    assert [p.session_id for p in bootstraps] == ["s-old"]  # once; never for a new session
    assert bootstraps[0].session_file == first.session_file
    names = engine.names()
    # cold start: bootstrap then foreground maintenance, before the first assemble
    assert names[:3] == ["bootstrap", "maintain", "maintain_done"]
    # every successful turn: after_turn, then foreground turn maintenance
    assert names.count("after_turn") == 3
    assert names.count("maintain") == 4  # 1 bootstrap + 3 turns
    turn_maintains = [p for name, p in engine.calls if name == "maintain"][1:]
    assert all(not p.runtime_context.allow_deferred_compaction_execution for p in turn_maintains)


async def test_a_failing_bootstrap_is_quarantined_and_the_run_goes_on(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of()

    async def explode(params: Any) -> BootstrapResult:
        engine.calls.append(("bootstrap", params))
        raise RuntimeError("bootstrap exploded")

    engine._bootstrap = explode  # type: ignore[method-assign]
    runtime = await runtime_with(tmp_path, server, engine)
    try:
        await seed_history(runtime, "s-boot", turns=1, size=20)
        recorder = Recorder()
        result = await runtime.run("hello", session_id="s-boot", on_event=recorder)
        quarantines = runtime.context_engines.list_quarantines()
    finally:
        await runtime.aclose()
    assert result.ok, result.error
    assert [(q.engine_id, q.operation) for q in quarantines] == [("recording", "bootstrap")]
    assert [e.unit for e in recorder.of("plugin_quarantined")] == ["context_engine:recording"]
    # quarantined at once: the legacy engine served the rest of the run
    assert engine.names() == ["bootstrap"]


# --------------------------------------------------------------------------- background


async def test_background_maintenance_is_off_the_reply_path_and_the_next_run_waits(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of(background=True)
    engine.maintain_gate = anyio.Event()
    engine.maintain_started = anyio.Event()
    engine.rewrite_text = "REWRITTEN BY MAINTENANCE"
    runtime = await runtime_with(tmp_path, server, engine)
    try:
        with anyio.fail_after(HANG_GUARD_S):
            # the maintenance is blocked on its gate: had the run awaited it, this would hang
            first = await runtime.run("first turn", session_id="s-bg")
            assert first.ok
            await engine.maintain_started.wait()
            assert engine.names()[-1] == "maintain"  # still running, after the reply
            served_before = len(server.requests)
            second_log = Recorder()

            def open_gate_when_started(event: Any) -> None:
                second_log(event)
                if event.type == "run_start":
                    assert engine.maintain_gate is not None
                    engine.maintain_gate.set()

            second = await runtime.run(
                "second turn", session_id="s-bg", on_event=open_gate_when_started
            )
            await runtime.wait_for_session_maintenance("s-bg")
    finally:
        await runtime.aclose()
    assert second.ok
    names = engine.names()
    # the second run's engine work starts only after the maintenance finished
    done_at = names.index("maintain_done")
    second_assemble = [i for i, n in enumerate(names) if n == "assemble"][1]
    assert done_at < second_assemble
    maintain = next(p for name, p in engine.calls if name == "maintain")
    assert maintain.runtime_context.allow_deferred_compaction_execution is True
    # the second request carried what the maintenance rewrote
    body = json.dumps(server.requests[served_before].body)
    assert "REWRITTEN BY MAINTENANCE" in body
    assert "lane_wait" in second_log.types()


async def test_a_failing_background_maintenance_is_quarantined_not_fatal(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of(background=True)
    engine.maintain_error = RuntimeError("maintenance exploded")
    runtime = await runtime_with(tmp_path, server, engine)
    try:
        with anyio.fail_after(HANG_GUARD_S):
            first = await runtime.run("one", session_id="s-q")
            await runtime.wait_for_session_maintenance("s-q")
            recorder = Recorder()
            second = await runtime.run("two", session_id="s-q", on_event=recorder)
        quarantines = runtime.context_engines.list_quarantines()
        faults = [f for f in runtime.hooks.faults if f.quarantined]
        engine_now = await runtime.resolve_context_engine()
    finally:
        await runtime.aclose()
    assert first.ok and second.ok
    assert [(q.engine_id, q.operation) for q in quarantines] == [("recording", "maintain")]
    assert "maintenance exploded" in quarantines[0].reason
    assert faults and "maintain: maintenance exploded" in str(faults[0].error)
    assert engine_now.info.id == "legacy"  # quarantined: the default engine answers now
    # raised in the background, reported on the session's next run (events and result)
    quarantined = recorder.of("plugin_quarantined")
    assert [e.unit for e in quarantined] == ["context_engine:recording"]
    assert any("maintenance exploded" in f.error for f in second.faults)
    assert not first.faults


# --------------------------------------------------------------------------- deferred compaction


async def test_budget_compaction_of_an_owning_background_engine_is_deferred(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of(background=True, owns_compaction=True)
    runtime = await runtime_with(tmp_path, server, engine, window=20_000)
    try:
        await seed_history(runtime, "s-defer", turns=12, size=4_000)
        recorder = Recorder()
        with anyio.fail_after(HANG_GUARD_S):
            result = await runtime.run("continue", session_id="s-defer", on_event=recorder)
            await runtime.wait_for_session_maintenance("s-defer")
    finally:
        await runtime.aclose()
    ends = recorder.of("compaction_end")
    assert [(e.trigger, e.ok, e.compacted, e.reason) for e in ends[:1]] == [
        ("preemptive", True, False, DEFERRED_BACKGROUND_COMPACTION_REASON)
    ]
    assert result is not None
    maintains = [p for name, p in engine.calls if name == "maintain"]
    # the bootstrap pass in the foreground, then one background pass (the deferred budget
    # compaction; the turn's own maintenance joined it instead of scheduling a second one)
    assert [p.runtime_context.allow_deferred_compaction_execution for p in maintains] == [
        False,
        True,
    ]
    context = maintains[1].runtime_context
    assert context.current_token_count and context.current_token_count > 10_000
    assert context.compact_session is not None  # the runtime's compaction is lent to it
    assert "compact" not in engine.names()  # never compacted on the request path
    assert result.ok, result.error


# --------------------------------------------------------------------------- successor


def successor_mover(runtime: Runtime, new_id: str) -> Any:
    """A ``compact`` that writes a short successor session and reports it."""

    async def move_to_successor(params: Any) -> CompactResult:
        successor = await runtime.session_store.open_or_create(new_id, cwd=str(Path.cwd()))
        try:
            await successor.append_message(UserMessage(content="SUMMARY OF EARLIER TURNS"))
            await successor.append_message(
                AssistantMessage(
                    content=[{"type": "text", "text": "noted"}],
                    api="openai-completions",
                    provider="mock",
                    model="main",
                )
            )
            await successor.flush()
        finally:
            await successor.aclose()
        return CompactResult(
            ok=True,
            compacted=True,
            successor=CompactionSuccessor(
                session_id=new_id, session_file=str(runtime.session_store.path_for(new_id))
            ),
        )

    return move_to_successor


async def test_the_run_continues_on_the_compaction_successor_with_the_same_key(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of(methods=("after_turn",))
    runtime = await runtime_with(tmp_path, server, engine)

    engine.compact_behaviour = successor_mover(runtime, "s-next")
    try:
        first = await runtime.run("hello", session_key="chat:1")
        await seed_history(runtime, first.session_id, turns=2, size=20)
        server.inject(Fault(kind="context_overflow", model="main", times=1))
        with anyio.fail_after(HANG_GUARD_S):
            result = await runtime.run("after overflow", session_key="chat:1")
            bound = await runtime.session_index.lookup_id("chat:1")
            third = await runtime.run("and then", session_key="chat:1")
    finally:
        await runtime.aclose()
    assert result.ok, result.error
    assert result.session_id == "s-next" and bound == "s-next"
    assert third.session_id == "s-next"
    retried = json.dumps(server.requests[-2].body)
    assert "SUMMARY OF EARLIER TURNS" in retried and "after overflow" in retried
    assert "note 0" not in retried  # the old history stayed behind in the old session


async def test_a_pre_prompt_compaction_successor_is_used_by_the_same_attempt(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of(methods=("after_turn",), owns_compaction=True)
    runtime = await runtime_with(tmp_path, server, engine, window=20_000)
    engine.compact_behaviour = successor_mover(runtime, "s-pre-next")
    try:
        await seed_history(runtime, "s-pre-old", turns=12, size=4_000)
        recorder = Recorder()
        with anyio.fail_after(HANG_GUARD_S):
            result = await runtime.run("what now", session_id="s-pre-old", on_event=recorder)
    finally:
        await runtime.aclose()
    assert result.ok, result.error
    assert [e.trigger for e in recorder.of("compaction_end")] == ["preemptive"]
    assert result.session_id == "s-pre-next"
    sent = json.dumps(server.requests[-1].body)
    assert "SUMMARY OF EARLIER TURNS" in sent and "what now" in sent
    assert "note 0" not in sent  # the attempt left the old, oversized history behind
    assert len(server.requests) == 1  # one request: no overflow, no retry


async def test_a_successor_outside_the_store_is_refused_and_the_run_stays(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of(methods=("after_turn",))
    runtime = await runtime_with(tmp_path, server, engine)

    async def escape(params: Any) -> CompactResult:
        return CompactResult(
            ok=True,
            compacted=True,
            successor={"sessionFile": str(tmp_path / "elsewhere" / "s-x.jsonl")},
        )

    engine.compact_behaviour = escape
    try:
        await seed_history(runtime, "s-stay", turns=2, size=20)
        server.inject(Fault(kind="context_overflow", model="main", times=1))
        recorder = Recorder()
        with anyio.fail_after(HANG_GUARD_S):
            result = await runtime.run("go", session_id="s-stay", on_event=recorder)
    finally:
        await runtime.aclose()
    ends = recorder.of("compaction_end")
    assert ends and ends[0].ok is False and ends[0].compacted is False
    assert "outside the session store" in (ends[0].reason or "")
    assert result.session_id == "s-stay"


# --------------------------------------------------------------------------- snapshot


async def test_a_timeout_during_compaction_falls_back_to_the_pre_compaction_snapshot(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of(methods=("after_turn",))
    runtime = await runtime_with(tmp_path, server, engine, agent={"timeout_seconds": 2})

    async def half_rewrite_then_hang(params: Any) -> CompactResult:
        entries = [
            json.loads(line)
            for line in (await anyio.Path(params.session_file).read_text()).splitlines()
            if line.strip()
        ]
        first_user = next(
            e for e in entries if e.get("type") == "message" and e["message"]["role"] == "user"
        )
        # a compaction that rewrote part of the branch, then hung until the run's timeout
        await params.runtime_context.rewrite_transcript_entries(
            {first_user["id"]: UserMessage(content="HALF COMPACTED")}
        )
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    engine.compact_behaviour = half_rewrite_then_hang
    try:
        await seed_history(runtime, "s-snap", turns=2, size=20)
        server.inject(Fault(kind="context_overflow", model="main", times=1))
        with anyio.fail_after(HANG_GUARD_S):
            result = await runtime.run("go", session_id="s-snap")
        session = await runtime.checkout_session("s-snap", cwd=str(Path.cwd()))
        texts = json.dumps(
            [m.model_dump() for m in session.build_session_context().messages], default=str
        )
        await runtime.checkin_session(session)
    finally:
        await runtime.aclose()
    assert result.outcome.status == "timeout", result.outcome
    assert "HALF COMPACTED" not in texts  # the half-written branch was left
    assert "note 0" in texts  # the stable history before the compaction is active again


# --------------------------------------------------------------------------- after_turn chain


@pytest.mark.parametrize(
    ("methods", "expected"),
    [
        (("after_turn", "ingest_batch"), "after_turn"),
        (("ingest_batch",), "ingest_batch"),
        ((), "ingest"),
    ],
)
async def test_after_turn_then_ingest_batch_then_ingest(
    tmp_path: Path, server: FaultInjectingOpenAIServer, methods: tuple[str, ...], expected: str
) -> None:
    engine = engine_of(methods=methods)
    runtime = await runtime_with(tmp_path, server, engine)
    try:
        result = await runtime.run("hi there", session_id="s-turn")
    finally:
        await runtime.aclose()
    assert result.ok
    used = [n for n in engine.names() if n in ("after_turn", "ingest_batch", "ingest")]
    if expected == "ingest":
        assert used == ["ingest", "ingest"]  # the prompt and the answer, one by one
        roles = [p.message.role for n, p in engine.calls if n == "ingest"]
        assert roles == ["user", "assistant"]
    else:
        assert used == [expected]
