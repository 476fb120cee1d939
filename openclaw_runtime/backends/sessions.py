"""The session seams: the session index (key → id) and the session store (transcripts).

Chat front-ends know a conversation by a key (``telegram:4711``); transcripts are stored by
session id. ``SessionIndex`` maps one to the other, with an atomic first claim so two first
turns of one conversation arriving together (in two processes) end up in one session.
``SessionStore`` opens and creates transcripts; the ``Session`` it returns is what the runner
and the commands read and append through: OpenClaw's entry tree (header, entries with
``id``/``parentId``, a leaf), appended to and, for repairs and compaction, rewritten atomically.

The protocols name exactly what the runner and the commands call, not everything the JSONL
implementation (``transcript.store``) offers, so a backend (the Redis plugin) implements
the set that matters. ``openclaw_runtime.testing`` has a contract suite for each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

# The transcript face, not its modules: the names below load when first read
# (``typing.get_type_hints``), so importing the protocols stays cheap.
import openclaw_runtime.transcript as transcript

__all__ = ["Session", "SessionIndex", "SessionIndexEntry", "SessionStore"]

#: ``{"sessionId": str, "updatedAt": epoch ms}`` (unknown keys kept).
SessionIndexEntry = dict[str, Any]


@runtime_checkable
class SessionIndex(Protocol):
    """Session key → session id (``[backends] session_index``).

    Guarantees (``SessionIndexContract`` checks them):

    * ``claim`` is atomic across every process sharing the index: of N concurrent claims of
      one unbound key, exactly one id wins and every claim returns that id;
    * a bound key stays bound until ``bind`` re-points it; ``claim`` never re-points;
    * reads see every write that completed before they started (no stale cache after a
      write by another process);
    * keys and ids are opaque strings, stored as given.
    """

    async def lookup_id(self, session_key: str) -> str | None:
        """The session id bound to ``session_key``, or None."""
        ...

    async def lookup_key(self, session_id: str) -> str | None:
        """The most recently bound key pointing at ``session_id`` (OpenClaw's
        ``backfillSessionKey``), or None."""
        ...

    async def entries(self) -> dict[str, SessionIndexEntry]:
        """A copy of the whole index: key → entry."""
        ...

    async def claim(self, session_key: str, session_id: str) -> str:
        """Bind ``session_key`` to ``session_id`` unless it is already bound; returns the id
        the key points at afterwards."""
        ...

    async def bind(self, session_key: str, session_id: str) -> None:
        """Point ``session_key`` at ``session_id`` (no write when it already does)."""
        ...


@runtime_checkable
class Session(Protocol):
    """One open transcript, as the runner uses it (``transcript.store.SessionManager``).

    Guarantees (``SessionStoreContract`` checks them):

    * every append returns the new entry's id and makes it the leaf: its ``parentId`` is the
      previous leaf, so ``get_branch()`` ends with it;
    * appends may be buffered; ``flush()`` makes them durable and visible to other readers
      of the store, and ``aclose()`` flushes;
    * ``refresh()`` takes in what other writers appended since this object last read or wrote
      (cheap when nothing changed);
    * ``rewrite_transcript_entries`` replaces messages on the active branch atomically:
      readers see the old transcript or the new one, never a mix; entries off the branch
      are kept;
    * entries are OpenClaw's JSONL records (dicts with ``type``, ``id``, ``parentId``,
      ``timestamp`` and the type's fields), the same bytes whatever the backend;
    * a transcript that cannot be read or written raises ``TranscriptError``.
    """

    @property
    def session_id(self) -> str:
        """The id in the header."""
        ...

    @property
    def path(self) -> Any:
        """Where the transcript lives, for people (a file path; a URL-like name for remote
        stores); ``str()`` of it goes into results and events."""
        ...

    @property
    def replay_sanitizer(self) -> transcript.IncrementalSanitizer:
        """The session's incremental sanitizer (its cache lives as long as the object)."""
        ...

    def get_leaf_id(self) -> str | None:
        """The visible leaf (where the active branch ends)."""
        ...

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        """One entry by id."""
        ...

    def get_entries(self) -> list[dict[str, Any]]:
        """Every entry in stored order (a new list)."""
        ...

    def get_branch(self, from_id: str | None = None) -> list[dict[str, Any]]:
        """The active branch root first, or the branch ending at ``from_id`` (a new list)."""
        ...

    def get_session_name(self) -> str | None:
        """The latest non-blank ``session_info`` name."""
        ...

    def build_session_context(
        self, from_id: str | None = None, *, materialize: bool = True
    ) -> transcript.SessionContext:
        """Messages and state of the active branch (or of the branch ending at ``from_id``)."""
        ...

    def message_of(self, entry: Mapping[str, Any]) -> Any:
        """The message of one of this session's ``message`` entries as a ``messages`` model
        (``transcript.session_context.entry_message``; a session may cache it per entry)."""
        ...

    async def append_message(self, message: Any, *, append_mode: str | None = None) -> str:
        """Append a message (a ``messages`` model or an OpenClaw wire dict); its entry id."""
        ...

    async def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: float,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> str:
        """Append a compaction entry; its id."""
        ...

    async def branch(self, entry_id: str) -> None:
        """Continue from an earlier entry (the next append becomes its child)."""
        ...

    async def reset_leaf(self) -> None:
        """Continue from before the first entry."""
        ...

    async def flush(self) -> None:
        """Make buffered appends durable and visible to other readers."""
        ...

    async def refresh(self) -> bool:
        """Take in other writers' appends; whether anything was read."""
        ...

    async def rewrite_transcript_entries(
        self, replacements: Mapping[str, Any]
    ) -> transcript.TranscriptRewriteResult:
        """Replace messages on the active branch (entry id → new message), atomically."""
        ...

    async def aclose(self) -> None:
        """Flush and stop accepting writes (idempotent)."""
        ...


@runtime_checkable
class SessionStore(Protocol):
    """Where transcripts live (``[backends] session_store``).

    Guarantees (``SessionStoreContract`` checks them):

    * ``create`` fails with ``TranscriptError`` when the session exists; ``open`` fails with
      ``TranscriptError`` when it does not; ``open_or_create`` never fails for either reason,
      also when two callers race to create one session (both end up with the same header);
    * a session written and flushed through one object reads back the same entries through
      another ``open`` (a round trip), in the same order, with the same ids;
    * session ids are validated (``InvalidSessionIdError``: no path traversal, whatever the
      backend);
    * ``list_ids`` lists every session ``exists`` admits.
    """

    async def exists(self, session_id: str) -> bool:
        """Whether the session has been created."""
        ...

    async def list_ids(self) -> list[str]:
        """Every stored session id (any order)."""
        ...

    async def create(
        self, session_id: str, *, cwd: str, parent_session: str | None = None
    ) -> Session:
        """Create a new session (header written)."""
        ...

    async def open(self, session_id: str, *, repair: bool = True) -> Session:
        """Open an existing session (a damaged transcript is repaired, damaged lines kept
        aside, unless ``repair`` is false)."""
        ...

    async def open_or_create(self, session_id: str, *, cwd: str) -> Session:
        """Open a session, creating it first when it does not exist."""
        ...
