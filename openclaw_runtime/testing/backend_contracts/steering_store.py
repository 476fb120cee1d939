"""The ``SteeringStore`` contract suite: a steering item is neither lost nor leased twice; acks
deliver once, releases hand items back, stale leases are reclaimed."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ...backends import (
    SteeringStore,
)
from ...backends.steering import SubagentRunRecord
from ...runner.steering import STALE_STEERING_LEASE_MS
from ._support import HANG_GUARD_S

__all__ = ["SteeringStoreContract"]


def _record(run_id: str, requester: str, *, text: str = "done", ended_at: float = 1) -> Any:
    return SubagentRunRecord.completed(
        run_id=run_id,
        requester_session_key=requester,
        task=f"task {run_id}",
        result_text=text,
        ended_at=ended_at,
        created_at=ended_at,
    )


class SteeringStoreContract:
    """Inherit and provide a ``steering_store`` fixture returning a fresh, empty store."""

    now = 1_700_000_000_000.0

    def test_meets_the_protocol(self, steering_store: Any) -> None:
        assert isinstance(steering_store, SteeringStore)

    @pytest.mark.anyio
    async def test_put_and_load_round_trip(self, steering_store: Any) -> None:
        record = _record("r1", "chat:1")
        await steering_store.put(record)
        loaded = await steering_store.load()
        assert list(loaded) == ["r1"] and loaded["r1"].to_dict() == record.to_dict()
        loaded["r1"].task = "changed in the copy"
        assert (await steering_store.load())["r1"].task == "task r1"

    @pytest.mark.anyio
    async def test_nothing_waiting_leases_nothing(self, steering_store: Any) -> None:
        assert await steering_store.lease("chat:none", now_ms=self.now) is None

    @pytest.mark.anyio
    async def test_a_lease_takes_the_requesters_items_once(self, steering_store: Any) -> None:
        await steering_store.put(_record("r1", "chat:1", ended_at=1))
        await steering_store.put(_record("r2", "chat:1", ended_at=2))
        await steering_store.put(_record("other", "chat:2"))
        lease = await steering_store.lease("chat:1", now_ms=self.now)
        assert lease is not None and lease.run_ids == ("r1", "r2")
        assert "task r1" in lease.prompt and "task r2" in lease.prompt
        assert [item.run_id for item in lease.items] == ["r1", "r2"]
        assert await steering_store.lease("chat:1", now_ms=self.now + 1) is None  # in progress
        runs = await steering_store.load()
        assert runs["other"].delivery is not None and runs["other"].delivery.status == "pending"
        assert {runs[r].delivery.status for r in ("r1", "r2")} == {"in_progress"}

    @pytest.mark.anyio
    async def test_ack_delivers_once(self, steering_store: Any) -> None:
        await steering_store.put(_record("r1", "chat:1"))
        lease = await steering_store.lease("chat:1", now_ms=self.now)
        assert lease is not None
        assert await steering_store.ack(lease, now_ms=self.now + 5) == 1
        assert await steering_store.ack(lease, now_ms=self.now + 6) == 0
        assert await steering_store.release(lease, error="late") == 0
        delivery = (await steering_store.load())["r1"].delivery
        assert delivery is not None and delivery.status == "delivered"
        assert delivery.payload is None and delivery.delivered_at == self.now + 5
        assert await steering_store.lease("chat:1", now_ms=self.now + 7) is None

    @pytest.mark.anyio
    async def test_release_hands_the_items_back(self, steering_store: Any) -> None:
        await steering_store.put(_record("r1", "chat:1"))
        first = await steering_store.lease("chat:1", now_ms=self.now)
        assert first is not None
        assert await steering_store.release(first, error="turn failed") == 1
        delivery = (await steering_store.load())["r1"].delivery
        assert delivery is not None and delivery.status == "pending"
        assert delivery.last_error == "turn failed"
        second = await steering_store.lease("chat:1", now_ms=self.now + 1)
        assert second is not None and second.run_ids == ("r1",)
        assert second.lease_id != first.lease_id
        assert await steering_store.ack(first, now_ms=self.now + 2) == 0  # retired lease
        assert await steering_store.ack(second, now_ms=self.now + 2) == 1

    @pytest.mark.anyio
    async def test_a_stale_lease_is_reclaimed_and_its_late_ack_refused(
        self, steering_store: Any
    ) -> None:
        await steering_store.put(_record("r1", "chat:1"))
        stale = await steering_store.lease("chat:1", now_ms=self.now)
        assert stale is not None
        assert (
            await steering_store.lease("chat:1", now_ms=self.now + STALE_STEERING_LEASE_MS) is None
        )
        fresh = await steering_store.lease("chat:1", now_ms=self.now + STALE_STEERING_LEASE_MS + 1)
        assert fresh is not None and fresh.run_ids == ("r1",)
        assert await steering_store.ack(stale, now_ms=self.now + STALE_STEERING_LEASE_MS + 2) == 0
        assert await steering_store.ack(fresh, now_ms=self.now + STALE_STEERING_LEASE_MS + 3) == 1

    @pytest.mark.anyio
    async def test_concurrent_leases_never_share_an_item(self, steering_store: Any) -> None:
        ids = [f"r{n:02d}" for n in range(10)]
        for n, run_id in enumerate(ids):
            await steering_store.put(_record(run_id, "chat:1", ended_at=n + 1))
        leases: list[Any] = []

        async def take() -> None:
            lease = await steering_store.lease("chat:1", now_ms=self.now)
            if lease is not None:
                leases.append(lease)

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(take)
        taken = [run_id for lease in leases for run_id in lease.run_ids]
        assert sorted(taken) == ids  # every item leased, none twice

    @pytest.mark.anyio
    async def test_a_bounded_batch_leaves_the_rest_for_the_next_lease(
        self, steering_store: Any
    ) -> None:
        ids = [f"big{n}" for n in range(6)]
        for n, run_id in enumerate(ids):
            await steering_store.put(_record(run_id, "chat:1", text="x" * 5_000, ended_at=n + 1))
        seen: list[str] = []
        with anyio.fail_after(HANG_GUARD_S):
            while True:
                lease = await steering_store.lease("chat:1", now_ms=self.now)
                if lease is None:
                    break
                assert 1 <= len(lease.run_ids) < len(ids)
                seen.extend(lease.run_ids)
                assert await steering_store.ack(lease, now_ms=self.now) == len(lease.run_ids)
        assert seen == ids  # oldest first, each delivered exactly once
