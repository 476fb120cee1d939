"""The pytest fixtures of the testing kit.

They live apart from ``openclaw_runtime.testing`` so that the package imports without pytest
(``openclaw-runtime demo`` runs ``openai_server`` on machines without test dependencies); the
package re-exports them whenever pytest is importable, so ``pytest_plugins =
["openclaw_runtime.testing"]`` keeps providing every fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pytest

from .._plugins import OpenClawPluginManager, get_plugin_manager
from .._runtime import Runtime
from ..providers.fake import FakeProvider
from .openai_server import FaultInjectingOpenAIServer
from .plugin_set import PluginSet
from .recorders import HookRecorder
from .server import LocalHTTPServer

__all__ = [
    "_local_http_server_session",
    "anyio_backend",
    "fake_provider",
    "hook_recorder",
    "local_http_server",
    "openai_server",
    "plugin_manager",
    "register_plugin",
    "runtime_factory",
]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run anyio tests on asyncio and on trio; the trio variant is skipped, with the reason,
    where trio is not installed (it is optional: ``pip install trio`` to run them)."""
    backend = str(request.param)
    if backend == "trio" and not trio_available():
        pytest.skip("trio is not installed: the trio variant is skipped (pip install trio)")
    return backend


def trio_available() -> bool:
    """Can ``trio`` be imported here? (``find_spec`` alone misses an import that fails.)"""
    try:
        import trio  # noqa: F401  # lazy: optional; only probed when a trio variant runs
    except ImportError:
        return False
    return True


@pytest.fixture
def plugin_manager() -> OpenClawPluginManager:
    """A fresh plugin manager: hookspecs and built-ins, no entry points, strict loading."""
    return get_plugin_manager(load_entrypoints=False, on_load_failure="raise")


@pytest.fixture
def register_plugin(plugin_manager: OpenClawPluginManager) -> Iterator[PluginSet]:
    """``register_plugin(plugin, name=None)`` for the duration of one test."""
    plugins = PluginSet(plugin_manager)
    yield plugins
    plugins.unregister_all()


@pytest.fixture
def hook_recorder(plugin_manager: OpenClawPluginManager) -> Iterator[HookRecorder]:
    """Records hook calls on ``plugin_manager`` and on runtimes from ``runtime_factory``."""
    recorder = HookRecorder()
    remove = plugin_manager.add_call_monitor(recorder)
    yield recorder
    remove()


@pytest.fixture
def runtime_factory(
    register_plugin: PluginSet, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Runtime]]:
    """``runtime_factory(config=None, *, plugins=(), **kw)`` → a ``Runtime`` without entry
    points, including plugins registered with ``register_plugin``; closed at teardown. A
    config (dict) without ``state_dir`` gets a temporary one, so a plugin fault recorded by
    the runtime never lands in the user's ``~/.openclaw-runtime``."""
    built: list[Runtime] = []
    recorder: HookRecorder | None = (
        request.getfixturevalue("hook_recorder")
        if "hook_recorder" in request.fixturenames
        else None
    )

    def make(
        config: Mapping[str, Any] | None = None, *, plugins: Iterable[Any] = (), **options: Any
    ) -> Runtime:
        options.setdefault("load_entrypoints", False)
        options.setdefault("on_load_failure", "raise")
        if config is None or (isinstance(config, Mapping) and "state_dir" not in config):
            state_dir = request.getfixturevalue("tmp_path_factory").mktemp("state")
            config = {**(config or {}), "state_dir": str(state_dir)}
        runtime = Runtime(config, plugins=[*register_plugin.items, *plugins], **options)
        if recorder is not None:
            runtime.plugin_manager.add_call_monitor(recorder)
        built.append(runtime)
        return runtime

    yield make
    for runtime in built:
        runtime.close()


@pytest.fixture(scope="session")
def _local_http_server_session() -> Iterator[LocalHTTPServer]:
    server = LocalHTTPServer().start()
    yield server
    server.stop()


@pytest.fixture
def local_http_server(_local_http_server_session: LocalHTTPServer) -> Iterator[LocalHTTPServer]:
    """A real HTTP server on 127.0.0.1 answering from a script (``enqueue(ScriptedReply...)``)."""
    server = _local_http_server_session
    server.reset()
    yield server
    server.reset()


@pytest.fixture
def fake_provider() -> FakeProvider:
    """A fresh scripted provider (api ``fake``); pair it with ``fake_model()``."""
    return FakeProvider()


@pytest.fixture
def openai_server() -> Iterator[FaultInjectingOpenAIServer]:
    """A ``FaultInjectingOpenAIServer`` (any model, any key) for one test; stopped after it.

    Build your own ``FaultInjectingOpenAIServer(models=..., keys=...)`` in a ``with`` block
    when a test needs a model list or key behaviours.
    """
    with FaultInjectingOpenAIServer() as server:
        yield server
