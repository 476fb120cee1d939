"""``repair_session_file_if_needed``: make a damaged session file loadable again, losing nothing.

Rules (OpenClaw ``session-file-repair.ts``, spec §12.2), applied to the records of one parse:

* a line that is not JSON, not an entry, or a message without a role (OpenClaw's newest
  "null role" rule) is *malformed*. OpenClaw drops it; here it is **kept** in the side file
  ``<file>.invalid.jsonl`` with its exact bytes (DESIGN §8), then removed from the session;
* the header must be ``type:"session"`` with an id, otherwise nothing is changed and the
  reason is ``invalid session header``;
* an assistant message with ``content: []`` and ``stopReason: "error"`` gets the text
  ``[assistant turn failed before producing content]`` (a silent ``stop`` reply is left alone);
* blank user content becomes ``(continue)`` — the **newest** rule (``BLANK_USER_FALLBACK_TEXT``).
  The older test dropped blank user messages; the newest code explains it switched because a
  dropped user turn can leave a transcript with no user role at all, which strict providers
  reject, so ``droppedBlankUserMessages`` stays 0. Blank text blocks next to media are removed;
* trailing assistant entries that ended in ``stopReason: "error"`` are dropped (they would make
  Anthropic answer 400 "does not support assistant message prefill"); a normal completed
  trailing assistant is kept. The store's own loader (``as_written``) skips this rule, the
  empty-error-turn rewrite and the blank-user rewrite: a file the store or OpenClaw wrote is
  valid as written, so only damage (a cut or unparsable line, an unusable block, a broken
  link) is repaired on disk; the replay does the rest in memory (``blank_user``,
  ``providers.replay``);
* a content block that is not an object with a string ``type`` (a list or an object there
  breaks every later run) is moved to the side file and removed from its entry;
* an entry that reuses an earlier entry's id, or links (``parentId``, a leaf's ``targetId``)
  to itself or to a later entry, is malformed: writers only link backwards, so it can only
  come from damage, and it would make a cycle that no run could walk;
* before the file is replaced the original is copied to ``<file>.bak-<pid>-<ms>``, the new
  content goes to a temp file that is renamed over the session. A second run changes nothing.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from typing import Any

import anyio

from .._files import write_all
from ..redaction import redact_bytes
from .entries import iso_timestamp
from .jsonl import (
    InvalidLine,
    ParsedSession,
    atomic_write,
    encode_record,
    keep_invalid_lines,
    open_side_file,
    parse_session_bytes,
    session_lock,
)

__all__ = [
    "BLANK_USER_FALLBACK_TEXT",
    "STREAM_ERROR_FALLBACK_TEXT",
    "RepairPlan",
    "RepairReport",
    "plan_session_repair",
    "render_repaired",
    "repair_assistant_entry",
    "repair_session_file",
    "repair_session_file_if_needed",
    "repair_user_entry",
    "report_for",
    "summarize_repair",
    "write_repair",
]

#: Text given to an assistant turn that failed before producing any content.
STREAM_ERROR_FALLBACK_TEXT = "[assistant turn failed before producing content]"
#: Text given to a user turn whose content was blank.
BLANK_USER_FALLBACK_TEXT = "(continue)"

Warn = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class RepairReport:
    """What a repair did (field names are snake_case twins of OpenClaw's report)."""

    repaired: bool
    dropped_lines: int = 0
    rewritten_assistant_messages: int = 0
    dropped_blank_user_messages: int = 0
    rewritten_user_messages: int = 0
    dropped_trailing_assistant_messages: int = 0
    set_aside_blocks: int = 0
    backup_path: str | None = None
    invalid_lines_path: str | None = None
    reason: str | None = None

    @property
    def changes(self) -> bool:
        """Whether the repair changed (or, not made, would change) anything of the file."""
        return bool(_repair_parts(self))


@dataclass(slots=True)
class RepairPlan:
    """The repaired record list of one parse, and what changed."""

    entries: list[dict[str, Any]]
    changed: list[bool]
    invalid: list[InvalidLine]
    rewritten_assistant_messages: int = 0
    rewritten_user_messages: int = 0
    dropped_blank_user_messages: int = 0
    dropped_trailing_assistant_messages: int = 0
    set_aside_blocks: int = 0
    #: Byte range in the parsed data of each planned entry (parallel to ``entries``).
    spans: list[tuple[int, int]] = field(default_factory=list)
    #: ``as_written`` only: how many leading parsed entries are clean-head entries (planned
    #: as they are whatever follows them: ``_untouched`` gives ``_CLEAN``), 0 otherwise.
    clean_run: int = 0

    @property
    def needed(self) -> bool:
        """Whether the file on disk differs from the plan."""
        return bool(
            self.invalid
            or self.set_aside_blocks
            or self.rewritten_assistant_messages
            or self.rewritten_user_messages
            or self.dropped_blank_user_messages
            or self.dropped_trailing_assistant_messages
        )


def repair_assistant_entry(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The rewritten entry for an empty error turn, or ``None`` when it needs nothing."""
    message = entry["message"]
    if message.get("content") != [] or message.get("stopReason") != "error":
        return None
    return {
        **entry,
        "message": {**message, "content": [{"type": "text", "text": STREAM_ERROR_FALLBACK_TEXT}]},
    }


def _is_blank_text_block(block: Any) -> bool:
    if type(block) is not dict or block.get("type") != "text":
        return False
    text = block.get("text")
    return isinstance(text, str) and not text.strip()


def repair_user_entry(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The rewritten entry for blank user content, or ``None`` when it needs nothing."""
    message = entry["message"]
    content = message.get("content")
    if isinstance(content, str):
        if content.strip():
            return None
        return {**entry, "message": {**message, "content": BLANK_USER_FALLBACK_TEXT}}
    if not isinstance(content, list):
        return None
    kept = [block for block in content if not _is_blank_text_block(block)]
    if not kept:
        fallback = [{"type": "text", "text": BLANK_USER_FALLBACK_TEXT}]
        return {**entry, "message": {**message, "content": fallback}}
    if len(kept) == len(content):
        return None
    return {**entry, "message": {**message, "content": kept}}


def _is_error_assistant(entry: dict[str, Any]) -> bool:
    if entry.get("type") != "message":
        return False
    message = entry["message"]
    return message.get("role") == "assistant" and message.get("stopReason") == "error"


def _is_usable_block(block: Any) -> bool:
    kind = block.get("type") if type(block) is dict else None
    return type(kind) is str and bool(kind)


def _line_number(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def set_aside_unusable_blocks(
    entry: dict[str, Any], *, line_number: Callable[[], int]
) -> tuple[dict[str, Any], list[InvalidLine]] | None:
    """The entry without content blocks that are not objects with a string ``type`` (a list
    or an object there breaks every later run), and those blocks as side-file records; or
    ``None`` when every block is usable. Covers ``message`` and ``custom_message`` content."""
    holder = entry.get("message") if entry.get("type") == "message" else entry
    if entry.get("type") not in ("message", "custom_message") or type(holder) is not dict:
        return None
    content = holder.get("content")
    if type(content) is not list or all(_is_usable_block(block) for block in content):
        return None
    kept = [block for block in content if _is_usable_block(block)]
    line = line_number()
    aside = [
        InvalidLine(
            line,
            encode_record({"entryId": entry.get("id"), "index": index, "block": block})[:-1],
            "content block without a string type (set aside from its entry)",
            True,
        )
        for index, block in enumerate(content)
        if not _is_usable_block(block)
    ]
    fixed = {**holder, "content": kept}
    return ({**entry, "message": fixed} if holder is not entry else fixed), aside


def _first_positions(entries: list[dict[str, Any]]) -> dict[str, int]:
    """Each id's first index among ``entries`` (every entry has an id: ``entry_problem``)."""
    # at C speed: built from the end, so an id's first index is the one left
    ids = list(map(itemgetter("id"), entries))
    ids.reverse()
    return dict(zip(ids, range(len(entries) - 1, -1, -1), strict=True))


def _broken_link(entry: dict[str, Any], index: int, first_seen: dict[str, int]) -> str | None:
    """Why an entry would break the tree (a reused id, or a link to itself or to a later
    entry, which makes a cycle), or ``None``. Writers only ever link to earlier entries, so
    these come from damage; a link to an entry that is simply gone is left to the tree."""
    if first_seen[entry["id"]] != index:
        return "reuses the id of an earlier entry"
    links = [entry.get("parentId")]
    if entry["type"] == "leaf":
        links.append(entry.get("targetId"))
    for link in links:
        if link is not None and first_seen.get(link, -1) >= index:
            return "links to itself or to a later entry"
    return None


#: ``_untouched``: the full rules needed / untouched / untouched and a clean-head entry
_TOUCHED, _UNTOUCHED, _CLEAN = 0, 1, 2


def _untouched(entry: dict[str, Any], index: int, first_seen: dict[str, int]) -> int:
    """Whether the per-entry rules of ``plan_session_repair`` as the store's own loader
    (``as_written``) leave ``entry`` exactly as it is: its own id, a parent before it (or
    none), not a leaf record (its target is checked the slow way), and every content block an
    object with a non-empty string ``type``. One pass without allocations; falsy
    (``_TOUCHED``) only means "take the full rules" (equivalence:
    ``tests/test_repair_plan_fast.py``). ``_CLEAN``: untouched, and its parent is none or an
    earlier entry, so no later line can change its plan (a clean-head entry,
    ``clean_head.CleanHead``); ``_UNTOUCHED``: untouched, but its parent is in no entry (a
    later line could take its id)."""
    # (literals, not the names: this runs once per entry of every slow load)
    if first_seen[entry["id"]] != index:
        return 0
    parent = entry.get("parentId")
    verdict = 2
    if parent is not None:
        at = first_seen.get(parent, -1)
        if not 0 <= at < index:
            if at >= 0:  # itself or a later entry
                return 0
            verdict = 1
    kind = entry["type"]
    if kind == "message":
        holder = entry.get("message")
        if type(holder) is not dict:
            return 0
        content = holder.get("content")
    elif kind == "custom_message":
        content = entry.get("content")
    else:
        return 0 if kind == "leaf" else verdict
    if type(content) is list:
        for block in content:
            if type(block) is not dict:
                return 0
            block_type = block.get("type")
            if type(block_type) is not str or not block_type:
                return 0
    return verdict


def plan_session_repair(
    parsed: ParsedSession,
    *,
    keep_error_turns: bool = False,
    as_written: bool = False,
    clean: int = 0,
) -> RepairPlan:
    """Apply the per-record rules and the trailing-error rule to one parse (pure).

    ``keep_error_turns``: assistant error turns (``content: []`` included, as OpenClaw writes
    them) are neither rewritten nor dropped from the end; the replay pipeline already keeps
    failed turns away from providers. ``as_written`` is the store's own loader
    (``SessionManager.open``): error turns kept as above and blank user content kept too
    (the ``blank_user_turns`` sanitizer fills it in on replay), so only damage changes a line.
    ``clean`` (``as_written`` only): the first ``clean`` entries are known to be clean-head
    entries (``clean_head.CleanHead``), taken as they are without their rules.
    """
    keep_error_turns = keep_error_turns or as_written
    entries = parsed.entries
    out: list[dict[str, Any]] = []
    changed: list[bool] = []
    plan = RepairPlan(out, changed, list(parsed.invalid))
    spans = plan.spans
    all_spans = parsed.spans
    has_spans = len(all_spans) == len(entries)
    start = clean if as_written and has_spans else 0
    if start:
        # what the rules below give them, whatever follows (``_untouched``: ``_CLEAN``)
        out.extend(entries[:start])
        changed.extend([False] * start)
        spans.extend(all_spans[:start])
    run = len(entries)  # the leading clean-head entries: until the first entry that is not
    first_seen = _first_positions(entries) if start < len(entries) else {}
    for index, entry in enumerate(entries[start:] if start else entries, start):
        span = all_spans[index] if has_spans or index < len(all_spans) else (0, 0)
        if as_written and (verdict := _untouched(entry, index, first_seen)):
            # the common case (every line of a file the store wrote): nothing to change
            if verdict != 2 and index < run:  # untouched, not _CLEAN
                run = index
            spans.append(span)
            out.append(entry)
            changed.append(False)
            continue
        run = min(run, index)
        broken = _broken_link(entry, index, first_seen)
        if broken is not None:
            line = _line_number(parsed.data, span[0])
            plan.invalid.append(InvalidLine(line, parsed.data[span[0] : span[1]], broken, True))
            continue
        spans.append(span)
        touched = False
        if entry["type"] in ("message", "custom_message"):
            # the line number is counted only when a block is set aside (rare and O(file))
            cleaned = set_aside_unusable_blocks(
                entry, line_number=functools.partial(_line_number, parsed.data, span[0])
            )
            if cleaned is not None:
                entry, aside = cleaned
                plan.invalid.extend(aside)
                plan.set_aside_blocks += len(aside)
                touched = True
        if entry["type"] == "message":
            role = entry["message"]["role"]
            if role == "assistant" and not keep_error_turns:
                fixed = repair_assistant_entry(entry)
                if fixed is not None:
                    out.append(fixed)
                    changed.append(True)
                    plan.rewritten_assistant_messages += 1
                    continue
            elif role == "user" and not as_written:
                fixed = repair_user_entry(entry)
                if fixed is not None:
                    out.append(fixed)
                    changed.append(True)
                    plan.rewritten_user_messages += 1
                    continue
        out.append(entry)
        changed.append(touched)
    while out and not keep_error_turns and _is_error_assistant(out[-1]):
        out.pop()
        changed.pop()
        spans.pop()
        plan.dropped_trailing_assistant_messages += 1
    if as_written:
        plan.clean_run = run
    return plan


def summarize_repair(report: RepairReport) -> str:
    """The comma-separated summary OpenClaw logs after a repair."""
    return ", ".join(_repair_parts(report)) or "no changes"


def _repair_parts(report: RepairReport) -> list[str]:
    """One phrase per counter of ``report`` that is set (``summarize_repair``'s parts)."""
    parts = []
    if report.dropped_lines:
        parts.append(f"dropped {report.dropped_lines} malformed line(s)")
    if report.rewritten_assistant_messages:
        parts.append(f"rewrote {report.rewritten_assistant_messages} assistant message(s)")
    if report.dropped_blank_user_messages:
        parts.append(f"dropped {report.dropped_blank_user_messages} blank user message(s)")
    if report.rewritten_user_messages:
        parts.append(f"rewrote {report.rewritten_user_messages} user message(s)")
    if report.dropped_trailing_assistant_messages:
        parts.append(
            f"dropped {report.dropped_trailing_assistant_messages} trailing assistant message(s)"
        )
    if report.set_aside_blocks:
        parts.append(f"set aside {report.set_aside_blocks} unusable content block(s)")
    return parts


def render_repaired(parsed: ParsedSession, plan: RepairPlan) -> bytes:
    """The repaired file: untouched lines byte for byte, changed records re-encoded."""
    data = parsed.data
    chunks: list[bytes] = []
    assert parsed.header_span is not None
    start, end = parsed.header_span
    chunks.append(data[start:end].rstrip(b"\r") + b"\n")
    spans = plan.spans
    for index, entry in enumerate(plan.entries):
        if plan.changed[index]:
            chunks.append(encode_record(entry))
        else:
            start, end = spans[index]
            chunks.append(data[start:end].rstrip(b"\r") + b"\n")
    return b"".join(chunks)


def write_repair(
    session_file: Path,
    parsed: ParsedSession,
    plan: RepairPlan,
    *,
    now_ms: int,
    kept_at: str,
) -> tuple[str, str | None]:
    """Back up, keep bad lines aside, and atomically replace the file; returns the paths."""
    backup = write_backup(session_file, parsed.data, now_ms=now_ms)
    side = keep_invalid_lines(session_file, plan.invalid, kept_at=kept_at)
    atomic_write(session_file, redact_bytes(render_repaired(parsed, plan)), tag="repair")
    return backup, None if side is None else str(side)


def write_backup(session_file: Path, data: bytes, *, now_ms: int) -> str:
    """Copy ``data`` (the file before a repair) to ``<file>.bak-<pid>-<ms>`` (fsynced, same
    mode, never through a symbolic link); returns its path."""
    backup = session_file.with_name(f"{session_file.name}.bak-{os.getpid()}-{now_ms}")
    mode = os.stat(session_file).st_mode & 0o7777
    fd = open_side_file(backup, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        write_all(fd, redact_bytes(data))  # the copy holds no credential either
        os.fsync(fd)
    finally:
        os.close(fd)
    return str(backup)


def report_for(plan: RepairPlan, **extra: Any) -> RepairReport:
    """A report of ``plan``'s counters."""
    return RepairReport(
        dropped_lines=len(plan.invalid) - plan.set_aside_blocks,
        set_aside_blocks=plan.set_aside_blocks,
        rewritten_assistant_messages=plan.rewritten_assistant_messages,
        dropped_blank_user_messages=plan.dropped_blank_user_messages,
        rewritten_user_messages=plan.rewritten_user_messages,
        dropped_trailing_assistant_messages=plan.dropped_trailing_assistant_messages,
        **extra,
    )


def repair_session_file(
    session_file: str | Path,
    *,
    warn: Warn | None = None,
    now: Callable[[], datetime] | None = None,
    lock_timeout: float | None = None,
) -> RepairReport:
    """Blocking form of :func:`repair_session_file_if_needed`."""
    raw_name = str(session_file).strip()
    if not raw_name:
        return RepairReport(repaired=False, reason="missing session file")
    path = Path(raw_name)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return RepairReport(repaired=False, reason="missing session file")
    except OSError as exc:
        reason = f"failed to read session file: {exc.strerror or type(exc).__name__}"
        if warn:
            warn(f"session file repair skipped: {reason} ({path.name})")
        return RepairReport(repaired=False, reason=reason)
    parsed = parse_session_bytes(data)
    if parsed.header_span is None and not parsed.entries:
        return RepairReport(
            repaired=False, dropped_lines=len(parsed.invalid), reason="empty session file"
        )
    if parsed.header_problem is not None:
        if warn:
            warn(f"session file repair skipped: invalid session header ({path.name})")
        return RepairReport(
            repaired=False, dropped_lines=len(parsed.invalid), reason="invalid session header"
        )
    plan = plan_session_repair(parsed)
    if not plan.needed:
        return RepairReport(repaired=False)
    moment = (now or (lambda: datetime.now(UTC)))()
    options = {} if lock_timeout is None else {"timeout": lock_timeout}
    try:
        with session_lock(path, **options):
            # Another writer may have appended since the read: repair what is on disk now.
            latest = path.read_bytes()
            if latest != data:
                parsed = parse_session_bytes(latest)
                if parsed.header_problem is not None:
                    return RepairReport(repaired=False, reason="invalid session header")
                plan = plan_session_repair(parsed)
                if not plan.needed:
                    return RepairReport(repaired=False)
            backup, side = write_repair(
                path,
                parsed,
                plan,
                now_ms=int(moment.timestamp() * 1000),
                kept_at=iso_timestamp(moment),
            )
    except OSError as exc:
        reason = f"repair failed: {exc.strerror or type(exc).__name__}"
        return report_for(plan, repaired=False, reason=reason)
    report = report_for(plan, repaired=True, backup_path=backup, invalid_lines_path=side)
    if warn:
        kept = f"; malformed lines kept in {Path(side).name}" if side else ""
        warn(f"session file repaired: {summarize_repair(report)} ({path.name}){kept}")
    return report


async def repair_session_file_if_needed(
    session_file: str | Path,
    *,
    warn: Warn | None = None,
    now: Callable[[], datetime] | None = None,
    lock_timeout: float | None = None,
) -> RepairReport:
    """Repair a session file in place when it needs it (§12.2); never raises on bad data.

    :param session_file: path of the ``.jsonl`` session file.
    :param warn: called with OpenClaw's warning texts ("session file repaired: dropped N
        malformed line(s), rewrote N assistant message(s) ...").
    :param now: clock for the backup name and side-file stamps (tests).
    :returns: a :class:`RepairReport`; ``repaired`` is false when nothing had to change.
    """
    return await anyio.to_thread.run_sync(
        lambda: repair_session_file(session_file, warn=warn, now=now, lock_timeout=lock_timeout)
    )
