"""The pytest plugin of openclaw-runtime (entry point ``pytest11``: loaded automatically
wherever the package is installed).

It adds three fixtures and nothing else — no ``anyio_backend``, no hooks — so installing the
runtime never changes how an unrelated project's tests run:

* ``openclaw_state_dir`` — a fresh temporary state directory (``state_dir`` of a config);
* ``fault_server`` — a ``FaultInjectingOpenAIServer`` on 127.0.0.1 for one test;
* ``openclaw_runtime_fake`` — a ``FakeRuntime``: a ``Runtime`` whose default model is served
  by a scripted ``FakeProvider`` registered as a plugin, so ``await fake.run("hi")`` takes
  the whole pipeline (sanitizers, replay validation, stream repairers, the context engine,
  sessions, failover). Script it with ``fake.provider.reply(...)``; register the plugin
  under test with ``fake.add_plugin(plugin)`` before the first run.

The rest of the kit (asyncio + trio ``anyio_backend``, ``runtime_factory``, the contract
suites...) comes with ``pytest_plugins = ["openclaw_runtime.testing"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .fake_runtime import FakeRuntime
from .openai_server import FaultInjectingOpenAIServer

__all__ = ["fault_server", "openclaw_runtime_fake", "openclaw_state_dir"]


@pytest.fixture
def openclaw_state_dir(tmp_path: Path) -> Path:
    """A fresh, empty state directory for one test."""
    state_dir = tmp_path / "openclaw-state"
    state_dir.mkdir()
    return state_dir


@pytest.fixture
def fault_server() -> Iterator[FaultInjectingOpenAIServer]:
    """A fault-injecting OpenAI-compatible server (any model, any key); stopped after."""
    with FaultInjectingOpenAIServer() as server:
        yield server


@pytest.fixture
def openclaw_runtime_fake(openclaw_state_dir: Path) -> Iterator[FakeRuntime]:
    """A ``FakeRuntime`` in ``openclaw_state_dir``; closed after the test."""
    fake = FakeRuntime(openclaw_state_dir)
    yield fake
    fake.close()
