"""In-process lanes: ordering, capacity, priorities, timeouts, re-entry, cancellation."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from openclaw_runtime.runner.lanes import (
    InProcessLanes,
    LaneReentryError,
    LaneTimeoutError,
    held_lanes,
)

pytestmark = pytest.mark.anyio


async def test_one_session_never_runs_two_turns_at_once():
    lanes = InProcessLanes()
    running, peak, order = [0], [0], []

    async def turn(n):
        async with lanes.hold("session:a"):
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            order.append(n)
            await anyio.sleep(0.005)
            running[0] -= 1

    async with anyio.create_task_group() as tg:
        for n in range(5):
            tg.start_soon(turn, n)
            await anyio.lowlevel.checkpoint()  # arrival order
    assert peak[0] == 1
    assert order == [0, 1, 2, 3, 4]  # first come, first served
    assert lanes.stats() == {}  # idle lanes are forgotten


async def test_global_capacity_caps_concurrency_across_sessions():
    lanes = InProcessLanes()
    running, peak = [0], [0]

    async def run(session):
        async with lanes.hold(f"session:{session}"), lanes.hold("global", capacity=3):
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            await anyio.sleep(0.01)
            running[0] -= 1

    async with anyio.create_task_group() as tg:
        for session in range(10):
            tg.start_soon(run, session)
    assert peak[0] == 3


async def test_waiters_are_served_by_priority_then_arrival():
    lanes = InProcessLanes()
    release = anyio.Event()
    served = []

    async def holder():
        async with lanes.hold("global"):
            await release.wait()

    async def waiter(name, priority):
        async with lanes.hold("global", priority=priority):
            served.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await anyio.sleep(0.01)
        for name, priority in [
            ("cron-1", "background"),
            ("other-1", "normal"),
            ("user-1", "foreground"),
            ("cron-2", "background"),
            ("user-2", "foreground"),
        ]:
            tg.start_soon(waiter, name, priority)
            await anyio.lowlevel.checkpoint()
        await anyio.sleep(0.01)
        release.set()
    assert served == ["user-1", "user-2", "other-1", "cron-1", "cron-2"]


async def test_timeout_cancels_the_holder_and_frees_the_lane():
    lanes = InProcessLanes()
    with pytest.raises(LaneTimeoutError, match=r"timed out after 0\.05s"):
        async with lanes.hold("session:a", timeout_s=0.05):
            await anyio.sleep(3600)
    async with lanes.hold("session:a", timeout_s=1):
        pass  # the lane is free again


async def test_heartbeats_extend_the_deadline():
    lanes = InProcessLanes()
    async with lanes.hold("session:a", timeout_s=0.1) as lease:
        for _ in range(6):  # 0.24 s in total, never 0.1 s without progress
            await anyio.sleep(0.04)
            lease.heartbeat()
    assert lease.waited_s >= 0


async def test_reentry_is_refused_instead_of_deadlocking():
    lanes = InProcessLanes()
    async with lanes.hold("session:a"):
        assert "session:a" in held_lanes()
        with pytest.raises(LaneReentryError, match="already held"):
            async with lanes.hold("session:a"):
                pass
        async with lanes.hold("session:b"):  # other lanes are fine
            assert held_lanes() == {"session:a", "session:b"}
    assert held_lanes() == frozenset()


async def test_a_cancelled_waiter_does_not_leak_its_slot():
    lanes = InProcessLanes()
    release = anyio.Event()

    async def holder():
        async with lanes.hold("global"):
            await release.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await anyio.sleep(0.01)
        with anyio.move_on_after(0.02):
            async with lanes.hold("global"):
                pytest.fail("the waiter must not get the lane")
        release.set()
    with anyio.fail_after(1):
        async with lanes.hold("global"):
            pass
    assert lanes.stats() == {}
