"""A ``Runtime`` on the scripted fake provider that takes the whole production path.

Building an ``Agent`` with ``stream_fn=FakeProvider()`` skips everything the runtime adds
around a model call: transcript sanitizers, replay validation, stream repairers and the
tool-call formats behind them, the context engine, sessions, lanes and failover. A plugin
author testing one of those needs the fake provider *registered* on a runtime instead:
``FakeProviderPlugin`` does that (the provider under its api, ``fake_model()`` in the
catalog) and ``FakeRuntime`` wraps the runtime built with it, a temporary state dir and any
plugins under test; the ``openclaw_runtime_fake`` pytest fixture hands one to a test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._markers import hookimpl
from .._runtime import Runtime
from .._types import RegisterComponent, RegisterModel
from ..llm import Model
from ..providers.fake import FakeProvider
from ..runner.request import RunResult
from .fakes import fake_model

__all__ = ["FakeProviderPlugin", "FakeRuntime"]


class FakeProviderPlugin:
    """Registers ``provider`` (a ``FakeProvider``) under its api and ``models`` (default:
    ``fake_model()``, addressable as ``fake/fake-model``) in the catalog."""

    def __init__(self, provider: FakeProvider, models: Iterable[Model] | None = None) -> None:
        self.provider = provider
        self.models = list(models) if models is not None else [fake_model()]

    @hookimpl
    def register_providers(self, register: RegisterComponent) -> None:
        """The scripted provider, under its api (``fake`` unless built otherwise)."""
        register(self.provider.api, self.provider.stream_fn)

    @hookimpl
    def register_models(self, register: RegisterModel) -> None:
        """The fake models."""
        for model in self.models:
            register(model)


class FakeRuntime:
    """A runtime whose default model is served by ``provider``; built on first use.

    ``add_plugin(plugin)`` before the first ``run`` (or ``runtime`` access) registers the
    plugin under test; ``run(prompt, **options)`` is ``Runtime.run`` with the fake model as
    default. Call ``close()`` when done (the pytest fixture does).
    """

    model = "fake/fake-model"

    def __init__(
        self,
        state_dir: Path,
        *,
        provider: FakeProvider | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.provider = provider if provider is not None else FakeProvider()
        self.config: dict[str, Any] = dict(config or {})
        fake_plugin = FakeProviderPlugin(self.provider)
        self._plugins: list[tuple[str, Any]] = [("fake-provider", fake_plugin)]
        self._runtime: Runtime | None = None

    def add_plugin(self, plugin: Any, name: str | None = None) -> None:
        """Register ``plugin`` on the runtime about to be built."""
        if self._runtime is not None:
            raise RuntimeError("add plugins before the first run: the runtime is already built")
        self._plugins.append((name or f"plugin-{len(self._plugins)}", plugin))

    @property
    def runtime(self) -> Runtime:
        """The ``Runtime`` (no entry points, strict plugin loading)."""
        if self._runtime is None:
            agent = {"model": self.model, **self.config.get("agent", {})}
            config = {**self.config, "state_dir": str(self.state_dir), "agent": agent}
            self._runtime = Runtime(
                config, plugins=self._plugins, load_entrypoints=False, on_load_failure="raise"
            )
        return self._runtime

    async def run(self, prompt: str, **options: Any) -> RunResult:
        """One agent turn through the whole pipeline (``Runtime.run``)."""
        result: RunResult = await self.runtime.run(prompt, **options)
        return result

    def close(self) -> None:
        """Close the runtime, if it was built."""
        if self._runtime is not None:
            self._runtime.close()
