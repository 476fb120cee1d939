"""``SessionManager``: the only writer of JSONL session files.

One manager owns one session file. It loads the file in a single pass (repairing it first
when needed, see :mod:`.repair`), keeps the entry tree in memory, and appends typed entries:

* every append is one ``write`` of one complete line under the session's cross-process lock
  (``<file>.runtime.lock``); before writing, lines other processes appended are read and joined to
  the tree, and a torn last line left by a crashed writer is terminated so it cannot swallow
  the next entry;
* the durability policy decides what an append waits for: ``"none"`` buffers lines until
  :meth:`SessionManager.flush` (fast, a crash loses the buffer), ``"flush"`` (default) hands
  each line to the OS before returning (a process crash loses at most the line being
  written), ``"fsync"`` also waits for the disk;
* whole-file rewrites (sanitising, compaction) are atomic: temp file, ``fsync``, ``os.replace``.

Reads (:meth:`~SessionManager.get_branch`, :meth:`~SessionManager.build_session_context`...)
are synchronous and work on the in-memory tree. Entries are the plain dicts of the file;
treat them as read-only.

The class is built in layers, one module each: ``reader`` (state and reads), ``append``
(appends, flush), ``rewrite`` (whole-session rewrites), with loading and repair in ``load``
and the entry index in ``tree``. This module opens and creates session files
(``SessionManager``) and keeps a folder of them (``JsonlSessionStore``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio

from .._exceptions import TranscriptError
from .._files import remove_stale_temps
from .entries import iso_timestamp, make_header
from .jsonl import (
    DEFAULT_LOCK_TIMEOUT,
    Durability,
    create_exclusive,
    encode_record,
    session_lock,
    session_lock_path,
)
from .load import Clock, ExternalChanges, load_session_file, utc_now
from .reader import Warn
from .repair import summarize_repair
from .replay_checkpoint import read_side_file
from .rewrite import SessionRewriter
from .session_ids import InvalidSessionIdError, session_file_path, validate_session_id
from .tree import SessionTree

__all__ = ["JsonlSessionStore", "SessionManager"]

_T = TypeVar("_T")


async def _run_released(func: Callable[[], _T]) -> _T:
    """``anyio.to_thread.run_sync(func)``, but the worker thread never keeps ``func`` (and
    what it reaches) alive after the call. anyio's and trio's workers let go of the function
    only after handing its result back; a caller that then drops the last other reference
    (a session closed and evicted) leaves the worker to tear the object down later, holding
    the GIL against whatever the event loop runs next (≈ 17 ms for a 10 000-message session,
    landing in the next turn or not, by thread timing). Here the loop thread takes back the
    worker's only path to ``func`` when the call returns, so the teardown is the caller's."""
    held = [func]

    def call() -> _T:
        return held[0]()

    try:
        return await anyio.to_thread.run_sync(call)
    finally:
        held.clear()


class SessionManager(SessionRewriter):
    """Reads and appends one JSONL session file; the only code that writes session files.

    Create with :meth:`create` or :meth:`open` (or :meth:`open_sync` when not in async code).
    """

    # construction ------------------------------------------------------------------------

    @classmethod
    async def create(
        cls,
        path: str | Path,
        *,
        session_id: str,
        cwd: str,
        parent_session: str | None = None,
        durability: Durability = "flush",
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        now: Clock | None = None,
        warn: Warn | None = None,
    ) -> SessionManager:
        """Create a new session file holding only its header (fails if the file exists)."""
        return await anyio.to_thread.run_sync(
            lambda: cls.create_sync(
                path,
                session_id=session_id,
                cwd=cwd,
                parent_session=parent_session,
                durability=durability,
                lock_timeout=lock_timeout,
                now=now,
                warn=warn,
            )
        )

    @classmethod
    def create_sync(
        cls,
        path: str | Path,
        *,
        session_id: str,
        cwd: str,
        parent_session: str | None = None,
        durability: Durability = "flush",
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        now: Clock | None = None,
        warn: Warn | None = None,
    ) -> SessionManager:
        """Blocking form of :meth:`create`."""
        target = path if isinstance(path, Path) else Path(path)
        clock = now or utc_now
        header = make_header(
            session_id, cwd, parent_session=parent_session, timestamp=iso_timestamp(clock())
        )
        content = encode_record(header)
        try:
            try:
                inode = create_exclusive(target, content, fsync=durability != "none")
            except FileNotFoundError:  # no folder yet: made at the first session, not each
                target.parent.mkdir(parents=True, exist_ok=True)
                inode = create_exclusive(target, content, fsync=durability != "none")
        except FileExistsError:
            raise TranscriptError(f"session file {target.name} already exists") from None
        manager = cls(
            target,
            SessionTree.build(header, []),
            durability=durability,
            lock_timeout=lock_timeout,
            now=clock,
            warn=warn,
            # what this process wrote, not a stat of the name: lines another process appends
            # once the file has its name are read at the next write, not taken as seen
            file_state=(inode, len(content)),
        )
        # No lock file yet: the first flush makes it (``FlockLock`` opens it creating), on the
        # event loop as creating it here would have been, and a run that never writes makes
        # none. Made here it cost one more ``open`` and ``close`` per fresh session.
        manager._lock_file_ready = True
        manager.replay_checkpoint.start_empty()  # a file made just now: no side file is its
        return manager

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        repair: bool = True,
        durability: Durability = "flush",
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        now: Clock | None = None,
        warn: Warn | None = None,
    ) -> SessionManager:
        """Load a session file, repairing it first when needed (``repair=False`` only reads).

        Unreadable lines are never lost: with ``repair`` they are moved to
        ``<file>.invalid.jsonl`` and the session is rewritten without them; without it they
        are skipped in memory and the file is left as it is.
        """
        return await anyio.to_thread.run_sync(
            lambda: cls.open_sync(
                path,
                repair=repair,
                durability=durability,
                lock_timeout=lock_timeout,
                now=now,
                warn=warn,
            )
        )

    @classmethod
    def open_sync(
        cls,
        path: str | Path,
        *,
        repair: bool = True,
        durability: Durability = "flush",
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        now: Clock | None = None,
        warn: Warn | None = None,
    ) -> SessionManager:
        """Blocking form of :meth:`open`."""
        target = Path(path)
        clock = now or utc_now
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise TranscriptError(f"session file {target.name} does not exist") from None
        except IsADirectoryError:
            raise TranscriptError(f"session file {target.name} is a directory") from None
        side, known = read_side_file(target) if cls.keeps_replay_checkpoint else (None, None)
        tree, report, state = load_session_file(
            target, data, repair=repair, clock=clock, timeout=lock_timeout, known=known
        )
        manager = cls(
            target,
            tree,
            durability=durability,
            lock_timeout=lock_timeout,
            now=clock,
            warn=warn,
            repair_report=report,
            file_state=state,
        )
        if report.repaired and warn:
            kept = (
                f"; malformed lines kept in {Path(report.invalid_lines_path).name}"
                if report.invalid_lines_path
                else ""
            )
            why = f" {report.reason}," if report.reason else ""
            warn(f"session file repaired:{why} {summarize_repair(report)} ({target.name}){kept}")
        manager.replay_checkpoint.read_already(side)
        for problem in tree.repair_pointers():
            manager._report(f"session {target.name}: {problem}")
        manager._lock_file_ready = os.path.exists(session_lock_path(target))
        return manager

    async def __aenter__(self) -> SessionManager:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Flush buffered lines (durability ``"none"``) and stop accepting writes."""
        if self.closed:
            return
        await self.flush()
        self.closed = True
        await self._close_flush_files()
        if self.replay_checkpoint.due():
            # the session may be dropped right after: its teardown must not go to the worker
            await _run_released(self._record_replay_checkpoint)
        head = self._tree.clean_head
        if head is not None and head.crc is None:  # never recorded: its loaded bytes go
            self._tree.clean_head = None

    def _record_replay_checkpoint(self) -> None:
        try:
            with session_lock(self.path, timeout=self.lock_timeout):
                self.replay_checkpoint.record(force=True)
        except TranscriptError:  # the lock not had in time: a cache, recorded next time
            pass

    async def refresh(self) -> bool:
        """Take in what other writers appended since our last read or write.

        Costs one ``stat`` when nothing changed, which is what lets a runtime keep sessions
        open between turns instead of re-reading the whole file each time. Returns whether
        anything was read.
        """
        if self.closed:
            raise TranscriptError(f"session {self.path.name} is closed")
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            raise TranscriptError(f"session file {self.path.name} was removed") from None
        if (stat.st_ino, stat.st_size) == self._file_state and not self._pending:
            return False
        await self.flush()
        async with self._write_lock:

            def read() -> ExternalChanges:
                with session_lock(self.path, timeout=self.lock_timeout):
                    return self._read_external_changes()

            external = await anyio.to_thread.run_sync(read)
            self._absorb(external)
        return True


