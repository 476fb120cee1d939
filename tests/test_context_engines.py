"""The context-engine slot: resolution, the quarantine proxy, lifecycle fallbacks."""

from __future__ import annotations

import anyio
import pytest

from openclaw_runtime import ConfigurationError, hookimpl
from openclaw_runtime._registry import ComponentRegistry
from openclaw_runtime.abort import AbortController, AbortError
from openclaw_runtime.context.delegate import delegate_compaction_to_runtime
from openclaw_runtime.context.engine import (
    AfterTurnParams,
    AssembleParams,
    AssembleResult,
    BootstrapParams,
    BootstrapResult,
    CompactParams,
    CompactResult,
    ContextEngineInfo,
    ContextEngineRuntimeContext,
    IngestBatchParams,
    IngestBatchResult,
    IngestParams,
    IngestResult,
    MaintainParams,
    MaintenanceResult,
    PrepareSubagentSpawnParams,
    SubagentEndedParams,
)
from openclaw_runtime.context.legacy import LegacyContextEngine
from openclaw_runtime.context.lifecycle import (
    compact_context_engine_with_safety_timeout,
    finish_turn,
)
from openclaw_runtime.context.registry import (
    ContextEngineFactoryContext,
    ContextEngineSlot,
    QuarantineProxy,
)
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.testing import ContextEngineContract

pytestmark = pytest.mark.anyio


class TestLegacyEngineContract(ContextEngineContract):
    @pytest.fixture
    def context_engine(self):
        return LegacyContextEngine()


class RecordingEngine:
    """Implements every method; ``failing`` names the ones that raise."""

    info = ContextEngineInfo(id="recording", name="Recording Engine", version="0.1")

    def __init__(self, failing=(), error=None):
        self.failing = set(failing)
        self.error = error or RuntimeError("engine exploded")
        self.calls = []

    def _enter(self, name):
        self.calls.append(name)
        if name in self.failing:
            raise self.error

    async def bootstrap(self, params):
        self._enter("bootstrap")
        return BootstrapResult(bootstrapped=True)

    async def maintain(self, params):
        self._enter("maintain")
        return MaintenanceResult(changed=True, bytes_freed=10, rewritten_entries=1)

    async def ingest(self, params):
        self._enter("ingest")
        return IngestResult(ingested=True)

    async def ingest_batch(self, params):
        self._enter("ingest_batch")
        return IngestBatchResult(ingested_count=len(params.messages))

    async def after_turn(self, params):
        self._enter("after_turn")

    async def assemble(self, params):
        self._enter("assemble")
        return AssembleResult(messages=params.messages[-1:], estimated_tokens=7)

    async def compact(self, params):
        self._enter("compact")
        return CompactResult(ok=True, compacted=True)

    async def prepare_subagent_spawn(self, params):
        self._enter("prepare_subagent_spawn")
        return None

    async def on_subagent_ended(self, params):
        self._enter("on_subagent_ended")


def slot_with(**factories) -> ContextEngineSlot:
    registry = ComponentRegistry("context engine")
    registry.add("legacy", LegacyContextEngine, plugin="builtin.context")
    for name, factory in factories.items():
        registry.add(name, factory, plugin=f"plugin-{name}")
    return ContextEngineSlot(registry)


MESSAGES = [UserMessage(content="one", timestamp=1), UserMessage(content="two", timestamp=2)]
PARAMS = {
    "bootstrap": BootstrapParams(session_id="s", session_file="f"),
    "maintain": MaintainParams(session_id="s", session_file="f"),
    "ingest": IngestParams(session_id="s", message=MESSAGES[0]),
    "ingest_batch": IngestBatchParams(session_id="s", messages=MESSAGES),
    "after_turn": AfterTurnParams(
        session_id="s", session_file="f", messages=MESSAGES, pre_prompt_message_count=1
    ),
    "assemble": AssembleParams(session_id="s", messages=MESSAGES),
    "compact": CompactParams(session_id="s", session_file="f"),
    "prepare_subagent_spawn": PrepareSubagentSpawnParams(
        parent_session_key="p", child_session_key="c"
    ),
    "on_subagent_ended": SubagentEndedParams(child_session_key="c", reason="completed"),
}
# what each method answers once the engine is quarantined (legacy's method or the fixed result)
FALLBACKS = {
    "bootstrap": BootstrapResult(bootstrapped=False, reason="context engine downgraded to legacy"),
    "maintain": MaintenanceResult(
        changed=False,
        bytes_freed=0,
        rewritten_entries=0,
        reason="context engine downgraded to legacy",
    ),
    "ingest": IngestResult(ingested=False),
    "ingest_batch": IngestBatchResult(ingested_count=0),
    "after_turn": None,
    "assemble": AssembleResult(messages=MESSAGES, estimated_tokens=0),
    "on_subagent_ended": None,
}


