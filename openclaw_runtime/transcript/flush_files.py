"""The two descriptors a session's turn-end flush uses, kept open between its flushes.

Why: a durable turn end took the session lock by opening its lock file, ``flock``, checking
that the name still points at that file (``stat`` + ``fstat``), appended by opening the
session file ``O_APPEND``, and closed both again: ten system calls per tool call. With the two
descriptors kept, a flush is the ``flock``, the same name check (a ``stat``: the kept
descriptor's inode is known), the session's ``stat``, one ``write`` and the unlock.

What stays as it was: the lock is the same ``flock`` on the same file, taken and let go
(``LOCK_UN``) around every flush, so other processes wait and see exactly as before. A lock
held elsewhere, a lock file removed or replaced, a session file replaced (a rewrite), a file
system without ``flock`` or any open that fails send that flush back to the plain path
(``jsonl.take_session_lock``, ``jsonl.append_bytes``), which waits, refuses or reports
exactly as before.

Bounded, unlike the two descriptors per open session that session 8 refused (128 sessions
kept open between runs, or 1,000 concurrent runs, would hold hundreds to thousands): at most
:data:`KEPT_SESSIONS` sessions per process keep theirs, and only sessions that flush often
earn a place (:func:`worth_keeping`: a third flush whose previous one was among the process's
last ``KEPT_SESSIONS`` flushes), so many sessions flushing in turn (1,000 concurrent runs)
never take places from each other: taking a place and opening both files only to lose them
before the next flush costs more than the plain way. A session that earns a place when all
are taken takes the one flushed least recently (its descriptors are closed unless a flush
of it is running; if all are running, it flushes the plain way). A forked
child never uses what its parent kept: the open file descriptions, and with them the
``flock``, are shared, so parent and child would both "hold" the lock.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import weakref
from collections import OrderedDict

from .._files import append_or_undo
from .._flock import LOCK_OPEN_FLAGS

try:  # fcntl is missing on Windows, where nothing is kept
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["KEPT_SESSIONS", "FlushFiles", "kept_count", "next_flush_tick", "worth_keeping"]

#: Sessions per process that keep their flush descriptors (two each).
KEPT_SESSIONS = 32

_lock = threading.RLock()  # guards _kept and every entry's place and "in use" mark
_kept: OrderedDict[int, FlushFiles] = OrderedDict()  # least recently used first
_tokens = itertools.count()
_ticks = itertools.count(1)
_generation = 0  # bumped in a forked child: what the parent kept is not the child's


def _forked() -> None:
    global _generation, _kept, _lock
    _generation += 1
    _kept = OrderedDict()  # the parent's entries close themselves when next used here
    _lock = threading.RLock()  # another thread may have held it at the fork


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_forked)


def next_flush_tick() -> int:
    """The process's flush count, one more: the clock :func:`worth_keeping` reads."""
    return next(_ticks)


def worth_keeping(last_tick: int, flushes: int, now: int) -> bool:
    """Whether a session earns kept descriptors at this flush (tick ``now``): it flushed at
    least twice before, the last time (``last_tick``) among the process's last
    :data:`KEPT_SESSIONS` flushes. At most ``KEPT_SESSIONS`` sessions can be that recent at
    once, so sessions that earn places do not keep taking them from each other."""
    return flushes >= 2 and now - last_tick <= KEPT_SESSIONS


def kept_count() -> int:
    """How many sessions keep flush descriptors now (tests, diagnostics)."""
    return len(_kept)


def _close_all(token: int, fds: list[int | None]) -> None:
    """Close what is kept and give the place back (once: ``weakref.finalize``)."""
    with _lock:
        _kept.pop(token, None)
        for i, fd in enumerate(fds):
            if fd is not None:
                fds[i] = None
                with contextlib.suppress(OSError):
                    os.close(fd)


def _make_room() -> bool:
    """Whether a place is free, after closing the least recently used idle entries if
    needed (called with ``_lock`` held)."""
    while len(_kept) >= KEPT_SESSIONS:
        # a copy: a collected session's finalizer may give its place back meanwhile
        for entry in list(_kept.values()):
            if not entry.in_use:
                entry.close()
                break
        else:
            return False
    return True


