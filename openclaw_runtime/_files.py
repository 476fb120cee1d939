"""Small state files: written so readers see the old version or the new one, never half,
and read so that a damaged one never takes a run down.

Shared by every file-backed store (transcripts, the auth-profile ledger, the steering queue,
the session index):

* :func:`atomic_write`: a temp file in the same folder (named ``<file>.<tag>-<pid>-<hex>.tmp``
  so the writer can be identified), ``fsync``, ``os.replace``, then an ``fsync`` of the folder
  where the OS allows it;
* :func:`remove_stale_temps`: temp files left by writers that were killed mid-write (their
  pid is gone, or the file is older than any write could take) are removed when a store opens;
* :func:`load_or_set_aside`: a state file that cannot be parsed is renamed next to itself
  (``<file>.corrupt-<UTC time>-<pid>``), named in a warning, and the store starts empty —
  the damaged bytes are kept for a human, the run goes on. ``openclaw-runtime doctor`` lists
  such files (:func:`find_set_aside_files`);
* :class:`LockedStateFile`: the three together for a file many processes share, read without a
  lock (it is only ever replaced whole) and updated under ``<file>.lock``, with the store's own
  error for every failure (the auth-profile ledger and the steering queue use this pattern).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import filelock

__all__ = [
    "SET_ASIDE_MARKER",
    "STALE_TEMP_AGE_S",
    "DamagedStateFile",
    "LockedStateFile",
    "TornAppend",
    "append_or_undo",
    "atomic_write",
    "find_set_aside_files",
    "is_set_aside_name",
    "load_or_set_aside",
    "read_file",
    "remove_stale_temps",
    "set_aside_damaged",
    "write_all",
    "write_new_file",
]

T = TypeVar("T")

#: What the name of a set-aside (damaged) state file contains after the original name.
SET_ASIDE_MARKER = ".corrupt-"
#: A temp file this old is stale whoever wrote it: no atomic write of a state file takes an hour.
STALE_TEMP_AGE_S = 3600.0
_TEMP_RE = re.compile(r"(?P<target>.+)\.[A-Za-z0-9_]+-(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp", re.ASCII)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write only part of it; the usual
    whole write makes no view of ``data``)."""
    if not data:
        return
    written = os.write(fd, data)
    if written == len(data):
        return
    view = memoryview(data)[written:]
    while view:
        view = view[os.write(fd, view) :]


class TornAppend(OSError):
    """An append failed part-way and cutting the file back failed too: the file may end
    with part of the payload (``append_or_undo``)."""


def append_or_undo(fd: int, data: bytes, size_before: int, *, fsync: bool = False) -> None:
    """``write_all`` for an append whose file the caller holds the lock of and knows the
    size of (``size_before``). A write that fails part-way (ENOSPC, EIO) may have put some
    of ``data`` in the file; it is cut back to ``size_before`` before the error is raised,
    so the caller may keep ``data`` and write it again without duplicating or tearing a
    line (also when ``fsync`` fails: the caller reports the append as not made).
    :class:`TornAppend` (from the write's error) when the cut fails too."""
    try:
        write_all(fd, data)
        if fsync:
            os.fsync(fd)
    except BaseException as exc:
        try:
            os.ftruncate(fd, size_before)
        except OSError as undo:
            raise TornAppend(undo.errno, f"cannot undo a failed append: {undo.strerror}") from exc
        raise


def read_file(path: str | os.PathLike[str]) -> bytes:
    """The whole content of ``path`` (``FileNotFoundError`` when it is missing), read with
    ``os.open``/``os.read``: the small state files a run reads (a lane's record, the live
    inbox's owner) cost four system calls this way against nine through ``Path.read_bytes``'s
    buffered file object."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def write_new_file(
    path: str | os.PathLike[str], data: bytes, *, mode: int = 0o600, fsync: bool = False
) -> None:
    """Create ``path`` (``FileExistsError`` if it exists) holding ``data``; a write that fails
    half-way removes the file again."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        write_all(fd, data)
        if fsync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def _write_temp(
    path: str | os.PathLike[str], content: bytes, mode: int | None, tag: str, *, fsync: bool = True
) -> str:
    # beside ``path``: its own name plus a suffix (a string join, not a second path object)
    temp = f"{os.fspath(path)}.{tag}-{os.getpid()}-{os.urandom(4).hex()}.tmp"
    write_new_file(temp, content, mode=0o600 if mode is None else mode, fsync=fsync)
    if mode is not None:
        os.chmod(temp, mode)
    return temp


