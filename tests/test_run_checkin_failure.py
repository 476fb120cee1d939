"""A session whose ``flush`` fails at the run's check-in is a cleanup failure (issue 15 §3).

The check-in after the run (flush what the session buffered, keep it open for the next turn)
used to let the store's raw exception escape ``Runtime.run``: a finished, streamed answer was
lost to a ``OSError``. Now it goes through ``merge_run_cleanup_outcome`` like the lane release
and the steering ack: the answer stands, the failure is a ``plugin_fault`` of the store's
plugin; after a failed run the run still fails. Real HTTP (``FaultInjectingOpenAIServer``),
a real JSONL store underneath, on asyncio and trio.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime.events import Event
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer, Reply
from openclaw_runtime.transcript.store import JsonlSessionStore
from tests.run_support import mock_openai_config

pytestmark = pytest.mark.anyio

ANSWER = "The CI config lives in .github/workflows/ci.yml."


class FlushFailingSession:
    """A real session whose ``flush`` raises once the store is armed (the disk filled up)."""

    def __init__(self, inner: Any, store: FlushFailingStore) -> None:
        self._inner = inner
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def flush(self) -> None:
        if self._store.armed:
            self._store.failed_flushes += 1
            raise OSError(28, "No space left on device")
        await self._inner.flush()


class FlushFailingStore(JsonlSessionStore):
    armed = False
    failed_flushes = 0

    async def open_or_create(self, session_id: str, *, cwd: str) -> Any:
        return FlushFailingSession(await super().open_or_create(session_id, cwd=cwd), self)


class StorePlugin:
    def __init__(self) -> None:
        self.store: FlushFailingStore | None = None

    @hookimpl
    def register_backends(self, register: Any) -> None:
        def build(runtime: Any) -> FlushFailingStore:
            self.store = FlushFailingStore(runtime.sessions_dir, durability="none")
            return self.store

        register("session_store", "flush-failing", build)


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as running:
        yield running


def make_runtime(tmp_path: Path, server: FaultInjectingOpenAIServer, plugin: StorePlugin) -> Any:
    config = mock_openai_config(
        tmp_path / "state",
        server,
        timeout_seconds=20,
    )
    config["backends"] = {"session_store": "flush-failing"}
    runtime = Runtime(
        config, plugins=[("flaky-store", plugin)], load_entrypoints=False, on_load_failure="raise"
    )
    runtime.retry_backoff_scale = 0
    return runtime


def arm_after(plugin: StorePlugin, action: str, events: list[Event]) -> Any:
    """An event sink that arms the store once the attempt loop decided ``action`` (after the
    attempt's own flushes, before the check-in)."""

    def sink(event: Event) -> None:
        events.append(event)
        if event.type == "attempt_decision" and event.action == action:  # type: ignore[attr-defined]
            assert plugin.store is not None
            plugin.store.armed = True

    return sink


async def test_a_failing_checkin_flush_keeps_the_answer(
    tmp_path: Path, server: FaultInjectingOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    plugin = StorePlugin()
    runtime = make_runtime(tmp_path, server, plugin)
    server.enqueue(Reply(text=ANSWER))
    events: list[Event] = []
    try:
        result = await runtime.run(
            "where is the CI config?", session_id="s1", on_event=arm_after(plugin, "done", events)
        )
    finally:
        assert plugin.store is not None
        plugin.store.armed = False
        await runtime.aclose()

    assert plugin.store.failed_flushes == 1
    assert result.ok, result.error
    assert result.text == ANSWER
    assert result.outcome.reason == "completed"
    assert [(f.plugin, f.unit) for f in result.faults] == [
        ("flaky-store", "backend:session_store:flush-failing")
    ]
    assert "No space left on device" in result.faults[0].error
    types = [e.type for e in events]
    assert types.index("plugin_fault") < types.index("run_end") == len(types) - 1
    assert any("after the run ended" in r.getMessage() for r in caplog.records)


async def test_a_failing_checkin_flush_after_a_failure_still_fails(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    plugin = StorePlugin()
    runtime = make_runtime(tmp_path, server, plugin)
    server.inject(Fault("status", status=400, body='{"error": {"message": "bad"}}', times=10))
    events: list[Event] = []
    try:
        result = await runtime.run(
            "hi", session_id="s2", on_event=arm_after(plugin, "surface_error", events)
        )
    finally:
        assert plugin.store is not None
        plugin.store.armed = False
        await runtime.aclose()

    assert plugin.store.failed_flushes == 1
    assert not result.ok
    assert result.outcome.status == "error"
    assert [f.plugin for f in result.faults] == ["flaky-store"]
    assert events[-1].type == "run_end"


def test_the_embedded_store_error_names_the_step_and_hides_secrets() -> None:
    """The embedded store has no plugin: the error says what failed, without a secret."""
    from types import SimpleNamespace

    from openclaw_runtime._exceptions import PluginBackendError
    from openclaw_runtime.runner.checkin import session_checkin_error

    secret = "sk-" + "a1B2c3D4e5" * 4
    run = SimpleNamespace(services=SimpleNamespace(session_store=object()), session_id="s1")
    error = session_checkin_error(run, OSError(f"write failed for key {secret}"))  # type: ignore[arg-type]
    assert isinstance(error, PluginBackendError)
    assert error.plugin_name is None
    assert "session check-in (flush) of session s1" in str(error) and "OSError" in str(error)
    assert secret not in str(error)
