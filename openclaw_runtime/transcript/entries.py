"""Session file records: the header, typed entries, ids, and how entries form a tree.

A session file is JSONL. Line 1 is the header ``{type:"session", version, id, timestamp, cwd,
parentSession?}``; every later line is an entry ``{type, id, parentId, timestamp, ...}``. Entries
are kept as the plain dicts read from disk so that untouched lines are written back byte for
byte; these pure functions are the only place that interprets them.

Tree rules (OpenClaw's agent-core session storage):

* most entries move the visible *leaf* to themselves; ``leaf`` control records move it to their
  ``targetId``; entries written with ``appendMode:"side"`` and unknown (plugin) entry types do
  not move it;
* the *append parent* (the ``parentId`` of the next entry) is the last entry's id, except after
  a ``leaf`` record, where it is the record's ``appendParentId`` when present, else its target;
* when an entry was appended under a side row while the visible leaf was elsewhere, its
  *logical* parent is that visible leaf, so side rows never enter the visible branch;
* ``leaf`` records are skipped when a path is built, and the walk follows their ``targetId``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .._exceptions import TranscriptError

__all__ = [
    "CURRENT_SESSION_VERSION",
    "ENTRY_TYPES",
    "LEAF_MOVING_TYPES",
    "UNCHANGED",
    "SessionPathError",
    "append_parent_id_after_entry",
    "build_logical_parents",
    "generate_entry_id",
    "is_side_append",
    "iso_timestamp",
    "iso_timestamp_now",
    "iso_timestamp_slow",
    "leaf_id_update_after_entry",
    "make_header",
    "parse_timestamp_ms",
    "path_to_root",
]

CURRENT_SESSION_VERSION = 3

#: Entry types this runtime writes and understands.
ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "active_tools_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "leaf",
    }
)

#: Entry types that select themselves as the visible leaf.
LEAF_MOVING_TYPES = ENTRY_TYPES - {"leaf"}

_ID_ATTEMPTS = 100

#: Sentinel returned by :func:`leaf_id_update_after_entry` for entries that keep the leaf.
UNCHANGED: Any = object()


class SessionPathError(TranscriptError):
    """The entry tree cannot be walked: an unknown start entry or a cycle."""


def iso_timestamp(now: datetime | None = None) -> str:
    """``2026-01-01T00:00:00.000Z`` — the timestamp format JavaScript's ``toISOString`` writes.

    ``now`` ``None``: the system clock, read as ``datetime.now(UTC)`` reads it but without the
    ``datetime`` (:func:`iso_timestamp_now`): every appended entry under the default clock is
    stamped this way. Either way the text up to the second is kept for the last second seen
    (one slot: consecutive appends fall in the same second) and only the milliseconds are
    formatted per call; ``iso_timestamp_slow`` is the plain formatting it must equal.
    """
    if now is None:
        return iso_timestamp_now()
    moment = now if now.tzinfo is UTC else now.astimezone(UTC)
    # whole seconds since the epoch, exactly (no float: a year-9999 reading would round)
    seconds = (moment.replace(microsecond=0, tzinfo=None) - _EPOCH) // _ONE_SECOND
    return _stamp(seconds, moment.microsecond // 1000)


def iso_timestamp_now(ns: int | None = None) -> str:
    """The default clock's stamp: ``time.time_ns()`` (``ns``: that reading, for tests), the
    system clock ``datetime.now`` reads, its milliseconds floored as ``datetime.now`` floors
    its microseconds."""
    if ns is None:
        ns = time.time_ns()
    return _stamp(ns // 1_000_000_000, ns // 1_000_000 % 1000)


def _stamp(seconds: int, millis: int) -> str:
    """The stamp of ``millis`` into the epoch second ``seconds``, its text up to the second
    kept for the last second seen."""
    last, prefix = _last_epoch_second[0]  # one tuple read: second and text belong together
    if last != seconds:
        prefix = (_EPOCH + timedelta(seconds=seconds)).isoformat()
        _last_epoch_second[0] = (seconds, prefix)  # racing threads at worst format it twice
    return f"{prefix}.{millis:03d}Z"


_EPOCH = datetime(1970, 1, 1)
_ONE_SECOND = timedelta(seconds=1)
_last_epoch_second: list[tuple[int | None, str]] = [(None, "")]


def iso_timestamp_slow(now: datetime | None = None) -> str:
    """What ``iso_timestamp`` gives, formatted in full every call (its reference in tests)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: integers below this in size convert to a finite float
_FINITE_INT = 1 << 1000


