"""Whole-session rewrites: atomic replacement of every entry, and branch re-growing.

* ``SessionRewriter.rewrite_entries`` replaces every entry at once (temp file, ``fsync``,
  ``os.replace``): sanitising and compaction rewrites; readers see old or new, never a mix;
* ``SessionRewriter.rewrite_transcript_entries`` replaces messages on the active branch by
  re-growing it from the first replaced entry's parent (OpenClaw
  ``rewriteTranscriptEntriesInSessionManager``);
* ``checked_rewrite_records`` is the one validation of rewritten entries, shared with the
  Redis session manager.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from .._exceptions import TranscriptError
from .append import SessionWriter, wire_message
from .jsonl import atomic_write, encode_record, entry_problem, session_lock
from .tree import SessionTree

__all__ = ["SessionRewriter", "TranscriptRewriteResult", "checked_rewrite_records"]

_BASE_KEYS = frozenset({"type", "id", "parentId", "timestamp"})


@dataclass(frozen=True, slots=True)
class TranscriptRewriteResult:
    """Outcome of :meth:`SessionManager.rewrite_transcript_entries`."""

    changed: bool
    bytes_freed: int = 0
    rewritten_entries: int = 0
    reason: str | None = None


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


class SessionRewriter(SessionWriter):
    """Whole-session rewrites on top of :class:`~.append.SessionWriter`."""

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
            tree = SessionTree.build(self._tree.header, records)
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
                after = len(encode_record(wire_message(wanted[entry["id"]]))) - 1
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
            identity = _message_identity(wire_message(replacement))
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
