"""``FileLanes`` in one process: two instances on one directory stand for two processes
(each has its own in-process queue; only the lane records on disk are shared)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import orjson
import pytest

from openclaw_runtime.runner.file_lane_policy import FileLaneState, LaneRecord
from openclaw_runtime.runner.file_lanes import FileLanes, FileLaneStore
from openclaw_runtime.runner.lanes import LaneTimeoutError
from openclaw_runtime.testing import LaneBackendContract

pytestmark = pytest.mark.anyio


async def wait_until(predicate, *, limit: int = 5000) -> None:
    for _ in range(limit):
        if predicate():
            return
        await anyio.sleep(0.002)
    raise AssertionError("condition never held")


async def test_two_processes_serialize_a_session_in_arrival_order(tmp_path):
    first, second = FileLanes(tmp_path), FileLanes(tmp_path)
    order: list[str] = []
    running, peak = [0], [0]
    release = anyio.Event()

    async def turn(lanes: FileLanes, name: str, gate: anyio.Event | None = None) -> None:
        async with lanes.hold("session:k", timeout_s=60):
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            order.append(name)
            if gate is not None:
                await gate.wait()
            await anyio.lowlevel.checkpoint()
            running[0] -= 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(turn, first, "a", release)
        await wait_until(lambda: order == ["a"])
        tg.start_soon(turn, second, "b")
        await wait_until(lambda: len(first.status("session:k").queue) == 1)
        tg.start_soon(turn, first, "c")  # queued in first's own process queue, then on disk
        await anyio.sleep(0.05)
        assert order == ["a"]  # nobody got in beside the holder
        release.set()
    assert order == ["a", "b", "c"]
    assert peak[0] == 1
    assert first.status("session:k").empty
    assert not first.store.path("session:k").exists()  # an idle lane leaves no record


async def test_the_holder_record_names_the_process(tmp_path):
    lanes = FileLanes(tmp_path)
    async with lanes.hold("session:k", timeout_s=10):
        raw = orjson.loads(lanes.store.path("session:k").read_bytes())
        assert raw["lane"] == "session:k"
        (holder,) = raw["holders"]
        import os

        assert holder["pid"] == os.getpid() and holder["host"] == lanes.store.host
        assert holder["staleAfterS"] == 10 + lanes.stale_margin_s


async def test_a_stale_holder_is_taken_over(tmp_path):
    store = FileLaneStore(tmp_path, pid_alive=lambda pid: pid != 424242)
    dead = LaneRecord("dead", 424242, store.host, 1.0, 1.0, None)
    store.directory.mkdir(exist_ok=True)
    store.path("session:k").write_bytes(
        orjson.dumps({"lane": "session:k", **FileLaneState(holders=(dead,)).to_dict()})
    )
    lanes = FileLanes(tmp_path, store=store)
    with anyio.fail_after(30):
        async with lanes.hold("session:k"):
            assert [r.pid for r in lanes.status("session:k").holders] != [424242]


async def test_a_holder_taken_over_is_cancelled_at_its_next_beat(tmp_path):
    lanes = FileLanes(tmp_path, beat_every_s=0)
    reached: list[str] = []

    async def hold() -> None:
        async with lanes.hold("session:k", timeout_s=30) as lease:
            lanes.store.path("session:k").unlink()  # another process judged us stale
            lease.heartbeat()
            await anyio.sleep(5)
            reached.append("past the lost beat")

    with pytest.raises(LaneTimeoutError):
        await hold()
    assert reached == []


async def test_waiting_for_another_process_does_not_count_against_the_timeout(tmp_path):
    first, second = FileLanes(tmp_path), FileLanes(tmp_path)
    release = anyio.Event()
    held = anyio.Event()
    done: list[str] = []

    async def holder() -> None:
        async with first.hold("session:k", timeout_s=60):
            held.set()
            await release.wait()

    async def waiter() -> None:
        async with second.hold("session:k", timeout_s=0.2):
            done.append("waiter")

    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await held.wait()
        tg.start_soon(waiter)
        await wait_until(lambda: len(first.status("session:k").queue) == 1)
        await anyio.sleep(0.4)  # longer than the waiter's timeout
        release.set()
    assert done == ["waiter"]


async def test_a_cancelled_waiter_leaves_the_queue(tmp_path):
    first, second = FileLanes(tmp_path), FileLanes(tmp_path)
    release = anyio.Event()
    held = anyio.Event()

    async def holder() -> None:
        async with first.hold("session:k"):
            held.set()
            await release.wait()

    async def waiter(scope_box: list[anyio.CancelScope]) -> None:
        with anyio.CancelScope() as scope:
            scope_box.append(scope)
            async with second.hold("session:k"):
                pytest.fail("the cancelled waiter got the lane")

    box: list[anyio.CancelScope] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await held.wait()
        tg.start_soon(waiter, box)
        await wait_until(lambda: len(first.status("session:k").queue) == 1)
        box[0].cancel()
        await wait_until(lambda: first.status("session:k").queue == ())
        release.set()
    assert first.status("session:k").empty


@pytest.mark.parametrize(("scope", "expected_peak"), [("process", 2), ("machine", 1)])
async def test_global_cap_is_per_process_unless_machine_wide(tmp_path, scope, expected_peak):
    processes = [FileLanes(tmp_path, global_cap_scope=scope) for _ in range(2)]
    running, peak = [0], [0]
    gate = anyio.Event()

    async def run(lanes: FileLanes) -> None:
        async with lanes.hold("main", capacity=1):
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            await gate.wait()
            running[0] -= 1

    def both_arrived() -> bool:
        # both inside (per-process caps), or one inside and one queued on the shared record
        if running[0] == 2:
            return True
        return (
            scope == "machine" and running[0] == 1 and len(processes[0].status("main").queue) == 1
        )

    async with anyio.create_task_group() as tg:
        for lanes in processes:
            tg.start_soon(run, lanes)
        await wait_until(both_arrived)
        gate.set()
    assert peak[0] == expected_peak
    assert processes[0].shares("session:x")
    assert processes[0].shares("main") is (scope == "machine")


def test_unknown_global_cap_scope_is_named(tmp_path):
    with pytest.raises(ValueError, match="global_cap_scope"):
        FileLanes(tmp_path, global_cap_scope="planet")  # type: ignore[arg-type]


async def test_a_damaged_lane_record_is_set_aside_and_the_lane_still_works(tmp_path, caplog):
    lanes = FileLanes(tmp_path)
    path = lanes.store.path("session:k")
    path.write_bytes(b"{not json")
    async with lanes.hold("session:k"):
        pass
    assert [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert "lane state file" in caplog.text


async def test_a_record_replacement_left_by_a_killed_process_is_cleaned_up(tmp_path):
    lanes = FileLanes(tmp_path)
    left = tmp_path / f"{lanes.store.path('session:k').name}.lane-999999-0123abcd.tmp"
    left.write_bytes(b"{")
    async with lanes.hold("session:k"):
        pass
    assert not left.exists()


class TestFileLanesContract(LaneBackendContract):
    """``FileLanes`` passes the lane contract like every lane backend."""

    @pytest.fixture
    def lane_backend(self, tmp_path):
        return FileLanes(tmp_path / "lanes")


class TestMachineWideFileLanesContract(LaneBackendContract):
    @pytest.fixture
    def lane_backend(self, tmp_path):
        return FileLanes(tmp_path / "lanes", global_cap_scope="machine")


@pytest.mark.parametrize("fails_after_create", [False, True])
async def test_a_failed_claim_raises_its_own_error_not_the_withdrawals(
    tmp_path, caplog, fails_after_create
):
    # disk full at the claim: before anything existed (the lanes folder never made, so the
    # withdrawal cannot open the lock file either) or after the record was written (the
    # withdrawal removes it). Either way the caller sees the claim's error, and no record
    # is left behind.
    lanes = FileLanes(tmp_path / "lanes")
    real_step = lanes.store.step

    def failing_step(*args, **kwargs):
        if fails_after_create:
            real_step(*args, **kwargs)
        raise OSError(28, "No space left on device")

    lanes.store.step = failing_step
    with caplog.at_level("WARNING"), pytest.raises(OSError) as caught:
        async with lanes.hold("session:s", capacity=1, timeout_s=60):
            raise AssertionError("the block must not run")
    assert caught.value.errno == 28 and caught.value.__context__ is None
    withdrawn = [r.getMessage() for r in caplog.records if "could not withdraw" in r.getMessage()]
    assert len(withdrawn) == (0 if fails_after_create else 1)
    folder = tmp_path / "lanes"
    assert not folder.exists() or not [p for p in folder.iterdir() if p.suffix == ".json"]
    lanes.store.step = real_step  # the lane is free again for a claim that works
    async with lanes.hold("session:s", capacity=1, timeout_s=60) as lease:
        assert lease.lane == "session:s"