def parse_timestamp_ms(value: Any) -> int | float | None:
    """Milliseconds from a number or an ISO string (``Date.parse``), else ``None``."""
    if type(value) is int and -_FINITE_INT < value < _FINITE_INT:  # a model's own stamp
        return value  # ``math.isfinite`` of it is true (a larger one overflows it: below)
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)
    return None


def make_header(
    session_id: str,
    cwd: str,
    *,
    parent_session: str | None = None,
    timestamp: str | None = None,
    version: int = CURRENT_SESSION_VERSION,
) -> dict[str, Any]:
    """The first line of a session file."""
    header: dict[str, Any] = {
        "type": "session",
        "version": version,
        "id": session_id,
        "timestamp": timestamp or iso_timestamp(),
        "cwd": cwd,
    }
    if parent_session is not None:
        header["parentSession"] = parent_session
    return header


def generate_entry_id(taken: Mapping[str, Any] | set[str]) -> str:
    """A fresh 8-hex-character entry id not in ``taken``.

    OpenClaw takes the first 8 characters of a uuidv7; those encode the clock in 65-second
    steps, so here the 8 characters are random (same length and alphabet, far fewer
    collisions). After 100 collisions a full 32-character id is used, as OpenClaw falls back
    to the full uuid.
    """
    candidate = os.urandom(4).hex()  # the first draw (nearly always taken) outside the loop
    if candidate not in taken:
        return candidate
    for _ in range(_ID_ATTEMPTS - 1):
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            return candidate
    return os.urandom(16).hex()


def is_side_append(entry: Mapping[str, Any]) -> bool:
    """Written with ``appendMode:"side"``: recorded, but never selected as the visible leaf."""
    return entry.get("appendMode") == "side"


def leaf_id_update_after_entry(entry: Mapping[str, Any]) -> str | object | None:
    """The visible leaf after ``entry``; :data:`UNCHANGED` when the entry does not move it."""
    kind = entry.get("type")
    if kind == "leaf":
        return entry.get("targetId")
    if kind in LEAF_MOVING_TYPES and not is_side_append(entry):
        return entry.get("id")
    return UNCHANGED


def append_parent_id_after_entry(entry: Mapping[str, Any]) -> str | None:
    """The ``parentId`` the next appended entry gets after ``entry``."""
    if entry.get("type") == "leaf":
        if "appendParentId" in entry:
            value = entry.get("appendParentId")
            return value if isinstance(value, str) else None
        target = entry.get("targetId")
        return target if isinstance(target, str) else None
    return entry.get("id")


def build_logical_parents(
    entries: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, str | None], str | None, str | None]:
    """Logical parents of entries appended under side rows, and the final leaf / append parent.

    Returns ``(logical_parents, leaf_id, append_parent_id)`` after replaying every entry.
    """
    logical: dict[str, str | None] = {}
    leaf_id: str | None = None
    append_parent: str | None = None
    for entry in entries:
        update = leaf_id_update_after_entry(entry)
        entry_id = entry.get("id")
        if (
            update is not UNCHANGED
            and update == entry_id
            and entry.get("parentId") == append_parent
            and leaf_id != append_parent
        ):
            logical[entry_id] = leaf_id  # type: ignore[index]
        if update is not UNCHANGED:
            leaf_id = update  # type: ignore[assignment]
        append_parent = append_parent_id_after_entry(entry)
    return logical, leaf_id, append_parent


def path_to_root(
    start_id: str | None,
    by_id: Mapping[str, Mapping[str, Any]],
    logical_parents: Mapping[str, str | None],
    *,
    missing: list[str] | None = None,
) -> list[Any]:
    """Entries from the root to ``start_id``, leaf control records left out.

    A cycle raises :class:`SessionPathError`. A parent that is not in the file (a line that
    was kept aside as unreadable) ends the walk there and is reported in ``missing``: the
    branch then starts at the oldest entry that still has its ancestry, instead of the
    whole session becoming unreadable.
    """
    if start_id is None:
        return []
    current = by_id.get(start_id)
    if current is None:
        raise SessionPathError(f"Entry {start_id} not found")
    path: list[Any] = []
    seen: set[str] = set()
    while current is not None:
        current_id = current.get("id")
        if current_id in seen:
            raise SessionPathError(f"Cycle found at entry {current_id}")
        seen.add(current_id)  # type: ignore[arg-type]
        is_leaf = current.get("type") == "leaf"
        if not is_leaf:
            path.append(current)
        if is_leaf:
            parent_id = current.get("targetId")
        elif current_id in logical_parents:
            parent_id = logical_parents[current_id]  # type: ignore[index]
        else:
            parent_id = current.get("parentId")
        if not parent_id:
            break
        parent = by_id.get(parent_id)
        if parent is None:
            if missing is not None:
                missing.append(parent_id)
            break
        current = parent
    path.reverse()
    return path
