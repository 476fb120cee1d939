"""``SessionWriter``: typed appends to a session, one complete line per entry.

Every append is one ``write`` of one line under the session's cross-process lock; before
writing, lines other processes appended are read and joined to the tree, and a torn last
line left by a crashed writer is terminated first (``_locked_append``). Durability
``"none"`` buffers lines until :meth:`SessionWriter.flush`. Stores that keep transcripts
elsewhere (the Redis plugin) override ``_append_durably`` and ``flush``.

A message is written as the loader's repair would leave it (``repair_assistant_entry`` /
``repair_user_entry``), so a file written here never needs repair when opened again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import anyio
from anyio.lowlevel import checkpoint_if_cancelled
from pydantic import BaseModel

from .._exceptions import TranscriptError
from .._files import TornAppend
from ..messages import WireModel
from .entries import generate_entry_id
from .flush_files import FlushFiles, next_flush_tick, worth_keeping
from .jsonl import (
    SESSION_LOCK_SUFFIX,
    SessionLockTimeout,
    append_bytes,
    encode_record,
    give_session_lock,
    session_lock_at,
    take_session_lock,
)
from .load import ExternalChanges, load_session_file
from .reader import SessionReader
from .repair import repair_assistant_entry, repair_user_entry
from .tree import SessionTree

__all__ = ["SessionWriter", "wire_message"]


class SessionWriter(SessionReader):
    """Appends and flushing on top of :class:`~.reader.SessionReader`."""

    # appends -----------------------------------------------------------------------------

    async def append_message(self, message: Any, *, append_mode: str | None = None) -> str:
        """Append a message (a model from ``messages.py`` or an OpenClaw wire dict).

        What the loader would repair is written repaired (an empty error turn gets the
        placeholder text, blank user content the fallback text), so a file this store wrote
        never needs repair when it is opened again.
        """
        if getattr(type(message), "to_dict", None) is _WIRE_TO_DICT:
            # a runtime message model (every append of a tool loop): its JSON-mode dump is a
            # dict holding JSON values only (stores may rely on it); only an assistant or a
            # user message can need the loader's repair (``_loadable_message``)
            wire = message.to_dict()
            if type(wire) is not dict or _may_need_repair(wire):
                wire = _loadable_message(wire)
            return await self._append("message", {"message": wire}, append_mode, json_values=True)
        # a caller's wire dict or another model's ``to_dict`` may hold anything
        wire = _loadable_message(wire_message(message))
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
            content = [wire_message(block) for block in content]
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
        json_values: bool = False,
    ) -> str:
        self._refuse_bad_append(append_mode)
        if self._appends_at_once():
            await checkpoint_if_cancelled()  # what taking the free (fast-acquire) lock checks
            if not self._write_lock.locked():
                # the append's body never suspends: a free write lock could not be taken by
                # another task before it is done, so taking it would order nothing
                return self._append_at_once(kind, payload, append_mode, parent, json_values)
        async with self._write_lock:
            if self.durability == "none":
                return self._buffer(kind, payload, append_mode, parent)
            return await self._append_durably(kind, payload, append_mode, parent)

    def _appends_at_once(self) -> bool:
        """Whether an append's body never suspends, so a free write lock need not be taken:
        a buffered append (durability ``"none"``); stores whose writes never wait say so."""
        return self.durability == "none"

    def _append_at_once(
        self,
        kind: str,
        payload: dict[str, Any],
        append_mode: str | None,
        parent: str | None,
        json_values: bool = False,
    ) -> str:
        """The append's body when ``_appends_at_once`` (nobody holds the write lock).
        ``json_values``: the payload holds JSON values only (a message model's dump)."""
        return self._buffer(kind, payload, append_mode, parent)

    def _refuse_bad_append(self, append_mode: str | None) -> None:
        """What every append checks first: the session is open and ``append_mode`` is known."""
        if self.closed:
            raise TranscriptError(f"session {self.path.name} is closed")
        if append_mode not in (None, "side"):
            raise ValueError(f"append_mode must be None or 'side', got {append_mode!r}")

    def _buffer(
        self, kind: str, payload: dict[str, Any], append_mode: str | None, parent: str | None
    ) -> str:
        """Record one entry and keep its line for the next flush (durability ``"none"``;
        nobody else is inside the write lock's section meanwhile)."""
        entry = self._new_entry(kind, payload, append_mode, parent)
        self._pending.append(encode_record(entry))
        self._record([entry])
        return str(entry["id"])

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
        view: SessionTree | None = None,
    ) -> dict[str, Any]:
        tree = view or self._tree
        parent_id = tree.append_parent_id if parent == "append" else parent
        entry: dict[str, Any] = {
            "type": kind,
            "id": generate_entry_id(tree.by_id),
            "parentId": parent_id,
            "timestamp": self._stamp(),
            **payload,
        }
        if append_mode is not None:
            entry["appendMode"] = append_mode
        return entry

    def _locked_append(
        self, kind: str, payload: dict[str, Any], append_mode: str | None, parent: str | None
    ) -> tuple[ExternalChanges, dict[str, Any]]:
        with session_lock_at(self._lock_key, timeout=self.lock_timeout):
            if self._torn_append is not None:
                self._undo_torn_append()
            state = self._file_state
            external = self._read_external_changes()
            view = external.tree
            if view is None and external.entries:
                view = self._tree.preview(external.entries)
            entry = self._new_entry(kind, payload, append_mode, parent, view)
            prefix = b"\n" if external.torn_tail else b""
            line = prefix + encode_record(entry)
            try:
                size = append_bytes(
                    self.path,
                    line,
                    fsync=self.durability == "fsync",
                    size_before=self._file_state[1],  # the file was just checked under the lock
                )
            except BaseException as exc:
                self._append_failed(state, line, exc)
                raise
            self._file_state = (self._file_state[0], size)
            return external, entry

    async def flush(self) -> None:
        """Write lines buffered under durability ``"none"``.

        A flush that fails (the write, the lock, a cancellation before its worker thread
        started) keeps its lines buffered, in order, and raises; the next flush writes them.
        A line is never written twice: a write that failed part-way is cut back first
        (``_write_locked``), and lines are taken off the buffer once written."""
        await checkpoint_if_cancelled()  # what taking the free (fast-acquire) lock checks
        if self._write_lock.locked() or not self._lock_file_ready:
            async with self._write_lock:
                await self._flush_locked()
            return
        # Usually nobody else holds the session lock: append right here (a small write)
        # instead of paying a worker-thread hop at every turn end. This never suspends, so
        # the free write lock is not taken (nothing could take it meanwhile) unless the
        # session lock is held elsewhere and the flush has to wait for it in a thread.
        pending = self._pending
        if not pending:
            return
        count = len(pending)
        payload = b"".join(pending)
        try:
            tree = self._write_buffered(payload, count, 0)
        except SessionLockTimeout:
            self._write_lock.acquire_nowait()  # free: nothing ran since it was checked
            try:
                tree = await anyio.to_thread.run_sync(
                    self._write_buffered, payload, count, self.lock_timeout
                )
                self._flushed(tree)
            finally:
                self._write_lock.release()
            return
        self._flushed(tree)

    async def _flush_locked(self) -> None:
        """``flush`` with the write lock held (another task held it, or the lock file may
        not exist yet)."""
        pending = self._pending
        if not pending:
            return
        count = len(pending)
        payload = b"".join(pending)
        write = self._write_buffered
        if not self._lock_file_ready:
            # no lock file when the session was opened: creating one is slow enough
            # (hundreds of µs) to keep off the event loop (a session this process created
            # makes it below, on the loop, as creating it with the session would have)
            tree = await anyio.to_thread.run_sync(write, payload, count, self.lock_timeout)
        else:
            try:
                tree = write(payload, count, 0)
            except SessionLockTimeout:
                tree = await anyio.to_thread.run_sync(write, payload, count, self.lock_timeout)
        self._lock_file_ready = True
        self._flushed(tree)

    def _flushed(self, tree: SessionTree | None) -> None:
        """Take in the tree a flush read when others wrote meanwhile."""
        if tree is not None:
            tree.repair_pointers()
            self._tree = tree
            self._branch_cache = self._context_cache = None
            self._message_cache.clear()

    def _write_buffered(self, payload: bytes, count: int, timeout: float) -> SessionTree | None:
        """Append ``payload``, the first ``count`` buffered lines, under the session lock
        (``flush``'s locked section; the lock taken by plain calls, no context-manager
        objects per turn end) and take them off the buffer. The new tree when others wrote
        meanwhile, else ``None``."""
        now = next_flush_tick()
        last, flushes = self._flush_ticks
        self._flush_ticks = (now, flushes + 1)
        kept = self._flush_files
        if kept is None or not kept.begin():
            keep = worth_keeping(last, flushes, now)
            kept = self._flush_files = self._keep_flush_files(kept, keep)
        try:
            return self._write_locked(payload, count, timeout, kept)
        finally:
            if kept is not None:
                kept.end()

    def _write_locked(
        self, payload: bytes, count: int, timeout: float, kept: FlushFiles | None
    ) -> SessionTree | None:
        key = self._lock_key
        lock = take_session_lock(key, timeout, kept)
        try:
            if self._torn_append is not None:
                self._undo_torn_append()
            state = self._file_state
            # one stat tells whether anyone else wrote since our last read or write
            # (inode and size); if not, this is one O_APPEND write of every line
            external = self._read_external_changes()
            lines = b"\n" + payload if external.torn_tail else payload
            inode, size = self._file_state  # the file was just checked under the lock
            try:
                if kept is None or not kept.append(self.path, inode, lines, size):
                    append_bytes(self.path, lines, fsync=False, size_before=size)
            except BaseException as exc:
                self._append_failed(state, lines, exc)
                raise
            size += len(lines)
            self._file_state = (inode, size)
            # written: whatever fails from here on, they are not written again
            del self._pending[:count]
            if external.tree is None and not external.entries:
                self.replay_checkpoint.record()  # cheap unless the prefix moved on
                return None
            # Others wrote while we buffered: their lines precede ours in the file,
            # so the tree is rebuilt from the file rather than patched.
            self._file_state = (0, 0)  # until it is: the next write reads the whole file
            data = self.path.read_bytes()
            tree, _, state = load_session_file(
                self.path, data, repair=False, clock=self._now, timeout=self.lock_timeout
            )
            self._file_state = state
            return tree
        finally:
            give_session_lock(key, lock)

    def _append_failed(self, state: tuple[int, int], lines: bytes, exc: BaseException) -> None:
        """After a write that failed and was cut back (the session lock still held): the
        file state as it was before this write read the file, so the next write reads again
        what others appended (and a torn last line). When the cut failed too
        (``TornAppend``), what is left of ``lines`` is cut off before the next write."""
        inode, size = self._file_state
        self._file_state = state
        if isinstance(exc, TornAppend):
            self._torn_append = (inode, size, lines)

    def _undo_torn_append(self) -> None:
        """Cut the file back to its size before a write whose own undo failed (under the
        session lock, before anything else is written), if it still ends with nothing but
        a part of that write; otherwise nothing more can be written safely."""
        assert self._torn_append is not None
        inode, size, lines = self._torn_append
        name = self.path.name
        try:
            stat = os.stat(self.path)
            if stat.st_ino == inode and stat.st_size > size:
                with open(self.path, "rb") as handle:
                    handle.seek(size)
                    tail = handle.read()
                if not lines.startswith(tail):
                    raise TranscriptError(
                        f"session file {name} ends with part of a failed write and lines "
                        "written after it: nothing more is written to it"
                    )
                os.truncate(self.path, size)
        except OSError as exc:
            raise TranscriptError(
                f"session file {name}: cannot undo a failed write: {exc.strerror}"
            ) from exc
        self._torn_append = None

    def _keep_flush_files(self, old: FlushFiles | None, keep: bool) -> FlushFiles | None:
        """Descriptors to keep for the next flushes (``flush_files``), begun: none unless
        ``keep`` (the session flushes often), for a closed session or when no place is free;
        ``old`` (closed, or a fork's) is let go."""
        if old is not None:
            old.close()
        if not keep or self.closed:
            return None
        return FlushFiles.take(self, self._lock_key + SESSION_LOCK_SUFFIX)

    async def _close_flush_files(self) -> None:
        """Close the kept descriptors (``aclose``), after any flush that is using them (a
        session that kept none takes no lock: a descriptor a flush still running takes
        after the session is closed is closed when the session is collected)."""
        if self._flush_files is None:
            return
        async with self._write_lock:
            kept, self._flush_files = self._flush_files, None
            if kept is not None:
                kept.close()


_WIRE_TO_DICT = WireModel.to_dict


def _may_need_repair(wire: dict[str, Any]) -> bool:
    """Whether ``_loadable_message`` could change a message dict: a user message, or an
    assistant error turn (``repair_assistant_entry`` leaves every other assistant alone)."""
    role = wire.get("role")
    if role == "assistant":
        return wire.get("stopReason") == "error"
    return role == "user"


def _is_finite_positive(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and value == value
        and value not in (float("inf"), float("-inf"))
        and value > 0
    )


def wire_message(message: Any) -> Any:
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