# --------------------------------------------------------------------------- resolution


@pytest.mark.parametrize("name", [None, "", "  ", "legacy", "none", "LEGACY"])
async def test_default_names_resolve_to_legacy(name):
    engine = await slot_with().resolve(name)
    assert isinstance(engine, LegacyContextEngine)


async def test_a_registered_engine_is_wrapped():
    slot = slot_with(recording=RecordingEngine)
    engine = await slot.resolve(" recording ")
    assert isinstance(engine, QuarantineProxy)
    assert engine.info.id == "recording"
    assert hasattr(engine, "after_turn")
    assert not hasattr(engine, "dispose")  # optional methods exist only if the engine has them


@pytest.mark.parametrize(
    ("factory", "operation", "reason"),
    [
        (None, "resolve", "not registered (available: legacy)"),
        (lambda: (_ for _ in ()).throw(ValueError("no database")), "factory", "no database"),
        (
            lambda: object(),
            "factory",
            'Context engine "custom" factory returned an invalid ContextEngine: missing info, missing ingest(), missing assemble(), missing compact().',
        ),
        (
            lambda: None,
            "factory",
            'Context engine "custom" factory returned None instead of a ContextEngine object.',
        ),
    ],
)
async def test_broken_engines_are_quarantined_at_resolution(factory, operation, reason):
    slot = slot_with(**({"custom": factory} if factory else {}))
    engine = await slot.resolve("custom")
    assert isinstance(engine, LegacyContextEngine)
    (quarantine,) = slot.list_quarantines()
    assert (quarantine.engine_id, quarantine.operation, quarantine.reason) == (
        "custom",
        operation,
        reason,
    )


async def test_a_quarantined_engine_is_not_built_again():
    built = []

    def factory():
        built.append(1)
        return RecordingEngine()

    slot = slot_with(custom=factory)
    slot.record_quarantine("custom", "assemble", "earlier failure")
    assert isinstance(await slot.resolve("custom"), LegacyContextEngine)
    assert built == []
    slot.clear_quarantine("custom")
    assert isinstance(await slot.resolve("custom"), QuarantineProxy)
    assert built == [1]


async def test_async_factories_and_factory_context():
    seen = []

    async def factory(context):
        seen.append(context)
        return RecordingEngine()

    registry = ComponentRegistry("context engine")
    registry.add("legacy", LegacyContextEngine)
    registry.add("async", factory)
    context = ContextEngineFactoryContext(state_dir="/tmp/state")
    engine = await ContextEngineSlot(registry, factory_context=context).resolve("async")
    assert engine.info.id == "recording"
    assert seen == [context]


async def test_a_broken_default_engine_is_a_configuration_error():
    registry = ComponentRegistry("context engine")
    with pytest.raises(ConfigurationError, match='Context engine "legacy" is not registered'):
        await ContextEngineSlot(registry).resolve(None)
    registry.add("legacy", lambda: object())
    with pytest.raises(ConfigurationError, match="invalid ContextEngine"):
        await ContextEngineSlot(registry).resolve(None)


# --------------------------------------------------------------------------- the quarantine proxy


