"""A late cleanup error never downgrades a finished answer (issue 15 §3, first bullet).

After the answer has streamed, the run still releases its lanes, settles its steering lease
and checks its session back in. A plugin backend that raises in one of those steps used to turn
the completed run into a ``plugin`` failure, losing the answer. Now the run's own outcome goes
through ``merge_run_cleanup_outcome``: the answer stands, the cleanup error is reported as a
``plugin_fault`` event and in ``RunResult.faults``. A cleanup error that follows a failure
still ends the run as before. Real HTTP against the fault-injecting OpenAI-compatible server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime.events import Event
from openclaw_runtime.runner.lanes import InProcessLanes
from openclaw_runtime.runner.steering import (
    SteeringLease,
    SubagentRunRecord,
    upsert_subagent_run,
)
from openclaw_runtime.runner.steering_store import InMemorySteeringStore
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer, Reply

pytestmark = pytest.mark.anyio

ANSWER = "The CI config lives in .github/workflows/ci.yml."


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as running:
        yield running


class ReleaseFailingLanes(InProcessLanes):
    """Real in-process lanes whose release of the global lane raises (a flaky shared store)."""

    def __init__(self) -> None:
        super().__init__()
        self.released: list[str] = []

    @asynccontextmanager
    async def hold(self, lane: str, **kwargs: Any) -> AsyncIterator[Any]:
        async with super().hold(lane, **kwargs) as lease:
            yield lease
        self.released.append(lane)
        if not lane.startswith("session:"):
            raise ConnectionError("lane store went away during release")


class LaneBackends:
    def __init__(self) -> None:
        self.lanes = ReleaseFailingLanes()

    @hookimpl
    def register_backends(self, register: Any) -> None:
        register("lanes", "release-failing", lambda runtime: self.lanes)


class AckFailingSteeringStore(InMemorySteeringStore):
    """A real in-memory steering store whose ack raises (the store went read-only)."""

    async def ack(self, lease: SteeringLease, *, now_ms: float) -> int:
        raise PermissionError("steering store is read-only")


class SteeringBackends:
    def __init__(self) -> None:
        self.store = AckFailingSteeringStore()

    @hookimpl
    def register_backends(self, register: Any) -> None:
        register("steering_store", "ack-failing", lambda runtime: self.store)


def make_runtime(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    plugin: tuple[str, Any],
    backends: dict[str, str] | None = None,
) -> Runtime:
    config = {
        "state_dir": str(tmp_path / "state"),
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
        "backends": backends or {"lanes": "release-failing"},
    }
    runtime = Runtime(config, plugins=[plugin], load_entrypoints=False, on_load_failure="raise")
    runtime.retry_backoff_scale = 0
    return runtime


async def test_lane_release_error_after_the_answer_keeps_the_answer(
    tmp_path: Path, server: FaultInjectingOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    plugin = LaneBackends()
    runtime = make_runtime(tmp_path, server, ("flaky-lanes", plugin))
    server.enqueue(Reply(text=ANSWER))
    events: list[Event] = []
    try:
        result = await runtime.run(
            "where is the CI config?", session_id="s1", on_event=events.append
        )
    finally:
        await runtime.aclose()

    assert result.ok, result.error
    assert result.text == ANSWER
    assert result.outcome.reason == "completed"
    assert result.error is None
    assert [p.text for p in result.payloads] == [ANSWER]
    # the cleanup error is not lost: a fault on the result and on the stream, and a log line
    assert [(f.plugin, f.unit) for f in result.faults] == [
        ("flaky-lanes", "backend:lanes:release-failing")
    ]
    assert "lane store went away" in result.faults[0].error
    faults = [e for e in events if e.type == "plugin_fault"]
    assert [e.plugin for e in faults] == ["flaky-lanes"]
    types = [e.type for e in events]
    assert types.index("plugin_fault") < types.index("run_end") == len(types) - 1
    run_end = events[-1]
    assert run_end.outcome["reason"] == "completed"  # type: ignore[attr-defined]
    assert any("after the run ended" in r.getMessage() for r in caplog.records)
    # the failing release was the global lane's; both lanes are free again, answer on disk
    assert plugin.lanes.released == ["main"]
    assert plugin.lanes.stats() == {}  # a lane still held would be listed (running 1)
    assert result.session_file is not None
    assert ANSWER in Path(result.session_file).read_text()  # noqa: ASYNC240 - a small file


async def test_lane_release_error_after_a_failure_still_fails(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    plugin = LaneBackends()
    runtime = make_runtime(tmp_path, server, ("flaky-lanes", plugin))
    server.inject(Fault("status", status=400, body='{"error": {"message": "bad"}}', times=10))
    try:
        result = await runtime.run("hi", session_id="s2")
    finally:
        await runtime.aclose()

    assert not result.ok
    assert result.outcome.reason == "failed"
    assert [f.plugin for f in result.faults] == ["flaky-lanes"]


async def test_steering_ack_error_after_the_answer_keeps_the_answer(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    plugin = SteeringBackends()
    runtime = make_runtime(
        tmp_path, server, ("flaky-steering", plugin), {"steering_store": "ack-failing"}
    )
    await upsert_subagent_run(
        plugin.store,
        SubagentRunRecord.completed(
            run_id="child-1",
            requester_session_key="chat:7",
            created_at=1_000,
            ended_at=2_000,
            task="look up the release date",
            result_text="The release is on 2026-12-24.",
        ),
    )
    server.enqueue(Reply(text=ANSWER))
    try:
        result = await runtime.run("status?", session_key="chat:7")
    finally:
        await runtime.aclose()

    assert "2026-12-24" in server.requests[-1].body["messages"][-1]["content"]
    assert result.ok, result.error
    assert result.text == ANSWER
    assert [(f.plugin, f.unit) for f in result.faults] == [
        ("flaky-steering", "backend:steering_store:ack-failing")
    ]
    assert "read-only" in result.faults[0].error
    # the ack did not happen: the item is not marked delivered (its lease expires instead)
    runs = await plugin.store.load()
    assert runs["child-1"].delivery.status != "delivered"
