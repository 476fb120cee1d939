"""``SessionManager``: the only writer of JSONL session files.

One manager owns one session file. It loads the file in a single pass (repairing it first
when needed, see :mod:`.repair`), keeps the entry tree in memory, and appends typed entries:

* every append is one ``write`` of one complete line under the session's cross-process lock
  (``<file>.lock``); before writing, lines other processes appended are read and joined to
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
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError

from .._exceptions import TranscriptError
from .._files import remove_stale_temps
from ..messages import (
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    OpaqueMessage,
    load_message,
)
from .entries import (
    LEAF_MOVING_TYPES,
    generate_entry_id,
    iso_timestamp,
    make_header,
    parse_timestamp_ms,
    path_to_root,
)
from .header import salvage_session_header
from .incremental import IncrementalSanitizer
from .jsonl import (
    DEFAULT_LOCK_TIMEOUT,
    Durability,
    SessionLockTimeout,
    append_bytes,
    atomic_write,
    create_exclusive,
    encode_record,
    entry_problem,
    keep_invalid_lines,
    parse_session_bytes,
    session_lock,
)
from .repair import (
    RepairReport,
    plan_session_repair,
    repair_assistant_entry,
    repair_user_entry,
    report_for,
    summarize_repair,
    write_backup,
    write_repair,
)
from .session_ids import InvalidSessionIdError, session_file_path, validate_session_id

__all__ = [
    "JsonlSessionStore",
    "ModelRef",
    "SessionContext",
    "SessionManager",
    "TranscriptRewriteResult",
    "build_session_context",
    "checked_rewrite_records",
    "entry_message",
    "parse_timestamp_ms",
]

Warn = Callable[[str], None]
Clock = Callable[[], datetime]
_DURABILITIES = ("none", "flush", "fsync")


def _utc_now() -> datetime:
    return datetime.now(UTC)


# --------------------------------------------------------------------------- context building


@dataclass(frozen=True, slots=True)
class ModelRef:
    """The model a branch last used: ``{provider, modelId}`` in OpenClaw."""

    provider: str
    model_id: str


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What a model call needs from a branch: messages plus the latest state markers."""

    messages: list[Any]
    thinking_level: str = "off"
    model: ModelRef | None = None
    active_tool_names: list[str] | None = None


