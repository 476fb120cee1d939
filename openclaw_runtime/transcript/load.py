"""Load a session file into a ``SessionTree`` in one pass, repairing it when asked.

* ``load_session_file`` parses the bytes, plans the repair (``repair.plan_session_repair``)
  and, with ``repair``, writes it under the session lock (backup + side file of bad lines);
  a damaged header line is salvaged (``header.salvage_session_header``) the same way;
* ``ExternalChanges`` / ``parse_appended``: what other writers appended since a manager
  last looked (the append path reads these under the lock before writing);
* ``bulk_allocation`` pauses the cyclic GC while a whole session is parsed, and moves what
  it built straight to the oldest generation (``promotes_bulk``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._exceptions import TranscriptError
from .clean_head import KnownHead, clean_entries, found_head, proven_head
from .entries import iso_timestamp, iso_timestamp_now
from .header import salvage_session_header
from .jsonl import atomic_write, keep_invalid_lines, parse_session_bytes, session_lock
from .repair import RepairReport, plan_session_repair, report_for, write_backup, write_repair
from .session_ids import validate_session_id
from .tree import SessionTree

__all__ = [
    "NO_CHANGES",
    "PROMOTE_AT",
    "Clock",
    "ExternalChanges",
    "bulk_allocation",
    "clock_stamp",
    "load_session_file",
    "parse_appended",
    "promotes_bulk",
    "utc_now",
]

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default clock of session managers."""
    return datetime.now(UTC)


def clock_stamp(clock: Clock) -> Callable[[], str]:
    """What stamps a session's entries under ``clock``: the default clock's stamp is read
    from the system clock without a ``datetime`` (``iso_timestamp_now``, what
    ``iso_timestamp()`` reads), another clock's reading is formatted (the same text for the
    same instant)."""
    if clock is utc_now:
        return iso_timestamp_now
    return lambda: iso_timestamp(clock())


