"""Bytes ↔ session records: one-pass parsing, lossless side files, atomic and locked writes.

Parsing never raises on bad data. Every physical line is either an accepted record or an
:class:`InvalidLine` that carries its exact bytes, so a caller can keep it aside instead of
dropping it (DESIGN §8). Parsing uses ``orjson`` and does only the checks the tree needs, so
loading a session costs little more than decoding its JSON.

Writes go through three primitives: :func:`append_bytes` (one ``write`` per append, optional
``fsync``), :func:`atomic_write` (temp file in the same folder, ``fsync``, ``os.replace``,
directory ``fsync``) and :func:`create_exclusive` (the header appears whole or not at all).
:func:`session_lock` serialises writers across processes with ``filelock``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import filelock
import orjson

from .._exceptions import TranscriptError
from .._files import _fsync_dir, append_or_undo, atomic_write, write_all
from .._flock import FlockLock
from ..redaction import SecretMatchers, contains_secret, redact_bytes, redact_json
from .flush_files import FlushFiles
from .whole_file import create_whole

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "SESSION_LOCK_SUFFIX",
    "Durability",
    "InvalidLine",
    "ParsedSession",
    "SessionLockTimeout",
    "append_bytes",
    "atomic_write",
    "create_exclusive",
    "encode_record",
    "entry_problem",
    "finish_line",
    "give_session_lock",
    "invalid_lines_path",
    "keep_invalid_lines",
    "open_side_file",
    "parse_session_bytes",
    "session_lock",
    "session_lock_at",
    "session_lock_path",
    "take_session_lock",
    "unscanned_line",
]

Durability = Literal["none", "flush", "fsync"]

#: Seconds a writer waits for another process's lock before giving up.
DEFAULT_LOCK_TIMEOUT = 30.0


class SessionLockTimeout(TranscriptError):
    """Another process held the session's write lock for longer than the timeout."""


@dataclass(frozen=True, slots=True)
class InvalidLine:
    """A line that could not be used, kept verbatim with the reason."""

    line_number: int
    raw: bytes
    reason: str
    terminated: bool


@dataclass(slots=True)
class ParsedSession:
    """Everything one pass over a session file found.

    ``header`` is the first line that parsed as JSON (OpenClaw checks the first *parsed*
    record, so a garbage first line does not hide a good header). ``entries`` are the later
    accepted records in file order; ``spans`` holds each entry's byte range in ``data`` so
    untouched lines can be written back unchanged.
    """

    data: bytes
    header: dict[str, Any] | None = None
    header_span: tuple[int, int] | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    invalid: list[InvalidLine] = field(default_factory=list)
    header_problem: str | None = None


def entry_problem(entry: Any) -> str | None:
    """Why a parsed record cannot be a session entry, or ``None`` when it can."""
    if type(entry) is not dict:
        return "is not a JSON object"
    kind = entry.get("type")
    if type(kind) is not str or not kind:
        return "is missing entry type"
    entry_id = entry.get("id")
    if type(entry_id) is not str or not entry_id:
        return "is missing entry id"
    parent = entry.get("parentId")
    if parent is not None and type(parent) is not str:
        return "has invalid parentId"
    if kind == "message":
        message = entry.get("message")
        if type(message) is not dict:
            return "has no message object"
        role = message.get("role")
        if type(role) is not str or not role.strip():
            return "has a message without a role"
    elif kind == "leaf":
        target = entry.get("targetId")
        if target is not None and type(target) is not str:
            return "has invalid targetId"
        append_parent = entry.get("appendParentId")
        if append_parent is not None and type(append_parent) is not str:
            return "has invalid appendParentId"
    mode = entry.get("appendMode")
    if mode is not None and mode != "side":
        return "has invalid appendMode"
    return None


