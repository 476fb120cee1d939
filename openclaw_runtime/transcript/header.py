"""Salvaging a session file whose header line is damaged.

The header is one line; every entry after it carries its own id and parent. So one bad byte
in the header must not make a session unloadable when every entry is intact: the damaged
line is kept aside verbatim (in the invalid-lines side file), a new header is made from what
can still be read (``cwd``, ``timestamp``, ``parentSession``, ``version``) and the session id
from the file name, and the entries are kept as they are.

A file whose header line is missing altogether (its first line is an entry) keeps that entry.
A file where nothing looks like a session (no entry parses after the first line, and the
first line is not a session header either) is not salvaged: it may not be a session file at
all, and rewriting it would be wrong. A file that holds only blank space or one unterminated
line is a session whose creator died mid-write, and gets a fresh header.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from .entries import CURRENT_SESSION_VERSION, make_header
from .jsonl import InvalidLine, entry_problem, parse_session_bytes

__all__ = ["HeaderSalvage", "salvage_session_header"]

_PROBE_HEADER = b'{"type":"session","id":"_"}\n'


@dataclass(frozen=True, slots=True)
class HeaderSalvage:
    """A new header for a file whose first line is damaged, and what to do with the rest.

    ``damaged`` is the first non-blank line (``None`` for an empty file); ``body`` is every
    byte after it, unchanged. ``entries_found`` says whether any entry parsed in ``body``.
    """

    header: dict[str, Any]
    damaged: InvalidLine | None
    body: bytes
    entries_found: bool

    @property
    def content(self) -> bytes:
        """The file with the new header in place of the damaged line."""
        return orjson.dumps(self.header) + b"\n" + self.body


def _first_line(data: bytes) -> tuple[int, int, int, bool] | None:
    """``(line number, start, end, terminated)`` of the first non-blank line."""
    start = 0
    number = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        terminated = end != -1
        if not terminated:
            end = size
        number += 1
        if data[start:end].strip():
            return number, start, end, terminated
        start = end + 1
    return None


def _str_field(record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    return value if isinstance(value, str) and value.strip() else None


def salvage_session_header(
    data: bytes, *, session_id: str, cwd: str, timestamp: str, reason: str
) -> HeaderSalvage | None:
    """A header for ``data`` (a session file whose header is unusable), or ``None`` when the
    file does not look like a session. ``session_id`` (from the file name), ``cwd`` and
    ``timestamp`` are used where the damaged line gives nothing; ``reason`` is recorded with
    the damaged line. Pure: reads and writes nothing."""
    first = _first_line(data)
    if first is None:
        return HeaderSalvage(make_header(session_id, cwd, timestamp=timestamp), None, b"", False)
    number, start, end, terminated = first
    body = data[end + 1 :] if terminated else b""
    entries_found = bool(parse_session_bytes(_PROBE_HEADER + body).entries)
    try:
        record = orjson.loads(data[start:end].rstrip(b"\r"))
    except orjson.JSONDecodeError:
        record = None
    record = record if isinstance(record, dict) else {}
    if "parentId" in record and entry_problem(record) is None and record.get("type") != "session":
        # the header line is gone altogether and this is the first entry: keep it
        body = data[start:]
        return HeaderSalvage(make_header(session_id, cwd, timestamp=timestamp), None, body, True)
    torn_creation = not terminated and not body
    if not (entries_found or torn_creation or record.get("type") == "session"):
        return None
    version = record.get("version")
    header = make_header(
        session_id,
        _str_field(record, "cwd") or cwd,
        parent_session=_str_field(record, "parentSession"),
        timestamp=_str_field(record, "timestamp") or timestamp,
        version=version
        if isinstance(version, int) and not isinstance(version, bool) and version > 0
        else CURRENT_SESSION_VERSION,
    )
    damaged = InvalidLine(number, data[start:end], reason, terminated)
    return HeaderSalvage(header, damaged, body, entries_found)
