"""``SessionReader``: the in-memory state of one open session and every read of it.

The base of ``SessionManager`` (``append.SessionWriter`` adds the appends,
``rewrite.SessionRewriter`` the whole-session rewrites, ``store.SessionManager`` opening and
creating files). Reads are synchronous and work on the in-memory ``SessionTree``; the
active branch and its context are cached across plain appends (``_record``), and changes
other writers made to the file are read and joined to the tree (``_read_external_changes``,
``_absorb``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio

from .._exceptions import TranscriptError
from .clean_head import CleanHead
from .entries import LEAF_MOVING_TYPES, path_to_root
from .flush_files import FlushFiles
from .incremental import IncrementalSanitizer
from .jsonl import DEFAULT_LOCK_TIMEOUT, Durability
from .load import (
    NO_CHANGES,
    Clock,
    ExternalChanges,
    bulk_allocation,
    clock_stamp,
    load_session_file,
    parse_appended,
    utc_now,
)
from .repair import RepairReport
from .replay_checkpoint import ReplayCheckpointer
from .session_context import ModelRef, SessionContext, build_session_context, entry_message
from .tree import SessionTree

__all__ = ["SessionReader", "Warn", "check_durability"]

Warn = Callable[[str], None]
_DURABILITIES = ("none", "flush", "fsync")


def check_durability(value: object) -> None:
    """Refuse a ``durability`` that is none of ``none``, ``flush``, ``fsync``."""
    if value not in _DURABILITIES:
        raise ValueError(f"durability must be one of {', '.join(_DURABILITIES)}, got {value!r}")


_NOT_CACHED: Any = object()
_ContextCache = tuple[str | None, SessionContext, list[dict[str, Any]]]
#: the report of a session opened without a repair (frozen: one for every such session)
_NOT_REPAIRED = RepairReport(repaired=False)


def _uncontended_fast_lock() -> anyio.Lock:
    """The manager's write lock: taking it when nobody holds it does not yield to the event
    loop (anyio >= 4.5 ``fast_acquire``; cancellation is still checked). A turn takes it for
    every append and flush, and each yield was a full event-loop round trip."""
    try:
        return anyio.Lock(fast_acquire=True)
    except TypeError:  # anyio < 4.5
        return anyio.Lock()


class SessionReader:
    """One open session's state and reads; see ``store.SessionManager`` for the whole API."""

    #: Whether the session is a file that may keep a replay checkpoint beside it
    #: (``transcript.replay_checkpoint``); sessions kept elsewhere (Redis, memory) say no.
    keeps_replay_checkpoint: ClassVar[bool] = True
    #: Whether appends and flushes take the session's lock file (``session_lock_at``) by the
    #: absolute path; a session kept in memory takes none and skips resolving the path.
    locks_by_path: ClassVar[bool] = True

    def __init__(
        self,
        path: Path,
        tree: SessionTree,
        *,
        durability: Durability = "flush",
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        now: Clock | None = None,
        warn: Warn | None = None,
        repair_report: RepairReport | None = None,
        file_state: tuple[int, int] = (0, 0),
    ) -> None:
        check_durability(durability)
        self.path = path
        self._fspath = os.fspath(path)  # what every flush's ``stat`` names (no path object)
        # what ``session_lock_at`` takes
        self._lock_key = os.path.abspath(path) if self.locks_by_path else ""
        self.durability: Durability = durability
        self.lock_timeout = lock_timeout
        self.repair_report = repair_report or _NOT_REPAIRED
        self._tree = tree
        self._now = now or utc_now
        self._stamp = clock_stamp(self._now)  # each new entry's timestamp text
        self._warn = warn
        self._file_state = file_state  # (inode, size) after our last read or write
        self._pending: list[bytes] = []
        # (inode, size before, bytes) of a failed write that could not be cut back
        self._torn_append: tuple[int, int, bytes] | None = None
        self._write_lock = _uncontended_fast_lock()
        # a flush may take the session lock on the event loop: the lock file is known to
        # exist, or this process created the session (the first flush then makes it)
        self._lock_file_ready = False
        # the flush's lock-file and append descriptors, kept between flushes (``flush_files``)
        self._flush_files: FlushFiles | None = None
        self._flush_ticks = (0, 0)  # (the process's flush count at our last flush, our flushes)
        self._message_cache: dict[int, Any] = {}
        self._missing_parents: set[str] | None = None  # made with the first one reported
        # the active branch, kept across appends (a turn asks for it many times)
        self._branch_cache: tuple[str | None, list[dict[str, Any]]] | None = None
        # (leaf, context, entries appended since whose models are not made yet: ``_record``)
        self._context_cache: _ContextCache | None = None
        #: Sanitized replay of this session's history, reused while it only grows.
        self.replay_sanitizer = IncrementalSanitizer()
        #: Its checkpoint beside the session file, for the first turn after a restart.
        self.replay_checkpoint = ReplayCheckpointer(
            self, self.replay_sanitizer, enabled=self.keeps_replay_checkpoint
        )
        self.closed = False

    # reads -------------------------------------------------------------------------------

    @property
    def header(self) -> dict[str, Any]:
        """The session header record."""
        return self._tree.header

    @property
    def session_id(self) -> str:
        """The id in the header."""
        return str(self._tree.header["id"])

    def get_leaf_id(self) -> str | None:
        """The visible leaf (where the active branch ends)."""
        return self._tree.leaf_id

    def get_append_parent_id(self) -> str | None:
        """The ``parentId`` the next appended entry will get."""
        return self._tree.append_parent_id

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        """One entry by id."""
        return self._tree.by_id.get(entry_id)

    def get_entries(self) -> list[dict[str, Any]]:
        """Every entry in file order (a new list)."""
        return list(self._tree.entries)

    def find_entries(self, kind: str) -> list[dict[str, Any]]:
        """Entries of one ``type`` in file order."""
        return [entry for entry in self._tree.entries if entry["type"] == kind]

    def get_label(self, entry_id: str) -> str | None:
        """The current label of an entry."""
        return self._tree.labels.get(entry_id)

    def get_session_name(self) -> str | None:
        """The latest non-blank ``session_info`` name."""
        infos = self.find_entries("session_info")
        name = infos[-1].get("name") if infos else None
        return name.strip() or None if isinstance(name, str) else None

    def get_path_to_root(self, entry_id: str | None) -> list[dict[str, Any]]:
        """Entries from the root to ``entry_id`` (leaf records skipped, cycles rejected)."""
        missing: list[str] = []
        path = path_to_root(entry_id, self._tree.by_id, self._tree.logical_parents, missing=missing)
        for parent_id in missing:
            reported = self._missing_parents
            if reported is None:
                reported = self._missing_parents = set()
            if parent_id not in reported:
                reported.add(parent_id)
                self._report(
                    f"session {self.path.name}: entry {parent_id} is missing; the branch "
                    "starts after it"
                )
        return path

    def get_branch(self, from_id: str | None = None) -> list[dict[str, Any]]:
        """The active branch, or the branch ending at ``from_id``."""
        leaf = self._tree.leaf_id
        if from_id is not None and from_id != leaf:
            return self.get_path_to_root(from_id)
        cached = self._branch_cache
        if cached is not None and cached[0] == leaf:
            return list(cached[1])
        branch = self.get_path_to_root(leaf)
        self._branch_cache = (leaf, branch)
        return list(branch)

    def build_session_context(
        self, from_id: str | None = None, *, materialize: bool = True
    ) -> SessionContext:
        """Messages and state of the active branch (pydantic models unless ``materialize``
        is false, then the wire dicts). The active branch's context is kept across plain
        message appends, so a turn does not rebuild it from the whole history."""
        if not materialize:
            return build_session_context(self.get_branch(from_id), materialize=False)
        leaf = self._tree.leaf_id
        active = from_id is None or from_id == leaf
        cached = self._context_cache
        if active and cached is not None and cached[0] == leaf:
            context = cached[1]
            if cached[2]:
                self._materialize(context.messages, cached[2])
        else:
            with bulk_allocation():
                context = build_session_context(
                    self.get_branch(from_id), message_of=self._cached_message
                )
            if active:
                self._context_cache = (leaf, context, [])
        return SessionContext(
            list(context.messages),
            context.thinking_level,
            context.model,
            None if context.active_tool_names is None else list(context.active_tool_names),
        )

    def _materialize(self, messages: list[Any], unread: list[dict[str, Any]]) -> None:
        """Make the models of the message entries appended since the cached context was
        last read (in order, each once: ``_cached_message``) and add them to it."""
        try:
            for entry in unread:
                added = self._cached_message(entry)
                if added is not None:
                    messages.append(added)
        except BaseException:
            self._context_cache = None  # half extended: the next read rebuilds it
            raise
        unread.clear()

    def message_of(self, entry: Mapping[str, Any]) -> Any:
        """The message of a ``message`` entry as a model (parsed once per entry and kept)."""
        return self._cached_message(entry)

    def _cached_message(self, entry: Mapping[str, Any]) -> Any:
        key = id(entry)
        cached = self._message_cache.get(key, _NOT_CACHED)
        if cached is _NOT_CACHED:
            cached = entry_message(entry)
            self._message_cache[key] = cached
        return cached

    def replay_sources(self) -> tuple[list[dict[str, Any]], tuple[int, int], dict[int, Any]]:
        """For ``ReplayCheckpointer``: the entries in file order, the file state they were
        read from and the message cache (``id(entry)`` → message)."""
        return self._tree.entries, self._file_state, self._message_cache

    def clean_head(self) -> CleanHead | None:
        """For ``ReplayCheckpointer``: the clean head of the bytes the tree was loaded from."""
        return self._tree.clean_head

    def _report(self, text: str) -> None:
        if self._warn is not None:
            self._warn(text)

    # changes from other writers -----------------------------------------------------------

    def _read_external_changes(self) -> ExternalChanges:
        """What other writers did since our last read or write (called under the lock)."""
        try:
            stat = os.stat(self._fspath)
        except FileNotFoundError:
            raise TranscriptError(f"session file {self.path.name} was removed") from None
        inode, size = self._file_state
        if stat.st_ino == inode and stat.st_size == size:
            return NO_CHANGES
        if stat.st_ino != inode or stat.st_size < size:
            data = self.path.read_bytes()
            tree, _, state = load_session_file(
                self.path, data, repair=False, clock=self._now, timeout=self.lock_timeout
            )
            tree.repair_pointers()
            self._file_state = state
            torn = bool(data) and not data.endswith(b"\n")
            return ExternalChanges(tree=tree, torn_tail=torn)
        with open(self.path, "rb") as handle:
            handle.seek(size)
            delta = handle.read()
        self._file_state = (inode, size + len(delta))
        entries, torn = parse_appended(delta)
        return ExternalChanges(entries=entries, torn_tail=torn)

    def _absorb(self, external: ExternalChanges) -> None:
        if external.tree is not None:
            self._tree = external.tree
            self._message_cache.clear()
            self._branch_cache = self._context_cache = None
        elif external.entries:
            self._record(external.entries)

    def _record(self, entries: list[dict[str, Any]]) -> None:
        cached = self._branch_cache
        cached_context = self._context_cache
        before = self._tree.leaf_id
        self._tree.extend(entries)
        self._branch_cache = self._context_cache = None
        if cached is None or cached[0] != before:
            return
        # the common case: plain appends on the active leaf extend the cached branch
        branch = cached[1]
        parent = before
        logical = self._tree.logical_parents
        messages_only = True
        for entry in entries:
            kind = entry.get("type")
            if (
                kind not in LEAF_MOVING_TYPES
                or entry.get("appendMode") == "side"
                or entry.get("parentId") != parent
                or entry["id"] in logical
            ):
                return
            if kind != "message":
                messages_only = False
            parent = entry["id"]
        if parent != self._tree.leaf_id:
            return
        # both cached lists are this reader's own (reads hand out copies): extended in place,
        # so an append costs the same at any branch length
        branch.extend(entries)
        self._branch_cache = (parent, branch)
        context = cached_context
        if context is None or context[0] != before or not messages_only:
            return  # state entries (model, tools, compaction) rebuild the context
        previous, unread = context[1], context[2]
        model = previous.model
        for entry in entries:
            # its model is made when the context is next read (``_materialize``): a session
            # nobody reads again (a stateless service's) never makes it
            unread.append(entry)
            message = entry["message"]
            if message.get("role") == "assistant":
                provider, model_id = str(message.get("provider")), str(message.get("model"))
                # the same model as before (every turn of a tool loop): the context stays
                if model is None or model.provider != provider or model.model_id != model_id:
                    model = ModelRef(provider, model_id)
        if model is not previous.model:
            previous = SessionContext(
                previous.messages, previous.thinking_level, model, previous.active_tool_names
            )
        self._context_cache = (parent, previous, unread)