def parse_session_bytes(data: bytes, clean: int = 0) -> ParsedSession:
    """Split, decode and check every line of a session file in one pass.

    ``clean``: the first ``clean`` bytes are known to hold only the header line, blank lines
    and lines that are session entries (``clean_head.CleanHead``: proven against a CRC of
    these very bytes), so ``entry_problem`` is not asked for the lines that start there.
    """
    parsed = ParsedSession(data=data)
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    invalid = parsed.invalid
    entries = parsed.entries
    spans = parsed.spans
    entries_append = entries.append
    spans_append = spans.append
    size = len(data)
    start = 0
    line_number = 0
    header_seen = False
    find = data.find
    while start < size:
        end = find(b"\n", start)
        terminated = end != -1
        if not terminated:
            end = size
        line_number += 1
        stop = end - 1 if end > start and data[end - 1] == 13 else end  # strip "\r"
        line = data[start:stop]
        next_start = end + 1
        if not line.strip():
            start = next_start
            continue
        try:
            record = loads(line)
        except decode_error:
            invalid.append(
                InvalidLine(line_number, data[start:end], "is not valid JSON", terminated)
            )
            start = next_start
            continue
        if not header_seen:
            header_seen = True
            parsed.header_span = (start, end)
            if type(record) is dict:
                parsed.header = record
            else:
                parsed.header_problem = "first record is not a JSON object"
            start = next_start
            continue
        problem = entry_problem(record) if start >= clean else None
        if problem is not None:
            invalid.append(InvalidLine(line_number, data[start:end], problem, terminated))
        else:
            entries_append(record)
            spans_append((start, end))
        start = next_start
    if header_seen and parsed.header_problem is None:
        header = parsed.header or {}
        header_id = header.get("id")
        if header.get("type") != "session" or type(header_id) is not str or not header_id:
            parsed.header_problem = "invalid session header"
    elif not header_seen:
        parsed.header_problem = "missing session header"
    return parsed


def encode_record(record: dict[str, Any]) -> bytes:
    """One JSONL line (compact JSON, as JavaScript's ``JSON.stringify`` writes it).

    Every record the runtime writes is serialized here, so this is where the last defence
    against a stored credential sits: a line that holds a registered secret or a key-shaped
    value is re-encoded with its strings redacted (one regex search when it holds none).
    """
    try:
        line = orjson.dumps(record)
        if contains_secret(line):
            line = redact_json(line)
        return line + b"\n"
    except TypeError as exc:
        raise TranscriptError(f"session record is not JSON-serialisable: {exc}") from exc


def unscanned_line(record: dict[str, Any]) -> bytes:
    """``encode_record``'s line before its secret scan (``finish_line`` does the scan).
    Raises as ``encode_record`` does."""
    try:
        return orjson.dumps(record) + b"\n"
    except TypeError as exc:
        raise TranscriptError(f"session record is not JSON-serialisable: {exc}") from exc


def finish_line(line: bytes, matchers: SecretMatchers) -> bytes:
    """``encode_record(record)`` from ``line = unscanned_line(record)``, scanned with the
    secrets registered when ``line`` was made (``secret_matchers()`` then).

    A line to mask is read back and written again (``redaction.redact_json``), as
    ``encode_record`` does.
    """
    if contains_secret(line[:-1], matchers):
        return redact_json(line[:-1], matchers=matchers) + b"\n"
    return line


def invalid_lines_path(session_file: str | Path) -> Path:
    """The side file next to a session where unreadable lines are kept."""
    path = Path(session_file)
    return path.with_name(f"{path.name}.invalid.jsonl")


def keep_invalid_lines(
    session_file: str | Path, lines: list[InvalidLine], *, kept_at: str
) -> Path | None:
    """Append unreadable lines to the side file (fsynced); nothing is ever discarded.

    Each record keeps the exact bytes: ``raw`` when they are UTF-8, else ``rawBase64`` (with
    credentials masked: ``openclaw_runtime.redaction``).
    """
    if not lines:
        return None
    target = invalid_lines_path(session_file)
    name = Path(session_file).name
    out = bytearray()
    for line in lines:
        record: dict[str, Any] = {
            "sessionFile": name,
            "lineNumber": line.line_number,
            "reason": line.reason,
            "terminated": line.terminated,
            "keptAt": kept_at,
        }
        raw = redact_bytes(line.raw)  # exact bytes, except credentials
        try:
            record["raw"] = raw.decode("utf-8")
        except UnicodeDecodeError:
            record["rawBase64"] = base64.b64encode(raw).decode("ascii")
        out += json.dumps(record, ensure_ascii=True).encode("ascii") + b"\n"
    append_bytes(target, bytes(out), fsync=True, create=True)
    return target


