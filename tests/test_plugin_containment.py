"""Every plugin kind is contained (issue 9 §2): a plugin that raises is skipped, the run goes
on, and the fault is visible — a ``plugin_fault`` event, ``RunResult.faults``, the persisted
record — and repeated faults quarantine it (breaker with cool-off and half-open trial).

Runs go over real HTTP to the fault-injecting OpenAI-compatible server; plugins are
registered in-process.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import HookError, OpenClawRuntimeWarning, Runtime, hookimpl
from openclaw_runtime.context.engine import ContextEngineInfo
from openclaw_runtime.context.legacy import LegacyContextEngine
from openclaw_runtime.events import Event, TextDelta
from openclaw_runtime.failover import FailoverClassification
from openclaw_runtime.repair.formats import FormatScan
from openclaw_runtime.repair.normalizer import PlainTextToolCallRepairer
from openclaw_runtime.testing import StreamRepairerContract
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as running:
        yield running


def config_for(
    state_dir: Path, server: FaultInjectingOpenAIServer, **plugins: Any
) -> dict[str, Any]:
    return {
        "state_dir": str(state_dir),
        "models": [
            {
                "id": "main",
                "api": "openai-completions",
                "provider": "mock",
                "baseUrl": server.base_url,
                "contextWindow": 64_000,
                "maxTokens": 1024,
            }
        ],
        "agent": {"model": "mock/main", "timeout_seconds": 20},
        "auth": {
            "profiles": [
                {
                    "id": "mock:0",
                    "provider": "mock",
                    "mode": "api_key",
                    "credential": {"value": "key-a"},
                }
            ]
        },
        "plugins": plugins,
    }


@pytest.fixture
async def make_runtime(tmp_path: Path, server: FaultInjectingOpenAIServer) -> Any:
    made: list[Runtime] = []

    def factory(*plugins: Any, strict: bool = True, **settings: Any) -> Runtime:
        runtime = Runtime(
            config_for(tmp_path / "state", server, **settings),
            plugins=list(plugins),
            load_entrypoints=False,
            on_load_failure="raise" if strict else "warn",
        )
        runtime.retry_backoff_scale = 0
        made.append(runtime)
        return runtime

    yield factory
    for runtime in made:
        await runtime.aclose()


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        if event.type != "message_update":
            self.events.append(event)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def types(self) -> list[str]:
        return [e.type for e in self.events]


def faults_of(result: Any) -> list[tuple[str | None, str, str]]:
    return [(f.plugin, f.hook, f.unit) for f in result.faults]


def record_file(tmp_path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((tmp_path / "state/plugins/faults.json").read_text())
    return loaded


# --------------------------------------------------------------------------- stream repairers


class RaisingRepairer:
    """A stream repairer that passes two events through, then raises (until ``fixed``)."""

    def __init__(self) -> None:
        self.calls = 0
        self.fixed = False

    def plugin(self) -> Any:
        repairer = self

        async def repair(events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            repairer.calls += 1
            seen = 0
            async for event in events:
                seen += 1
                if seen == 3 and not repairer.fixed:
                    raise ValueError("repairer bug")
                yield event

        class Plugin:
            @hookimpl
            def register_stream_repairers(self, register: Any) -> None:
                register("fragile", repair)

        return ("fragile-repair", Plugin())


async def test_raising_stream_repairer_is_skipped_and_reported(
    make_runtime: Any, tmp_path: Path
) -> None:
    broken = RaisingRepairer()
    runtime = make_runtime(broken.plugin())
    recorder = Recorder()
    result = await runtime.run("hello there", session_id="s1", on_event=recorder)

    # the run answers as if the repairer were not there: no event of the answer was lost
    assert result.ok, result.error
    assert result.text == "You said: hello there"
    unit = "stream_repairer:fragile"
    assert faults_of(result) == [("fragile-repair", "register_stream_repairers", unit)]
    assert "ValueError: repairer bug" in result.faults[0].error
    (event,) = recorder.of("plugin_fault")
    assert (event.plugin, event.hook, event.unit) == (
        "fragile-repair",
        "register_stream_repairers",
        unit,
    )
    assert recorder.types()[-1] == "run_end"
    assert result.to_dict()["faults"][0]["plugin"] == "fragile-repair"
    # persisted for later processes
    (entry,) = record_file(tmp_path)["entries"]
    assert (entry["plugin"], entry["unit"], entry["count"]) == ("fragile-repair", unit, 1)


async def test_repairer_is_quarantined_after_threshold_then_half_open_trial(
    make_runtime: Any, tmp_path: Path
) -> None:
    broken = RaisingRepairer()
    runtime = make_runtime(
        broken.plugin(), fault_threshold=2, fault_window_seconds=60, quarantine_seconds=30
    )
    now = [1000.0]
    runtime.guard.clock = lambda: now[0]

    first = await runtime.run("one", session_id="s1")
    assert first.ok and [f.quarantined for f in first.faults] == [False]
    recorder = Recorder()
    second = await runtime.run("two", session_id="s1", on_event=recorder)
    assert second.ok and [f.quarantined for f in second.faults] == [True]
    assert [e.unit for e in recorder.of("plugin_quarantined")] == ["stream_repairer:fragile"]
    assert broken.calls == 2

    # open: the repairer is not called at all, the run is clean
    third = await runtime.run("three", session_id="s1")
    assert third.ok and third.faults == [] and broken.calls == 2
    assert [q.unit for q in runtime.guard.quarantines()] == ["stream_repairer:fragile"]

    # after the cool-off one trial call: it fails again, so the breaker re-opens
    now[0] += 31
    recorder = Recorder()
    fourth = await runtime.run("four", session_id="s1", on_event=recorder)
    assert fourth.ok and broken.calls == 3
    assert [f.quarantined for f in fourth.faults] == [True]
    assert len(recorder.of("plugin_quarantined")) == 1
    fifth = await runtime.run("five", session_id="s1")
    assert fifth.faults == [] and broken.calls == 3

    # next trial succeeds: the breaker closes and the repairer is called on every run again
    now[0] += 31
    broken.fixed = True
    sixth = await runtime.run("six", session_id="s1")
    assert sixth.ok and sixth.faults == [] and broken.calls == 4
    assert runtime.guard.quarantines() == []
    seventh = await runtime.run("seven", session_id="s1")
    assert seventh.ok and broken.calls == 5
    (entry,) = record_file(tmp_path)["entries"]
    assert (entry["count"], entry["quarantines"]) == (3, 2)


# --------------------------------------------------------------------------- observers, gates


async def test_raising_observer_is_called_until_quarantined(make_runtime: Any) -> None:
    calls: list[str] = []

    class Observer:
        @hookimpl
        def on_agent_event(self, event: Any) -> None:
            calls.append(event.type)
            raise RuntimeError("observer bug")

    runtime = make_runtime(("noisy-observer", Observer()), fault_threshold=3)
    recorder = Recorder()
    result = await runtime.run("hi", session_id="s1", on_event=recorder)
    assert result.ok and result.text == "You said: hi"
    # three faults open the breaker: never called again in this process
    assert len(calls) == 3
    assert [f.quarantined for f in result.faults] == [False, False, True]
    assert len(recorder.of("plugin_fault")) == 3
    (quarantined,) = recorder.of("plugin_quarantined")
    assert (quarantined.plugin, quarantined.unit) == ("noisy-observer", "on_agent_event")
    again = await runtime.run("again", session_id="s1")
    assert again.ok and again.faults == [] and len(calls) == 3


async def test_raising_before_agent_run_does_not_block_the_run(make_runtime: Any) -> None:
    class Gate:
        @hookimpl
        def before_agent_run(self, prompt: str) -> None:
            raise ConnectionError("policy service down")

    runtime = make_runtime(("gate", Gate()))
    result = await runtime.run("hi", session_id="s1")
    assert result.ok and result.text == "You said: hi"
    assert faults_of(result) == [("gate", "before_agent_run", "before_agent_run")]


async def test_raising_classifier_falls_through_to_the_builtin_one(
    make_runtime: Any, server: FaultInjectingOpenAIServer
) -> None:
    seen: list[int | None] = []

    class Classifier:
        @hookimpl(tryfirst=True)
        def classify_failover(self, status: int | None) -> FailoverClassification | None:
            seen.append(status)
            raise KeyError("classifier bug")

    runtime = make_runtime(("bad-classifier", Classifier()))
    server.inject(Fault("rate_limit"))
    result = await runtime.run("hi", session_id="s1")
    # the 429 was classified by the built-in classifier (rate limit) and retried
    assert result.ok and result.text == "You said: hi"
    assert seen and seen[0] == 429
    assert ("bad-classifier", "classify_failover", "classify_failover") in faults_of(result)


async def test_raising_sanitizer_and_validator_are_skipped(make_runtime: Any) -> None:
    class Transcript:
        @hookimpl
        def register_transcript_sanitizers(self, register: Any) -> None:
            def explode(messages: list[Any], policy: Any) -> list[Any]:
                raise RuntimeError("sanitizer bug")

            register("explode", explode)

        @hookimpl(tryfirst=True)
        def validate_replay_turns(self, messages: list[Any], policy: Any) -> list[Any]:
            raise RuntimeError("validator bug")

    runtime = make_runtime(("transcript-plugin", Transcript()))
    result = await runtime.run("hi", session_id="s1")
    assert result.ok and result.text == "You said: hi"
    hooks = {(f.hook, f.unit) for f in result.faults}
    assert ("register_transcript_sanitizers", "transcript_sanitizer:explode") in hooks
    assert ("validate_replay_turns", "validate_replay_turns") in hooks
    assert {f.plugin for f in result.faults} == {"transcript-plugin"}


async def test_raising_tool_call_format_counts_as_no_match(make_runtime: Any) -> None:
    calls = [0]

    class BadFormat:
        def parse_at(self, text: str, start: int, options: Any, line_breaks: Any) -> Any:
            calls[0] += 1
            raise RuntimeError("format bug")

        def scan_at(self, text: str, start: int, options: Any) -> FormatScan:
            calls[0] += 1
            raise RuntimeError("format bug")

    class Formats:
        @hookimpl
        def register_tool_call_formats(self, register: Any) -> None:
            register("bad", BadFormat())

    from openclaw_runtime.agent import tool

    @tool
    async def lookup(query: str) -> str:
        """Look something up."""
        return query

    runtime = make_runtime(("bad-format", Formats()))
    result = await runtime.run("hi", session_id="s1", tools=[lookup])
    assert result.ok and result.text == "You said: hi"
    assert calls[0] >= 1
    assert {(f.plugin, f.unit) for f in result.faults} == {("bad-format", "tool_call_format:bad")}


# --------------------------------------------------------------------------- registration


async def test_raising_registration_hook_is_skipped_when_not_strict(make_runtime: Any) -> None:
    class Registers:
        @hookimpl
        def register_stream_repairers(self, register: Any) -> None:
            raise RuntimeError("cannot register")

    runtime = make_runtime(("registers", Registers()), strict=False)
    result = await runtime.run("hi", session_id="s1")
    assert result.ok and result.text == "You said: hi"
    assert [(f.plugin, f.hook) for f in runtime.hooks.faults] == [
        ("registers", "register_stream_repairers")
    ]
    described = {p["name"]: p for p in runtime.describe_plugins()}
    (entry,) = described["registers"]["faults"]
    assert (entry["hook"], entry["count"]) == ("register_stream_repairers", 1)


def test_raising_runtime_add_hookspecs_does_not_crash_runtime(tmp_path: Path) -> None:
    class Specs:
        @hookimpl
        def runtime_add_hookspecs(self, pm: Any) -> None:
            raise RuntimeError("spec bug")

        @hookimpl
        def on_agent_event(self, event: Any) -> None:
            pass

    config = {"state_dir": str(tmp_path / "state")}
    runtime = Runtime(
        config, plugins=[("specs", Specs())], load_entrypoints=False, on_load_failure="warn"
    )
    assert [(f.plugin, f.hook) for f in runtime.hooks.faults] == [
        ("specs", "runtime_add_hookspecs")
    ]
    # the plugin is still loaded: its other hooks work
    assert runtime.hooks.observes_events
    with pytest.raises(HookError, match="plugin 'specs' raised in runtime_add_hookspecs"):
        Runtime(
            config, plugins=[("specs", Specs())], load_entrypoints=False, on_load_failure="raise"
        )


# --------------------------------------------------------------------------- context engines


async def test_engine_whose_info_raises_falls_back_to_legacy(make_runtime: Any) -> None:
    class BadInfoEngine(LegacyContextEngine):
        @property
        def info(self) -> ContextEngineInfo:
            raise RuntimeError("info bug")

    class Engines:
        @hookimpl
        def register_context_engines(self, register: Any) -> None:
            register("bad-info", BadInfoEngine)

    runtime = make_runtime(("engines", Engines()))
    runtime.config = runtime.config.model_copy(update={"context_engine": "bad-info"})
    recorder = Recorder()
    result = await runtime.run("hi", session_id="s1", on_event=recorder)
    assert result.ok and result.text == "You said: hi"
    assert faults_of(result) == [("engines", "register_context_engines", "context_engine:bad-info")]
    assert result.faults[0].quarantined
    assert [e.plugin for e in recorder.of("plugin_quarantined")] == ["engines"]
    (quarantine,) = runtime.context_engines.list_quarantines()
    assert (quarantine.engine_id, quarantine.operation) == ("bad-info", "info")


# --------------------------------------------------------------------------- backends


async def test_raising_backend_factory_ends_the_run_with_an_error_naming_the_plugin(
    make_runtime: Any,
) -> None:
    class Backends:
        @hookimpl
        def register_backends(self, register: Any) -> None:
            def factory(runtime: Any) -> Any:
                raise OSError("redis unreachable")

            register("lanes", "flaky", factory)

    runtime = make_runtime(("flaky-backends", Backends()))
    runtime.config = runtime.config.model_copy(
        update={"backends": runtime.config.backends.model_copy(update={"lanes": "flaky"})}
    )
    result = await runtime.run("hi", session_id="s1")
    assert not result.ok
    assert result.error is not None and result.error.kind == "plugin"
    assert "plugin 'flaky-backends'" in result.error.message
    assert "redis unreachable" in result.error.message
    assert faults_of(result) == [("flaky-backends", "register_backends", "backend:lanes:flaky")]


async def test_raising_backend_method_ends_the_run_with_an_error_naming_the_plugin(
    make_runtime: Any,
) -> None:
    from openclaw_runtime.transcript.store import JsonlSessionStore

    class BrokenStore(JsonlSessionStore):
        async def open_or_create(self, session_id: str, *, cwd: str) -> Any:
            raise RuntimeError("disk on fire")

    class Backends:
        @hookimpl
        def register_backends(self, register: Any) -> None:
            register("session_store", "broken", lambda runtime: BrokenStore(runtime.sessions_dir))

    runtime = make_runtime(("broken-store", Backends()))
    runtime.config = runtime.config.model_copy(
        update={"backends": runtime.config.backends.model_copy(update={"session_store": "broken"})}
    )
    recorder = Recorder()
    result = await runtime.run("hi", session_id="s1", on_event=recorder)
    assert result.error is not None and result.error.kind == "plugin"
    assert "session_store:broken backend of plugin 'broken-store'" in result.error.message
    assert "open_or_create" in result.error.message
    assert "disk on fire" in result.error.message
    assert recorder.types()[-1] == "run_end"
    assert [e.plugin for e in recorder.of("plugin_fault")] == ["broken-store"]


# --------------------------------------------------------------------------- name clash


async def test_component_name_clash_is_reported_and_settled(make_runtime: Any) -> None:
    calls: list[str] = []

    def repairer(tag: str) -> Any:
        async def repair(events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            calls.append(tag)
            async for event in events:
                yield event

        return repair

    class First:
        @hookimpl
        def register_stream_repairers(self, register: Any) -> None:
            register("fixer", repairer("first"))

    class Second:
        @hookimpl
        def register_stream_repairers(self, register: Any) -> None:
            register("fixer", repairer("second"))

    runtime = make_runtime(("first", First()), ("second", Second()))
    with pytest.warns(OpenClawRuntimeWarning, match="'fixer' is registered by both"):
        result = await runtime.run("hi", session_id="s1")
    assert result.ok and calls == ["first"]
    described = {p["name"]: p for p in runtime.describe_plugins()}
    (clash,) = described["second"]["clashes"]
    assert (clash["name"], clash["kept"], clash["dropped"]) == ("fixer", "first", "second")
    assert described["first"]["clashes"] == [clash]

    # config picks the other one
    calls.clear()
    preferring = make_runtime(("first", First()), ("second", Second()), prefer={"fixer": "second"})
    with pytest.warns(OpenClawRuntimeWarning, match=r"using plugin 'second' \(\[plugins\] prefer"):
        result = await preferring.run("hi", session_id="s2")
    assert result.ok and calls == ["second"]


# --------------------------------------------------------------------------- repairer contract


class TestBuiltinRepairerKeepsTheContract(StreamRepairerContract):
    @pytest.fixture
    def stream_repairer(self) -> Any:
        return PlainTextToolCallRepairer()


class DeltaOnlyRepairer:
    """The classic mistake: shouts in the deltas, leaves the final message as it was."""

    async def __call__(self, events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for event in events:
            if event.type == "text_delta":
                event = TextDelta(event.content_index, event.delta.upper(), event.partial)
            yield event


async def test_contract_catches_a_repairer_that_forgets_the_final_message() -> None:
    contract = StreamRepairerContract()
    with pytest.raises(AssertionError, match="apply the repair to the final message too"):
        await contract.test_final_message_agrees_with_the_stream(DeltaOnlyRepairer())


# --------------------------------------------------------------------------- more repairer shapes


def repairer_plugin(name: str, repairer: Any) -> tuple[str, Any]:
    class Plugin:
        @hookimpl
        def register_stream_repairers(self, register: Any) -> None:
            register(name, repairer)

    return (name, Plugin())


async def raises_at_once(events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
    async for _event in events:
        raise ValueError("first event")
        yield _event


def not_a_stream(events: AsyncIterator[Any], context: Any) -> Any:
    return 42  # not an async iterator


class BadBinding:
    """A repairer that takes formats but breaks while binding them."""

    def with_formats(self, formats: Any) -> Any:
        raise RuntimeError("cannot bind")

    def __call__(self, events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        return events


@pytest.mark.parametrize(
    ("repairer", "error"),
    [
        (raises_at_once, "ValueError: first event"),
        (not_a_stream, "AttributeError"),
        (BadBinding(), "RuntimeError: cannot bind"),
    ],
    ids=["raises-on-first-event", "returns-no-stream", "with-formats-raises"],
)
async def test_every_broken_repairer_shape_is_contained(
    make_runtime: Any, repairer: Any, error: str
) -> None:
    runtime = make_runtime(repairer_plugin("shape", repairer))
    result = await runtime.run("hello there", session_id="s1")
    assert result.ok, result.error
    assert result.text == "You said: hello there"
    (fault,) = result.faults if result.faults else runtime.hooks.faults
    assert (fault.plugin, fault.unit) == ("shape", "stream_repairer:shape")
    assert error in fault.error


async def test_provider_failure_inside_a_repairer_is_not_blamed_on_it() -> None:
    from openclaw_runtime.containment import PluginGuard
    from openclaw_runtime.events import Start
    from openclaw_runtime.llm import Context, Model, StreamOptions
    from openclaw_runtime.messages import AssistantMessage
    from openclaw_runtime.repair.compose import apply_stream_repairers, guard_stream_repairer

    async def passthrough(events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for event in events:
            yield event

    class ProviderBug(Exception):
        pass

    async def broken_provider(model: Any, context: Any, options: Any) -> AsyncIterator[Any]:
        yield Start(AssistantMessage(api="fake", provider="fake", model="m"))
        raise ProviderBug("connection reset")

    guard = PluginGuard()
    stream_fn = apply_stream_repairers(
        broken_provider,  # a raw generator: its exception travels through the repairer
        [guard_stream_repairer(passthrough, guard=guard, plugin="innocent", name="p")],
    )
    model = Model(id="m", name="m", api="fake", provider="fake")
    stream = stream_fn(model, Context("s", [], []), StreamOptions())
    seen = [event.type async for event in stream]
    assert seen == ["start"]
    with pytest.raises(ProviderBug):
        await stream.result()
    assert guard.faults == []  # the provider's failure, not the repairer's


# --------------------------------------------------------------------------- config and models


def test_containment_settings_are_validated(tmp_path: Path) -> None:
    from openclaw_runtime import ConfigurationError
    from openclaw_runtime.config import RuntimeConfig

    with pytest.raises(ConfigurationError, match="fault_threshold"):
        RuntimeConfig.coerce({"plugins": {"fault_threshold": 0}})
    with pytest.raises(ConfigurationError, match="fault_windows"):
        RuntimeConfig.coerce({"plugins": {"fault_windows": 3}})
    settings = RuntimeConfig.coerce(
        {"plugins": {"fault_threshold": 5, "quarantine_seconds": 0, "prefer": {"x": "p"}}}
    ).plugins
    assert (settings.fault_threshold, settings.quarantine_seconds, settings.prefer) == (
        5,
        0,
        {"x": "p"},
    )


def test_model_clashes_are_settled_not_raised(tmp_path: Path) -> None:
    from openclaw_runtime.llm import Model

    def models(tag: str) -> Any:
        class Plugin:
            @hookimpl
            def register_models(self, register: Any) -> None:
                register(Model(id="m", name=tag, api="echo", provider="acme"))

        return Plugin()

    config = {
        "state_dir": str(tmp_path / "state"),
        "models": [{"id": "m", "name": "from-config", "api": "echo", "provider": "acme"}],
    }
    runtime = Runtime(
        config, plugins=[("one", models("one")), ("two", models("two"))], load_entrypoints=False
    )
    with pytest.warns(OpenClawRuntimeWarning) as caught:
        assert runtime.resolve_model("acme/m").name == "from-config"
    messages = [str(w.message) for w in caught]
    assert any(
        "model 'acme/m' is registered by both plugin 'one' and plugin 'two'" in m for m in messages
    )
    # a [[models]] entry replacing a plugin's model is config doing its job (the catalog makes
    # it common): recorded as an override, not reported as a clash
    assert [(c.kept, c.dropped, c.rule) for c in runtime.component_clashes()] == [
        ("one", "two", "first"),
    ]
    assert runtime.models.overrides == {"acme/m": "one"}
