"""``openclaw-runtime sessions list|show`` and ``compact``: the transcripts on disk.

Sessions are read without repair (``repair=False``): looking at a transcript never rewrites
it. ``show`` renders the active branch the way the model sees the conversation — roles, text,
tool calls and results abbreviated, compaction summaries marked — and ``--all`` adds what is
off the branch (failed turns the runtime set aside, side branches).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import click

from .._exceptions import TranscriptError
from .._runtime import Runtime
from ..backends import Session
from ..context.engine import CompactResult
from ..redaction import redact
from ..transcript.entries import parse_timestamp_ms
from ..transcript.jsonl import invalid_lines_path
from ..transcript.repair import RepairReport, summarize_repair
from ..transcript.session_ids import InvalidSessionIdError, validate_session_id
from ..transcript.store import SessionManager
from ._common import EXIT_FAILED, command_errors, find_session, load_config, safe_json
from .timeline import StatusSpinner, abbreviate, format_tool_call

__all__ = ["compact", "describe_compaction", "render_entries", "sessions"]

#: Message text longer than this is cut in ``show`` (tool output always is, much shorter).
TEXT_LIMIT = 2_000


@click.group()
def sessions() -> None:
    """List stored sessions and show their transcripts."""


def _keys_by_session(index_entries: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """session id → its most recently bound key."""
    best: dict[str, tuple[float, str]] = {}
    for key, entry in index_entries.items():
        session_id = entry.get("sessionId")
        if not isinstance(session_id, str):
            continue
        updated = float(entry.get("updatedAt") or 0)
        if session_id not in best or updated > best[session_id][0]:
            best[session_id] = (updated, key)
    return {session_id: key for session_id, (_, key) in best.items()}


def _session_files(sessions_dir: Path) -> Iterable[tuple[str, Path]]:
    if not sessions_dir.is_dir():
        return
    for path in sorted(sessions_dir.glob("*.jsonl")):
        if path.name.endswith(".invalid.jsonl"):
            continue
        try:
            yield validate_session_id(path.stem), path
        except InvalidSessionIdError:
            continue  # checkpoints and foreign files are not sessions


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024 or unit == "MB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"  # pragma: no cover


def _session_row(session_id: str, path: Path, key: str | None) -> dict[str, Any]:
    stat = path.stat()
    row: dict[str, Any] = {
        "id": session_id,
        "key": key,
        "messages": None,
        "name": None,
        "updatedAt": datetime.fromtimestamp(stat.st_mtime).astimezone().isoformat("T", "seconds"),
        "updatedMs": stat.st_mtime_ns // 1_000_000,
        "bytes": stat.st_size,
        "path": str(path),
        "error": None,
    }
    try:
        manager = SessionManager.open_sync(path, repair=False)
    except TranscriptError as exc:
        row["error"] = str(exc)
        return row
    row["messages"] = sum(1 for entry in manager.get_branch() if entry["type"] == "message")
    row["name"] = manager.get_session_name()
    return row


async def _backend_rows(runtime: Runtime) -> list[dict[str, Any]]:
    """Rows of a session store that is not the embedded file store (``[backends]
    session_store``, e.g. Redis): every session it lists, read without repair."""
    store = runtime.session_store
    keys = _keys_by_session(await runtime.session_index.entries())
    rows: list[dict[str, Any]] = []
    for session_id in sorted(await store.list_ids()):
        row: dict[str, Any] = {
            "id": session_id,
            "key": keys.get(session_id),
            "messages": None,
            "name": None,
            "updatedAt": "",
            "updatedMs": 0,
            "bytes": None,
            "path": None,
            "error": None,
        }
        try:
            session = await store.open(session_id, repair=False)
        except TranscriptError as exc:
            row["error"] = str(exc)
            rows.append(row)
            continue
        try:
            entries = session.get_entries()
            row["messages"] = sum(1 for e in session.get_branch() if e["type"] == "message")
            row["name"] = session.get_session_name()
            row["path"] = None if session.path is None else str(session.path)
            stamps = [parse_timestamp_ms(e.get("timestamp")) for e in entries[-1:]]
            if stamps and stamps[0] is not None:
                row["updatedMs"] = int(stamps[0])
                row["updatedAt"] = (
                    datetime.fromtimestamp(row["updatedMs"] / 1000)
                    .astimezone()
                    .isoformat("T", "seconds")
                )
        finally:
            await session.aclose()
        rows.append(row)
    return rows


@sessions.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the sessions as JSON.")
@click.pass_context
@command_errors
def list_sessions(ctx: click.Context, as_json: bool) -> None:
    """Every stored session, most recently updated first: id, key, messages, update, size."""
    runtime = Runtime(load_config(ctx))
    where = str(runtime.sessions_dir)
    if runtime.config.backends.selected("session_store") is None:
        keys = _keys_by_session(anyio.run(runtime.session_index.entries))
        rows = [
            _session_row(session_id, path, keys.get(session_id))
            for session_id, path in _session_files(runtime.sessions_dir)
        ]
    else:  # sessions live in a backend (Redis...), not in files
        where = f"the {runtime.config.backends.selected('session_store')!r} session store"

        async def collect() -> list[dict[str, Any]]:
            try:
                return await _backend_rows(runtime)
            finally:
                await runtime.aclose()

        rows = anyio.run(collect)
    rows.sort(key=lambda row: row["updatedMs"], reverse=True)
    if as_json:
        click.echo(safe_json(rows, indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo(f"no sessions in {where}")
        return
    id_width = max(len("ID"), *(len(row["id"]) for row in rows))
    key_width = max(len("KEY"), *(len(row["key"] or "-") for row in rows))
    click.echo(f"{'ID':<{id_width}}  {'KEY':<{key_width}}  {'MSGS':>5}  {'UPDATED':<19}  SIZE")
    for row in rows:
        count = "?" if row["messages"] is None else str(row["messages"])
        updated = row["updatedAt"][:19].replace("T", " ")
        line = (
            f"{row['id']:<{id_width}}  {row['key'] or '-':<{key_width}}  {count:>5}  "
            f"{updated or '-':<19}  {'-' if row['bytes'] is None else _human_size(row['bytes'])}"
        )
        if row["error"]:
            line += f"  (unreadable: {abbreviate(row['error'], 60)})"
        click.echo(redact(line))


@sessions.command("show")
@click.argument("id_or_key")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Include entries off the active branch (set-aside failed turns, side branches).",
)
@click.pass_context
@command_errors
def show_session(ctx: click.Context, id_or_key: str, as_json: bool, show_all: bool) -> None:
    """The transcript of a session (by id or key): its active branch, readable."""
    runtime = Runtime(load_config(ctx))

    async def read() -> tuple[str, str | None, Session]:
        session_id, key = await find_session(runtime, id_or_key)
        manager = await runtime.session_store.open(session_id, repair=False)
        return session_id, key, manager

    session_id, key, manager = anyio.run(read)
    path = manager.path
    pending = _pending_repair(manager)
    branch = manager.get_branch()
    active = {entry["id"] for entry in branch}
    entries = [e for e in manager.get_entries() if e["type"] != "leaf"] if show_all else branch
    if as_json:
        out: dict[str, Any] = {
            "sessionId": session_id,
            "sessionKey": key,
            "file": str(path),
            "leafId": manager.get_leaf_id(),
            "entries": entries,
        }
        if show_all:
            out["activeBranch"] = [entry["id"] for entry in branch]
        out["pendingRepair"] = None if pending is None else pending[1]
        click.echo(safe_json(out, indent=2, ensure_ascii=False))
        return
    title = manager.get_session_name()
    click.echo(
        f"session {session_id}"
        + (f" (key {key})" if key else "")
        + (f" — {title}" if title else "")
    )
    click.echo(f"file: {path}")
    if pending is not None:
        report, summary = pending
        kept = (
            f", and keeps what it cannot read in {invalid_lines_path(path).name}"
            if report.dropped_lines or report.set_aside_blocks
            else ""
        )
        click.echo(
            f"note: shown as a run reads it, not as written: {summary}. The file is left as "
            f"it is; the next run on this session repairs it{kept}."
        )
    click.echo("")
    for line in render_entries(entries, branch=branch, active=active if show_all else None):
        click.echo(redact(line))  # transcripts written before redaction may hold keys


def _pending_repair(session: Any) -> tuple[RepairReport, str] | None:
    """What a repair would change of the file ``show`` read without one (unreadable lines
    skipped, messages rewritten): the report and ``summarize_repair``'s words for it;
    ``None`` when nothing (or the store's sessions do not say)."""
    report = getattr(session, "repair_report", None)
    if not isinstance(report, RepairReport) or report.repaired or not report.changes:
        return None
    return report, summarize_repair(report)


def _summarized_counts(branch: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """compaction entry id → how many branch messages before its first kept entry it replaces
    (since the previous compaction)."""
    counts: dict[str, int] = {}
    position = {entry.get("id"): index for index, entry in enumerate(branch)}
    start = 0
    for index, entry in enumerate(branch):
        if entry.get("type") != "compaction":
            continue
        end = position.get(entry.get("firstKeptEntryId"), index)
        counts[str(entry.get("id"))] = sum(
            1 for e in branch[start:end] if e.get("type") == "message"
        )
        start = end
    return counts


def render_entries(
    entries: Iterable[Mapping[str, Any]],
    *,
    branch: Sequence[Mapping[str, Any]] | None = None,
    active: set[str] | None = None,
) -> list[str]:
    """Readable lines for transcript entries; with ``active``, entries outside it are marked
    ``[off-branch]``. ``branch`` (default: ``entries``) sizes what each compaction replaced."""
    entries = list(entries)
    summarized = _summarized_counts(branch if branch is not None else entries)
    lines: list[str] = []
    for entry in entries:
        rendered = _render_entry(entry, summarized.get(str(entry.get("id"))))
        if active is not None and entry.get("id") not in active:
            rendered = [f"[off-branch] {line}" for line in rendered]
        lines.extend(rendered)
    return lines


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, Mapping)]
    return []


