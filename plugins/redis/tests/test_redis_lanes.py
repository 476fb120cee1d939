"""RedisLanes against a real Redis: mutual exclusion, fencing, priorities, dead holders."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from openclaw_runtime_redis import (
    LaneLeaseLostError,
    RedisConnection,
    RedisLanes,
    current_fences,
)

from openclaw_runtime.runner.lanes import LaneReentryError

pytestmark = pytest.mark.anyio


async def test_session_lane_serializes_holders_in_arrival_order(redis_conn: RedisConnection):
    lanes = RedisLanes(redis_conn)
    order: list[str] = []
    inside = 0
    most = 0

    async def turn(name: str) -> None:
        nonlocal inside, most
        async with lanes.hold("session:a"):
            inside += 1
            most = max(most, inside)
            order.append(name)
            await anyio.sleep(0.05)
            inside -= 1

    async def arrived() -> int:
        # holders + waiters of the lane: how many turns Redis has seen arrive
        client = redis_conn.client
        holders, waiters = (redis_conn.key("lane", "session:a", p) for p in ("holders", "waiters"))
        return int(await client.zcard(holders)) + int(await client.zcard(waiters))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for count, name in enumerate(("one", "two", "three"), start=1):
                tg.start_soon(turn, name)
                # arrival order: the next turn starts once Redis has this one (polled state)
                for _ in range(2_000):
                    if await arrived() + len(order) - inside >= count:  # + the finished
                        break
                    await anyio.sleep(0.005)
    assert order == ["one", "two", "three"]
    assert most == 1


async def test_fencing_tokens_increase_and_are_visible_inside_the_lane(redis_conn):
    lanes = RedisLanes(redis_conn)
    tokens = []
    for _ in range(3):
        async with lanes.hold("session:k"):
            (fence,) = current_fences()
            tokens.append(fence.token)
    assert tokens == sorted(tokens) and len(set(tokens)) == 3
    assert current_fences() == ()


async def test_global_lane_caps_concurrency_and_serves_foreground_first(redis_conn):
    lanes = RedisLanes(redis_conn)
    order: list[str] = []
    inside = 0
    most = 0
    gate = anyio.Event()

    async def blocker() -> None:
        nonlocal inside, most
        async with lanes.hold("main", capacity=2):
            inside += 1
            most = max(most, inside)
            await gate.wait()
            inside -= 1

    async def run(name: str, priority: str) -> None:
        nonlocal inside, most
        async with lanes.hold("main", capacity=2, priority=priority):  # type: ignore[arg-type]
            inside += 1
            most = max(most, inside)
            order.append(name)
            await anyio.sleep(0.02)
            inside -= 1

    waiters_key = redis_conn.key("lane", "main", "waiters")

    async def until(condition: Any) -> None:
        # wait for a state, not for a time (the machine may be loaded); the state is in Redis,
        # so it is polled
        for _ in range(2_000):
            if await condition():
                return
            await anyio.sleep(0.01)
        raise AssertionError("the lane never reached the expected state")

    async def both_inside() -> bool:
        return inside == 2

    def queued(n: int) -> Any:
        async def check() -> bool:
            return int(await redis_conn.client.zcard(waiters_key)) == n

        return check

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(blocker)
            tg.start_soon(blocker)
            await until(both_inside)
            tg.start_soon(run, "bg", "background")
            await until(queued(1))
            tg.start_soon(run, "normal", "normal")
            await until(queued(2))
            tg.start_soon(run, "fg", "foreground")
            await until(queued(3))
            assert order == []  # both slots taken
            gate.set()
    assert order[0] == "fg"
    assert order.index("normal") < order.index("bg")
    assert most == 2


async def test_reentry_is_refused(redis_conn):
    lanes = RedisLanes(redis_conn)
    async with lanes.hold("session:r"):
        with pytest.raises(LaneReentryError):
            async with lanes.hold("session:r"):
                pass


async def test_a_holder_that_stops_renewing_loses_the_lane_to_the_next_waiter(
    redis_url, redis_prefix
):
    # a "stalled" holder: its renewals fail because its lease was deleted from under it
    conn = RedisConnection.from_url(redis_url, prefix=redis_prefix)
    lanes = RedisLanes(conn, lease_ms=300)
    try:
        ran_to_end = False

        async def stall() -> None:
            nonlocal ran_to_end
            async with lanes.hold("session:s"):
                (fence,) = current_fences()
                await conn.client.zrem(fence.holders_key, fence.lease_id)
                await anyio.sleep(5)
                ran_to_end = True

        with pytest.raises(LaneLeaseLostError):
            await stall()
        assert not ran_to_end  # cancelled when the renewal found the lease gone
        # the lane is free again
        with anyio.fail_after(5):
            async with lanes.hold("session:s"):
                pass
    finally:
        await conn.aclose()


async def test_cancelled_waiter_leaves_the_queue(redis_conn):
    lanes = RedisLanes(redis_conn)
    got: list[str] = []
    release = anyio.Event()
    held = anyio.Event()

    async def holder() -> None:
        async with lanes.hold("session:c"):
            held.set()
            await release.wait()

    async def impatient() -> None:
        with anyio.move_on_after(0.3):
            async with lanes.hold("session:c"):
                got.append("impatient")

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(holder)
            await held.wait()
            await impatient()
            waiters = redis_conn.key("lane", "session:c", "waiters")
            assert await redis_conn.client.zcard(waiters) == 0
            release.set()
        async with lanes.hold("session:c"):
            got.append("next")
    assert got == ["next"]


async def test_the_blocks_own_exception_propagates_unwrapped(redis_conn):
    lanes = RedisLanes(redis_conn)
    with pytest.raises(KeyError, match="mine"):
        async with lanes.hold("session:e"):
            raise KeyError("mine")
    async with lanes.hold("session:e"):  # and the lane was released
        pass