def open_side_file(path: str | Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` for a file written next to a session (side file, backup): never through a
    symbolic link, so a link planted in the sessions folder cannot redirect the write."""
    try:
        return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), mode)
    except OSError as exc:
        if os.path.islink(path):
            raise TranscriptError(
                f"refusing to write {Path(path).name}: it is a symbolic link"
            ) from None
        raise exc


def append_bytes(
    path: str | Path,
    payload: bytes,
    *,
    fsync: bool,
    create: bool = False,
    size_before: int | None = None,
) -> int:
    """Append ``payload`` with ``O_APPEND``; returns the file size afterwards. ``create``
    (side files) also refuses to follow a symbolic link. A caller that knows the size the
    file had (it holds the file's lock and has just checked it) passes ``size_before``,
    which saves asking the file system again; a write (or ``fsync``) that fails then cuts
    the file back to that size before raising (``_files.append_or_undo``), so the caller
    may write ``payload`` again."""
    flags = os.O_WRONLY | os.O_APPEND
    fd = open_side_file(path, flags | os.O_CREAT) if create else os.open(path, flags, 0o600)
    try:
        if size_before is None:
            write_all(fd, payload)
            if fsync:
                os.fsync(fd)
        else:
            append_or_undo(fd, payload, size_before, fsync=fsync)
        if size_before is not None:
            return size_before + len(payload)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def create_exclusive(path: str | Path, content: bytes, *, fsync: bool = True) -> int:
    """Create ``path`` holding ``content``; ``FileExistsError`` if it already exists. Returns
    the new file's inode.

    The file never exists half-written: it gets its name only once written
    (:func:`.whole_file.create_whole`: an ``O_TMPFILE`` file linked into place where the OS
    allows, else a temp file beside it, hard-linked). ``fsync=False`` skips flushing it (and
    its directory) to disk, for stores that do not promise durability.
    """
    target = os.fspath(path)
    inode = create_whole(target, content, fsync=fsync)
    if fsync:
        _fsync_dir(Path(target).parent)
    return inode


_held = threading.local()

#: Suffix of a session file's write lock. Not ``.lock``: OpenClaw's own writers take
#: ``<file>.lock`` by creating it exclusively and treat an existing one as held (an empty one
#: for 30 minutes), so a lock file left beside a session OpenClaw also writes would block it.
SESSION_LOCK_SUFFIX = ".runtime.lock"


def session_lock_path(session_file: str | Path) -> Path:
    """The write-lock file of a session file (``<file>.runtime.lock``)."""
    return Path(f"{session_file}{SESSION_LOCK_SUFFIX}")


@contextlib.contextmanager
def session_lock(
    session_file: str | Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT
) -> Iterator[None]:
    """Hold the cross-process write lock of one session file (:func:`session_lock_path`).

    Re-entrant within a thread (a repair that re-reads under the lock may lock again).
    Acquire and release happen on the calling thread; callers run the whole locked section
    in one worker thread.
    """
    with session_lock_at(os.path.abspath(session_file), timeout=timeout):
        yield


@contextlib.contextmanager
def session_lock_at(key: str, *, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """:func:`session_lock` for ``key``, the session file's ``os.path.abspath`` worked out
    once by the caller (an open session flushes every turn: no path objects per flush)."""
    lock = take_session_lock(key, timeout)
    try:
        yield
    finally:
        give_session_lock(key, lock)


def take_session_lock(
    key: str, timeout: float = DEFAULT_LOCK_TIMEOUT, kept: FlushFiles | None = None
) -> FlockLock | FlushFiles | None:
    """:func:`session_lock_at`'s taking as a plain call, for the turn-end flush (no generator
    and context-manager objects per turn): the lock now held, or ``None`` when this thread
    held it already (a re-entry, counted). Pass the result to :func:`give_session_lock` in a
    ``finally``. ``kept``: the session's kept lock-file descriptor, tried first (without
    waiting); when it cannot take the lock, the lock file is opened and locked as always."""
    held: dict[str, int] | None = getattr(_held, "paths", None)
    if held is None:
        held = _held.paths = {}
    if held.get(key):
        held[key] += 1
        return None
    if kept is not None and kept.try_lock():
        held[key] = 1
        return kept
    lock = FlockLock(key + SESSION_LOCK_SUFFIX, timeout=timeout)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        raise SessionLockTimeout(
            f"session file {os.path.basename(key)} is locked by another writer "
            f"(waited {timeout:g}s)"
        ) from exc
    except OSError as exc:  # e.g. a symbolic link planted as the lock file (ELOOP)
        raise TranscriptError(
            f"cannot lock session file {os.path.basename(key)}: {exc.strerror}"
        ) from None
    held[key] = 1
    return lock


def give_session_lock(key: str, lock: FlockLock | FlushFiles | None) -> None:
    """Undo one :func:`take_session_lock` of ``key`` (``lock``: what it returned)."""
    held: dict[str, int] = _held.paths
    if lock is None:
        held[key] -= 1
        return
    held.pop(key, None)
    lock.release()
