"""A lean cross-process file lock for the locks every run takes.

Why not ``filelock`` everywhere: a run takes about six short file locks (its session lane's
record twice, the live-run inbox twice, the session file's write lock at its flushes), and
``filelock`` 4's general machinery (fork tracking, soft-lock fallback probes, descriptor
bookkeeping) costs ≈ 130 µs of CPU per acquire and release on the workplace machine, against
≈ 2 µs for the system calls themselves; with 1,000 concurrent runs that is most of what a run
costs above its model call.

:class:`FlockLock` takes the *same* lock ``filelock.FileLock`` takes on POSIX — ``flock`` on the
lock file, which stays in place on release — so processes using either interoperate. It is
not re-entrant (neither are two ``filelock`` instances of one path); callers that need
re-entry count it themselves (``transcript.jsonl.session_lock``). Where the file system has no
``flock`` (some network file systems) it hands over to ``filelock``, which falls back to a
soft lock there. A timeout raises ``filelock.Timeout`` so callers keep one exception type.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from types import TracebackType

import filelock

try:  # fcntl is missing on Windows, where filelock does the work
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_OPEN_FLAGS", "FlockLock", "make_lock_file", "remove_lock_file"]

#: ``flock`` errors that mean "this file system cannot lock", not "someone holds it".
_NO_FLOCK = frozenset({errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOLCK, errno.EINVAL})

#: How a lock file is opened (created if missing, never through a symbolic link).
LOCK_OPEN_FLAGS = (
    os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


def remaining_wait(deadline: float | None, now: float, poll_interval: float) -> float | None:
    """How long to sleep before the next try: ``None`` when the deadline has passed (give up),
    else the poll interval, cut to what is left before the deadline (no deadline: wait on)."""
    if deadline is None:
        return poll_interval
    left = deadline - now
    if left <= 0:
        return None
    return min(poll_interval, left)


def make_lock_file(path: str | os.PathLike[str], mode: int | None = None) -> None:
    """Create the file ``FlockLock(path, mode=mode)`` locks (same flags and mode: no symbolic
    link followed) without locking it: making the file needs no lock and never waits."""
    os.close(os.open(path, LOCK_OPEN_FLAGS, 0o666 if mode is None else mode))


def _still_linked(path: str, fd: int) -> bool:
    """Whether ``path`` still names the inode open as ``fd`` (not removed, renamed or replaced)."""
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_ino, on_disk.st_dev) == (held.st_ino, held.st_dev)


def remove_lock_file(path: str, in_use: Callable[[], bool]) -> bool:
    """Remove the lock file ``path`` while holding its ``flock``, unless someone holds it, it is
    gone or was replaced, or ``in_use()`` (asked under the lock) says its state is still there.

    Safe against every ``FlockLock`` taker: each re-checks after its ``flock`` that the name
    still points at the inode it locked and retries on the file there now (``filelock`` ≥ 4 on
    POSIX checks the inode is still linked, which sees an ``unlink`` too). Never removes a file
    it cannot ``flock`` (a file system without ``flock``, where ``filelock``'s soft fallback
    uses the file's existence as the lock), and never creates one (no ``O_CREAT``).
    ``True`` when the file was removed."""
    if fcntl is None:  # pragma: no cover - Windows
        return False
    try:
        fd = os.open(path, LOCK_OPEN_FLAGS & ~os.O_CREAT)
    except OSError:  # gone already, a symbolic link, unreadable: not ours to remove
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by someone (BlockingIOError), or no flock here
            return False
        try:
            if not _still_linked(path, fd) or in_use():
                return False
            os.unlink(path)
            return True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class FlockLock:
    """An exclusive ``flock`` on ``path``, created if missing with ``mode`` (``None``: 0o666
    less the umask, ``filelock``'s default).

    ``timeout`` < 0 waits as long as it takes, 0 tries once, > 0 waits up to that many
    seconds, polling every ``poll_interval`` (``filelock``'s semantics). A symbolic link at
    ``path`` is refused (``OSError`` ``ELOOP``), as ``filelock`` refuses it.
    """

    __slots__ = ("_fallback", "_fd", "mode", "path", "poll_interval", "timeout")

    def __init__(
        self,
        path: str | os.PathLike[str],
        timeout: float = -1,
        mode: int | None = None,
        poll_interval: float = 0.05,
    ) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self.mode = mode
        self.poll_interval = poll_interval
        self._fd: int | None = None
        self._fallback: filelock.BaseFileLock | None = None

    @property
    def is_locked(self) -> bool:
        """Whether this instance holds the lock."""
        return self._fd is not None or self._fallback is not None

    def acquire(self) -> None:
        """Take the lock or raise ``filelock.Timeout`` (``OSError`` for an unusable path)."""
        if self.is_locked:
            raise RuntimeError(f"lock {self.path!r} is already held by this instance")
        if fcntl is None:  # pragma: no cover - Windows
            self._acquire_fallback()
            return
        deadline = None if self.timeout < 0 else time.monotonic() + self.timeout
        while True:
            fd = os.open(self.path, LOCK_OPEN_FLAGS, 0o666 if self.mode is None else self.mode)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                wait = remaining_wait(deadline, time.monotonic(), self.poll_interval)
                if wait is None:
                    raise filelock.Timeout(self.path) from None
                time.sleep(wait)
                continue
            except OSError as exc:
                os.close(fd)
                if exc.errno in _NO_FLOCK:
                    self._acquire_fallback()
                    return
                raise
            except BaseException:
                os.close(fd)
                raise
            if _still_linked(self.path, fd):
                self._fd = fd
                return
            # Someone removed or replaced the file between our open and our lock (a sweep,
            # ``remove_lock_file``): the lock we hold is on an orphan inode nobody else will
            # see. Lock the file that is there now.
            os.close(fd)

    def _acquire_fallback(self) -> None:
        lock = (
            filelock.FileLock(self.path, timeout=self.timeout)
            if self.mode is None
            else filelock.FileLock(self.path, timeout=self.timeout, mode=self.mode)
        )
        lock.acquire()
        self._fallback = lock

    def release(self) -> None:
        """Let the lock go (the file stays, so waiters keep locking the same inode)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
            return
        fallback, self._fallback = self._fallback, None
        if fallback is not None:
            fallback.release()

    def __enter__(self) -> FlockLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
