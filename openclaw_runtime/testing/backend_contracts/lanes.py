"""The ``LaneBackend`` contract suite: a session lane serializes, waiters are served by priority
then in arrival order, a global lane admits up to its capacity, a lease times out unless it
heartbeats, a held lane is refused rather than deadlocked, cancelled waiters leave no trace."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ...backends import (
    LaneBackend,
    LaneReentryError,
    LaneTimeoutError,
)
from ._support import HANG_GUARD_S, until

__all__ = ["LaneBackendContract"]


class LaneBackendContract:
    """Inherit and provide a ``lane_backend`` fixture returning a fresh ``LaneBackend``.

    Override ``waiting(backend, lane)`` when the backend has no ``stats()`` (lane → (running,
    waiting)): the order tests use it to know a waiter is queued before the next one arrives.
    """

    #: A timeout long enough that a loaded machine does not trip it between heartbeats.
    heartbeat_timeout_s = 1.5

    async def waiting(self, backend: Any, lane: str) -> int:
        """How many tasks wait for ``lane``."""
        stats = getattr(backend, "stats", None)
        if stats is None:
            pytest.skip("override waiting() to count a lane's waiters for this backend")
        result = stats()
        if hasattr(result, "__await__"):
            result = await result
        return int(result.get(lane, (0, 0))[1])

    def test_meets_the_protocol(self, lane_backend: Any) -> None:
        assert isinstance(lane_backend, LaneBackend)

    @pytest.mark.anyio
    async def test_a_session_lane_runs_one_holder_at_a_time(self, lane_backend: Any) -> None:
        lane = "session:contract-serial"
        inside = 0
        most = 0
        done: list[int] = []

        async def turn(n: int) -> None:
            nonlocal inside, most
            async with lane_backend.hold(lane, capacity=1, timeout_s=HANG_GUARD_S):
                inside += 1
                most = max(most, inside)
                for _ in range(3):
                    await anyio.lowlevel.checkpoint()
                inside -= 1
                done.append(n)

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for n in range(6):
                    tg.start_soon(turn, n)
        assert most == 1
        assert sorted(done) == list(range(6))

    @pytest.mark.anyio
    async def test_waiters_are_served_by_priority_then_arrival(self, lane_backend: Any) -> None:
        lane = "session:contract-order"
        order: list[str] = []
        release = anyio.Event()
        held = anyio.Event()

        async def holder() -> None:
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                held.set()
                await release.wait()

        async def waiter(name: str, priority: Any) -> None:
            async with lane_backend.hold(lane, priority=priority, timeout_s=HANG_GUARD_S):
                order.append(name)

        arrivals = [
            ("background", "background"),
            ("normal-1", "normal"),
            ("foreground", "foreground"),
            ("normal-2", "normal"),
        ]
        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(holder)
                await held.wait()
                for count, (name, priority) in enumerate(arrivals, start=1):
                    tg.start_soon(waiter, name, priority)
                    await until(
                        functools.partial(self._queued, lane_backend, lane, count),
                        f"{name} never queued",
                    )
                release.set()
        assert order == ["foreground", "normal-1", "normal-2", "background"]

    async def _queued(self, backend: Any, lane: str, count: int) -> bool:
        return await self.waiting(backend, lane) >= count

    @pytest.mark.anyio
    async def test_a_global_lane_admits_up_to_its_capacity(self, lane_backend: Any) -> None:
        lane = "contract-global"
        inside = 0
        most = 0
        both_in = anyio.Event()

        async def work() -> None:
            nonlocal inside, most
            async with lane_backend.hold(lane, capacity=2, timeout_s=HANG_GUARD_S):
                inside += 1
                most = max(most, inside)
                if inside == 2:
                    both_in.set()
                await both_in.wait()  # capacity 1 would deadlock here: fail_after fails it
                inside -= 1

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(work)
        assert most == 2

    @pytest.mark.anyio
    async def test_a_lease_without_progress_times_out_and_frees_the_lane(
        self, lane_backend: Any
    ) -> None:
        lane = "session:contract-timeout"
        reached_end: list[bool] = []

        async def stuck() -> None:
            async with lane_backend.hold(lane, timeout_s=0.05):
                await anyio.sleep_forever()
                reached_end.append(True)  # pragma: no cover

        with anyio.fail_after(HANG_GUARD_S), pytest.raises(LaneTimeoutError) as caught:
            await stuck()
        assert not reached_end
        assert caught.value.lane == lane
        with anyio.fail_after(HANG_GUARD_S):
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S) as lease:
                assert lease.lane == lane

    @pytest.mark.anyio
    async def test_heartbeats_keep_a_lease_alive_past_its_timeout(self, lane_backend: Any) -> None:
        lane = "session:contract-heartbeat"
        timeout = self.heartbeat_timeout_s
        step = timeout / 10
        beats = 0
        with anyio.fail_after(HANG_GUARD_S):
            async with lane_backend.hold(lane, timeout_s=timeout) as lease:
                while beats * step < timeout * 2:  # twice the timeout in all
                    await anyio.sleep(step)
                    lease.heartbeat()
                    beats += 1
        assert beats * step >= timeout * 2

    @pytest.mark.anyio
    async def test_asking_for_a_held_lane_is_refused_not_deadlocked(
        self, lane_backend: Any
    ) -> None:
        lane = "session:contract-reentry"
        with anyio.fail_after(HANG_GUARD_S):
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                with pytest.raises(LaneReentryError):
                    async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                        pass  # pragma: no cover
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                pass  # released normally after the refusal

    @pytest.mark.anyio
    async def test_a_cancelled_waiter_leaves_no_trace(self, lane_backend: Any) -> None:
        lane = "session:contract-cancel"
        release = anyio.Event()
        held = anyio.Event()
        granted: list[str] = []

        async def holder() -> None:
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                held.set()
                await release.wait()

        async def impatient(scope: anyio.CancelScope) -> None:
            with scope:
                async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                    granted.append("impatient")  # pragma: no cover

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(holder)
                await held.wait()
                scope = anyio.CancelScope()
                tg.start_soon(impatient, scope)
                await until(lambda: self._queued(lane_backend, lane, 1), "waiter never queued")
                scope.cancel()
                await until(
                    lambda: self._queued_at_most(lane_backend, lane, 0), "waiter stayed queued"
                )
                release.set()
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                granted.append("next")
        assert granted == ["next"]

    async def _queued_at_most(self, backend: Any, lane: str, count: int) -> bool:
        return await self.waiting(backend, lane) <= count

    @pytest.mark.anyio
    async def test_an_exception_in_the_block_releases_the_lane(self, lane_backend: Any) -> None:
        lane = "session:contract-raise"
        with anyio.fail_after(HANG_GUARD_S):
            with pytest.raises(KeyError):
                async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                    raise KeyError("boom")
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S) as lease:
                assert lease.waited_s >= 0

    @pytest.mark.anyio
    async def test_a_capacity_below_one_is_refused(self, lane_backend: Any) -> None:
        with pytest.raises(ValueError):
            async with lane_backend.hold("contract-zero", capacity=0):
                pass  # pragma: no cover