def atomic_write(
    path: str | Path, content: bytes, *, tag: str = "rewrite", fsync: bool = True
) -> None:
    """Replace ``path`` with ``content`` so readers see the old file or the new one, never half.

    ``fsync=False`` skips both ``fsync`` calls: still atomic for readers and across a killed
    process, not across a power loss (for short-lived coordination files like lane state).
    """
    target = Path(path)
    try:
        mode: int | None = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    temp = _write_temp(target, content, mode, tag, fsync=fsync)
    try:
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if fsync:
        _fsync_dir(target.parent)


# --------------------------------------------------------------------------- stale temp files


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine (zombies count as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, it is just not ours
        return True
    return True


def temp_writer(name: str) -> tuple[str, int] | None:
    """``(target file name, writer pid)`` when ``name`` is one of :func:`atomic_write`'s temp
    files, else ``None``."""
    match = _TEMP_RE.fullmatch(name)
    return (match.group("target"), int(match.group("pid"))) if match else None


def is_stale_temp(pid: int, age_s: float, *, own_pid: int, alive: Callable[[int], bool]) -> bool:
    """Policy: a temp is stale when it is older than :data:`STALE_TEMP_AGE_S`, or when its
    writer is another process that no longer exists. This process's own temps are in flight."""
    if age_s >= STALE_TEMP_AGE_S:
        return True
    return pid != own_pid and not alive(pid)


def remove_stale_temps(
    directory: str | Path, target_names: Iterable[str] | None = None, *, now: float | None = None
) -> list[Path]:
    """Remove temp files of dead (or long-gone) writers in ``directory``; returns them.

    Only names :func:`atomic_write` makes are considered (``<target>.<tag>-<pid>-<hex>.tmp``),
    for the given ``target_names`` (default: any target). Never raises: cleanup is best-effort.
    """
    folder = Path(directory)
    wanted = None if target_names is None else tuple(target_names)
    moment = time.time() if now is None else now
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        parsed = temp_writer(name)
        if parsed is None or (wanted is not None and parsed[0] not in wanted):
            continue
        pid = parsed[1]
        try:
            stat = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        age = moment - stat.st_mtime
        if not is_stale_temp(pid, age, own_pid=os.getpid(), alive=_pid_alive):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


# --------------------------------------------------------------------------- damaged files


class DamagedStateFile(Exception):
    """Raised by a state file's parser when the bytes cannot be its content (``reason`` says
    why, without quoting the content: it may hold credentials)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def is_set_aside_name(name: str) -> bool:
    """Whether a file name is one :func:`set_aside_damaged` gives."""
    return SET_ASIDE_MARKER in name and not name.endswith((".tmp", ".lock"))


def set_aside_damaged(path: str | Path, seen: bytes, *, now: datetime | None = None) -> Path | None:
    """Rename the damaged file ``path`` to ``<name>.corrupt-<UTC time>-<pid>`` next to it.

    Only when it still holds ``seen`` (the bytes the caller failed to parse): a file another
    process replaced meanwhile is left alone and ``None`` returned (read it again). Call it
    holding the store's writer lock, so no writer's fresh file is moved away.
    """
    target = Path(path)
    try:
        current = target.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None
    if current != seen:
        return None
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    aside = target.with_name(
        f"{target.name}{SET_ASIDE_MARKER}{stamp}-{os.getpid()}-{os.urandom(2).hex()}"
    )
    os.rename(target, aside)
    _fsync_dir(target.parent)
    return aside


def load_or_set_aside(
    path: str | Path,
    parse: Callable[[bytes], T],
    empty: Callable[[], T],
    *,
    what: str,
    logger: logging.Logger,
    lock: Callable[[], AbstractContextManager[object]] | None = None,
) -> T:
    """``parse`` the bytes of ``path``; a missing file gives ``empty()``.

    When ``parse`` raises :class:`DamagedStateFile` the file is set aside
    (:func:`set_aside_damaged`, under ``lock()`` when given: pass ``None`` when the caller
    already holds the writer lock), a warning names both files, and ``empty()`` is returned.
    Other read errors (``OSError``) propagate for the store to report.
    """
    for _ in range(5):
        try:
            data = read_file(path)
        except FileNotFoundError:
            return empty()
        try:
            return parse(data)
        except DamagedStateFile as exc:
            target = Path(path)
            with lock() if lock is not None else contextlib.nullcontext():
                aside = set_aside_damaged(target, data)
            if aside is None:
                continue  # replaced (or removed) meanwhile: read the new one
            logger.warning(
                "%s %s is damaged (%s); kept it aside as %s and started afresh",
                what,
                target,
                exc.reason,
                aside.name,
            )
            return empty()
    return empty()


def find_set_aside_files(directories: Iterable[str | Path]) -> list[Path]:
    """Set-aside state files in ``directories`` (not recursive), sorted, duplicates removed."""
    found: set[Path] = set()
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        found.update(Path(e.path) for e in entries if is_set_aside_name(e.name))
    return sorted(found)


# --------------------------------------------------------------------------- a shared locked file


class LockedStateFile:
    """One state file shared by the processes of one machine, and its ``<file>.lock``.

    Reads take no lock (the file is only ever replaced whole by :func:`atomic_write`), except
    to set a damaged file aside; an update holds the lock while it reads, applies and writes
    (:meth:`locked`). Stale temp files of dead writers are swept at the first read. Every
    failure is raised as ``error(message)``, the store's own exception, naming the file and
    the OS reason; the file's bytes are never quoted (they may hold credentials).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        what: str,
        tag: str,
        lock_timeout: float,
        logger: logging.Logger,
        error: Callable[[str], Exception],
    ) -> None:
        self.path = Path(path).expanduser()
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        self.what = what
        self._tag = tag
        self._logger = logger
        self._error = error
        self._swept = False  # stale temp files of dead writers removed (once, at first read)

    def file_lock(self) -> filelock.FileLock:
        """The writers' lock (owner read/write only)."""
        return filelock.FileLock(self.lock_path, timeout=self.lock_timeout, mode=0o600)

    def _timed_out(self) -> Exception:
        return self._error(
            f"timed out after {self.lock_timeout}s waiting for the lock {str(self.lock_path)!r}"
        )

    def read(
        self, parse: Callable[[bytes], T], empty: Callable[[], T], *, locked: bool = False
    ) -> T:
        """``parse`` the file (:func:`load_or_set_aside`); ``locked``: the caller holds the lock."""
        if not self._swept:
            self._swept = True
            remove_stale_temps(self.path.parent, [self.path.name])
        try:
            return load_or_set_aside(
                self.path,
                parse,
                empty,
                what=self.what,
                logger=self._logger,
                lock=None if locked else self.file_lock,
            )
        except OSError as exc:
            raise self._error(
                f"cannot read {self.what} {str(self.path)!r}: {exc.strerror}"
            ) from None
        except filelock.Timeout:
            raise self._timed_out() from None

    def write(self, payload: bytes) -> None:
        """Replace the file with ``payload`` (:func:`atomic_write`), under :meth:`locked`."""
        try:
            atomic_write(self.path, payload, tag=self._tag)
        except OSError as exc:
            raise self._error(
                f"cannot write {self.what} {str(self.path)!r}: {exc.strerror}"
            ) from None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Create the folder, then hold the writers' lock for one read-apply-write."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error(
                f"cannot create directory {str(self.path.parent)!r}: {exc.strerror}"
            ) from None
        try:
            with self.file_lock():
                yield
        except filelock.Timeout:
            raise self._timed_out() from None