def entry_message(entry: Mapping[str, Any], *, materialize: bool = True) -> Any:
    """The context message an entry contributes, or ``None``.

    ``message`` entries give their message (unless ``excludeFromContext``), ``custom_message``
    a custom message, ``branch_summary`` (with a summary) and ``compaction`` their summary
    messages. With ``materialize`` the result is a pydantic model (a message that does not
    validate is kept as :class:`~openclaw_runtime.messages.OpaqueMessage`); without it, the
    wire dict.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry["message"]
        if message.get("excludeFromContext") is True:
            return None
        if not materialize:
            return message
        try:
            return load_message(message)
        except ValidationError:
            return OpaqueMessage.model_validate(message)
    timestamp = parse_timestamp_ms(entry.get("timestamp")) or 0
    if kind == "custom_message":
        data = {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": entry.get("content"),
            "display": entry.get("display"),
            "details": entry.get("details"),
            "timestamp": timestamp,
        }
        return _materialized(data, CustomMessage, materialize)
    if kind == "branch_summary":
        if not entry.get("summary"):
            return None
        data = {
            "role": "branchSummary",
            "summary": entry.get("summary"),
            "fromId": entry.get("fromId"),
            "timestamp": timestamp,
        }
        return _materialized(data, BranchSummaryMessage, materialize)
    if kind == "compaction":
        data = {
            "role": "compactionSummary",
            "summary": entry.get("summary"),
            "tokensBefore": entry.get("tokensBefore"),
            "timestamp": timestamp,
        }
        return _materialized(data, CompactionSummaryMessage, materialize)
    return None


def _materialized(data: dict[str, Any], model: type[BaseModel], materialize: bool) -> Any:
    if not materialize:
        return data
    try:
        return model.model_validate(data)
    except ValidationError:
        return OpaqueMessage.model_validate(data)


def build_session_context(
    path_entries: Iterable[Mapping[str, Any]],
    *,
    materialize: bool = True,
    message_of: Callable[[Mapping[str, Any]], Any] | None = None,
) -> SessionContext:
    """Context of an ordered branch (OpenClaw ``buildSessionContext``).

    After the latest compaction only its summary, the entries from ``firstKeptEntryId`` up
    to the compaction, and everything after it are replayed.
    """
    entries = list(path_entries)
    thinking_level = "off"
    model: ModelRef | None = None
    tools: list[str] | None = None
    compaction_index = -1
    for index, entry in enumerate(entries):
        kind = entry.get("type")
        if kind == "thinking_level_change":
            thinking_level = entry.get("thinkingLevel") or thinking_level
        elif kind == "model_change":
            model = ModelRef(str(entry.get("provider")), str(entry.get("modelId")))
        elif kind == "message" and entry["message"].get("role") == "assistant":
            message = entry["message"]
            model = ModelRef(str(message.get("provider")), str(message.get("model")))
        elif kind == "active_tools_change":
            names = entry.get("activeToolNames")
            tools = list(names) if isinstance(names, list) else tools
        elif kind == "compaction":
            compaction_index = index

    def convert(entry: Mapping[str, Any]) -> Any:
        if message_of is not None:
            return message_of(entry)
        return entry_message(entry, materialize=materialize)

    messages: list[Any] = []
    replayable = ("message", "custom_message", "branch_summary")
    if compaction_index >= 0:
        compaction = entries[compaction_index]
        messages.append(convert(compaction))
        first_kept = compaction.get("firstKeptEntryId")
        keeping = False
        for entry in entries[:compaction_index]:
            if entry.get("id") == first_kept:
                keeping = True
            if keeping and entry.get("type") in replayable:
                messages.append(convert(entry))
        tail = entries[compaction_index + 1 :]
    else:
        tail = entries
    for entry in tail:
        if entry.get("type") in replayable:
            messages.append(convert(entry))
    return SessionContext([m for m in messages if m is not None], thinking_level, model, tools)


# --------------------------------------------------------------------------- rewrite result


@dataclass(frozen=True, slots=True)
class TranscriptRewriteResult:
    """Outcome of :meth:`SessionManager.rewrite_transcript_entries`."""

    changed: bool
    bytes_freed: int = 0
    rewritten_entries: int = 0
    reason: str | None = None


# --------------------------------------------------------------------------- in-memory tree


@dataclass
class _Tree:
    """The entries of one session file and the indexes derived from them."""

    header: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    logical_parents: dict[str, str | None] = field(default_factory=dict)
    leaf_id: str | None = None
    append_parent_id: str | None = None

    @classmethod
    def build(cls, header: dict[str, Any], entries: list[dict[str, Any]]) -> _Tree:
        tree = cls(header)
        tree.extend(entries)
        return tree

    def extend(self, entries: list[dict[str, Any]]) -> None:
        """Index entries in file order (one tight loop: this is the hot path of loading)."""
        by_id = self.by_id
        logical = self.logical_parents
        labels = self.labels
        leaf = self.leaf_id
        append_parent = self.append_parent_id
        moving = LEAF_MOVING_TYPES
        self.entries.extend(entries)
        for entry in entries:
            entry_id = entry["id"]
            by_id[entry_id] = entry
            kind = entry["type"]
            if kind == "leaf":
                leaf = entry.get("targetId")
                has_append_parent = "appendParentId" in entry
                append_parent = entry.get("appendParentId") if has_append_parent else leaf
                continue
            if kind in moving and entry.get("appendMode") != "side":
                if entry.get("parentId") == append_parent and leaf != append_parent:
                    logical[entry_id] = leaf
                leaf = entry_id
                if kind == "label":
                    target = entry.get("targetId")
                    text = entry.get("label")
                    text = text.strip() if isinstance(text, str) else ""
                    if isinstance(target, str):
                        if text:
                            labels[target] = text
                        else:
                            labels.pop(target, None)
            append_parent = entry_id
        self.leaf_id = leaf
        self.append_parent_id = append_parent

    def preview(self, entries: list[dict[str, Any]]) -> _Tree:
        """A copy of the indexes with ``entries`` added (the original is left alone)."""
        probe = _Tree(
            self.header,
            [],
            dict(self.by_id),
            dict(self.labels),
            dict(self.logical_parents),
            self.leaf_id,
            self.append_parent_id,
        )
        probe.extend(entries)
        return probe

    def repair_pointers(self) -> list[str]:
        """Fall back to the last visible entry when the leaf or append parent is gone."""
        problems: list[str] = []
        if self.leaf_id is not None and self.leaf_id not in self.by_id:
            problems.append(f"leaf entry {self.leaf_id} not found")
            self.leaf_id = self._last_visible()
        if self.append_parent_id is not None and self.append_parent_id not in self.by_id:
            problems.append(f"append parent {self.append_parent_id} not found")
            self.append_parent_id = self.leaf_id
        return problems

    def _last_visible(self) -> str | None:
        for entry in reversed(self.entries):
            if entry["type"] in LEAF_MOVING_TYPES and entry.get("appendMode") != "side":
                return str(entry["id"])
        return None


# --------------------------------------------------------------------------- the manager


class SessionManager:
    """Reads and appends one JSONL session file; the only code that writes session files.

    Create with :meth:`create` or :meth:`open` (or :meth:`open_sync` when not in async code).
    """

    def __init__(
        self,
        path: Path,
        tree: _Tree,
        *,
        durability: Durability = "flush",
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        now: Clock | None = None,
        warn: Warn | None = None,
        repair_report: RepairReport | None = None,
        file_state: tuple[int, int] = (0, 0),
    ) -> None:
        if durability not in _DURABILITIES:
            raise ValueError(
                f"durability must be one of {', '.join(_DURABILITIES)}, got {durability!r}"
            )
        self.path = path
        self.durability: Durability = durability
        self.lock_timeout = lock_timeout
        self.repair_report = repair_report or RepairReport(repaired=False)
        self._tree = tree
        self._now = now or _utc_now
        self._warn = warn
        self._file_state = file_state  # (inode, size) after our last read or write
        self._pending: list[bytes] = []
        self._write_lock = anyio.Lock()
        self._message_cache: dict[int, Any] = {}
        self._missing_parents: set[str] = set()
        # the active branch, kept across appends (a turn asks for it many times)
        self._branch_cache: tuple[str | None, list[dict[str, Any]]] | None = None
        self._context_cache: tuple[str | None, SessionContext] | None = None
        #: Sanitized replay of this session's history, reused while it only grows.
        self.replay_sanitizer = IncrementalSanitizer()
        self.closed = False

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
        target = Path(path)
        clock = now or _utc_now
        header = make_header(
            session_id, cwd, parent_session=parent_session, timestamp=iso_timestamp(clock())
        )
        content = encode_record(header)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            create_exclusive(target, content, fsync=durability != "none")
        except FileExistsError:
            raise TranscriptError(f"session file {target.name} already exists") from None
        stat = os.stat(target)
        return cls(
            target,
            _Tree.build(header, []),
            durability=durability,
            lock_timeout=lock_timeout,
            now=clock,
            warn=warn,
            file_state=(stat.st_ino, stat.st_size),
        )

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
        clock = now or _utc_now
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise TranscriptError(f"session file {target.name} does not exist") from None
        except IsADirectoryError:
            raise TranscriptError(f"session file {target.name} is a directory") from None
        tree, report, state = _load(target, data, repair=repair, clock=clock, timeout=lock_timeout)
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
        for problem in tree.repair_pointers():
            manager._report(f"session {target.name}: {problem}")
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

            def read() -> _External:
                with session_lock(self.path, timeout=self.lock_timeout):
                    return self._read_external_changes()

            external = await anyio.to_thread.run_sync(read)
            self._absorb(external)
        return True

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
            if parent_id not in self._missing_parents:
                self._missing_parents.add(parent_id)
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
        else:
            with _bulk_allocation():
                context = build_session_context(
                    self.get_branch(from_id), message_of=self._cached_message
                )
            if active:
                self._context_cache = (leaf, context)
        return SessionContext(
            list(context.messages),
            context.thinking_level,
            context.model,
            None if context.active_tool_names is None else list(context.active_tool_names),
        )

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

    def _report(self, text: str) -> None:
        if self._warn is not None:
            self._warn(text)

    # appends -----------------------------------------------------------------------------

    async def append_message(self, message: Any, *, append_mode: str | None = None) -> str:
        """Append a message (a model from ``messages.py`` or an OpenClaw wire dict).

        What the loader would repair is written repaired (an empty error turn gets the
        placeholder text, blank user content the fallback text), so a file this store wrote
        never needs repair when it is opened again.
        """
        wire = _loadable_message(_wire_message(message))
        return await self._append("message", {"message": wire}, append_mode)

    async def append_thinking_level_change(self, thinking_level: str) -> str:
        """Record a thinking-level change."""
        return await self._append("thinking_level_change", {"thinkingLevel": thinking_level})

    async def append_model_change(self, provider: str, model_id: str) -> str:
        """Record a model change."""
        return await self._append("model_change", {"provider": provider, "modelId": model_id})

    async def append_active_tools_change(self, active_tool_names: Iterable[str]) -> str:
        """Record which tools are active from here on."""
        names = [str(name) for name in active_tool_names]
        return await self._append("active_tools_change", {"activeToolNames": names})

    async def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: float,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> str:
        """Record a compaction: later context is the summary plus entries from the kept one."""
        tokens = tokens_before if _is_finite_positive(tokens_before) else 0
        payload: dict[str, Any] = {
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens,
        }
        if details is not None:
            payload["details"] = details
        if from_hook is not None:
            payload["fromHook"] = from_hook
        return await self._append("compaction", payload)

    async def append_custom_entry(
        self, custom_type: str, data: Any = None, *, append_mode: str | None = None
    ) -> str:
        """Record application state that is not part of the model context."""
        payload: dict[str, Any] = {"customType": custom_type}
        if data is not None:
            payload["data"] = data
        return await self._append("custom", payload, append_mode)

    async def append_custom_message_entry(
        self,
        custom_type: str,
        content: Any,
        display: bool,
        details: Any = None,
        *,
        append_mode: str | None = None,
    ) -> str:
        """Record application content that is replayed to the model as a user message."""
        if isinstance(content, list):
            content = [_wire_message(block) for block in content]
        payload: dict[str, Any] = {
            "customType": custom_type,
            "content": content,
            "display": display,
        }
        if details is not None:
            payload["details"] = details
        return await self._append("custom_message", payload, append_mode)

    async def append_label(self, target_id: str, label: str | None) -> str:
        """Set (or clear, with ``None``/blank) the label of an existing entry."""
        if target_id not in self._tree.by_id:
            raise TranscriptError(f"Entry {target_id} not found")
        payload: dict[str, Any] = {"targetId": target_id}
        if label is not None:
            payload["label"] = label
        return await self._append("label", payload)

    async def append_session_info(self, name: str) -> str:
        """Name the session."""
        return await self._append("session_info", {"name": name.strip()})

    async def move_to(
        self,
        entry_id: str | None,
        summary: str | None = None,
        *,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> str | None:
        """Move the visible leaf (``None``: before the first entry); optionally summarise the
        abandoned branch. Returns the branch-summary id when one was written."""
        if entry_id is not None and entry_id not in self._tree.by_id:
            raise TranscriptError(f"Entry {entry_id} not found")
        await self._append("leaf", {"targetId": entry_id}, parent="append")
        if summary is None:
            return None
        payload: dict[str, Any] = {"fromId": entry_id or "root", "summary": summary}
        if details is not None:
            payload["details"] = details
        if from_hook is not None:
            payload["fromHook"] = from_hook
        return await self._append("branch_summary", payload, parent=entry_id)

    async def branch(self, entry_id: str) -> None:
        """Continue from an earlier entry (the next append becomes its child)."""
        await self.move_to(entry_id)

    async def reset_leaf(self) -> None:
        """Continue from before the first entry."""
        await self.move_to(None)

    # write machinery ---------------------------------------------------------------------

    async def _append(
        self,
        kind: str,
        payload: dict[str, Any],
        append_mode: str | None = None,
        *,
        parent: str | None = "append",
    ) -> str:
        if self.closed:
            raise TranscriptError(f"session {self.path.name} is closed")
        if append_mode not in (None, "side"):
            raise ValueError(f"append_mode must be None or 'side', got {append_mode!r}")
        async with self._write_lock:
            if self.durability == "none":
                entry = self._new_entry(kind, payload, append_mode, parent)
                self._pending.append(encode_record(entry))
                self._record([entry])
                return str(entry["id"])
            return await self._append_durably(kind, payload, append_mode, parent)

    async def _append_durably(
        self, kind: str, payload: dict[str, Any], append_mode: str | None, parent: str | None
    ) -> str:
        """Write one entry now (the write lock is held): after whatever others appended.
        Stores that keep transcripts elsewhere (Redis) override this and ``flush``."""
        external, entry = await anyio.to_thread.run_sync(
            lambda: self._locked_append(kind, payload, append_mode, parent)
        )
        self._absorb(external)
        self._record([entry])
        return str(entry["id"])

    def _new_entry(
        self,
        kind: str,
        payload: dict[str, Any],
        append_mode: str | None,
        parent: str | None,
        view: _Tree | None = None,
    ) -> dict[str, Any]:
        tree = view or self._tree
        parent_id = tree.append_parent_id if parent == "append" else parent
        entry: dict[str, Any] = {
            "type": kind,
            "id": generate_entry_id(tree.by_id),
            "parentId": parent_id,
            "timestamp": iso_timestamp(self._now()),
            **payload,
        }
        if append_mode is not None:
            entry["appendMode"] = append_mode
        return entry

    def _locked_append(
        self, kind: str, payload: dict[str, Any], append_mode: str | None, parent: str | None
    ) -> tuple[_External, dict[str, Any]]:
        with session_lock(self.path, timeout=self.lock_timeout):
            external = self._read_external_changes()
            view = external.tree
            if view is None and external.entries:
                view = self._tree.preview(external.entries)
            entry = self._new_entry(kind, payload, append_mode, parent, view)
            prefix = b"\n" if external.torn_tail else b""
            size = append_bytes(
                self.path, prefix + encode_record(entry), fsync=self.durability == "fsync"
            )
            self._file_state = (self._file_state[0], size)
            return external, entry

    def _read_external_changes(self) -> _External:
        """What other writers did since our last read or write (called under the lock)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            raise TranscriptError(f"session file {self.path.name} was removed") from None
        inode, size = self._file_state
        if stat.st_ino == inode and stat.st_size == size:
            return _External()
        if stat.st_ino != inode or stat.st_size < size:
            data = self.path.read_bytes()
            tree, _, state = _load(
                self.path, data, repair=False, clock=self._now, timeout=self.lock_timeout
            )
            tree.repair_pointers()
            self._file_state = state
            torn = bool(data) and not data.endswith(b"\n")
            return _External(tree=tree, torn_tail=torn)
        with open(self.path, "rb") as handle:
            handle.seek(size)
            delta = handle.read()
        self._file_state = (inode, size + len(delta))
        entries, torn = _parse_appended(delta)
        return _External(entries=entries, torn_tail=torn)

    def _absorb(self, external: _External) -> None:
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
        for entry in entries:
            if (
                entry.get("type") not in LEAF_MOVING_TYPES
                or entry.get("appendMode") == "side"
                or entry.get("parentId") != parent
                or entry["id"] in logical
            ):
                return
            parent = entry["id"]
        if parent != self._tree.leaf_id:
            return
        self._branch_cache = (parent, [*branch, *entries])
        context = cached_context
        if context is None or context[0] != before:
            return
        if any(entry.get("type") != "message" for entry in entries):
            return  # state entries (model, tools, compaction) rebuild the context
        added = [self._cached_message(entry) for entry in entries]
        previous = context[1]
        model = previous.model
        for entry in entries:
            message = entry["message"]
            if message.get("role") == "assistant":
                model = ModelRef(str(message.get("provider")), str(message.get("model")))
        self._context_cache = (
            parent,
            SessionContext(
                [*previous.messages, *(m for m in added if m is not None)],
                previous.thinking_level,
                model,
                previous.active_tool_names,
            ),
        )

    async def flush(self) -> None:
        """Write lines buffered under durability ``"none"``."""
        async with self._write_lock:
            if not self._pending:
                return
            payload = b"".join(self._pending)
            self._pending.clear()

            def write(timeout: float) -> _Tree | None:
                with session_lock(self.path, timeout=timeout):
                    external = self._read_external_changes()
                    prefix = b"\n" if external.torn_tail else b""
                    size = append_bytes(self.path, prefix + payload, fsync=False)
                    self._file_state = (self._file_state[0], size)
                    if external.tree is None and not external.entries:
                        return None
                    # Others wrote while we buffered: their lines precede ours in the file,
                    # so the tree is rebuilt from the file rather than patched.
                    data = self.path.read_bytes()
                    tree, _, state = _load(
                        self.path, data, repair=False, clock=self._now, timeout=self.lock_timeout
                    )
                    self._file_state = state
                    return tree

            try:
                # usually nobody else holds the lock: append right here (a small write)
                # instead of paying a worker-thread hop at every turn end
                tree = write(0)
            except SessionLockTimeout:
                tree = await anyio.to_thread.run_sync(write, self.lock_timeout)
            if tree is not None:
                tree.repair_pointers()
                self._tree = tree
                self._branch_cache = self._context_cache = None
                self._message_cache.clear()

    # rewrites ----------------------------------------------------------------------------

    async def rewrite_entries(self, entries: list[dict[str, Any]]) -> None:
        """Atomically replace every entry (header kept): sanitising and compaction rewrites.

        Readers of the file see the old content or the new one, never a mix.
        """
        records = checked_rewrite_records(entries)
        async with self._write_lock:
            if self._pending:
                raise TranscriptError("flush() buffered appends before rewriting the session")
            content = encode_record(self._tree.header) + b"".join(map(encode_record, records))

            def write() -> tuple[int, int]:
                with session_lock(self.path, timeout=self.lock_timeout):
                    atomic_write(self.path, content)
                    stat = os.stat(self.path)
                    return stat.st_ino, stat.st_size

            self._file_state = await anyio.to_thread.run_sync(write)
            tree = _Tree.build(self._tree.header, records)
            for problem in tree.repair_pointers():
                self._report(f"session {self.path.name}: {problem}")
            self._tree = tree
            self._branch_cache = self._context_cache = None
            self._message_cache.clear()

    async def rewrite_transcript_entries(
        self, replacements: Mapping[str, Any]
    ) -> TranscriptRewriteResult:
        """Replace messages on the active branch without editing history in place.

        The branch is re-grown from the first replaced entry's parent: every later entry is
        appended again, replaced messages with their new content (OpenClaw
        ``rewriteTranscriptEntriesInSessionManager``). Byte-identical user-message clones
        and duplicate compactions met during the replay are collapsed into one.
        """
        wanted = {key: value for key, value in replacements.items() if key.strip()}
        if not wanted:
            return TranscriptRewriteResult(False, reason="no replacements requested")
        branch = self.get_branch()
        if not branch:
            return TranscriptRewriteResult(False, reason="empty session")
        matched: list[int] = []
        freed = 0
        for index, entry in enumerate(branch):
            if entry["type"] == "message" and entry["id"] in wanted:
                before = len(encode_record(entry["message"])) - 1
                after = len(encode_record(_wire_message(wanted[entry["id"]]))) - 1
                matched.append(index)
                freed += max(0, before - after)
        if not matched:
            return TranscriptRewriteResult(False, reason="no matching message entries")
        first = branch[matched[0]]
        if first.get("parentId"):
            await self.branch(first["parentId"])
        else:
            await self.reset_leaf()
        remapped: dict[str, str] = {}
        emitted: dict[str, str] = {}
        for entry in branch[matched[0] :]:
            replacement = wanted.get(entry["id"]) if entry["type"] == "message" else None
            if replacement is None:
                identity = _replay_identity(entry, remapped)
                if identity is not None and identity in emitted:
                    remapped[entry["id"]] = emitted[identity]
                    continue
                new_id = await self._replay_entry(entry, remapped)
                remapped[entry["id"]] = new_id
                if identity is not None:
                    emitted[identity] = new_id
                continue
            new_id = await self.append_message(replacement)
            remapped[entry["id"]] = new_id
            identity = _message_identity(_wire_message(replacement))
            if identity is not None:
                emitted[identity] = new_id
        return TranscriptRewriteResult(True, bytes_freed=freed, rewritten_entries=len(matched))

    async def _replay_entry(self, entry: dict[str, Any], remapped: Mapping[str, str]) -> str:
        kind = entry["type"]
        if kind == "message":
            return await self.append_message(entry["message"])
        if kind == "compaction":
            kept = str(entry.get("firstKeptEntryId") or "")
            return await self.append_compaction(
                entry.get("summary", ""),
                remapped.get(kept, kept),
                entry.get("tokensBefore", 0),
                entry.get("details"),
                entry.get("fromHook"),
            )
        if kind == "label":
            target = entry.get("targetId")
            target = remapped.get(target, target) if isinstance(target, str) else target
            return await self._append("label", {"targetId": target, "label": entry.get("label")})
        if kind == "branch_summary":
            parent = entry.get("parentId")
            parent = remapped.get(parent, parent) if isinstance(parent, str) else parent
            payload = {k: v for k, v in entry.items() if k not in _BASE_KEYS}
            await self._append("leaf", {"targetId": parent})
            return await self._append("branch_summary", payload, parent=parent)
        payload = {k: v for k, v in entry.items() if k not in _BASE_KEYS and k != "appendMode"}
        return await self._append(kind, payload, entry.get("appendMode"))