@pytest.mark.parametrize("method", sorted(PARAMS))
async def test_every_guarded_method_quarantines_and_falls_back(method):
    inner = RecordingEngine(failing={method})
    slot = slot_with(recording=lambda: inner)
    engine = await slot.resolve("recording")

    if method in ("compact", "prepare_subagent_spawn"):
        with pytest.raises(RuntimeError, match="engine exploded"):
            await getattr(engine, method)(PARAMS[method])
    else:
        assert await getattr(engine, method)(PARAMS[method]) == FALLBACKS[method]

    (quarantine,) = slot.list_quarantines()
    assert (quarantine.engine_id, quarantine.operation, quarantine.owner) == (
        "recording",
        method,
        "plugin-recording",
    )
    assert quarantine.reason == "engine exploded"
    assert engine.info.id == "legacy"  # info follows the fallback once quarantined
    assert engine.info.name == "Legacy Context Engine"

    # from now on every guarded call goes to the fallback; the engine is not called again
    calls_before = list(inner.calls)
    assert await engine.assemble(PARAMS["assemble"]) == FALLBACKS["assemble"]
    assert await engine.ingest(PARAMS["ingest"]) == IngestResult(ingested=False)
    assert inner.calls == calls_before


async def test_compact_falls_back_to_the_runtime_once_quarantined():
    inner = RecordingEngine(failing={"assemble"})
    slot = slot_with(recording=lambda: inner)
    engine = await slot.resolve("recording")
    await engine.assemble(PARAMS["assemble"])
    result = await engine.compact(PARAMS["compact"])  # legacy: delegates to the runtime
    assert (result.ok, result.reason) == (
        False,
        "runtime compaction is not available to this context engine call",
    )
    assert "compact" not in inner.calls


async def test_first_failure_wins_and_clearing_restores_the_engine():
    inner = RecordingEngine(failing={"ingest", "assemble"})
    slot = slot_with(recording=lambda: inner)
    engine = await slot.resolve("recording")
    await engine.ingest(PARAMS["ingest"])
    slot.record_quarantine("recording", "assemble", "later failure")
    assert [q.operation for q in slot.list_quarantines()] == ["ingest"]
    slot.clear_quarantine()
    assert slot.list_quarantines() == []
    inner.failing.clear()
    assert engine.info.id == "recording"
    assert await engine.assemble(PARAMS["assemble"]) == AssembleResult(
        messages=MESSAGES[-1:], estimated_tokens=7
    )


async def test_an_already_aborted_call_raises_the_callers_abort():
    inner = RecordingEngine()
    slot = slot_with(recording=lambda: inner)
    engine = await slot.resolve("recording")
    controller = AbortController()
    controller.abort("user pressed stop")
    params = AssembleParams(session_id="s", messages=MESSAGES, abort_signal=controller.signal)
    with pytest.raises(AbortError, match="user pressed stop"):
        await engine.assemble(params)
    assert inner.calls == []
    assert slot.list_quarantines() == []


@pytest.mark.parametrize("aborted", [True, False])
async def test_abort_rejections_never_quarantine(aborted):
    controller = AbortController()
    inner = RecordingEngine(failing={"assemble"}, error=RuntimeError("operation was cancelled"))
    slot = slot_with(recording=lambda: inner)
    engine = await slot.resolve("recording")
    params = AssembleParams(session_id="s", messages=MESSAGES, abort_signal=controller.signal)

    async def abort_midway(_params):
        if aborted:
            controller.abort()
        raise RuntimeError("operation was cancelled")

    inner.assemble = abort_midway
    if aborted:
        with pytest.raises(RuntimeError, match="cancelled"):
            await engine.assemble(params)
        assert slot.list_quarantines() == []
    else:  # "cancelled" wording without an abort is an ordinary failure
        assert await engine.assemble(params) == FALLBACKS["assemble"]
        assert [q.operation for q in slot.list_quarantines()] == ["assemble"]


