"""Live messages across processes: a per-session inbox next to the steering store's file.

``Runtime.steer`` in one process has to reach a run that another process (another
``Runtime`` on the same state dir) is running. The running process *owns* the session's
inbox while its run is live; another process appends to the inbox only while an owner that is
still alive holds it (otherwise the message is refused, as a steer without a run is), and the
owner moves what arrived into its run's queues at every turn boundary (``LiveRunHandle``).

On disk, in ``<steering dir>/live/``: ``<session>.owner`` (the owning pid and run id),
``<session>.inbox.jsonl`` (one message a line) and ``<session>.lock`` (a file lock around
every change). Checking for messages costs one ``stat`` while the inbox is empty. Text is
redacted before it is written, like everything the steering store keeps.

The lock file is made by the first process that pushes (a pusher creates it before it reads
the owner file), not by every run: while it does not exist, nobody has pushed, so the owner
writes its owner file without it (``open_sync``). The owner removes its owner file without the
lock in any case (``close_sync``), then looks for the lock file once, and drains under the lock
when there is one (a pusher came, now or in an earlier run): a pusher that read the owner file
before the removal appended under the lock, and the drain waits for that lock; one that reads
it after finds no owner and refuses. A fresh
session's run thus creates one file here (the owner file), not two. Runs of one session do
not overlap (its session lane), so the owner file has one writer at a time.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import filelock
import orjson

from .._files import _pid_alive, read_file, write_all
from .._flock import FlockLock
from ..backends.steering import SteeringStoreError
from ..redaction import package_logger, redact
from ..transcript import validate_session_id

__all__ = ["FileLiveInbox"]

logger = package_logger(logging.getLogger("openclaw_runtime.runner.live_inbox"))

#: Session ids whose inbox paths are kept (cleared whole when full: a cache, not a registry).
_PATH_MEMO_SIZE = 4096

LiveMessage = tuple[Literal["steer", "follow_up"], str]


class FileLiveInbox:
    """Per-session inboxes of live messages under ``directory`` (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str], *, lock_timeout: float = 30.0) -> None:
        self.directory = Path(directory).expanduser()
        self.lock_timeout = lock_timeout
        self._dir = os.fspath(self.directory)
        self._dir_ready = False  # the directory is known to exist (made by us or found)
        self._path_memo: dict[str, tuple[str, str, str]] = {}

    def _paths(self, session_id: str) -> tuple[str, str, str]:
        # a run asks five times (open, three polls, close): validate and join once; plain
        # strings, as every use is an ``os`` call (no path objects to build and convert)
        paths = self._path_memo.get(session_id)
        if paths is None:
            base = os.path.join(self._dir, validate_session_id(session_id))
            paths = f"{base}.owner", f"{base}.inbox.jsonl", f"{base}.lock"
            if len(self._path_memo) >= _PATH_MEMO_SIZE:
                self._path_memo.clear()
            self._path_memo[session_id] = paths
        return paths

    def _lock(self, path: str, timeout: float | None = None) -> FlockLock:
        wait = self.lock_timeout if timeout is None else timeout
        return FlockLock(path, timeout=wait, mode=0o600)

    def _locked(self, session_id: str, fn: Any, *, timeout: float | None = None) -> Any:
        owner, inbox, lock = self._paths(session_id)
        try:
            self._make_dir()
            held = self._lock(lock, timeout)
            try:
                held.acquire()
            except FileNotFoundError:  # the directory was removed since we made it
                self._dir_ready = False
                self._make_dir()
                held.acquire()
            try:
                return fn(owner, inbox)
            finally:
                held.release()
        except filelock.Timeout:
            if timeout == 0:
                raise
            raise SteeringStoreError(
                f"timed out after {self.lock_timeout}s waiting for {str(lock)!r}"
            ) from None
        except OSError as exc:
            raise self._unusable(exc) from None

    def _make_dir(self) -> None:
        if not self._dir_ready:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._dir_ready = True

    def _unusable(self, exc: OSError) -> SteeringStoreError:
        return SteeringStoreError(
            f"cannot use the live-message inbox in {str(self.directory)!r}: {exc.strerror}"
        )

    # the owner ---------------------------------------------------------------------------------

    def open_sync(self, session_id: str, run_id: str, *, timeout: float | None = None) -> None:
        """This process's run of ``session_id`` owns the inbox from now on (under the lock
        once a pusher made one; module docstring)."""
        data = orjson.dumps({"pid": os.getpid(), "runId": run_id})

        def apply(owner: str, _inbox: str) -> None:
            _write_owner(owner, data)

        owner, _inbox, lock = self._paths(session_id)
        if os.path.exists(lock):
            self._locked(session_id, apply, timeout=timeout)
            return
        try:
            try:
                apply(owner, _inbox)
            except FileNotFoundError:  # the directory is not there (yet, or any more)
                self._dir_ready = False
                self._make_dir()
                apply(owner, _inbox)
        except OSError as exc:
            raise self._unusable(exc) from None

    def _has_mail(self, session_id: str) -> bool:
        # ``os.path.exists`` without its stat result, and without the exception it raises
        # and catches when the inbox is not there (nearly always: asked at every turn)
        return os.access(self._paths(session_id)[1], os.F_OK)

    def take_sync(self, session_id: str) -> list[LiveMessage]:
        """The messages that arrived, oldest first (emptying the inbox)."""
        if not self._has_mail(session_id):
            return []

        def apply(_owner: str, inbox: str) -> list[LiveMessage]:
            return _read_and_remove(inbox)

        return cast("list[LiveMessage]", self._locked(session_id, apply))

    def close_sync(
        self, session_id: str, run_id: str, *, timeout: float | None = None
    ) -> list[LiveMessage]:
        """The run ended: give the inbox up (if this run still owns it); returns what arrived
        after the last drain."""

        def give_up(owner: str) -> bool:
            current = _read_owner(owner)
            if current is not None and current.get("runId") != run_id:
                return False  # a later run took it over
            with contextlib.suppress(FileNotFoundError):
                os.unlink(owner)
            return True

        owner, _inbox, lock = self._paths(session_id)
        try:
            if not give_up(owner):  # a later run took it over: its messages stay
                return []
        except OSError as exc:
            raise self._unusable(exc) from None
        if not os.path.exists(lock):
            return []  # nobody ever pushed; a pusher that locks from now on finds no owner
        # a pusher made the lock (now or before): what it appended is drained under the lock

        def drain(_owner: str, inbox: str) -> list[LiveMessage]:
            return _read_and_remove(inbox)

        return cast("list[LiveMessage]", self._locked(session_id, drain, timeout=timeout))

    # everyone else -----------------------------------------------------------------------------

    def push_sync(self, session_id: str, kind: Literal["steer", "follow_up"], text: str) -> bool:
        """Append a message for the run that owns the inbox; False when no live process owns
        it (no run, or its process died)."""

        def apply(owner: str, inbox: str) -> bool:
            current = _read_owner(owner)
            pid = current.get("pid") if current else None
            if not isinstance(pid, int) or not _pid_alive(pid):
                return False
            line = orjson.dumps({"kind": kind, "text": redact(text)}) + b"\n"
            with open(inbox, "ab") as handle:
                handle.write(line)
            return True

        return bool(self._locked(session_id, apply))

    def owned_sync(self, session_id: str) -> bool:
        """Does a live process own the inbox of ``session_id`` (a run is active there)?"""
        owner, _inbox, _lock = self._paths(session_id)
        current = _read_owner(owner)
        pid = current.get("pid") if current else None
        return isinstance(pid, int) and _pid_alive(pid)

    # async faces -------------------------------------------------------------------------------

    async def open(self, session_id: str, run_id: str) -> None:
        """``open_sync``: on the loop when the lock is free at once (a few small local file
        operations; a thread hop costs a run more than the work), else off the loop."""
        try:
            self.open_sync(session_id, run_id, timeout=0)
        except filelock.Timeout:
            await anyio.to_thread.run_sync(self.open_sync, session_id, run_id)

    async def take(self, session_id: str) -> list[LiveMessage]:
        """``take_sync``; the empty case is a ``stat`` on the loop."""
        if not self._has_mail(session_id):
            return []
        return await anyio.to_thread.run_sync(self.take_sync, session_id)

    async def close(self, session_id: str, run_id: str) -> list[LiveMessage]:
        """``close_sync``, on the loop when the lock is free at once (see ``open``)."""
        try:
            return self.close_sync(session_id, run_id, timeout=0)
        except filelock.Timeout:
            return await anyio.to_thread.run_sync(self.close_sync, session_id, run_id)

    async def push(self, session_id: str, kind: Literal["steer", "follow_up"], text: str) -> bool:
        """``push_sync`` off the event loop."""
        return await anyio.to_thread.run_sync(self.push_sync, session_id, kind, text)

    async def owned(self, session_id: str) -> bool:
        """``owned_sync`` off the event loop."""
        return await anyio.to_thread.run_sync(self.owned_sync, session_id)


def _write_owner(path: str, data: bytes) -> None:
    """``Path.write_bytes`` with plain ``os`` calls (same flags and mode, fewer calls)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def _read_owner(path: str) -> dict[str, Any] | None:
    try:
        data = read_file(path)
    except FileNotFoundError:
        return None
    if not data:
        return None  # an owner writing its file this instant: not (yet) owned
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        logger.warning("ignoring a damaged live-inbox owner file %s", os.path.basename(path))
        return None
    return value if isinstance(value, dict) else None


def _read_and_remove(inbox: str) -> list[LiveMessage]:
    try:
        data = read_file(inbox)
    except FileNotFoundError:
        return []
    os.unlink(inbox)
    out: list[LiveMessage] = []
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            logger.warning("skipping a damaged line of the live inbox %s", os.path.basename(inbox))
            continue
        kind, text = item.get("kind"), item.get("text")
        if kind in ("steer", "follow_up") and isinstance(text, str):
            out.append((kind, text))
    return out
