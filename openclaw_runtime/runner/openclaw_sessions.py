"""OpenClaw's own session index (``sessions.json``), read so its sessions can be continued.

OpenClaw keeps, beside its transcripts (``~/.openclaw/agents/<agent>/sessions/``), a
``sessions.json``: one JSON object mapping each session key (``agent:main:main``,
``telegram:…``) to an entry whose ``sessionId`` names the transcript ``<sessionId>.jsonl``
(``sessionFile``, when present, names it instead; older versions stored it absolute). Keys are
compared as OpenClaw's store does for ordinary keys: the exact (trimmed) key wins, else a key
that differs only in letter case, the most recently updated first.

The file belongs to OpenClaw: it is only ever read here, never written, moved or set aside.
Bad JSON in it is a :class:`OpenClawSessionIndexError` naming the file (a key lookup cannot
be answered honestly without it); an entry without a usable ``sessionId`` is skipped, as
OpenClaw's loader drops it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from .._exceptions import ConfigurationError, TranscriptError
from ..transcript.session_ids import validate_session_id

__all__ = [
    "OPENCLAW_SESSION_INDEX_FILE",
    "OpenClawSessionIndex",
    "OpenClawSessionIndexError",
    "find_openclaw_session_key",
    "openclaw_entry_session_id",
    "parse_openclaw_session_index",
    "resolve_openclaw_session_entry",
]

#: The file name of OpenClaw's index, in the folder of its transcripts.
OPENCLAW_SESSION_INDEX_FILE = "sessions.json"

OpenClawEntries = dict[str, dict[str, Any]]


class OpenClawSessionIndexError(ConfigurationError):
    """OpenClaw's ``sessions.json`` cannot be read (the message names the file and why)."""


def _updated_at(entry: Mapping[str, Any]) -> float:
    value = entry.get("updatedAt")
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return 0.0


def parse_openclaw_session_index(data: bytes, *, path: str | os.PathLike[str]) -> OpenClawEntries:
    """``key → entry`` of a ``sessions.json`` (entries that are not objects dropped).

    :raises OpenClawSessionIndexError: not JSON, or not a JSON object; the message names
        ``path`` and the reason, never the content.
    """
    if not data.strip():
        return {}
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise OpenClawSessionIndexError(
            f"cannot read OpenClaw's session index {os.fspath(path)}: not valid JSON ({exc}); "
            "the file was left as it is"
        ) from None
    if not isinstance(document, dict):
        raise OpenClawSessionIndexError(
            f"cannot read OpenClaw's session index {os.fspath(path)}: expected a JSON object "
            f"of session keys, found {type(document).__name__}; the file was left as it is"
        )
    return {str(key): value for key, value in document.items() if isinstance(value, dict)}


def openclaw_entry_session_id(
    entry: Mapping[str, Any], sessions_dir: str | os.PathLike[str]
) -> str | None:
    """The id under which this runtime's store finds the entry's transcript, or ``None``.

    A ``sessionFile`` directly inside ``sessions_dir`` names it by its stem (OpenClaw's topic
    transcripts are ``<id>-topic-<topic>.jsonl``); otherwise the entry's ``sessionId``.
    """
    session_file = entry.get("sessionFile")
    if isinstance(session_file, str) and session_file.strip():
        root = Path(sessions_dir)
        candidate = Path(session_file.strip())
        resolved = candidate if candidate.is_absolute() else root / candidate
        if resolved.suffix == ".jsonl" and resolved.parent.resolve() == root.resolve():
            try:
                return validate_session_id(resolved.stem)
            except TranscriptError:
                pass
    try:
        return validate_session_id(entry.get("sessionId"))
    except TranscriptError:
        return None


def resolve_openclaw_session_entry(
    entries: Mapping[str, Mapping[str, Any]], session_key: str
) -> Mapping[str, Any] | None:
    """The entry of ``session_key``: the exact trimmed key, else the most recently updated
    key equal to it but for letter case (OpenClaw folds legacy keys to lower case)."""
    key = session_key.strip()
    if not key:
        return None
    exact = entries.get(key)
    if exact is not None:
        return exact
    folded = key.lower()
    best: Mapping[str, Any] | None = None
    for candidate_key, entry in entries.items():
        if candidate_key.strip().lower() == folded and (
            best is None or _updated_at(entry) > _updated_at(best)
        ):
            best = entry
    return best


def find_openclaw_session_key(
    entries: Mapping[str, Mapping[str, Any]],
    session_id: str,
    sessions_dir: str | os.PathLike[str],
) -> str | None:
    """The most recently updated key whose entry names ``session_id`` (the backfill)."""
    best: tuple[float, str] | None = None
    for key, entry in entries.items():
        if openclaw_entry_session_id(entry, sessions_dir) == session_id:
            updated = _updated_at(entry)
            if best is None or updated > best[0]:
                best = (updated, key)
    return best[1] if best else None


class OpenClawSessionIndex:
    """A read-only view of one ``sessions.json``, re-read only when the file changed."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._cache: tuple[tuple[int, int, int], OpenClawEntries] | None = None

    @property
    def sessions_dir(self) -> Path:
        """The folder of the transcripts this index names."""
        return self.path.parent

    def entries(self) -> OpenClawEntries:
        """``key → entry`` (empty when there is no file); ``OpenClawSessionIndexError`` when
        the file is not a JSON object."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise OpenClawSessionIndexError(
                f"cannot read OpenClaw's session index {self.path}: "
                f"{exc.strerror or type(exc).__name__}"
            ) from None
        marker = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if self._cache is not None and self._cache[0] == marker:
            return self._cache[1]
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        entries = parse_openclaw_session_index(data, path=self.path)
        self._cache = (marker, entries)
        return entries

    def lookup_id(self, session_key: str) -> str | None:
        """The session id OpenClaw bound ``session_key`` to, or ``None``."""
        entry = resolve_openclaw_session_entry(self.entries(), session_key)
        return None if entry is None else openclaw_entry_session_id(entry, self.sessions_dir)

    def lookup_key(self, session_id: str) -> str | None:
        """The most recently updated OpenClaw key naming ``session_id``, or ``None``."""
        return find_openclaw_session_key(self.entries(), session_id, self.sessions_dir)
