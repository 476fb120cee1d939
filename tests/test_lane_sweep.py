"""The sweep of unused lane lock files (``lane_sweep``, ``_flock.remove_lock_file``,
``FileLanes.sweep``) in one process: what it removes, what it keeps, its budget, its triggers.

Real processes racing it are in ``test_lane_sweep_multiprocess.py``.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import threading
import types
import warnings
from collections.abc import Callable, Collection
from pathlib import Path

import anyio
import filelock
import pytest

from openclaw_runtime import Runtime, _flock
from openclaw_runtime._flock import FlockLock, remove_lock_file
from openclaw_runtime.runner.file_lanes import FileLanes
from openclaw_runtime.runner.lane_sweep import LaneSweep, sweep_lane_locks
from tests.run_support import ProbeProvider, probe_config

fcntl = pytest.importorskip("fcntl")


def never() -> bool:
    return False


def locks(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".lock"))


def exists(path: str) -> bool:
    return os.path.exists(path)


def fake_fcntl(flock: object) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB, LOCK_UN=fcntl.LOCK_UN
    )


def before_first_flock(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> None:
    """Run ``action`` once, right before the first ``flock`` ``_flock`` makes (after its open)."""
    calls: list[int] = []

    def flock(fd: int, operation: int) -> None:
        calls.append(operation)
        if len(calls) == 1:
            action()
        fcntl.flock(fd, operation)

    monkeypatch.setattr(_flock, "fcntl", fake_fcntl(flock))


# remove_lock_file ------------------------------------------------------------------------------


def test_an_unused_lock_file_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "a.json.lock"
    with FlockLock(path):  # made by a taker and let go
        pass
    assert remove_lock_file(os.fspath(path), never)
    assert not path.exists()


def test_a_held_lock_file_stays(tmp_path: Path) -> None:
    path = tmp_path / "a.json.lock"
    asked: list[bool] = []
    with FlockLock(path):
        assert not remove_lock_file(os.fspath(path), lambda: asked.append(True) or False)
    assert path.exists()
    assert asked == []  # the state is only asked about under the lock


def test_a_lock_file_whose_state_is_there_stays(tmp_path: Path) -> None:
    path = tmp_path / "a.json.lock"
    path.write_bytes(b"")
    held_while_asked: list[bool] = []

    def in_use() -> bool:
        try:  # the question is asked while the remover holds the lock
            FlockLock(path, timeout=0).acquire()
        except filelock.Timeout:
            held_while_asked.append(True)
        return True

    assert not remove_lock_file(os.fspath(path), in_use)
    assert path.exists()
    assert held_while_asked == [True]
    with FlockLock(path, timeout=0):  # and let go afterwards
        pass


def test_a_missing_lock_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "a.json.lock"
    assert not remove_lock_file(os.fspath(path), never)
    assert not path.exists()


def test_a_symbolic_link_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    link = tmp_path / "a.json.lock"
    link.symlink_to(target)
    assert not remove_lock_file(os.fspath(link), never)
    assert link.is_symlink() and target.read_bytes() == b"keep"


def test_without_flock_nothing_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_flock(fd: int, operation: int) -> None:
        raise OSError(errno.ENOSYS, "Function not implemented")

    path = tmp_path / "a.json.lock"
    path.write_bytes(b"")
    monkeypatch.setattr(_flock, "fcntl", fake_fcntl(no_flock))
    assert not remove_lock_file(os.fspath(path), never)
    assert path.exists()  # filelock's soft fallback would take its existence as the lock


def test_a_file_replaced_between_open_and_lock_is_not_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.json.lock"
    path.write_bytes(b"")

    def replace() -> None:  # another sweep removed it, and a taker made a new one
        path.unlink()
        path.write_bytes(b"new")

    before_first_flock(monkeypatch, replace)
    assert not remove_lock_file(os.fspath(path), never)
    assert path.read_bytes() == b"new"


def test_a_taker_that_opened_the_removed_file_locks_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FlockLock's half of the protocol: a taker that opened the file before the sweep
    # removed it finds the name gone after its flock and takes the file there now
    path = tmp_path / "a.json.lock"
    path.write_bytes(b"")

    def sweep() -> None:  # the sweep, between the taker's open and its flock
        assert remove_lock_file(os.fspath(path), never)

    before_first_flock(monkeypatch, sweep)
    lock = FlockLock(path, timeout=0)
    lock.acquire()
    try:
        monkeypatch.undo()
        assert lock._fd is not None
        assert os.fstat(lock._fd).st_ino == path.stat().st_ino  # the file on disk
        with pytest.raises(filelock.Timeout):
            FlockLock(path, timeout=0).acquire()
        assert not remove_lock_file(os.fspath(path), never)
    finally:
        lock.release()


def test_filelock_takers_also_re_check_after_their_lock(tmp_path: Path) -> None:
    # an opener with filelock's own FileLock (other tools, older code) sees the removal too
    path = tmp_path / "a.json.lock"
    lock = filelock.FileLock(path, timeout=0)
    with lock:
        assert not remove_lock_file(os.fspath(path), never)  # held: stays
    assert remove_lock_file(os.fspath(path), never)
    with filelock.FileLock(path, timeout=0), pytest.raises(filelock.Timeout):
        FlockLock(path, timeout=0).acquire()  # the same lock, on the file made again


# sweep_lane_locks ------------------------------------------------------------------------------


def test_the_sweep_removes_only_lock_files_of_lanes_nobody_uses(tmp_path: Path) -> None:
    (tmp_path / "idle.json.lock").write_bytes(b"")
    (tmp_path / "busy.json.lock").write_bytes(b"")
    (tmp_path / "busy.json").write_bytes(b"{}")  # a holder or waiter (maybe a dead one)
    (tmp_path / "spared.json.lock").write_bytes(b"")
    (tmp_path / "held.json.lock").write_bytes(b"")
    (tmp_path / "orphan.json").write_bytes(b"{}")  # a record without a lock file: kept
    (tmp_path / "x.json.lane-1-ab.tmp").write_bytes(b"{")
    (tmp_path / "y.json.corrupt-20261204").write_bytes(b"{")
    (tmp_path / "unrelated.lock").write_bytes(b"")
    with FlockLock(tmp_path / "held.json.lock"):
        done = sweep_lane_locks(tmp_path, spare={"spared.json"})
    assert done == LaneSweep(looked_at=9, removed=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "busy.json",
        "busy.json.lock",
        "held.json.lock",
        "orphan.json",
        "spared.json.lock",
        "unrelated.lock",
        "x.json.lane-1-ab.tmp",
        "y.json.corrupt-20261204",
    ]


def test_a_record_written_after_the_first_look_keeps_the_lock_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the look before the lock is a shortcut; the look under the lock decides
    (tmp_path / "a.json.lock").write_bytes(b"")
    looks: list[str] = []
    real = os.path.lexists

    def lexists(path: str) -> bool:
        looks.append(path)
        if len(looks) == 1:
            return False  # no record at the first look ...
        (tmp_path / "a.json").write_bytes(b"{}")  # ... then a claimant wrote one
        return real(path)

    monkeypatch.setattr(os.path, "lexists", lexists)
    assert sweep_lane_locks(tmp_path).removed == 0
    assert len(looks) == 2
    assert (tmp_path / "a.json.lock").exists()


def test_the_sweep_keeps_to_its_budget_and_later_sweeps_finish(tmp_path: Path) -> None:
    for n in range(300):
        (tmp_path / f"{n:04}.json.lock").write_bytes(b"")
    for n in range(0, 300, 3):
        (tmp_path / f"{n:04}.json").write_bytes(b"{}")  # a third are in use
    sweeps = [sweep_lane_locks(tmp_path, max_entries=120)]
    while not sweeps[-1].complete:
        sweeps.append(sweep_lane_locks(tmp_path, max_entries=120, start_at=sweeps[-1].resume_at))
    assert [s.looked_at for s in sweeps] == [120, 120, 120, 40]  # 400 entries, each seen once
    assert sum(s.removed for s in sweeps) == 200
    assert len(locks(tmp_path)) == 100
    assert sweep_lane_locks(tmp_path, max_entries=200) == LaneSweep(200, 0)  # all of it
    assert sweep_lane_locks(tmp_path, max_entries=150) == LaneSweep(150, 0, resume_at=150)
    assert sweep_lane_locks(tmp_path, max_entries=150, start_at=150) == LaneSweep(50, 0)


def test_a_missing_directory_is_an_empty_sweep(tmp_path: Path) -> None:
    assert sweep_lane_locks(tmp_path / "nope") == LaneSweep()


# FileLanes ------------------------------------------------------------------------------------


async def run_sessions(lanes: FileLanes, names: range) -> None:
    for n in names:
        async with lanes.hold(f"session:s{n}", timeout_s=30):
            pass


def wait_for_sweeps(lanes: FileLanes) -> None:
    with lanes._sweep_lock:  # a background sweep holds it while it runs
        pass


@pytest.mark.anyio
async def test_lanes_stop_growing_over_many_sessions(tmp_path: Path) -> None:
    grown, swept = (
        FileLanes(tmp_path / "a", sweep_every=0),
        FileLanes(tmp_path / "b", sweep_every=50),
    )
    await run_sessions(grown, range(520))
    for start in range(0, 520, 50):  # each period's background sweep ends before the next
        await run_sessions(swept, range(start, min(start + 50, 520)))
        wait_for_sweeps(swept)
    assert len(locks(tmp_path / "a")) == 520  # the bug: one lock file per session ever run
    # each background sweep (one per 50 lanes released) removed the periods before its own:
    # the last period's 50 lock files are left, and the 20 released since
    assert len(locks(tmp_path / "b")) == 50 + 20
    assert len(swept._released) == 20
    await swept.aclose()
    # closing sweeps the last period's and spares the lanes released since the last sweep
    assert len(locks(tmp_path / "b")) == 20
    assert not [p for p in (tmp_path / "b").iterdir() if not p.name.endswith(".json.lock")]


@pytest.mark.anyio
async def test_a_session_run_again_keeps_its_lock_file(tmp_path: Path) -> None:
    lanes = FileLanes(tmp_path, sweep_every=20)
    path = f"{lanes.store.path('session:again')}.lock"
    async with lanes.hold("session:again"):
        pass
    made = os.stat(path).st_ino
    for round_ in range(5):  # sweeps run between its runs; it is used in every period
        await run_sessions(lanes, range(round_ * 19, round_ * 19 + 19))
        async with lanes.hold("session:again"):
            pass
        wait_for_sweeps(lanes)
    assert os.stat(path).st_ino == made


@pytest.mark.anyio
async def test_lanes_held_or_waited_on_are_never_swept(tmp_path: Path) -> None:
    mine, other = FileLanes(tmp_path, sweep_every=0), FileLanes(tmp_path, sweep_every=0)
    held = f"{mine.store.path('session:held')}.lock"
    queued = f"{mine.store.path('session:queued')}.lock"
    gate, inside = anyio.Event(), anyio.Event()

    async def hold(lanes: FileLanes, lane: str) -> None:
        async with lanes.hold(lane):
            inside.set()
            await gate.wait()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hold, other, "session:held")
            await inside.wait()
            tg.start_soon(hold, mine, "session:held")  # waits on the other process's holder
            tg.start_soon(hold, mine, "session:queued")
            for _ in range(5000):  # until the other process's record lists this one's waiter
                if len(other.status("session:held").queue) == 1:
                    break
                await anyio.sleep(0.002)
            for sweeper in (mine, other, FileLanes(tmp_path)):
                spare = sweeper._lanes_to_spare()
                assert sweeper.sweep(spare).removed == 0
            assert exists(held) and exists(queued)
            gate.set()
    await mine.aclose()
    assert exists(held) and exists(queued)  # released lately by this process: spared
    assert FileLanes(tmp_path).sweep().removed == 2
    assert locks(tmp_path) == []


@pytest.mark.anyio
async def test_a_lane_waited_on_in_this_process_is_spared(tmp_path: Path) -> None:
    # a run queued in this process has no record yet: the spare set is what keeps its file
    lanes = FileLanes(tmp_path, sweep_every=0)
    gate, inside = anyio.Event(), anyio.Event()
    path = f"{lanes.store.path('session:k')}.lock"

    async def hold() -> None:
        async with lanes.hold("session:k"):
            inside.set()
            await gate.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        await inside.wait()
        tg.start_soon(hold)
        await anyio.sleep(0.01)
        lanes.store.path("session:k").unlink()  # as if the record said nothing
        spare = lanes._lanes_to_spare()
        assert "session:k" in spare
        assert lanes.sweep(spare).removed == 0
        assert exists(path)
        gate.set()


@pytest.mark.anyio
async def test_the_background_sweep_never_runs_on_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    lanes = FileLanes(tmp_path, sweep_every=10)
    (tmp_path / "old.json.lock").write_bytes(b"")
    threads: list[str] = []
    swept = lanes._swept

    def spy(spare: Collection[str]) -> LaneSweep:
        threads.append(threading.current_thread().name)
        return swept(spare)

    monkeypatch.setattr(lanes, "_swept", spy)
    with caplog.at_level(logging.DEBUG, logger="openclaw_runtime.runner.lanes"):
        await run_sessions(lanes, range(25))  # a sweep starts at the 10th and 20th release
        for _ in range(500):
            if threads and not lanes._sweep_lock.locked():
                break
            await anyio.sleep(0.01)
        assert threads and set(threads) == {"openclaw-lane-sweep"}
        assert not (tmp_path / "old.json.lock").exists()
        threads.clear()
        lanes.sweep_every = 0  # no more in the background: the next sweep is aclose's
        async with lanes.hold("session:last"):
            pass
        await lanes.aclose()
    (closing,) = threads
    assert closing not in ("openclaw-lane-sweep", threading.current_thread().name)
    assert "unused lock files" in caplog.text


@pytest.mark.anyio
async def test_a_sweep_stopped_at_its_budget_goes_on_from_there(tmp_path: Path) -> None:
    lanes = FileLanes(tmp_path, sweep_every=0, sweep_max_entries=30)
    for n in range(40):  # 80 entries kept (records of stale holders, their lock files) ...
        (tmp_path / f"busy{n:02}.json").write_bytes(b"{}")
        (tmp_path / f"busy{n:02}.json.lock").write_bytes(b"")
    for n in range(40):  # ... and 40 to remove, in whatever order the directory lists them
        (tmp_path / f"idle{n:02}.json.lock").write_bytes(b"")
    removed = [lanes.sweep().removed for _ in range(4)]
    assert sum(removed) == 40
    assert len(locks(tmp_path)) == 40


def test_a_forked_child_does_not_inherit_a_running_sweep(tmp_path: Path) -> None:
    lanes = FileLanes(tmp_path, sweep_every=0)
    (tmp_path / "old.json.lock").write_bytes(b"")
    lanes._sweep_lock.acquire()  # a sweep thread is running in the parent at the fork
    try:
        with warnings.catch_warnings():  # 3.12+ warns about forking a threaded process
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: its sweep does not wait for the parent's thread
            signal.alarm(20)  # (if it did, it would wait forever)
            os._exit(0 if lanes.sweep().removed == 1 else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        lanes._sweep_lock.release()
    assert os.waitstatus_to_exitcode(status) == 0
    assert not exists(os.fspath(tmp_path / "old.json.lock"))


@pytest.mark.anyio
async def test_a_sweep_that_fails_never_fails_the_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lanes = FileLanes(tmp_path)
    async with lanes.hold("session:k"):
        pass
    (tmp_path / "old.json.lock").write_bytes(b"")

    def refuse(path: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "unlink", refuse)
    await lanes.aclose()  # no error
    monkeypatch.undo()
    assert exists(os.fspath(tmp_path / "old.json.lock"))


@pytest.mark.anyio
async def test_aclose_without_releases_does_not_sweep(tmp_path: Path) -> None:
    (tmp_path / "old.json.lock").write_bytes(b"")
    await FileLanes(tmp_path).aclose()
    assert (tmp_path / "old.json.lock").exists()


@pytest.mark.anyio
async def test_runtime_aclose_sweeps_the_lanes_of_earlier_runtimes(tmp_path: Path) -> None:
    # one runtime a process, as `openclaw-runtime run` is: each close sweeps what the earlier
    # ones left and keeps only its own lane's lock file
    lanes_dir = tmp_path / "lanes"
    for index in range(6):
        probe = ProbeProvider()
        runtime = Runtime(probe_config(tmp_path), plugins=[probe.plugin()], load_entrypoints=False)
        try:
            result = await runtime.run("hello", session_id=f"s{index}")
            assert result.ok, result
            assert len(locks(lanes_dir)) == (1 if index == 0 else 2)  # its own and the last's
        finally:
            await runtime.aclose()
        assert len(locks(lanes_dir)) == 1
    assert [p.name for p in lanes_dir.iterdir()] == locks(lanes_dir)  # no record left
