"""A failing steering ack is retried, so a transient failure costs no duplicate delivery
(issue 15 §3, found last session): after a successful turn the sub-agent results it used are
acked; an ack that fails once used to leave them leased until the lease went stale, then
delivered again. Real HTTP (``FaultInjectingOpenAIServer``), a real in-memory steering store
behind the plugin guard, on asyncio and trio; the retry schedule is a table.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime.runner.steering import (
    SteeringLease,
    SubagentRunRecord,
    upsert_subagent_run,
)
from openclaw_runtime.runner.steering_ack import (
    STEERING_ACK_ATTEMPTS,
    steering_ack_retry_delay_s,
)
from openclaw_runtime.runner.steering_store import InMemorySteeringStore
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from tests.run_support import mock_openai_config

ANSWER = "The release is on 2026-12-24, as the sub-agent found."


class FlakyAckStore(InMemorySteeringStore):
    """A real in-memory steering store whose first ``fail`` acks raise (a store blip)."""

    def __init__(self, fail: int) -> None:
        super().__init__()
        self.fail = fail
        self.ack_calls = 0

    async def ack(self, lease: SteeringLease, *, now_ms: float) -> int:
        self.ack_calls += 1
        if self.ack_calls <= self.fail:
            raise ConnectionError("steering store connection reset")
        return await super().ack(lease, now_ms=now_ms)


class SteeringPlugin:
    def __init__(self, fail: int) -> None:
        self.store = FlakyAckStore(fail)

    @hookimpl
    def register_backends(self, register: Any) -> None:
        register("steering_store", "flaky-ack", lambda runtime: self.store)


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as running:
        yield running


def make_runtime(tmp_path: Path, server: FaultInjectingOpenAIServer, plugin: Any) -> Runtime:
    config = mock_openai_config(
        tmp_path / "state",
        server,
        timeout_seconds=20,
    )
    config["backends"] = {"steering_store": "flaky-ack"}
    runtime = Runtime(
        config,
        plugins=[("flaky-steering", plugin)],
        load_entrypoints=False,
        on_load_failure="raise",
    )
    runtime.retry_backoff_scale = 0
    return runtime


async def _child_result(store: FlakyAckStore) -> None:
    await upsert_subagent_run(
        store,
        SubagentRunRecord.completed(
            run_id="child-1",
            requester_session_key="chat:7",
            created_at=1_000,
            ended_at=2_000,
            task="look up the release date",
            result_text="The release is on 2026-12-24.",
        ),
    )


@pytest.mark.anyio
async def test_an_ack_that_fails_once_is_retried_and_the_item_is_delivered_once(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    plugin = SteeringPlugin(fail=1)
    runtime = make_runtime(tmp_path, server, plugin)
    await _child_result(plugin.store)
    server.enqueue(Reply(text=ANSWER), Reply(text="Anything else?"))
    try:
        first = await runtime.run("status?", session_key="chat:7")
        second = await runtime.run("thanks", session_key="chat:7")
    finally:
        await runtime.aclose()

    assert first.ok, first.error
    assert first.text == ANSWER
    assert plugin.store.ack_calls == 2
    # the blip was absorbed by the retry: no fault, the item is delivered
    assert first.faults == []
    runs = await plugin.store.load()
    assert runs["child-1"].delivery.status == "delivered"
    # and the next turn does not get it again
    assert "2026-12-24" in server.requests[0].body["messages"][-1]["content"]
    assert "2026-12-24" not in server.requests[1].body["messages"][-1]["content"]
    assert second.ok, second.error


@pytest.mark.anyio
async def test_an_ack_that_keeps_failing_is_one_fault_and_the_answer_stands(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    plugin = SteeringPlugin(fail=10)
    runtime = make_runtime(tmp_path, server, plugin)
    await _child_result(plugin.store)
    server.enqueue(Reply(text=ANSWER))
    try:
        result = await runtime.run("status?", session_key="chat:7")
    finally:
        await runtime.aclose()

    assert result.ok, result.error
    assert plugin.store.ack_calls == STEERING_ACK_ATTEMPTS
    assert [f.plugin for f in result.faults] == ["flaky-steering"]
    runs = await plugin.store.load()
    # not acked: redelivered once the lease goes stale (at-least-once, never lost)
    assert runs["child-1"].delivery.status != "delivered"


@pytest.mark.parametrize(
    ("failures", "scale", "expected"),
    [
        (0, 1.0, None),
        (1, 1.0, 0.05),
        (2, 1.0, 0.25),
        (3, 1.0, None),
        (1, 0.0, 0.0),
        (2, 2.0, 0.5),
        (1, -1.0, 0.0),
    ],
)
def test_steering_ack_retry_delay(failures: int, scale: float, expected: float | None) -> None:
    assert steering_ack_retry_delay_s(failures, scale=scale) == expected
    assert STEERING_ACK_ATTEMPTS == 3
