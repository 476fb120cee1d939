"""The sweep of ``<state_dir>/lanes``: lock files of lanes nobody holds, waits on or used lately.

A lane's record (``<hash>.json``) is removed when the lane empties, but its lock file
(``<hash>.json.lock``) stays: removing it at every release would make the session's next run
create it again (a file creation, 90–600 µs on the workplace disk, against ≈ 10 µs to reopen
it). So lock files are removed in bulk instead, from a worker thread, by this sweep: a lock
file goes when its lane has no record (no holder, no waiter in any process) and nobody holds
its lock, checked while holding the lock itself (``_flock.remove_lock_file``), so a process
taking the lane at the same moment locks the file that is there after the removal instead.

Blocking: run it in a worker thread, never on the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from functools import partial

from .._flock import remove_lock_file

__all__ = ["LOCK_SUFFIX", "SWEEP_MAX_ENTRIES", "LaneSweep", "sweep_lane_locks"]

#: The ending of a lane's lock file (its record's name plus ``.lock``).
LOCK_SUFFIX = ".json.lock"
#: How many directory entries one sweep looks at, at most (its cost stays bounded in a
#: directory of 100k entries; the next sweep goes on from where it stopped).
SWEEP_MAX_ENTRIES = 4096


@dataclass(frozen=True, slots=True)
class LaneSweep:
    """What one sweep did: entries looked at, lock files removed, and where the next sweep
    starts (``resume_at`` entries in; 0 when this one saw the whole directory)."""

    looked_at: int = 0
    removed: int = 0
    resume_at: int = 0

    @property
    def complete(self) -> bool:
        """Whether the sweep reached the end of the directory (not stopped by its budget)."""
        return self.resume_at == 0


def sweep_lane_locks(
    directory: str | os.PathLike[str],
    *,
    spare: Collection[str] = frozenset(),
    max_entries: int = SWEEP_MAX_ENTRIES,
    start_at: int = 0,
) -> LaneSweep:
    """Remove the lock files in ``directory`` whose lane has no record and no lock holder.

    ``spare``: record names (``<hash>.json``) whose lock files stay whatever their state (the
    lanes this process holds, waits on or released lately: they will most likely be taken
    again soon). Looks at no more than ``max_entries`` entries, after passing over the first
    ``start_at`` unread (where the last sweep stopped, less what it removed: the entries it
    kept), so entries kept at the front never stop later sweeps from getting further."""
    looked_at = removed = passed = 0
    base = os.fspath(directory)
    try:
        entries = os.scandir(base)
    except (FileNotFoundError, NotADirectoryError):
        return LaneSweep()
    with entries:
        for entry in entries:
            if passed < start_at:
                passed += 1
                continue
            if looked_at >= max_entries:
                return LaneSweep(looked_at, removed, passed + looked_at - removed)
            looked_at += 1
            name = entry.name
            if not name.endswith(LOCK_SUFFIX):
                continue
            record_name = name[: -len(".lock")]
            if record_name in spare:
                continue
            record = os.path.join(base, record_name)
            if os.path.lexists(record):  # in use (or a stale holder's): a cheap look first
                continue
            if remove_lock_file(entry.path, partial(os.path.lexists, record)):
                removed += 1
    return LaneSweep(looked_at, removed)
