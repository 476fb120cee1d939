"""The session index: which session id a session key points at (``sessions/index.json``).

Chat front-ends know their conversations by a key (``telegram:4711``); transcripts are files
named by session id. The index maps one to the other so a run given only a key continues its
session, and a run given only an id gets its key backfilled at the earliest point (OpenClaw's
``backfillSessionKey``), which lanes, hooks and engines need. It is a small JSON file written
atomically under a file lock, so several processes can share a state directory. A damaged
index is set aside (``index.json.corrupt-<time>-<pid>``, with a warning) and starts empty
(``_files.load_or_set_aside``); entries this version cannot read are carried through writes.

OpenClaw's own index, ``sessions.json`` in the same folder (``openclaw_sessions``), is read
too, never written: a key this index does not know is looked up there, so a key OpenClaw
created continues OpenClaw's transcript, and a run on such a key writes nothing here (the
binding stays OpenClaw's). A key bound here wins over OpenClaw's binding of it.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import orjson
from filelock import FileLock

from .._files import DamagedStateFile, atomic_write, load_or_set_aside, remove_stale_temps
from ..redaction import package_logger
from .openclaw_sessions import (
    OPENCLAW_SESSION_INDEX_FILE,
    OpenClawSessionIndex,
    OpenClawSessionIndexError,
    openclaw_entry_session_id,
)

__all__ = ["JsonFileSessionIndex", "SessionIndex", "SessionIndexEntry"]

T = TypeVar("T")
SessionIndexEntry = dict[str, Any]
logger = package_logger(logging.getLogger("openclaw_runtime.sessions"))


def parse_session_index(data: bytes) -> tuple[dict[str, SessionIndexEntry], dict[str, Any]]:
    """``(entries, unreadable)`` of an ``index.json``; ``DamagedStateFile`` when it is not one.

    An entry that is not an object is unreadable: kept (and written back) but never used.
    """
    if not data.strip():
        return {}, {}
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DamagedStateFile(f"not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise DamagedStateFile("not a JSON object")
    sessions = document.get("sessions", {})
    if not isinstance(sessions, dict):
        raise DamagedStateFile('"sessions" is not an object')
    index = {str(k): v for k, v in sessions.items() if isinstance(v, dict)}
    unreadable = {str(k): v for k, v in sessions.items() if not isinstance(v, dict)}
    return index, unreadable


def _updated_at(entry: SessionIndexEntry) -> float:
    value = entry.get("updatedAt")
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return 0.0


class JsonFileSessionIndex:
    """``key → {"sessionId", "updatedAt"}``, shared through a locked JSON file (the embedded
    ``SessionIndex`` backend). The ``*_sync`` lookups are the blocking forms (one ``stat`` when
    the file did not change); the async ones are the ``backends.SessionIndex`` protocol."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lock_timeout: float = 30.0,
        openclaw_index: bool | str | os.PathLike[str] = True,
    ) -> None:
        """:param openclaw_index: OpenClaw's ``sessions.json`` to read as well: ``True`` the
        one beside ``path``, a path that file, ``False`` none."""
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        if openclaw_index is True:
            openclaw_index = self.path.with_name(OPENCLAW_SESSION_INDEX_FILE)
        self.openclaw: OpenClawSessionIndex | None = (
            None if openclaw_index is False else OpenClawSessionIndex(openclaw_index)
        )
        self._cache: tuple[tuple[int, int], dict[str, SessionIndexEntry]] | None = None
        self._swept = False  # stale temp files of dead writers removed (once, at first read)

    def _lock(self) -> FileLock:
        return FileLock(str(self.path) + ".lock", timeout=self.lock_timeout)

    def _sweep(self) -> None:
        if not self._swept:
            self._swept = True
            remove_stale_temps(self.path.parent, [self.path.name])

    def _load(self, *, locked: bool) -> tuple[dict[str, SessionIndexEntry], dict[str, Any]]:
        self._sweep()
        return load_or_set_aside(
            self.path,
            parse_session_index,
            lambda: ({}, {}),
            what="session index",
            logger=logger,
            lock=None if locked else self._lock,
        )

    def _read(self) -> dict[str, SessionIndexEntry]:
        self._sweep()
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {}
        marker = (stat.st_ino, stat.st_mtime_ns)
        if self._cache is not None and self._cache[0] == marker:
            return self._cache[1]
        index = self._load(locked=False)[0]
        self._cache = (marker, index)
        return index

    def _update_sync(self, fn: Callable[[dict[str, SessionIndexEntry]], T]) -> T:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock():
            self._cache = None
            loaded, unreadable = self._load(locked=True)
            index = dict(loaded)
            result = fn(index)
            sessions = {**unreadable, **index}
            payload = orjson.dumps({"version": 1, "sessions": sessions}, option=orjson.OPT_INDENT_2)
            atomic_write(self.path, payload, tag="index")
            self._cache = None
            return result

    def _own_id(self, session_key: str) -> str | None:
        entry = self._read().get(session_key)
        value = entry.get("sessionId") if entry else None
        return value if isinstance(value, str) else None

    def _openclaw_or_warn(self, lookup: Callable[[OpenClawSessionIndex], T]) -> T | None:
        """An OpenClaw lookup where a broken ``sessions.json`` only costs a warning."""
        if self.openclaw is None:
            return None
        try:
            return lookup(self.openclaw)
        except OpenClawSessionIndexError as exc:
            logger.warning("%s", exc)
            return None

    def lookup_id_sync(self, session_key: str) -> str | None:
        """The session id bound to ``session_key`` here, else in OpenClaw's ``sessions.json``
        (``OpenClawSessionIndexError``, naming the file, when that file is not readable)."""
        own = self._own_id(session_key)
        if own is not None or self.openclaw is None:
            return own
        return self.openclaw.lookup_id(session_key)

    def lookup_key_sync(self, session_id: str) -> str | None:
        """The (most recently updated) key bound to ``session_id`` — the backfill; OpenClaw's
        keys when this index has none (a broken ``sessions.json`` is only a warning here)."""
        best: tuple[float, str] | None = None
        for key, entry in self._read().items():
            if entry.get("sessionId") == session_id:
                updated = _updated_at(entry)
                if best is None or updated > best[0]:
                    best = (updated, key)
        if best is not None:
            return best[1]
        return self._openclaw_or_warn(lambda index: index.lookup_key(session_id))

    def entries_sync(self) -> dict[str, SessionIndexEntry]:
        """A copy of the whole index, OpenClaw's keys included (``"source": "openclaw"``)."""
        merged: dict[str, SessionIndexEntry] = {}
        openclaw = self._openclaw_or_warn(lambda index: index.entries())
        if openclaw and self.openclaw is not None:
            for key, entry in openclaw.items():
                session_id = openclaw_entry_session_id(entry, self.openclaw.sessions_dir)
                if session_id is not None:
                    merged[key] = {
                        "sessionId": session_id,
                        "updatedAt": _updated_at(entry),
                        "source": "openclaw",
                    }
        merged.update({key: dict(value) for key, value in self._read().items()})
        return merged

    async def lookup_id(self, session_key: str) -> str | None:
        """The session id bound to ``session_key``."""
        return self.lookup_id_sync(session_key)

    async def lookup_key(self, session_id: str) -> str | None:
        """The (most recently updated) key bound to ``session_id`` — the backfill."""
        return self.lookup_key_sync(session_id)

    async def entries(self) -> dict[str, SessionIndexEntry]:
        """A copy of the whole index."""
        return self.entries_sync()

    async def claim(self, session_key: str, session_id: str) -> str:
        """Bind ``session_key`` to ``session_id`` unless it is already bound; returns the id
        the key points at afterwards. Atomic across processes, so two first turns of one
        conversation arriving together end up in the same session."""
        bound = self.lookup_id_sync(session_key)
        if bound is not None:
            return bound

        def update(index: dict[str, SessionIndexEntry]) -> str:
            entry = index.get(session_key)
            existing = entry.get("sessionId") if entry else None
            if isinstance(existing, str):
                return existing
            index[session_key] = {"sessionId": session_id, "updatedAt": int(time.time() * 1000)}
            return session_id

        return await anyio.to_thread.run_sync(self._update_sync, update)

    async def bind(self, session_key: str, session_id: str) -> None:
        """Point ``session_key`` at ``session_id`` (no write when already so, here or — for a
        key this index does not hold — in OpenClaw's ``sessions.json``)."""
        entry = self._read().get(session_key)
        if entry is not None and entry.get("sessionId") == session_id:
            return
        if entry is None and session_id == self._openclaw_or_warn(
            lambda index: index.lookup_id(session_key)
        ):
            return

        def update(index: dict[str, SessionIndexEntry]) -> None:
            index[session_key] = {"sessionId": session_id, "updatedAt": int(time.time() * 1000)}

        await anyio.to_thread.run_sync(self._update_sync, update)


#: The embedded index under its earlier name.
SessionIndex = JsonFileSessionIndex