# --------------------------------------------------------------------------- folder of sessions


class JsonlSessionStore:
    """A folder of ``<session id>.jsonl`` files; ids are validated so paths never escape it."""

    def __init__(
        self,
        sessions_dir: str | Path,
        *,
        durability: Durability = "flush",
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        now: Clock | None = None,
        warn: Warn | None = None,
    ) -> None:
        self.sessions_dir = Path(sessions_dir)
        self._resolved_root: Path | None = None  # resolved once, at the first path_for
        self.durability: Durability = durability
        self.lock_timeout = lock_timeout
        self._now = now
        self._warn = warn
        self._swept = False

    def _sweep(self) -> None:
        """Once per store: remove temp files that writers killed mid-write left behind."""
        if not self._swept:
            self._swept = True
            remove_stale_temps(self.sessions_dir)

    def path_for(self, session_id: str) -> Path:
        """The file of a session id (``InvalidSessionIdError`` for unsafe ids)."""
        root = self._resolved_root
        if root is None:
            root = self._resolved_root = self.sessions_dir.resolve()
        return session_file_path(self.sessions_dir, session_id, resolved_root=root)

    def exists_sync(self, session_id: str) -> bool:
        """Whether the session has a file."""
        return self.path_for(session_id).is_file()

    async def exists(self, session_id: str) -> bool:
        """Whether the session has a file."""
        return self.exists_sync(session_id)

    def list_ids_sync(self) -> list[str]:
        """Every session id with a file, sorted (checkpoints and foreign files skipped)."""
        if not self.sessions_dir.is_dir():
            return []
        out = []
        for path in sorted(self.sessions_dir.glob("*.jsonl")):
            if path.name.endswith(".invalid.jsonl") or not path.is_file():
                continue
            try:
                out.append(validate_session_id(path.stem))
            except InvalidSessionIdError:
                continue
        return out

    async def list_ids(self) -> list[str]:
        """Every stored session id (sorted)."""
        return await anyio.to_thread.run_sync(self.list_ids_sync)

    async def create(
        self, session_id: str, *, cwd: str, parent_session: str | None = None
    ) -> SessionManager:
        """Create a new session file."""
        return await self._create_at(
            self.path_for(session_id),
            validate_session_id(session_id),
            cwd=cwd,
            parent_session=parent_session,
        )

    async def _create_at(
        self, path: Path, safe_id: str, *, cwd: str, parent_session: str | None = None
    ) -> SessionManager:
        self._sweep()
        create = partial(
            SessionManager.create_sync,
            path,
            session_id=safe_id,
            cwd=cwd,
            parent_session=parent_session,
            durability=self.durability,
            lock_timeout=self.lock_timeout,
            now=self._now,
            warn=self._warn,
        )
        if self.durability == "none":
            # nothing waits for the disk (no fsync) nor for a lock: a few small local file
            # operations, like the turn-end flush that runs on the event loop too; a worker
            # thread hop would cost the run more than the work (``SessionManager.create``)
            return create()
        return await anyio.to_thread.run_sync(create)

    async def open(self, session_id: str, *, repair: bool = True) -> SessionManager:
        """Open an existing session (repairing it when needed)."""
        self._sweep()
        return await SessionManager.open(
            self.path_for(session_id),
            repair=repair,
            durability=self.durability,
            lock_timeout=self.lock_timeout,
            now=self._now,
            warn=self._warn,
        )

    async def open_or_create(self, session_id: str, *, cwd: str) -> SessionManager:
        """Open a session, creating its file first when it has none."""
        safe_id = validate_session_id(session_id)
        path = self._file_if_missing(safe_id)
        if path is None:
            path = self.path_for(safe_id)
            if _exists(path):
                return await self.open(safe_id)
        try:
            return await self._create_at(path, safe_id, cwd=cwd)
        except TranscriptError:
            pass  # another writer created it first: open theirs
        return await self.open(safe_id)

    def _file_if_missing(self, safe_id: str) -> Path | None:
        """The file of a session that has none (nothing at its name, not even a symbolic
        link: what ``path_for`` then gives, for one ``lstat`` instead of its ``lstat`` and a
        ``stat``), else ``None``."""
        root = self._resolved_root
        if root is None:
            root = self._resolved_root = self.sessions_dir.resolve()
        path = root / f"{safe_id}.jsonl"
        try:
            os.lstat(path)
        except FileNotFoundError:
            return path
        return None


def _exists(path: Path) -> bool:
    return os.path.exists(path)
