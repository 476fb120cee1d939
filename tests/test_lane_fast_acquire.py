"""A free in-process lane is taken without the waiting coroutine, and a hold reads the loop's
clock through ``loop_clock``: the same grants, order, stats and scheduling as the path where
every hold awaits ``_acquire`` and reads ``anyio.current_time`` (kept here as the reference)."""

from __future__ import annotations

import heapq
import random
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from openclaw_runtime.runner import lanes as lanes_module
from openclaw_runtime.runner.lanes import InProcessLanes, _Lane, _Waiter, loop_clock

pytestmark = pytest.mark.anyio


class ReferenceLanes(InProcessLanes):
    """Every hold goes through the ``_acquire`` coroutine, as before the fast path."""

    calls = 0

    @staticmethod
    def _try_acquire(state: _Lane) -> bool:
        return False

    async def _acquire(self, state: _Lane, rank: int) -> None:
        # ``InProcessLanes._acquire`` before the fast path, word for word
        type(self).calls += 1
        while state.waiters and state.waiters[0][2].cancelled:
            heapq.heappop(state.waiters)
        if state.active < state.capacity and not state.waiters:
            state.active += 1
            return
        waiter = _Waiter()
        heapq.heappush(state.waiters, (rank, next(self._sequence), waiter))
        try:
            await waiter.event.wait()
        except BaseException:
            waiter.cancelled = True
            if waiter.granted:  # granted just as we were cancelled: pass the slot on
                state.active -= 1
                self._grant(state)
            raise


async def _scenario(lanes: InProcessLanes, seed: int) -> list[Any]:
    """Random tasks holding random session and global lanes with random priorities, some
    cancelled while they wait; returns, step by step, what was granted, ended and cancelled
    and the lanes' stats (sorted within a step: trio runs the tasks a step wakes in any
    order; the lanes decide which ones wake)."""
    rng = random.Random(seed)
    log: list[Any] = []
    steps: list[Any] = []

    async def settle() -> None:
        await anyio.wait_all_tasks_blocked()
        steps.append((sorted(log), sorted(lanes.stats().items())))
        log.clear()

    gates = [anyio.Event() for _ in range(12)]

    async def task(n: int, session: str, capacity: int, priority: Any) -> None:
        async with lanes.hold(f"session:{session}", priority=priority, timeout_s=60):
            log.append(("session", n))
            async with lanes.hold("global", capacity=capacity, priority=priority, timeout_s=60):
                log.append(("global", n))
                await gates[n].wait()
        log.append(("done", n))

    async with anyio.create_task_group() as tg:
        scopes = []
        for n in range(12):
            scope = anyio.CancelScope()
            scopes.append(scope)

            async def run(n: int = n, scope: anyio.CancelScope = scope) -> None:
                with scope:
                    await task(
                        n,
                        rng.choice("abc"),
                        rng.randint(1, 3),
                        rng.choice(["foreground", "normal", "background"]),
                    )
                if scope.cancelled_caught:
                    log.append(("cancelled", n))

            tg.start_soon(run)
            await settle()
        order = list(range(12))
        rng.shuffle(order)
        for n in order:
            if rng.random() < 0.25:
                scopes[n].cancel()
                await settle()
            gates[n].set()
            await settle()
    await settle()
    return steps


@pytest.mark.parametrize("seed", range(16))
async def test_grants_and_order_match_the_awaiting_path(seed: int) -> None:
    assert await _scenario(InProcessLanes(), seed) == await _scenario(ReferenceLanes(), seed)


async def test_a_free_lane_is_taken_without_a_checkpoint_as_before() -> None:
    # the awaited coroutine never suspended on a free lane: neither does the fast path
    for lanes in (InProcessLanes(), ReferenceLanes()):
        ran: list[bool] = []

        async def other(ran: list[bool] = ran) -> None:
            ran.append(True)

        async with anyio.create_task_group() as tg:
            tg.start_soon(other)
            async with lanes.hold("session:x"), lanes.hold("global", capacity=2):
                assert ran == []  # no event-loop pass while taking two free lanes
            await anyio.lowlevel.checkpoint()
        assert ran == [True]


async def test_a_busy_lane_still_waits_through_the_coroutine() -> None:
    ReferenceLanes.calls = 0
    lanes = ReferenceLanes()
    async with lanes.hold("session:x"):
        pass
    assert ReferenceLanes.calls == 1  # the reference goes through ``_acquire`` every time

    lanes2 = InProcessLanes()
    entered = anyio.Event()
    release = anyio.Event()
    order = []

    async def first() -> None:
        async with lanes2.hold("session:y"):
            entered.set()
            await release.wait()
            order.append("first")

    async def second() -> None:
        async with lanes2.hold("session:y") as lease:
            order.append("second")
            assert lease.waited_s >= 0

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await entered.wait()
        tg.start_soon(second)
        await anyio.wait_all_tasks_blocked()
        assert lanes2.stats() == {"session:y": (1, 1)}
        release.set()
    assert order == ["first", "second"]


async def test_loop_clock_is_anyio_current_time() -> None:
    clock = loop_clock()
    for _ in range(20):
        before = anyio.current_time()
        now = clock()
        after = anyio.current_time()
        assert before <= now <= after
    try:
        import asyncio

        loop = asyncio.get_running_loop()
    except RuntimeError:
        assert clock is anyio.current_time  # trio: anyio's own function
    else:
        assert clock == loop.time  # what anyio's asyncio backend returns


async def test_lease_timing_reads_the_loop_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = iter([10.0, 10.25])
    monkeypatch.setattr(lanes_module, "loop_clock", lambda: lambda: next(ticks))
    async with InProcessLanes().hold("session:t", timeout_s=5) as lease:
        assert lease.waited_s == 0.25
        assert lease.scope.deadline == 15.25  # granted + timeout
