"""Context-engine selection: a disabled owner falls back silently, and a logical turn reports
failures instead of quarantining (OpenClaw's ``resolveContextEngine`` owner rule and
``resolveLogicalTurnContextEngines``; vectors from ``registry.selection.test.ts``)."""

from __future__ import annotations

import logging

import pytest

from openclaw_runtime import ConfigurationError, hookimpl
from openclaw_runtime._registry import ComponentRegistry
from openclaw_runtime.context.engine import (
    AssembleResult,
    CompactResult,
    ContextEngineInfo,
    IngestResult,
)
from openclaw_runtime.context.legacy import LegacyContextEngine
from openclaw_runtime.context.registry import ContextEngineSlot, QuarantineProxy
from openclaw_runtime.context.selection import (
    context_engine_owner,
    plugin_owner_enabled,
    resolve_effective_context_engine_id,
    resolve_logical_turn_context_engines,
)

pytestmark = pytest.mark.anyio

ENGINE = "synthetic-engine"
OWNER = "synthetic-owner"


class Synthetic:
    info = ContextEngineInfo(id=ENGINE, name="Synthetic")

    async def ingest(self, params):
        return IngestResult(ingested=False)

    async def assemble(self, params):
        return AssembleResult(messages=params.messages)

    async def compact(self, params):
        return CompactResult(ok=True, compacted=False, reason="fixture")


class Counting:
    """A factory that counts its calls and can be told to fail."""

    def __init__(self, error: Exception | None = None, product: object = None):
        self.calls = 0
        self.error = error
        self.product = product

    def __call__(self):
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.product if self.product is not None else Synthetic()


def make_slot(factory=None, *, owner=OWNER, disabled=()):
    registry = ComponentRegistry("context engine")
    registry.add("legacy", LegacyContextEngine, plugin="builtin.context")
    if factory is not None:
        registry.add(ENGINE, factory, plugin=owner)
    off = set(disabled)
    return ContextEngineSlot(registry, owner_enabled=lambda name: name not in off), off


def context_errors(caplog):
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


# --------------------------------------------------------------------------- owner rule


async def test_a_disabled_owner_falls_back_silently_and_re_enabling_restores(caplog):
    factory = Counting()
    slot, off = make_slot(factory, disabled={OWNER})
    engine = await slot.resolve(ENGINE)
    assert isinstance(engine, LegacyContextEngine)
    assert factory.calls == 0
    assert slot.list_quarantines() == []
    assert context_errors(caplog) == []
    off.clear()  # the plugin is enabled again; the slot still names the engine
    engine = await slot.resolve(ENGINE)
    assert isinstance(engine, QuarantineProxy) and engine.info.id == ENGINE
    assert factory.calls == 1
    assert slot.list_quarantines() == []


async def test_an_unregistered_engine_of_a_disabled_plugin_is_silent(caplog):
    slot, _ = make_slot(None, disabled={ENGINE})
    assert isinstance(await slot.resolve(ENGINE), LegacyContextEngine)
    assert slot.list_quarantines() == []
    assert context_errors(caplog) == []


@pytest.mark.parametrize("failure", ["missing", "factory"])
async def test_an_enabled_owner_keeps_the_quarantine(failure, caplog):
    factory = None if failure == "missing" else Counting(RuntimeError("scope closed"))
    slot, _ = make_slot(factory)
    assert isinstance(await slot.resolve(ENGINE), LegacyContextEngine)
    (quarantine,) = slot.list_quarantines()
    assert quarantine.operation == ("resolve" if failure == "missing" else "factory")
    assert len(context_errors(caplog)) == 1  # the log the disabled-owner path must not write
    assert isinstance(await slot.resolve(ENGINE), LegacyContextEngine)
    if factory is not None:
        assert factory.calls == 1  # quarantined: not built again


@pytest.mark.parametrize(
    ("configured", "disabled", "expected"),
    [
        (None, set(), "legacy"),
        ("  none ", set(), "legacy"),
        ("LEGACY", set(), "legacy"),
        (ENGINE, set(), ENGINE),
        (ENGINE, {OWNER}, "legacy"),
        (ENGINE, {ENGINE}, ENGINE),  # the owner is the registering plugin, not the engine name
        ("unregistered", {"unregistered"}, "legacy"),
        ("unregistered", set(), "unregistered"),
    ],
)
def test_effective_engine_id(configured, disabled, expected):
    registry = ComponentRegistry("context engine")
    registry.add(ENGINE, Synthetic, plugin=OWNER)
    enabled = lambda name: name not in disabled  # noqa: E731
    assert resolve_effective_context_engine_id(configured, registry, enabled, "legacy") == expected


def test_owner_of_an_engine():
    registry = ComponentRegistry("context engine")
    registry.add(ENGINE, Synthetic, plugin=OWNER)
    registry.add("anonymous", Synthetic)
    assert context_engine_owner(ENGINE, registry) == OWNER
    assert context_engine_owner("anonymous", registry) == "anonymous"
    assert context_engine_owner("nobody", registry) == "nobody"


class _Record:
    def __init__(self, source, status="loaded"):
        self.source, self.status = source, status