async def test_runtime_slot_and_plugin_listing(runtime_factory):
    class Broken:
        info = ContextEngineInfo(id="broken", name="Broken")

        async def ingest(self, params):
            return IngestResult(ingested=True)

        async def assemble(self, params):
            raise KeyError("index missing")

        async def compact(self, params):
            return CompactResult(ok=True, compacted=False)

    class Plugin:
        @hookimpl
        def register_context_engines(self, register):
            register("broken", Broken)

    runtime = runtime_factory({"context_engine": "broken"}, plugins=[("acme-engines", Plugin())])
    engine = await runtime.resolve_context_engine()
    result = await engine.assemble(PARAMS["assemble"])
    assert result.messages == MESSAGES
    described = {p["name"]: p for p in runtime.describe_plugins()}
    (quarantine,) = described["acme-engines"]["quarantines"]
    assert quarantine["engineId"] == "broken"
    assert quarantine["operation"] == "assemble"
    assert quarantine["reason"] == "'index missing'"
    assert engine.info.id == "legacy"


# --------------------------------------------------------------------------- lifecycle helpers


class OnlyIngest:
    info = ContextEngineInfo(id="only-ingest", name="Only ingest")

    def __init__(self):
        self.ingested = []

    async def ingest(self, params):
        self.ingested.append(params.message)
        return IngestResult(ingested=True)

    async def assemble(self, params):
        return AssembleResult(messages=params.messages)

    async def compact(self, params):
        return CompactResult(ok=True, compacted=False)


class WithBatch(OnlyIngest):
    async def ingest_batch(self, params):
        self.ingested.append(list(params.messages))
        return IngestBatchResult(ingested_count=len(params.messages))


async def test_finish_turn_uses_the_richest_method_available():
    params = AfterTurnParams(
        session_id="s", session_file="f", messages=MESSAGES, pre_prompt_message_count=1
    )
    recording = RecordingEngine()
    assert await finish_turn(recording, params) == "after_turn"
    batch = WithBatch()
    assert await finish_turn(batch, params) == "ingest_batch"
    assert batch.ingested == [[MESSAGES[1]]]
    single = OnlyIngest()
    assert await finish_turn(single, params) == "ingest"
    assert single.ingested == [MESSAGES[1]]


async def test_compaction_safety_timeout_turns_failures_into_results():
    class Hangs(OnlyIngest):
        async def compact(self, params):
            await anyio.sleep(3600)

    class Raises(OnlyIngest):
        async def compact(self, params):
            raise OSError("disk full")

    class WrongType(OnlyIngest):
        async def compact(self, params):
            return {"ok": True}

    params = PARAMS["compact"]
    timed_out = await compact_context_engine_with_safety_timeout(Hangs(), params, timeout_s=0.05)
    assert (timed_out.ok, timed_out.reason) == (False, "compaction timed out after 0.05s")
    failed = await compact_context_engine_with_safety_timeout(Raises(), params)
    assert (failed.ok, failed.reason) == (False, "compaction failed: disk full")
    wrong = await compact_context_engine_with_safety_timeout(WrongType(), params)
    assert wrong.reason == "context engine compact() returned dict, not CompactResult"
    fine = await compact_context_engine_with_safety_timeout(OnlyIngest(), params)
    assert fine == CompactResult(ok=True, compacted=False)

    controller = AbortController()

    class AbortsMidway(OnlyIngest):
        async def compact(self, params):
            controller.abort()
            raise AbortError("stopped")

    aborted_params = CompactParams(session_id="s", session_file="f", abort_signal=controller.signal)
    with pytest.raises(AbortError):
        await compact_context_engine_with_safety_timeout(AbortsMidway(), aborted_params)


async def test_delegate_compaction_to_runtime_forwards_to_the_runtime():
    received = []

    async def compact_session(**kwargs):
        received.append(kwargs)
        return CompactResult(ok=True, compacted=True)

    runtime = ContextEngineRuntimeContext(
        token_budget=50_000, current_token_count=42_000, compact_session=compact_session
    )
    params = CompactParams(
        session_id="s",
        session_file="f.jsonl",
        force=True,
        compaction_target="threshold",
        runtime_context=runtime,
    )
    assert await delegate_compaction_to_runtime(params) == CompactResult(ok=True, compacted=True)
    (call,) = received
    assert call["current_token_count"] == 42_000  # taken from the runtime context when missing
    assert call["token_budget"] == 50_000
    assert call["force"] is True
    assert "compaction_target" not in call  # ignored, as in OpenClaw
