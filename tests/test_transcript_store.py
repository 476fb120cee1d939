"""The JSONL SessionManager: format, tree rules, durability, locking, rewrites, id safety."""

from __future__ import annotations

import json
import os
import re
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import filelock
import pytest

from openclaw_runtime import TranscriptError
from openclaw_runtime.messages import AssistantMessage, TextContent, UserMessage
from openclaw_runtime.transcript import JsonlSessionStore, SessionManager, validate_session_id
from openclaw_runtime.transcript.entries import SessionPathError
from openclaw_runtime.transcript.jsonl import SessionLockTimeout, session_lock_path
from openclaw_runtime.transcript.session_ids import InvalidSessionIdError

pytestmark = pytest.mark.anyio

ID_RE = re.compile(r"^[0-9a-f]{8}$")


class Clock:
    """A clock that advances one millisecond per read."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def append_bytes(path, data):
    with open(path, "ab") as handle:
        handle.write(data)


def write_lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


HEADER = {
    "type": "session",
    "version": 3,
    "id": "s1",
    "timestamp": "2026-06-15T00:00:00.000Z",
    "cwd": "/repo",
}


def entry(kind, entry_id, parent, **fields):
    return {
        "type": kind,
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-06-15T00:00:01.000Z",
        **fields,
    }


async def new_session(tmp_path, **options):
    return await SessionManager.create(
        tmp_path / "s1.jsonl", session_id="s1", cwd="/repo", now=Clock(), **options
    )


# --------------------------------------------------------------------------- format


async def test_header_is_the_first_line(tmp_path):
    manager = await SessionManager.create(
        tmp_path / "s.jsonl", session_id="s", cwd="/w", parent_session="/p.jsonl", now=Clock()
    )
    assert (tmp_path / "s.jsonl").read_text() == (
        '{"type":"session","version":3,"id":"s","timestamp":"2026-01-02T03:04:05.001Z",'
        '"cwd":"/w","parentSession":"/p.jsonl"}\n'
    )
    assert manager.session_id == "s"
    with pytest.raises(TranscriptError, match="already exists"):
        await SessionManager.create(tmp_path / "s.jsonl", session_id="s", cwd="/w")


async def test_every_entry_type_is_written_in_openclaw_shape(tmp_path):
    manager = await new_session(tmp_path)
    first = await manager.append_message(UserMessage(content="hi", timestamp=1))
    await manager.append_thinking_level_change("high")
    await manager.append_model_change("anthropic", "claude-opus-4-6")
    await manager.append_active_tools_change(["read", "exec"])
    await manager.append_compaction("sum", first, 1234, details={"k": 1}, from_hook=True)
    await manager.append_custom_entry("note", {"x": 1})
    await manager.append_custom_message_entry("ctx", "text", True, {"d": 2})
    await manager.append_label(first, "start")
    await manager.append_session_info("  My session  ")
    records = lines(manager.path)[1:]
    assert [r["type"] for r in records] == [
        "message",
        "thinking_level_change",
        "model_change",
        "active_tools_change",
        "compaction",
        "custom",
        "custom_message",
        "label",
        "session_info",
    ]
    assert all(list(r)[:4] == ["type", "id", "parentId", "timestamp"] for r in records)
    assert all(ID_RE.match(r["id"]) for r in records)
    assert [r["parentId"] for r in records] == [None] + [r["id"] for r in records[:-1]]
    assert records[0]["message"] == {"role": "user", "content": "hi", "timestamp": 1}
    assert records[1]["thinkingLevel"] == "high"
    assert (records[2]["provider"], records[2]["modelId"]) == ("anthropic", "claude-opus-4-6")
    assert records[3]["activeToolNames"] == ["read", "exec"]
    assert {
        k: records[4][k]
        for k in ("summary", "firstKeptEntryId", "tokensBefore", "details", "fromHook")
    } == {
        "summary": "sum",
        "firstKeptEntryId": first,
        "tokensBefore": 1234,
        "details": {"k": 1},
        "fromHook": True,
    }
    assert records[6]["content"] == "text" and records[6]["display"] is True
    assert records[7]["targetId"] == first and records[7]["label"] == "start"
    assert records[8]["name"] == "My session"
    assert records[0]["timestamp"] == "2026-01-02T03:04:05.002Z"
    assert manager.get_label(first) == "start"
    assert manager.get_session_name() == "My session"


@pytest.mark.parametrize("tokens", [-5, float("nan"), float("inf"), 0])
async def test_compaction_tokens_before_normalized(tmp_path, tokens):
    manager = await new_session(tmp_path)
    first = await manager.append_message(UserMessage(content="a", timestamp=1))
    entry_id = await manager.append_compaction("s", first, tokens)
    assert manager.get_entry(entry_id)["tokensBefore"] == 0


async def test_reopen_gives_the_same_tree_and_context(tmp_path):
    manager = await new_session(tmp_path)
    await manager.append_message(UserMessage(content="q", timestamp=1))
    await manager.append_message(
        AssistantMessage(content=[TextContent(text="a")], provider="p", model="m", timestamp=2)
    )
    reopened = await SessionManager.open(manager.path)
    assert reopened.get_entries() == manager.get_entries()
    assert reopened.get_leaf_id() == manager.get_leaf_id()
    context = reopened.build_session_context()
    assert [m.to_dict() for m in context.messages] == [
        m.to_dict() for m in manager.build_session_context().messages
    ]
    assert (context.model.provider, context.model.model_id) == ("p", "m")
    assert reopened.repair_report.repaired is False


async def test_label_can_be_cleared_and_unknown_targets_rejected(tmp_path):
    manager = await new_session(tmp_path)
    first = await manager.append_message(UserMessage(content="a", timestamp=1))
    await manager.append_label(first, "x")
    await manager.append_label(first, "  ")
    assert manager.get_label(first) is None
    with pytest.raises(TranscriptError, match="Entry nope not found"):
        await manager.append_label("nope", "x")


# --------------------------------------------------------------------------- tree


async def test_move_to_branches_and_leaf_records_are_skipped(tmp_path):
    manager = await new_session(tmp_path)
    a = await manager.append_message(UserMessage(content="a", timestamp=1))
    b = await manager.append_message(UserMessage(content="b", timestamp=2))
    summary_id = await manager.move_to(a, "left b behind")
    c = await manager.append_message(UserMessage(content="c", timestamp=3))
    branch = manager.get_branch()
    assert [e["id"] for e in branch] == [a, summary_id, c]
    summary_entry = manager.get_entry(summary_id)
    assert (summary_entry["parentId"], summary_entry["fromId"]) == (a, a)
    leaf_records = manager.find_entries("leaf")
    assert leaf_records[0]["targetId"] == a and leaf_records[0]["parentId"] == b
    messages = manager.build_session_context().messages
    assert [m.role for m in messages] == ["user", "branchSummary", "user"]
    assert [e["id"] for e in manager.get_branch(b)] == [a, b]


async def test_reset_leaf_starts_a_new_root(tmp_path):
    manager = await new_session(tmp_path)
    await manager.append_message(UserMessage(content="a", timestamp=1))
    await manager.reset_leaf()
    assert manager.get_branch() == []
    fresh = await manager.append_message(UserMessage(content="b", timestamp=2))
    assert manager.get_entry(fresh)["parentId"] is None
    assert [e["id"] for e in manager.get_branch()] == [fresh]


async def test_side_appends_stay_off_the_visible_branch(tmp_path):
    manager = await new_session(tmp_path)
    root = await manager.append_custom_entry("active")
    side = await manager.append_custom_entry("side", append_mode="side")
    assert manager.get_leaf_id() == root
    assert manager.get_append_parent_id() == side
    after = await manager.append_custom_entry("continued")
    assert manager.get_entry(after)["parentId"] == side
    assert [e["id"] for e in manager.get_branch()] == [root, after]
    reopened = await SessionManager.open(manager.path)
    assert [e["id"] for e in reopened.get_branch()] == [root, after]


async def test_leaf_record_with_opaque_append_parent(tmp_path):
    path = tmp_path / "s1.jsonl"
    write_lines(
        path,
        [
            HEADER,
            entry("custom", "active-root", None, customType="root"),
            entry("metadata", "plugin-metadata", None),
            entry(
                "leaf",
                "active-leaf",
                "inactive-tail",
                targetId="active-root",
                appendParentId="plugin-metadata",
            ),
        ],
    )
    manager = await SessionManager.open(path)
    assert manager.get_leaf_id() == "active-root"
    new_id = await manager.append_custom_entry("continued")
    assert manager.get_entry(new_id)["parentId"] == "plugin-metadata"
    assert [e["id"] for e in manager.get_path_to_root(new_id)] == ["active-root", new_id]


async def test_unknown_rows_do_not_move_the_visible_leaf(tmp_path):
    path = tmp_path / "s1.jsonl"
    write_lines(
        path,
        [
            HEADER,
            entry("custom", "active-root", None, customType="a"),
            entry("custom", "inactive-root", None, customType="b"),
            entry("leaf", "active-leaf", "inactive-root", targetId="active-root"),
            entry("metadata", "plugin-metadata", "inactive-root"),
        ],
    )
    manager = await SessionManager.open(path)
    assert manager.get_leaf_id() == "active-root"
    assert [e["id"] for e in manager.get_branch()] == ["active-root"]


async def test_cycles_are_detected_and_a_damaged_file_cannot_hold_one(tmp_path):
    from openclaw_runtime.transcript.entries import path_to_root

    a = entry("custom", "a", "b", customType="x")
    b = entry("custom", "b", "a", customType="x")
    with pytest.raises(SessionPathError, match="Cycle found at entry"):
        path_to_root("b", {"a": a, "b": b}, {})
    # writers only link backwards: the loader keeps the forward link aside, so no cycle
    path = tmp_path / "s1.jsonl"
    write_lines(path, [HEADER, a, b])
    for repair in (False, True):
        manager = await SessionManager.open(path, repair=repair)
        assert [e["id"] for e in manager.get_branch()] == ["b"]
    kept = [
        json.loads(line) for line in (tmp_path / "s1.jsonl.invalid.jsonl").read_text().splitlines()
    ]
    assert [json.loads(k["raw"])["id"] for k in kept] == ["a"]
    assert kept[0]["reason"] == "links to itself or to a later entry"
    with pytest.raises(SessionPathError, match="Entry zz not found"):
        manager.get_path_to_root("zz")


async def test_missing_parent_ends_the_branch_with_a_warning(tmp_path):
    path = tmp_path / "s1.jsonl"
    write_lines(path, [HEADER, entry("custom", "b", "gone", customType="x")])
    warnings = []
    manager = await SessionManager.open(path, warn=warnings.append)
    assert [e["id"] for e in manager.get_branch()] == ["b"]
    assert any("entry gone is missing" in w for w in warnings)


async def test_compaction_window_in_context(tmp_path):
    manager = await new_session(tmp_path)
    await manager.append_message(UserMessage(content="old", timestamp=1))
    kept = await manager.append_message(UserMessage(content="kept", timestamp=2))
    await manager.append_compaction("summary of old", kept, 500)
    await manager.append_message(UserMessage(content="new", timestamp=3))
    await manager.append_message(
        {"role": "user", "content": "hidden", "excludeFromContext": True, "timestamp": 4}
    )
    context = manager.build_session_context()
    rendered = [(m.role, getattr(m, "summary", None) or m.content) for m in context.messages]
    assert rendered == [("compactionSummary", "summary of old"), ("user", "kept"), ("user", "new")]
    assert context.messages[0].tokens_before == 500
    wire = manager.build_session_context(materialize=False).messages
    assert wire[1] == {"role": "user", "content": "kept", "timestamp": 2}


async def test_state_markers_in_context(tmp_path):
    manager = await new_session(tmp_path)
    await manager.append_thinking_level_change("low")
    await manager.append_active_tools_change(["read"])
    await manager.append_model_change("openai", "gpt-5")
    context = manager.build_session_context()
    assert (context.thinking_level, context.active_tool_names) == ("low", ["read"])
    assert (context.model.provider, context.model.model_id) == ("openai", "gpt-5")


async def test_messages_that_do_not_validate_stay_opaque(tmp_path):
    manager = await new_session(tmp_path)
    odd = {"role": "toolResult", "toolUseId": "x", "content": []}  # no toolCallId/toolName
    await manager.append_message(odd)
    (message,) = manager.build_session_context().messages
    assert message.to_dict() == odd


# --------------------------------------------------------------------------- durability and locking


async def test_durability_none_buffers_until_flush(tmp_path):
    manager = await new_session(tmp_path, durability="none")
    await manager.append_message(UserMessage(content="a", timestamp=1))
    assert len(lines(manager.path)) == 1
    await manager.flush()
    assert len(lines(manager.path)) == 2
    await manager.append_message(UserMessage(content="b", timestamp=2))
    await manager.aclose()
    assert len(lines(manager.path)) == 3
    with pytest.raises(TranscriptError, match="closed"):
        await manager.append_message(UserMessage(content="c", timestamp=3))


def exists(path: Path) -> bool:
    return path.exists()


def remove(path: Path) -> None:
    path.unlink()


async def test_lock_files_are_created_off_the_event_loop(tmp_path, monkeypatch):
    """Creating a file costs hundreds of µs. A session this process created makes its lock
    file at its first flush, on the loop's thread (where the session file was created: the
    same cost as making both together, and none for a session never written); a session
    opened without a lock file makes it at its first flush, in a worker thread."""
    import openclaw_runtime.transcript.append as append_module

    threads: list[int] = []
    real = append_module.take_session_lock

    def recording(key, timeout, kept=None):
        threads.append(threading.get_ident())
        return real(key, timeout, kept)

    monkeypatch.setattr(append_module, "take_session_lock", recording)
    loop_thread = threading.get_ident()
    manager = await new_session(tmp_path, durability="none")
    lock_file = session_lock_path(manager.path)
    assert not exists(lock_file)
    for text in ("a", "b"):
        await manager.append_message(UserMessage(content=text, timestamp=1))
        await manager.flush()
    assert threads == [loop_thread, loop_thread]
    assert exists(lock_file)
    await manager.aclose()

    remove(lock_file)
    threads.clear()
    reopened = await SessionManager.open(manager.path, durability="none")
    for text in ("c", "d"):
        await reopened.append_message(UserMessage(content=text, timestamp=2))
        await reopened.flush()
    assert exists(lock_file) and len(lines(manager.path)) == 5
    assert threads[0] != loop_thread and threads[1:] == [loop_thread]
    await reopened.aclose()


@pytest.mark.parametrize(("durability", "expected_fsyncs"), [("flush", 0), ("fsync", 2)])
async def test_fsync_policy(tmp_path, monkeypatch, durability, expected_fsyncs):
    manager = await new_session(tmp_path, durability=durability)
    calls = []
    real = os.fsync
    monkeypatch.setattr(
        "openclaw_runtime.transcript.jsonl.os.fsync", lambda fd: (calls.append(fd), real(fd))
    )
    await manager.append_message(UserMessage(content="a", timestamp=1))
    await manager.append_message(UserMessage(content="b", timestamp=2))
    assert len(calls) == expected_fsyncs


async def test_bad_durability_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="durability must be one of none, flush, fsync"):
        await new_session(tmp_path, durability="always")


async def test_two_writers_never_interleave_and_see_each_other(tmp_path):
    first = await new_session(tmp_path)
    second = await SessionManager.open(first.path)
    ids = []
    for index in range(10):
        writer = first if index % 2 == 0 else second
        ids.append(await writer.append_message(UserMessage(content=f"m{index}", timestamp=index)))
    records = lines(first.path)[1:]
    assert [r["id"] for r in records] == ids
    assert [r["parentId"] for r in records] == [None, *ids[:-1]]
    assert [e["id"] for e in first.get_branch()] == ids[:-1]  # it has not seen the last one yet
    reopened = await SessionManager.open(first.path)
    assert [e["id"] for e in reopened.get_branch()] == ids


async def test_concurrent_appends_from_many_tasks(tmp_path):
    manager = await new_session(tmp_path)

    async def write(index):
        await manager.append_message(UserMessage(content=f"t{index}", timestamp=index))

    async with anyio.create_task_group() as group:
        for index in range(20):
            group.start_soon(write, index)
    records = lines(manager.path)[1:]
    assert len(records) == 20
    assert [r["parentId"] for r in records[1:]] == [r["id"] for r in records[:-1]]


async def test_writer_waits_for_the_lock_and_times_out_clearly(tmp_path):
    manager = await new_session(tmp_path, lock_timeout=0.05)
    other = filelock.FileLock(str(session_lock_path(manager.path)))
    other.acquire()
    try:
        with pytest.raises(SessionLockTimeout, match="locked by another writer"):
            await manager.append_message(UserMessage(content="a", timestamp=1))
    finally:
        other.release()
    await manager.append_message(UserMessage(content="a", timestamp=1))
    assert len(lines(manager.path)) == 2


async def test_torn_line_of_a_crashed_writer_cannot_swallow_the_next_append(tmp_path):
    manager = await new_session(tmp_path)
    await manager.append_message(UserMessage(content="a", timestamp=1))
    append_bytes(manager.path, b'{"type":"message","id":"torn')
    kept = await manager.append_message(UserMessage(content="b", timestamp=2))
    raw = manager.path.read_bytes().splitlines()
    assert raw[2] == b'{"type":"message","id":"torn'
    assert json.loads(raw[3])["id"] == kept
    reopened = await SessionManager.open(manager.path)
    assert [e["message"]["content"] for e in reopened.get_branch()] == ["a", "b"]
    assert reopened.repair_report.dropped_lines == 1


async def test_another_process_rewriting_the_file_is_picked_up(tmp_path):
    first = await new_session(tmp_path)
    await first.append_message(UserMessage(content="a", timestamp=1))
    second = await SessionManager.open(first.path)
    await second.rewrite_entries([])
    new_id = await first.append_message(UserMessage(content="b", timestamp=2))
    assert first.get_entry(new_id)["parentId"] is None
    assert len(first.get_entries()) == 1


# --------------------------------------------------------------------------- rewrites


async def test_rewrite_entries_is_atomic_and_validated(tmp_path, monkeypatch):
    manager = await new_session(tmp_path)
    a = await manager.append_message(UserMessage(content="a", timestamp=1))
    await manager.append_message(UserMessage(content="b", timestamp=2))
    keep = manager.get_entries()[:1]
    with pytest.raises(TranscriptError, match="entry 1 reuses id"):
        await manager.rewrite_entries(keep + keep)
    with pytest.raises(TranscriptError, match="entry 0 is missing entry id"):
        await manager.rewrite_entries([{"type": "custom"}])

    def crash(*_args):
        raise OSError("disk full")

    before = manager.path.read_bytes()
    monkeypatch.setattr("openclaw_runtime.transcript.jsonl.os.replace", crash)
    with pytest.raises(OSError, match="disk full"):
        await manager.rewrite_entries(keep)
    assert manager.path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
    monkeypatch.undo()
    await manager.rewrite_entries(keep)
    assert [r["id"] for r in lines(manager.path)[1:]] == [a]
    assert manager.get_leaf_id() == a


async def test_rewrite_transcript_entries_regrows_the_branch(tmp_path):
    manager = await new_session(tmp_path)
    a = await manager.append_message(UserMessage(content="a", timestamp=1))
    big = await manager.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "t",
            "content": [{"type": "text", "text": "x" * 500}],
            "isError": False,
            "timestamp": 2,
        }
    )
    clone = {"role": "user", "content": "again", "timestamp": 3}
    await manager.append_message(clone)
    await manager.append_message(clone)
    small = {
        "role": "toolResult",
        "toolCallId": "c",
        "toolName": "t",
        "content": [{"type": "text", "text": "x"}],
        "isError": False,
        "timestamp": 2,
    }
    outcome = await manager.rewrite_transcript_entries({big: small})
    assert outcome.changed and outcome.rewritten_entries == 1 and outcome.bytes_freed > 400
    branch = manager.get_branch()
    assert branch[0]["id"] == a
    assert [e["message"] for e in branch[1:]] == [small, clone]
    assert manager.get_entry(big) is not None  # history kept, only the branch moved
    nothing = await manager.rewrite_transcript_entries({"nope": small})
    assert (nothing.changed, nothing.reason) == (False, "no matching message entries")


# --------------------------------------------------------------------------- ids and paths


@pytest.mark.parametrize(
    ("session_id", "reason"),
    [
        ("../etc/passwd", "path separator"),
        ("a/b", "path separator"),
        ("a\\b", "path separator"),
        ("a\x00b", "NUL"),
        ("x" * 129, "at most 128"),
        ("", "empty"),
        ("   ", "empty"),
        (".hidden", "start with a letter or a digit"),
        ("..", "start with a letter or a digit"),
        ("-flag", "start with a letter or a digit"),
        ("héllo", "ASCII letters"),
        ("a b", "ASCII letters"),
        ("a:b", "ASCII letters"),
        ("s.checkpoint.123e4567-e89b-42d3-a456-426614174000", "reserved"),
        (42, "must be a string"),
    ],
)
def test_unsafe_session_ids_are_rejected_with_reasons(tmp_path, session_id, reason):
    with pytest.raises(InvalidSessionIdError, match=reason):
        validate_session_id(session_id)
    with pytest.raises(InvalidSessionIdError):
        JsonlSessionStore(tmp_path).path_for(session_id)


@pytest.mark.parametrize(
    "session_id", ["a", "A1", "7f3c-9a", "agent.main_1-x", " padded ", "x" * 128]
)
def test_safe_session_ids(tmp_path, session_id):
    path = JsonlSessionStore(tmp_path).path_for(session_id)
    assert path.parent == tmp_path.resolve()
    assert path.name == f"{session_id.strip()}.jsonl"


async def test_store_creates_opens_and_never_leaves_its_folder(tmp_path):
    store = JsonlSessionStore(tmp_path / "sessions", now=Clock())
    created = await store.create("abc", cwd="/w")
    await created.append_message(UserMessage(content="hi", timestamp=1))
    assert await store.exists("abc")
    reopened = await store.open_or_create("abc", cwd="/elsewhere")
    assert len(reopened.get_entries()) == 1
    fresh = await store.open_or_create("def", cwd="/w")
    assert fresh.header["cwd"] == "/w"
    assert sorted(p.name for p in (tmp_path / "sessions").glob("*.jsonl")) == [
        "abc.jsonl",
        "def.jsonl",
    ]


async def test_open_errors_are_clear(tmp_path):
    with pytest.raises(TranscriptError, match="does not exist"):
        await SessionManager.open(tmp_path / "missing.jsonl")
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(TranscriptError, match="is a directory"):
        await SessionManager.open(tmp_path / "dir.jsonl")
    # nothing in it looks like a session (a damaged header before intact entries is repaired:
    # see test_transcript_disk_state.py)
    bad = tmp_path / "bad.jsonl"
    write_lines(bad, [{"type": "message", "id": "m"}, {"hello": "world"}])
    with pytest.raises(TranscriptError, match="invalid session header"):
        await SessionManager.open(bad)
    assert lines(bad)[0] == {"type": "message", "id": "m"}  # untouched


async def test_flush_after_another_writer_rebuilds_the_tree_in_file_order(tmp_path):
    buffered = await new_session(tmp_path, durability="none")
    mine = await buffered.append_message(UserMessage(content="mine", timestamp=1))
    other = await SessionManager.open(buffered.path)
    theirs = await other.append_message(UserMessage(content="theirs", timestamp=2))
    await buffered.flush()
    assert [e["id"] for e in buffered.get_entries()] == [theirs, mine]
    assert buffered.get_leaf_id() == mine
    reopened = await SessionManager.open(buffered.path)
    assert reopened.get_entries() == buffered.get_entries()


async def test_repair_that_races_a_writer_repairs_the_latest_content(tmp_path, monkeypatch):
    path = tmp_path / "s1.jsonl"
    write_lines(path, [HEADER, entry("custom", "a", None, customType="x")])
    append_bytes(path, b"garbage\n")
    real = SessionManager.open_sync.__func__
    from openclaw_runtime.transcript import jsonl

    parse = jsonl.parse_session_bytes
    calls = []

    def racing_parse(data):
        if not calls:  # a second writer appends right after our first read
            append_bytes(
                path, json.dumps(entry("custom", "b", "a", customType="x")).encode() + b"\n"
            )
        calls.append(len(data))
        return parse(data)

    monkeypatch.setattr("openclaw_runtime.transcript.load.parse_session_bytes", racing_parse)
    manager = real(SessionManager, path, lock_timeout=2)
    assert [e["id"] for e in manager.get_entries()] == ["a", "b"]
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["s1", "a", "b"]
