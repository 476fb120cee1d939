"""``_flock.FlockLock``: the lean lock the per-run file locks use. It must exclude exactly as
``filelock.FileLock`` does, across threads and processes and against ``filelock`` itself (other
processes, older versions of the runtime), with the same timeout semantics. Real files, real
locks, real processes."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
import types
from pathlib import Path

import filelock
import pytest

from openclaw_runtime import _flock
from openclaw_runtime._flock import FlockLock, remaining_wait

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("flock is POSIX", allow_module_level=True)

import fcntl

HOLDER = """
import sys, filelock
lock = filelock.FileLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
"""

PROBE = """
import sys, filelock
try:
    filelock.FileLock(sys.argv[1], timeout=0).acquire()
    print("acquired")
except filelock.Timeout:
    print("timeout")
"""


@pytest.mark.parametrize(
    ("deadline", "now", "poll", "expected"),
    [
        (None, 5.0, 0.05, 0.05),  # no deadline: poll on
        (10.0, 5.0, 0.05, 0.05),  # far from it: the poll interval
        (10.0, 9.99, 0.05, pytest.approx(0.01)),  # cut to what is left
        (10.0, 10.0, 0.05, None),  # reached: give up
        (10.0, 11.0, 0.05, None),  # passed: give up
    ],
)
def test_remaining_wait(
    deadline: float | None, now: float, poll: float, expected: float | None
) -> None:
    assert remaining_wait(deadline, now, poll) == expected


def test_instances_exclude_each_other_across_threads(tmp_path: Path) -> None:
    path = tmp_path / "a.lock"
    holder = FlockLock(path)
    holder.acquire()
    assert holder.is_locked
    with pytest.raises(filelock.Timeout):
        FlockLock(path, timeout=0).acquire()
    with pytest.raises(filelock.Timeout):
        FlockLock(path, timeout=0.06, poll_interval=0.02).acquire()  # waits, then gives up

    outcome: list[str] = []

    def other_thread() -> None:
        try:
            FlockLock(path, timeout=0).acquire()
            outcome.append("acquired")
        except filelock.Timeout:
            outcome.append("timeout")

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert outcome == ["timeout"]

    # a waiter without a deadline gets the lock once the holder lets go
    got: list[bool] = []

    def waiter() -> None:
        lock = FlockLock(path, poll_interval=0.01)
        lock.acquire()
        got.append(lock.is_locked)
        lock.release()

    thread = threading.Thread(target=waiter)
    thread.start()
    holder.release()
    thread.join()
    assert got == [True]
    assert not holder.is_locked
    assert path.exists()  # the file stays, so waiters keep locking the same inode
    with FlockLock(path, timeout=0) as again:
        assert again.is_locked


def test_not_reentrant_per_instance(tmp_path: Path) -> None:
    lock = FlockLock(tmp_path / "a.lock")
    with lock, pytest.raises(RuntimeError, match="already held"):
        lock.acquire()
    assert not lock.is_locked


def test_excludes_filelock_in_another_process_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "shared.lock"
    # our lock held: filelock in another process cannot take it
    with FlockLock(path, mode=0o600):
        probe = subprocess.run(
            [sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, check=True
        )
        assert probe.stdout.strip() == "timeout"
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, check=True
    )
    assert probe.stdout.strip() == "acquired"

    # filelock held in another process: ours cannot take it until that process lets go
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(filelock.Timeout):
            FlockLock(path, timeout=0).acquire()
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
    with FlockLock(path, timeout=0) as lock:
        assert lock.is_locked


def test_mode_applies_on_creation(tmp_path: Path) -> None:
    path = tmp_path / "private.lock"
    with FlockLock(path, mode=0o600):
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_symlink_at_the_lock_path_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep")
    link = tmp_path / "planted.lock"
    link.symlink_to(target)
    with pytest.raises(OSError) as info:
        FlockLock(link, timeout=0).acquire()
    assert info.value.errno == errno.ELOOP
    assert target.read_bytes() == b"keep"


def test_file_replaced_between_open_and_lock_locks_the_current_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.lock"
    calls: list[int] = []

    def flock(fd: int, operation: int) -> None:
        if not calls and operation & fcntl.LOCK_EX:
            path.unlink()  # another process removes the file right after our open
            path.write_bytes(b"")
        calls.append(operation)
        fcntl.flock(fd, operation)

    fake = types.SimpleNamespace(
        flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB, LOCK_UN=fcntl.LOCK_UN
    )
    monkeypatch.setattr(_flock, "fcntl", fake)
    lock = FlockLock(path, timeout=0)
    lock.acquire()
    try:
        assert len([op for op in calls if op & fcntl.LOCK_EX]) == 2  # retried once
        assert lock._fd is not None
        assert os.fstat(lock._fd).st_ino == path.stat().st_ino
        monkeypatch.undo()
        with pytest.raises(filelock.Timeout):  # the file on disk is the one held
            FlockLock(path, timeout=0).acquire()
    finally:
        lock.release()


def test_file_system_without_flock_falls_back_to_filelock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_flock(fd: int, operation: int) -> None:
        raise OSError(errno.ENOSYS, "Function not implemented")

    fake = types.SimpleNamespace(
        flock=no_flock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB, LOCK_UN=fcntl.LOCK_UN
    )
    monkeypatch.setattr(_flock, "fcntl", fake)
    path = tmp_path / "a.lock"
    lock = FlockLock(path, timeout=0)
    lock.acquire()
    try:
        assert lock.is_locked
        assert isinstance(lock._fallback, filelock.BaseFileLock)
        assert lock._fallback.is_locked
        with pytest.raises(filelock.Timeout):  # filelock's real lock excludes others
            filelock.FileLock(path, timeout=0).acquire()
    finally:
        lock.release()
    assert not lock.is_locked