class _Policy:
    def __init__(self, allow=None, blocked=()):
        self.allow, self.blocked = allow, set(blocked)

    def admits(self, name):
        if "*" in self.blocked or name in self.blocked:
            return False
        return self.allow is None or name in self.allow


@pytest.mark.parametrize(
    ("owner", "records", "policy", "expected"),
    [
        ("builtin.context", {"builtin.context": _Record("builtin")}, _Policy(blocked={"*"}), True),
        ("acme", {"acme": _Record("entrypoint", "blocked")}, _Policy(), False),
        ("acme", {"acme": _Record("explicit")}, _Policy(blocked={"acme"}), False),
        ("acme", {"acme": _Record("explicit")}, _Policy(allow={"other"}), False),
        ("acme", {"acme": _Record("explicit")}, _Policy(allow={"acme"}), True),
        ("acme", {}, _Policy(), True),
        ("acme", {}, _Policy(blocked={"*"}), False),
    ],
)
def test_plugin_owner_enabled(owner, records, policy, expected):
    assert plugin_owner_enabled(owner, records=records, policy=policy) is expected


# --------------------------------------------------------------------------- logical turns


async def test_logical_turn_uses_the_configured_engine_fresh_each_time():
    factory = Counting()
    slot, _ = make_slot(factory)
    first = await resolve_logical_turn_context_engines(slot, ENGINE)
    second = await resolve_logical_turn_context_engines(slot, ENGINE)
    assert first.configured_id == ENGINE and first.configured_failure is None
    assert first.owner == OWNER and not first.degraded
    assert isinstance(first.configured, Synthetic)
    assert isinstance(first.fallback, LegacyContextEngine)
    assert first.configured is not second.configured
    assert factory.calls == 2


@pytest.mark.parametrize(
    ("make_factory", "failure"),
    [
        (lambda: None, 'context engine "synthetic-engine" is not registered'),
        (
            lambda: Counting(RuntimeError("Async work scope is closed")),
            "Async work scope is closed",
        ),
        (lambda: Counting(product=object()), "synthetic-engine"),  # breaks the contract
    ],
)
async def test_logical_turn_reports_failures_without_quarantine(make_factory, failure):
    factory = make_factory()
    slot, _ = make_slot(factory)
    for _ in range(2):  # the next turn tries the configured engine again
        result = await resolve_logical_turn_context_engines(slot, ENGINE)
        assert result.configured_id == ENGINE
        assert result.degraded and failure in (result.configured_failure or "")
        assert result.configured is result.fallback
        assert isinstance(result.fallback, LegacyContextEngine)
    assert slot.list_quarantines() == []
    if factory is not None:
        assert factory.calls == 2


async def test_logical_turn_ignores_an_existing_quarantine():
    factory = Counting()
    slot, _ = make_slot(factory)
    slot.record_quarantine(ENGINE, "assemble", "earlier failure", OWNER)
    result = await resolve_logical_turn_context_engines(slot, ENGINE)
    assert isinstance(result.configured, Synthetic) and not result.degraded
    assert [q.operation for q in slot.list_quarantines()] == ["assemble"]  # unchanged


async def test_logical_turn_with_a_disabled_owner_is_an_ordinary_default_turn():
    factory = Counting()
    slot, _ = make_slot(factory, disabled={OWNER})
    result = await resolve_logical_turn_context_engines(slot, ENGINE)
    assert result.configured_id == "legacy"
    assert result.configured_failure is None and result.owner is None
    assert factory.calls == 0


async def test_logical_turn_raises_when_the_default_itself_is_missing():
    slot = ContextEngineSlot(ComponentRegistry("context engine"))
    with pytest.raises(ConfigurationError, match='"legacy" is not registered'):
        await resolve_logical_turn_context_engines(slot, None)


# --------------------------------------------------------------------------- through Runtime


class _Plugin:
    def __init__(self):
        self.factory = Counting()

    @hookimpl
    def register_context_engines(self, register):
        register(ENGINE, self.factory)


@pytest.mark.parametrize(
    "plugins_config", [{"disable": ["acme-engines"]}, {"allow": ["someone-else"]}]
)
async def test_runtime_config_that_disables_the_owner(runtime_factory, plugins_config, caplog):
    plugin = _Plugin()
    runtime = runtime_factory(
        {"context_engine": ENGINE, "plugins": plugins_config}, plugins=[("acme-engines", plugin)]
    )
    engine = await runtime.resolve_context_engine()
    assert isinstance(engine, LegacyContextEngine)
    assert plugin.factory.calls == 0
    assert runtime.context_engines.list_quarantines() == []
    described = {p["name"]: p for p in runtime.describe_plugins()}
    assert not described["acme-engines"].get("quarantines")
    assert context_errors(caplog) == []


async def test_runtime_with_the_owner_enabled_uses_the_engine(runtime_factory):
    plugin = _Plugin()
    runtime = runtime_factory({"context_engine": ENGINE}, plugins=[("acme-engines", plugin)])
    engine = await runtime.resolve_context_engine()
    assert engine.info.id == ENGINE
    assert plugin.factory.calls == 1
