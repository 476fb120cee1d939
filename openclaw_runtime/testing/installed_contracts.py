"""The contract suites, run over every component the *installed* plugins register.

A plugin's own tests prove what it means to do; this module proves it behaves like a good
citizen of the host, through its real entry point, without the author writing a line::

    pytest --pyargs openclaw_runtime.testing.installed_contracts

Every plugin found in the ``openclaw_runtime`` entry-point group (``OPENCLAW_RUNTIME_PLUGINS``
narrows the set, as for any runtime) must load strictly, come from a distribution and
implement only known hooks with known arguments; then the contract mixins run over what it
registers: ``ContextEngineContract`` for each context engine, ``TranscriptSanitizerContract``
for each transcript sanitizer and each ``validate_replay_turns`` implementation (under the
policy of every provider API the plugin registers), and ``StreamRepairerContract`` for each
stream repairer. A kind nobody registered shows up as a skipped test, never as a pass.
Backends need their server and settings, so their contract suites stay in the plugin's own
tests (see docs/backends.md). The tox matrix runs this module in every plugin environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from .._registry import BUILTIN_PLUGIN_PREFIX, ComponentRegistry
from .._runtime import Runtime
from ..transcript.policy import TranscriptPolicy, resolve_transcript_policy
from .contracts import ContextEngineContract, StreamRepairerContract, TranscriptSanitizerContract

__all__ = [
    "InstalledComponent",
    "TestInstalledContextEngines",
    "TestInstalledReplayValidators",
    "TestInstalledSanitizers",
    "TestInstalledStreamRepairers",
    "installed_components",
    "installed_plugin_names",
    "test_installed_plugin_loads_through_its_entry_point",
]


@dataclass(frozen=True, slots=True)
class InstalledComponent:
    """One component an installed plugin registered: for test ids and fixtures."""

    plugin: str
    name: str
    component: Any
    policy: TranscriptPolicy | None = None

    @property
    def test_id(self) -> str:
        return f"{self.plugin}:{self.name}"


def _runtime() -> Runtime:
    return Runtime(on_load_failure="raise")


def installed_plugin_names(runtime: Runtime) -> list[str]:
    """Names of the plugins loaded from entry points (built-ins and explicit ones excluded).
    Plugins blocked by ``OPENCLAW_RUNTIME_PLUGINS`` / ``..._DISABLE_PLUGINS`` are left out, so
    the variable narrows every test here; one that failed to load stays in (and fails)."""
    return sorted(
        r.name
        for r in runtime.plugin_records()
        if r.source == "entrypoint" and r.status != "blocked"
    )


def _from_plugins(registry: ComponentRegistry[Any], plugins: list[str]) -> list[InstalledComponent]:
    return [
        InstalledComponent(reg.plugin, reg.name, reg.component)
        for reg in registry.registrations()
        if reg.plugin in plugins and not reg.plugin.startswith(BUILTIN_PLUGIN_PREFIX)
    ]


def _replay_validators(runtime: Runtime, plugins: list[str]) -> list[InstalledComponent]:
    """Each plugin's ``validate_replay_turns``, once per provider API it registers."""
    out: list[InstalledComponent] = []
    impls = runtime.plugin_manager.hook.validate_replay_turns.get_hookimpls()
    for impl in impls:
        if impl.plugin_name not in plugins:
            continue
        apis = [
            reg.name
            for reg in runtime.components.providers.registrations()
            if reg.plugin == impl.plugin_name
        ] or ["openai-completions"]
        for api in apis:
            policy = resolve_transcript_policy(api, api.split("-")[0], "contract")
            out.append(InstalledComponent(impl.plugin_name, api, impl.function, policy))
    return out


def installed_components() -> dict[str, list[InstalledComponent]]:
    """What the installed plugins register, by contract kind."""
    runtime = _runtime()
    try:
        plugins = installed_plugin_names(runtime)
        components = runtime.components
        return {
            "plugin": [InstalledComponent(name, name, None) for name in plugins],
            "context_engine": _from_plugins(components.context_engines, plugins),
            "sanitizer": _from_plugins(components.transcript_sanitizers, plugins),
            "replay_validator": _replay_validators(runtime, plugins),
            "stream_repairer": _from_plugins(components.stream_repairers, plugins),
        }
    finally:
        runtime.close()


_INSTALLED = installed_components()


def _ids(kind: str) -> list[str]:
    return [c.test_id for c in _INSTALLED[kind]]


@pytest.mark.parametrize("plugin", [c.plugin for c in _INSTALLED["plugin"]])
def test_installed_plugin_loads_through_its_entry_point(plugin: str) -> None:
    runtime = Runtime(on_load_failure="raise", allow=[plugin])
    try:
        record = {r.name: r for r in runtime.plugin_records()}[plugin]
        assert record.status == "loaded", record.error
        assert record.distribution, f"plugin {plugin!r} is not installed from a distribution"
        assert record.hooks, f"plugin {plugin!r} implements no hook"
        runtime.plugin_manager.check_pending()  # unknown hooks or arguments fail here
    finally:
        runtime.close()


def _build_engine(name: str) -> Any:
    """The engine as the host builds it (factory context included), unwrapped."""

    async def build() -> Any:
        runtime = _runtime()
        try:
            return (await runtime.resolve_context_engine(name)).wrapped
        finally:
            runtime.close()

    return anyio.run(build)


class TestInstalledContextEngines(ContextEngineContract):
    @pytest.fixture(params=_INSTALLED["context_engine"], ids=_ids("context_engine"))
    def context_engine(self, request: pytest.FixtureRequest) -> Any:
        return _build_engine(request.param.name)


class TestInstalledSanitizers(TranscriptSanitizerContract):
    @pytest.fixture(params=_INSTALLED["sanitizer"], ids=_ids("sanitizer"))
    def sanitizer(self, request: pytest.FixtureRequest) -> Any:
        return request.param.component


class TestInstalledReplayValidators(TranscriptSanitizerContract):
    """``validate_replay_turns`` obeys the sanitizer contract (``None`` = abstained)."""

    @pytest.fixture(params=_INSTALLED["replay_validator"], ids=_ids("replay_validator"))
    def sanitizer(self, request: pytest.FixtureRequest) -> Any:
        installed: InstalledComponent = request.param

        def validate(messages: list[Any], _policy: TranscriptPolicy) -> list[Any]:
            result = installed.component(messages=messages, policy=installed.policy)
            return list(messages) if result is None else result

        return validate


class TestInstalledStreamRepairers(StreamRepairerContract):
    @pytest.fixture(params=_INSTALLED["stream_repairer"], ids=_ids("stream_repairer"))
    def stream_repairer(self, request: pytest.FixtureRequest) -> Any:
        return request.param.component