@dataclass(frozen=True)
class ExternalChanges:
    """Changes another writer made to the session since a manager last looked."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    tree: SessionTree | None = None
    torn_tail: bool = False


#: "Nobody else wrote": what a flush's look at the file finds nearly always, shared (read
#: only: nothing changes an ``ExternalChanges`` once made).
NO_CHANGES = ExternalChanges()


def parse_appended(delta: bytes) -> tuple[list[dict[str, Any]], bool]:
    """Entries other writers appended (no header); a torn last line is reported, not used."""
    torn = bool(delta) and not delta.endswith(b"\n")
    parsed = parse_session_bytes(b'{"type":"session","id":"_"}\n' + delta)
    return parsed.entries, torn


#: Young objects (tracked allocations since the last collection, ``gc.get_count()[0]``) from
#: which a bulk allocation's objects go straight to the oldest generation: ~ a 300-message
#: session; below it the young collection that follows costs well under a millisecond.
PROMOTE_AT = 10_000


def large_load(young: int) -> bool:
    """Whether ``young`` tracked allocations since the last collection make a large load."""
    return young >= PROMOTE_AT


def promotes_bulk(young: int, frozen: int) -> bool:
    """Whether ``bulk_allocation`` ends by moving every tracked object to the oldest
    generation: only after a large load (``young`` >= ``PROMOTE_AT``), and only when nothing
    is frozen (``frozen``: ``gc.get_freeze_count()``), because the move thaws what is frozen
    and a process that froze objects (a pre-fork server) wants them to stay frozen."""
    return large_load(young) and frozen == 0


@contextlib.contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic GC while a whole session is parsed or materialized.

    Tens of thousands of new dicts and models trigger full collections that scan everything
    already alive (half the time of opening a 10 000-message session). Nothing built here is
    cyclic garbage; the GC runs normally again right after.

    What a large load built is an open session's history: it lives as long as the session.
    Left in the youngest generation, the collections after the load scan all of it twice
    more (the young collection right after, then the middle one: ~30 % of a first turn
    after a restart at 10 000 messages) before it reaches the oldest generation, where it
    belongs. So a large load ends by moving every tracked object there at once
    (``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no scan; see
    ``promotes_bulk``). Objects are only moved between generations, never freed or kept
    alive: cyclic garbage that happened to be young then waits for the next full
    collection instead of a young one.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        young = gc.get_count()[0]
        # ``gc.get_freeze_count()`` walks the whole permanent generation (CPython 3.11:
        # ~4 ms after freezing a 440k-object heap), so it is asked only after a large load.
        if large_load(young) and promotes_bulk(young, gc.get_freeze_count()):
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def load_session_file(
    path: Path,
    data: bytes,
    *,
    repair: bool,
    clock: Clock,
    timeout: float,
    known: KnownHead | None = None,
) -> tuple[SessionTree, RepairReport, tuple[int, int]]:
    """Parse (and when asked, repair) one session file; returns the tree and file state.

    ``known``: what the side file says of the file's head (``clean_head``); its clean head,
    when ``data`` starts with it, is taken without its checks, and the tree gets the clean
    head of ``data`` (``SessionTree.clean_head``).
    """
    proven = proven_head(data, known)
    with bulk_allocation():
        parsed = (
            parse_session_bytes(data) if proven is None else parse_session_bytes(data, proven[0])
        )
    if parsed.header_problem is not None:
        return _recover_header(
            path, data, parsed.header_problem, repair=repair, clock=clock, timeout=timeout
        )
    assert parsed.header is not None
    clean = 0 if proven is None else clean_entries(parsed.spans, proven[0])
    plan = plan_session_repair(parsed, as_written=True, clean=clean)
    report = RepairReport(repaired=False)
    if repair and plan.needed:
        with session_lock(path, timeout=timeout):
            latest = path.read_bytes()
            if latest != data:
                return load_session_file(
                    path, latest, repair=repair, clock=clock, timeout=timeout, known=known
                )
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
        # the tree of the repaired file is the plan's; its bytes are not ``data``: no clean head
        return SessionTree.build(parsed.header, plan.entries), report, (stat.st_ino, stat.st_size)
    # (without ``repair`` the plan is the same: it is kept in memory only, and the report
    # says what a repair would change: ``sessions show`` tells the reader)
    if plan.needed:
        report = report_for(plan, repaired=False)
    tree = SessionTree.build(parsed.header, plan.entries)
    run = 0 if parsed.invalid else plan.clean_run
    tree.clean_head = found_head(data, parsed.spans, run, proven, known)
    # The size we parsed, not the size now: a writer that appended since the read is then
    # noticed (and its entries read) before our next write.
    return tree, report, (os.stat(path).st_ino, len(data))


def _stem_session_id(path: Path) -> str:
    try:
        return validate_session_id(path.stem)
    except TranscriptError:
        return os.urandom(8).hex()


def _recover_header(
    path: Path, data: bytes, problem: str, *, repair: bool, clock: Clock, timeout: float
) -> tuple[SessionTree, RepairReport, tuple[int, int]]:
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
        plan = plan_session_repair(parsed, as_written=True)
        report = RepairReport(repaired=False, reason="damaged session header")
        return (
            SessionTree.build(salvage.header, plan.entries),
            report,
            (os.stat(path).st_ino, len(data)),
        )
    with session_lock(path, timeout=timeout):
        latest = path.read_bytes()
        if latest != data:
            return load_session_file(path, latest, repair=True, clock=clock, timeout=timeout)
        backup = (
            write_backup(path, data, now_ms=int(moment.timestamp() * 1000))
            if salvage.body.strip()
            else None
        )
        damaged = [] if salvage.damaged is None else [salvage.damaged]
        side = keep_invalid_lines(path, damaged, kept_at=iso_timestamp(moment))
        content = salvage.content
        atomic_write(path, content, tag="recover")
        tree, rest, state = load_session_file(
            path, content, repair=True, clock=clock, timeout=timeout
        )
    report = dataclasses.replace(
        rest,
        repaired=True,
        dropped_lines=rest.dropped_lines + len(damaged),
        backup_path=backup or rest.backup_path,
        invalid_lines_path=rest.invalid_lines_path or (None if side is None else str(side)),
        reason="damaged session header" if salvage.body.strip() else "partial session header",
    )
    return tree, report, state