_BASE_KEYS = frozenset({"type", "id", "parentId", "timestamp"})
_NOT_CACHED: Any = object()


def checked_rewrite_records(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``entries`` for a whole-session rewrite; ``TranscriptError`` naming the first
    entry that is malformed or reuses an id (every session store checks the same way)."""
    records = [dict(entry) for entry in entries]
    seen: set[str] = set()
    for index, record in enumerate(records):
        problem = entry_problem(record)
        if problem is not None:
            raise TranscriptError(f"entry {index} {problem}")
        if record["id"] in seen:
            raise TranscriptError(f"entry {index} reuses id {record['id']}")
        seen.add(record["id"])
    return records


@dataclass
class _External:
    """Changes another process made to the file since we last looked."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    tree: _Tree | None = None
    torn_tail: bool = False


def _parse_appended(delta: bytes) -> tuple[list[dict[str, Any]], bool]:
    """Entries other writers appended (no header); a torn last line is reported, not used."""
    torn = bool(delta) and not delta.endswith(b"\n")
    parsed = parse_session_bytes(b'{"type":"session","id":"_"}\n' + delta)
    return parsed.entries, torn


def _is_finite_positive(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and value == value
        and value not in (float("inf"), float("-inf"))
        and value > 0
    )


def _wire_message(message: Any) -> Any:
    """A message (or block) as a JSON-ready wire dict."""
    if isinstance(message, BaseModel):
        to_dict = getattr(message, "to_dict", None)
        if callable(to_dict):
            return to_dict()
        return message.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(message, dict):
        return message
    raise TypeError(f"expected a message model or a wire dict, got {type(message).__name__}")


def _loadable_message(message: Any) -> Any:
    """``message`` as the loader's repair would leave it (unchanged in the common case)."""
    if not isinstance(message, dict):
        return message
    entry = {"message": message}
    role = message.get("role")
    repaired = (
        repair_assistant_entry(entry)
        if role == "assistant"
        else repair_user_entry(entry)
        if role == "user"
        else None
    )
    return message if repaired is None else repaired["message"]


def _message_identity(message: Mapping[str, Any]) -> str | None:
    if message.get("role") != "user":
        return None
    return "user:" + encode_record(dict(message)).hex()


def _replay_identity(entry: Mapping[str, Any], remapped: Mapping[str, str]) -> str | None:
    if entry["type"] == "message":
        return _message_identity(entry["message"])
    if entry["type"] == "compaction":
        kept = entry.get("firstKeptEntryId")
        kept = remapped.get(kept, kept) if isinstance(kept, str) else kept
        body = {
            "keptId": kept,
            "summary": entry.get("summary"),
            "details": entry.get("details"),
            "fromHook": entry.get("fromHook"),
        }
        return f"compaction:{entry.get('tokensBefore')}:{encode_record(body).hex()}"
    return None


@contextlib.contextmanager
def _bulk_allocation() -> Iterator[None]:
    """Pause the cyclic GC while a whole session is parsed or materialized.

    Tens of thousands of new dicts and models trigger full collections that scan everything
    already alive (half the time of opening a 10 000-message session). Nothing built here is
    cyclic garbage; the GC runs normally again right after.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _load(
    path: Path, data: bytes, *, repair: bool, clock: Clock, timeout: float
) -> tuple[_Tree, RepairReport, tuple[int, int]]:
    """Parse (and when asked, repair) one session file; returns the tree and file state."""
    with _bulk_allocation():
        parsed = parse_session_bytes(data)
    if parsed.header_problem is not None:
        return _recover_header(
            path, data, parsed.header_problem, repair=repair, clock=clock, timeout=timeout
        )
    assert parsed.header is not None
    plan = plan_session_repair(parsed, keep_error_turns=True)
    report = RepairReport(repaired=False)
    if repair and plan.needed:
        with session_lock(path, timeout=timeout):
            latest = path.read_bytes()
            if latest != data:
                return _load(path, latest, repair=repair, clock=clock, timeout=timeout)
            moment = clock()
            backup, side = write_repair(
                path,
                parsed,
                plan,
                now_ms=int(moment.timestamp() * 1000),
                kept_at=iso_timestamp(moment),
            )
            report = report_for(plan, repaired=True, backup_path=backup, invalid_lines_path=side)
            stat = os.stat(path)
    else:
        if not repair:
            plan = plan_session_repair(parsed, keep_error_turns=True)  # in memory only
        # The size we parsed, not the size now: a writer that appended since the read is
        # then noticed (and its entries read) before our next write.
        return _Tree.build(parsed.header, plan.entries), report, (os.stat(path).st_ino, len(data))
    return _Tree.build(parsed.header, plan.entries), report, (stat.st_ino, stat.st_size)


def _stem_session_id(path: Path) -> str:
    try:
        return validate_session_id(path.stem)
    except TranscriptError:
        return os.urandom(8).hex()


def _recover_header(
    path: Path, data: bytes, problem: str, *, repair: bool, clock: Clock, timeout: float
) -> tuple[_Tree, RepairReport, tuple[int, int]]:
    """Load a session whose header line is damaged (``header.salvage_session_header``).

    With ``repair`` the file is backed up (when it holds entries), the damaged line kept in
    the side file and a new header written in its place; then the file loads as usual. The
    session id is taken from the file name (``<id>.jsonl``); an unknown cwd is recorded as the
    current directory. Without ``repair`` the new header is used in memory only.
    """
    moment = clock()
    salvage = salvage_session_header(
        data,
        session_id=_stem_session_id(path),
        cwd=os.getcwd(),
        timestamp=iso_timestamp(moment),
        reason=f"damaged session header ({problem})",
    )
    if salvage is None:
        raise TranscriptError(f"cannot load session file {path.name}: {problem}")
    if not repair:
        parsed = parse_session_bytes(salvage.content)
        plan = plan_session_repair(parsed, keep_error_turns=True)
        report = RepairReport(repaired=False, reason="damaged session header")
        return _Tree.build(salvage.header, plan.entries), report, (os.stat(path).st_ino, len(data))
    with session_lock(path, timeout=timeout):
        latest = path.read_bytes()
        if latest != data:
            return _load(path, latest, repair=True, clock=clock, timeout=timeout)
        backup = (
            write_backup(path, data, now_ms=int(moment.timestamp() * 1000))
            if salvage.body.strip()
            else None
        )
        damaged = [] if salvage.damaged is None else [salvage.damaged]
        side = keep_invalid_lines(path, damaged, kept_at=iso_timestamp(moment))
        content = salvage.content
        atomic_write(path, content, tag="recover")
        tree, rest, state = _load(path, content, repair=True, clock=clock, timeout=timeout)
    report = dataclasses.replace(
        rest,
        repaired=True,
        dropped_lines=rest.dropped_lines + len(damaged),
        backup_path=backup or rest.backup_path,
        invalid_lines_path=rest.invalid_lines_path or (None if side is None else str(side)),
        reason="damaged session header" if salvage.body.strip() else "partial session header",
    )
    return tree, report, state


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
        return session_file_path(self.sessions_dir, session_id)

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
        path = self.path_for(session_id)
        self._sweep()
        return await SessionManager.create(
            path,
            session_id=validate_session_id(session_id),
            cwd=cwd,
            parent_session=parent_session,
            durability=self.durability,
            lock_timeout=self.lock_timeout,
            now=self._now,
            warn=self._warn,
        )

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
        if not self.path_for(safe_id).exists():
            try:
                return await self.create(safe_id, cwd=cwd)
            except TranscriptError:
                pass  # another writer created it first: open theirs
        return await self.open(safe_id)