class FlushFiles:
    """One session's kept lock-file and append descriptors (see the module docstring).

    Used only by that session's flush, which its write lock serialises; closed by the
    session's ``aclose`` or, for a session dropped unclosed, when it is collected.
    """

    __slots__ = (
        "_append_inode",
        "_close",
        "_fds",
        "_generation",
        "_lock_id",
        "_lockable",
        "_token",
        "in_use",
        "lock_path",
    )

    def __init__(self, owner: object, lock_path: str) -> None:
        self.lock_path = lock_path
        self._fds: list[int | None] = [None, None]  # lock file, session file (O_APPEND)
        self._lock_id: tuple[int, int] = (0, 0)
        self._append_inode = 0
        self._generation = _generation
        self._lockable = True  # False once flock proved unsupported here
        self._token = next(_tokens)
        #: a flush is using the descriptors (between :meth:`begin` and :meth:`end`)
        self.in_use = False
        self._close = weakref.finalize(owner, _close_all, self._token, self._fds)

    @classmethod
    def take(cls, owner: object, lock_path: str) -> FlushFiles | None:
        """Kept descriptors for ``owner``'s flushes, already begun (:meth:`begin`), or
        ``None`` when every place is in use by a running flush (or on Windows)."""
        if fcntl is None:  # pragma: no cover - Windows
            return None
        with _lock:
            if not _make_room():
                return None
            entry = cls(owner, lock_path)
            entry.in_use = True
            _kept[entry._token] = entry
            return entry

    def begin(self) -> bool:
        """Mark the descriptors in use for one flush; ``False`` when they were closed (by
        the session, or to make room for another) or inherited through a fork."""
        with _lock:
            # a closed entry has given its place back (``_close_all``); a fork's
            # ``_kept`` is new, and the generation tells its entries from the parent's
            if self._generation != _generation or self._token not in _kept:
                return False
            self.in_use = True
            _kept.move_to_end(self._token)
            return True

    def end(self) -> None:
        """The flush is done with them (they may now be closed to make room)."""
        self.in_use = False

    def close(self) -> None:
        """Close both descriptors and give the place back."""
        self._close()

    def try_lock(self) -> bool:
        """Take the session lock without waiting, on the file at the lock's name now.
        ``False``: not taken (held elsewhere, the file replaced, no ``flock`` here, an
        error): the plain path takes it, waits for it or reports why."""
        fds = self._fds
        fd = fds[0]
        if fd is None:
            if not self._lockable:
                return False
            try:
                fd = os.open(self.lock_path, LOCK_OPEN_FLAGS, 0o666)  # as FlockLock opens it
                held = os.fstat(fd)
            except OSError:
                if fd is not None:
                    os.close(fd)
                return False
            fds[0] = fd
            self._lock_id = (held.st_ino, held.st_dev)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError:  # no flock on this file system: the plain path falls back
            self._lockable = False
            self._forget(0)
            return False
        try:
            on_disk = os.stat(self.lock_path, follow_symlinks=False)
        except OSError:
            on_disk = None
        if on_disk is None or (on_disk.st_ino, on_disk.st_dev) != self._lock_id:
            # removed or replaced since we opened it: a lock on an inode nobody else sees
            fcntl.flock(fd, fcntl.LOCK_UN)
            self._forget(0)
            return False
        return True

    def release(self) -> None:
        """Let the lock go (the descriptor stays open for the next flush)."""
        fd = self._fds[0]
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def append(self, path: str | os.PathLike[str], inode: int, data: bytes, size: int) -> bool:
        """Append ``data`` to the session file when the kept descriptor is the file of
        ``inode`` (what the caller just saw at the name under the lock, ``size`` bytes
        long), opening it first if needed. ``False``: nothing written, the plain path opens
        the name and writes. A write that fails is undone first (``append_or_undo``)."""
        fds = self._fds
        fd = fds[1]
        if fd is None or self._append_inode != inode:
            self._forget(1)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND, 0o600)
            except OSError:
                return False
            if os.fstat(fd).st_ino != inode:  # replaced between the caller's stat and now
                os.close(fd)
                return False
            fds[1] = fd
            self._append_inode = inode
        append_or_undo(fd, data, size)
        return True

    def _forget(self, which: int) -> None:
        fd = self._fds[which]
        if fd is not None:
            self._fds[which] = None
            os.close(fd)
