"""Sessions kept in this process only: ``[backends] session_store = "memory"``.

For stateless services, tests and benchmarks that must not touch the disk: no session file,
no lock file, no side file is ever created, and everything is gone when the process exits.

``MemorySessionStore`` keeps each session as the list of JSONL lines the file store would
write (``jsonl.encode_record``, header first) plus a generation that a whole rewrite bumps, so
the entries are OpenClaw's records byte for byte (``export_jsonl`` gives the file a
``JsonlSessionStore`` would hold) and every handle parses its own copy, as with files.

``MemorySession`` is the core ``SessionRewriter`` (the entry tree, branches, context building,
every ``append_*`` and ``rewrite_transcript_entries`` are inherited) with its I/O moved to
that list:

* an append publishes its line at once, after joining what other handles of the session
  appended (the in-memory twin of "re-read the tail under the lock before appending"), so
  ``flush`` has nothing left to do and another handle's ``refresh`` sees it right away;
* a message model's line gets ``encode_record``'s secret scan only when something reads the
  lines (``_StoredSession.finish``): with one handle per session nothing does, and the scan
  was most of an append's encoding (the JSON itself is made at once: see ``_append_now``);
* ``refresh`` compares (generation, length): no work when nothing changed;
* ``rewrite_entries`` swaps the list whole and bumps the generation (readers see the old
  transcript or the new one, never a mix).

One ``threading.Lock`` per session guards the list, so handles in other threads of the
process are safe too; nothing is shared with other processes. Sessions stay until the process
exits or ``MemorySessionStore.delete`` drops one (a service that starts a session per request
deletes it when done); a handle of a deleted session refuses to refresh or append, as a file
session does when its file was removed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .._exceptions import TranscriptError
from ..redaction import SecretMatchers, secret_matchers
from .entries import iso_timestamp, make_header
from .jsonl import Durability, encode_record, finish_line, parse_session_bytes, unscanned_line
from .load import ExternalChanges, bulk_allocation, parse_appended, utc_now
from .reader import check_durability
from .repair import plan_session_repair
from .rewrite import SessionRewriter, checked_rewrite_records
from .session_ids import validate_session_id
from .tree import SessionTree

__all__ = ["MemorySession", "MemorySessionStore", "aclose_is_noop", "flush_is_noop"]

Warn = Callable[[str], None]
Clock = Callable[[], datetime]


@dataclass
class _StoredSession:
    """One session's lines (header first) and the generation of its last whole rewrite.

    The lines from ``raw_from`` on are message models' ``unscanned_line``s, made while the
    secrets registered were ``raw_matchers``; ``finish`` scans them (readers call it first).
    Every method here runs with ``lock`` held.
    """

    lines: list[bytes]
    generation: int = 0
    removed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    raw_from: int | None = None
    raw_matchers: SecretMatchers | None = None

    def state(self) -> tuple[int, int]:
        return self.generation, len(self.lines)

    def add(self, line: bytes) -> None:
        """Append a finished line (``encode_record``'s), after finishing the unscanned ones."""
        if self.raw_from is not None:
            self.finish()
        self.lines.append(line)

    def add_unscanned(self, line: bytes, matchers: SecretMatchers) -> None:
        """Append an ``unscanned_line`` made under ``matchers`` (``secret_matchers()``);
        lines kept under other secrets are finished first, so each line is scanned with the
        secrets registered at its own append, as ``encode_record`` would have."""
        lines = self.lines
        if self.raw_from is None:
            self.raw_from = len(lines)
            self.raw_matchers = matchers
        elif self.raw_matchers is not matchers:
            self.finish()
            self.raw_from = len(lines)
            self.raw_matchers = matchers
        lines.append(line)

    def finish(self) -> None:
        """Scan the unscanned lines in place: each is scanned once."""
        start, matchers = self.raw_from, self.raw_matchers
        if start is None or matchers is None:
            return
        lines = self.lines
        for index in range(start, len(lines)):
            lines[index] = finish_line(lines[index], matchers)
        self.raw_from = self.raw_matchers = None

    def replace(self, lines: list[bytes]) -> None:
        """A whole rewrite: ``lines`` (finished) and a new generation."""
        self.lines = lines
        self.raw_from = self.raw_matchers = None
        self.generation += 1


def _tree_from_lines(lines: list[bytes], session_id: str) -> SessionTree:
    """The entry tree of lines this store wrote (they never need repair)."""
    with bulk_allocation():
        parsed = parse_session_bytes(b"".join(lines))
    if parsed.header is None or parsed.header_problem is not None:  # pragma: no cover
        raise TranscriptError(f"cannot load session {session_id}: {parsed.header_problem}")
    plan = plan_session_repair(parsed, as_written=True)
    tree = SessionTree.build(parsed.header, plan.entries)
    tree.repair_pointers()
    return tree


def _memory_path(session_id: str) -> Path:
    """What ``Session.path`` names: not a file (``str()`` goes into results and events)."""
    return Path(f"memory:{session_id}")


class MemorySession(SessionRewriter):
    """An open in-memory session (see the module docstring); nothing touches the disk."""

    keeps_replay_checkpoint = False  # not a file: no side file beside it
    locks_by_path = False  # nor a lock file: the stored session's own lock guards it

    def __init__(
        self,
        stored: _StoredSession,
        tree: SessionTree,
        *,
        now: Clock | None = None,
        warn: Warn | None = None,
    ) -> None:
        super().__init__(
            _memory_path(str(tree.header["id"])),
            tree,
            durability="flush",  # every append is published at once: nothing to buffer
            now=now,
            warn=warn,
            file_state=stored.state(),
        )
        self._stored = stored

    @property
    def durability(self) -> Durability:
        """Always ``"flush"``: every append is published to the store as it returns."""
        return "flush"

    @durability.setter
    def durability(self, value: Durability) -> None:
        # "none" would buffer lines until a flush, and a memory session's flush has nothing
        # to write them to: refused rather than lost
        check_durability(value)
        if value == "none":
            raise ValueError(
                f"session {self.session_id}: a memory session publishes every append at once; "
                "durability 'none' (buffer until flush) does not apply"
            )

    def _read_external_changes(self) -> ExternalChanges:
        """What other handles did since our last read or write: the appended lines, or the
        whole tree after a rewrite."""
        stored = self._stored
        generation, size = self._file_state
        with stored.lock:
            stored.finish()
            now = stored.state()
            delta = stored.lines[size:] if now[0] == generation else list(stored.lines)
        self._file_state = now
        if now[0] != generation:
            return ExternalChanges(tree=_tree_from_lines(delta, self.session_id))
        if not delta:
            return ExternalChanges()
        entries, _ = parse_appended(b"".join(delta))
        return ExternalChanges(entries=entries)

    async def refresh(self) -> bool:
        """Take in what other handles appended or rewrote; whether anything changed."""
        if self.closed:
            raise TranscriptError(f"session {self.path.name} is closed")
        if self._stored.removed:
            raise TranscriptError(f"session {self.session_id} was deleted")
        if self._stored.state() == self._file_state:
            return False
        async with self._write_lock:
            self._absorb(self._read_external_changes())
        return True

    def _appends_at_once(self) -> bool:
        """Always: an append here publishes to memory and never suspends (``_append_now``),
        so ``SessionWriter._append`` skips the write lock whenever nobody holds it. When
        another task holds it (a rewrite or a refresh), the append waits for it as before."""
        return True

    def _append_at_once(
        self,
        kind: str,
        payload: dict[str, Any],
        append_mode: str | None,
        parent: str | None,
        json_values: bool = False,
    ) -> str:
        return self._append_now(kind, payload, append_mode, parent, json_values)

    async def _append_durably(
        self, kind: str, payload: dict[str, Any], append_mode: str | None, parent: str | None
    ) -> str:
        return self._append_now(kind, payload, append_mode, parent)

    def _append_now(
        self,
        kind: str,
        payload: dict[str, Any],
        append_mode: str | None,
        parent: str | None,
        json_values: bool = False,
    ) -> str:
        """Publish one entry (nobody else is inside the write lock's section meanwhile).
        ``json_values``: the payload holds JSON values only, so the line's secret scan may
        wait for a reader (``_StoredSession.finish``). Its JSON is made now: a later change
        to the entry's objects cannot reach the line, and what cannot be encoded fails here."""
        stored = self._stored
        while True:
            with stored.lock:
                if stored.removed:
                    raise TranscriptError(f"session {self.session_id} was deleted")
                lines = stored.lines
                if (stored.generation, len(lines)) == self._file_state:  # ``state()``, inline
                    entry = self._new_entry(kind, payload, append_mode, parent)
                    if json_values:
                        stored.add_unscanned(unscanned_line(entry), secret_matchers())
                    else:
                        stored.add(encode_record(entry))
                    self._file_state = (stored.generation, len(lines))
                    break
            # another handle appended (or rewrote): join its entries, then append after them
            self._absorb(self._read_external_changes())
        self._record([entry])
        return str(entry["id"])

    async def flush(self) -> None:
        """Nothing to do: every append is visible to other handles as soon as it returns."""

    async def aclose(self) -> None:
        """Stop accepting writes (what was appended stays in the store)."""
        self.closed = True

    async def rewrite_entries(self, entries: list[dict[str, Any]]) -> None:
        """Atomically replace every entry (header kept): sanitising and compaction rewrites."""
        records = checked_rewrite_records(entries)
        async with self._write_lock:
            lines = [encode_record(self._tree.header), *map(encode_record, records)]
            stored = self._stored
            with stored.lock:
                if stored.removed:
                    raise TranscriptError(f"session {self.session_id} was deleted")
                stored.replace(lines)
                self._file_state = stored.state()
            tree = SessionTree.build(self._tree.header, records)
            for problem in tree.repair_pointers():
                self._report(f"session {self.session_id}: {problem}")
            self._absorb(ExternalChanges(tree=tree))


def flush_is_noop(session: object) -> bool:
    """Whether ``session.flush()`` is ``MemorySession.flush``, which does nothing and never
    suspends: a caller may skip it, and the shielded scope it would put around it (a scope
    around code that never reaches a checkpoint changes nothing)."""
    return getattr(type(session), "flush", None) is MemorySession.flush


def aclose_is_noop(session: object) -> bool:
    """Whether ``session.aclose()`` is ``MemorySession.aclose``, which never suspends."""
    return getattr(type(session), "aclose", None) is MemorySession.aclose


class MemorySessionStore:
    """Sessions by id in this process (the ``"memory"`` session store; lost at exit)."""

    def __init__(self, *, now: Clock | None = None, warn: Warn | None = None) -> None:
        self._sessions: dict[str, _StoredSession] = {}
        self._lock = threading.Lock()
        self._now = now
        self._warn = warn

    def __repr__(self) -> str:
        return f"MemorySessionStore(sessions={len(self._sessions)})"

    async def exists(self, session_id: str) -> bool:
        """Whether the session has been created."""
        return validate_session_id(session_id) in self._sessions

    async def list_ids(self) -> list[str]:
        """Every session id, sorted."""
        return sorted(self._sessions)

    async def create(
        self, session_id: str, *, cwd: str, parent_session: str | None = None
    ) -> MemorySession:
        """Create a session holding only its header (``TranscriptError`` if it exists)."""
        return self._create(validate_session_id(session_id), cwd, parent_session)

    def _create(self, safe: str, cwd: str, parent_session: str | None) -> MemorySession:
        # ``safe``: an id ``validate_session_id`` returned (it returns such an id unchanged)
        clock = self._now or utc_now
        header = make_header(
            safe, cwd, parent_session=parent_session, timestamp=iso_timestamp(clock())
        )
        stored = _StoredSession([encode_record(header)])
        with self._lock:
            if safe in self._sessions:
                raise TranscriptError(f"session {safe} already exists")
            self._sessions[safe] = stored
        return MemorySession(stored, SessionTree.build(header, []), now=self._now, warn=self._warn)

    async def open(self, session_id: str, *, repair: bool = True) -> MemorySession:
        """Open an existing session (``repair`` has nothing to do: only whole lines are kept)."""
        safe = validate_session_id(session_id)
        stored = self._sessions.get(safe)
        if stored is None:
            raise TranscriptError(f"session {safe} does not exist")
        with stored.lock:
            stored.finish()
            lines = list(stored.lines)
            state = stored.state()
        session = MemorySession(
            stored, _tree_from_lines(lines, safe), now=self._now, warn=self._warn
        )
        session._file_state = state
        return session

    async def open_or_create(self, session_id: str, *, cwd: str) -> MemorySession:
        """Open a session, creating it first when it does not exist."""
        safe = validate_session_id(session_id)
        if safe not in self._sessions:
            try:
                return self._create(safe, cwd, None)
            except TranscriptError:
                pass  # created meanwhile (another thread): open that one
        return await self.open(safe)

    def delete(self, session_id: str) -> bool:
        """Forget a session (its memory is freed once no handle holds it); whether it existed.
        Open handles of it then refuse ``refresh`` and appends with ``TranscriptError``."""
        safe = validate_session_id(session_id)
        with self._lock:
            stored = self._sessions.pop(safe, None)
        if stored is None:
            return False
        with stored.lock:
            stored.removed = True
        return True

    def export_jsonl(self, session_id: str) -> bytes:
        """The session as JSONL, byte-compatible with the file store's ``<id>.jsonl``."""
        safe = validate_session_id(session_id)
        stored = self._sessions.get(safe)
        if stored is None:
            raise TranscriptError(f"session {safe} does not exist")
        with stored.lock:
            stored.finish()
            return b"".join(stored.lines)