def _text(content: Any) -> str:
    parts = []
    for block in _blocks(content):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts)


def _cut(text: str, limit: int = TEXT_LIMIT) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def _labelled(label: str, text: str) -> list[str]:
    first, *rest = (_cut(text) or "(empty)").splitlines() or ["(empty)"]
    return [f"{label} {first}", *(f"    {line}" for line in rest)]


def _render_message(message: Mapping[str, Any]) -> list[str]:
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        return _labelled("user ▸", _text(content))
    if role == "assistant":
        lines: list[str] = []
        text = _text(content)
        stop = message.get("stopReason")
        if stop == "error":
            error = abbreviate(str(message.get("errorMessage") or "error"), 160)
            lines.append(f"assistant ✗ failed: {error}")
        elif text.strip() or stop == "aborted":
            lines.extend(
                _labelled("assistant ▸", text + (" (aborted)" if stop == "aborted" else ""))
            )
        for block in _blocks(content):
            if block.get("type") == "toolCall":
                call = format_tool_call(str(block.get("name")), block.get("arguments"), 80)
                lines.append(f"  ↳ tool call {call}")
        return lines or ["assistant ▸ (no visible text)"]
    if role == "toolResult":
        name = message.get("toolName") or "tool"
        verb = "failed:" if message.get("isError") else "→"
        return [f"tool ◂ {name} {verb} {abbreviate(_text(content), 120)}"]
    if role == "custom":
        return _labelled(f"[{message.get('customType') or 'custom'}]", _text(content))
    return _labelled(f"{role} ▸", _text(content))


