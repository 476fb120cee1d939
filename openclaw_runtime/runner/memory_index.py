"""The session index kept in this process: ``[backends] session_index = "memory"``.

Key → ``{"sessionId", "updatedAt"}`` as the embedded ``sessions/index.json`` holds it, in a
dict instead of a file: nothing under ``state_dir``, lost at exit, seen by this process only.
Every method is synchronous inside (no ``await`` between a read and its write), so a claim
is atomic among the tasks of an event loop; a ``threading.Lock`` covers other threads.
``lookup_key`` is exact (the key bound last wins, also within one millisecond) through a
reverse map kept beside the index.
"""

from __future__ import annotations

import threading
import time

from ..backends.sessions import SessionIndexEntry

__all__ = ["InMemorySessionIndex"]


class InMemorySessionIndex:
    """Session key → session id in this process (the ``"memory"`` ``SessionIndex``)."""

    def __init__(self) -> None:
        self._index: dict[str, SessionIndexEntry] = {}
        #: session id → its keys in bind order (the last one is the most recently bound)
        self._keys: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InMemorySessionIndex(keys={len(self._index)})"

    def _bind(self, session_key: str, session_id: str) -> None:
        """Point the key at the id (the lock is held)."""
        previous = self._index.get(session_key)
        if previous is not None:
            keys = self._keys.get(previous["sessionId"], [])
            if session_key in keys:
                keys.remove(session_key)
            if not keys:
                self._keys.pop(previous["sessionId"], None)
        self._index[session_key] = {"sessionId": session_id, "updatedAt": int(time.time() * 1000)}
        self._keys.setdefault(session_id, []).append(session_key)

    async def lookup_id(self, session_key: str) -> str | None:
        """The session id bound to ``session_key``, or None."""
        entry = self._index.get(session_key)
        return None if entry is None else str(entry["sessionId"])

    async def lookup_key(self, session_id: str) -> str | None:
        """The key bound most recently to ``session_id``, or None."""
        keys = self._keys.get(session_id)
        return keys[-1] if keys else None

    async def entries(self) -> dict[str, SessionIndexEntry]:
        """A copy of the whole index."""
        with self._lock:
            return {key: dict(entry) for key, entry in self._index.items()}

    async def claim(self, session_key: str, session_id: str) -> str:
        """Bind ``session_key`` to ``session_id`` unless it is bound; the id it points at."""
        with self._lock:
            entry = self._index.get(session_key)
            if entry is not None:
                return str(entry["sessionId"])
            self._bind(session_key, session_id)
            return session_id

    async def bind(self, session_key: str, session_id: str) -> None:
        """Point ``session_key`` at ``session_id`` (nothing changes when it already does)."""
        with self._lock:
            entry = self._index.get(session_key)
            if entry is None or entry["sessionId"] != session_id:
                self._bind(session_key, session_id)