def _render_entry(entry: Mapping[str, Any], summarized: int | None = None) -> list[str]:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return _render_message(message) if isinstance(message, Mapping) else []
    if kind == "compaction":
        before = entry.get("tokensBefore")
        after = (
            (entry.get("details") or {}).get("tokensAfter")
            if isinstance(entry.get("details"), Mapping)
            else None
        )
        sizes = f"{before:,}" if isinstance(before, int) else "?"
        sizes += f" → {after:,} tokens" if isinstance(after, int) else " tokens before"
        what = f"{summarized} earlier messages" if summarized is not None else "earlier history"
        summary = str(entry.get("summary") or "").strip().splitlines()
        return [
            f"══ compaction summary: replaces {what} ({sizes}) ══",
            *(f"  │ {line}" for line in summary),
        ]
    if kind == "branch_summary":
        summary = str(entry.get("summary") or "").strip().splitlines()
        return ["══ branch summary ══", *(f"  │ {line}" for line in summary)]
    if kind == "custom_message":
        return _labelled(f"[{entry.get('customType') or 'custom'}]", _text(entry.get("content")))
    if kind == "model_change":
        return [f"· model → {entry.get('provider')}/{entry.get('modelId')}"]
    if kind == "thinking_level_change":
        return [f"· thinking → {entry.get('thinkingLevel')}"]
    if kind == "session_info" and entry.get("name"):
        return [f"· session named {entry.get('name')!r}"]
    return []


def describe_compaction(result: CompactResult) -> tuple[str, bool]:
    """One line saying what a compaction did, and whether it went well (not a failure)."""
    details = result.result
    if result.compacted and details is not None:
        after = "?" if details.tokens_after is None else f"{details.tokens_after:,}"
        return f"compacted: {details.tokens_before:,} → {after} tokens", True
    if result.compacted:
        return "compacted", True
    if result.ok:
        reason = result.reason or "the history is already short"
        return (
            reason if reason.lower().startswith("nothing") else f"nothing to compact: {reason}"
        ), True
    return f"compaction failed: {result.reason or 'unknown reason'}", False


@click.command()
@click.argument("id_or_key")
@click.option("--model", default=None, help="Summarize with this model (default: the config's).")
@click.option("--instructions", default=None, help="Extra instructions for the summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
@command_errors
def compact(
    ctx: click.Context,
    id_or_key: str,
    model: str | None,
    instructions: str | None,
    as_json: bool,
) -> None:
    """Summarize a session's older history now (by id or key); prints tokens before/after."""
    config = load_config(ctx)

    async def go() -> tuple[str, CompactResult]:
        async with Runtime(config) as runtime:
            session_id, key = await find_session(runtime, id_or_key)
            result = await runtime.compact_session(
                session_id, session_key=key, model=model, custom_instructions=instructions
            )
            return session_id, result

    started = time.perf_counter()
    spinner = StatusSpinner(enabled=False if as_json else None)
    spinner.show(f"compacting {id_or_key}…")
    try:
        session_id, result = anyio.run(go)
    finally:
        spinner.hide()
    line, ok = describe_compaction(result)
    if as_json:
        details = result.result
        click.echo(
            json.dumps(
                {
                    "sessionId": session_id,
                    "ok": result.ok,
                    "compacted": result.compacted,
                    "reason": result.reason,
                    "tokensBefore": None if details is None else details.tokens_before,
                    "tokensAfter": None if details is None else details.tokens_after,
                    "durationMs": round((time.perf_counter() - started) * 1000, 1),
                },
                indent=2,
            )
        )
    else:
        click.echo(f"session {session_id}: {line}")
    if not ok:
        sys.exit(EXIT_FAILED)
