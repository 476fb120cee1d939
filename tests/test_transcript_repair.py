"""Session file repair (spec §12.2): OpenClaw's cases, nothing lost, crash safety."""

from __future__ import annotations

import base64
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from openclaw_runtime.messages import UserMessage
from openclaw_runtime.transcript import SessionManager, repair_session_file_if_needed
from openclaw_runtime.transcript.jsonl import invalid_lines_path
from openclaw_runtime.transcript.repair import RepairReport, repair_session_file

HEADER = {
    "type": "session",
    "version": 7,
    "id": "session-1",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "cwd": "/tmp",
}
USER = {
    "type": "message",
    "id": "msg-1",
    "parentId": None,
    "timestamp": "2026-01-01T00:00:01.000Z",
    "message": {"role": "user", "content": "hello"},
}
FIXED_NOW = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)


def now():
    return FIXED_NOW


def dumps(*records):
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


def message_entry(entry_id, message, parent=None):
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:02.000Z",
        "message": message,
    }


def assistant(content, stop, entry_id="msg-2", **extra):
    return message_entry(
        entry_id, {"role": "assistant", "content": content, "stopReason": stop, **extra}
    )


def read_text(path):
    return Path(path).read_text(encoding="utf-8")


def append_text(path, text):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def read_records(path):
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


@pytest.fixture
def session(tmp_path):
    return tmp_path / "session.jsonl"


# --------------------------------------------------------------------------- OpenClaw's cases

pytestmark = pytest.mark.anyio


async def test_malformed_line_is_kept_aside_with_a_backup(session):
    original = dumps(HEADER, USER) + '{"type":"message"'
    session.write_text(original, encoding="utf-8")
    warnings = []
    report = await repair_session_file_if_needed(session, warn=warnings.append, now=now)
    assert report.repaired and report.dropped_lines == 1
    assert report.backup_path == f"{session}.bak-{os.getpid()}-{int(FIXED_NOW.timestamp() * 1000)}"
    assert read_text(report.backup_path) == original
    assert len(read_records(session)) == 2
    (kept,) = read_records(invalid_lines_path(session))
    assert kept["raw"] == '{"type":"message"' and kept["lineNumber"] == 3
    assert kept["reason"] == "is not valid JSON" and kept["terminated"] is False
    assert report.invalid_lines_path == str(invalid_lines_path(session))
    assert warnings == [
        "session file repaired: dropped 1 malformed line(s) (session.jsonl); "
        "malformed lines kept in session.jsonl.invalid.jsonl"
    ]


async def test_crlf_lines_need_no_repair(session):
    session.write_bytes(dumps(HEADER, USER).replace("\n", "\r\n").encode())
    report = await repair_session_file_if_needed(session)
    assert (report.repaired, report.dropped_lines) == (False, 0)


async def test_invalid_header_skips_repair_with_a_warning(session):
    bad = {"type": "message", "id": "msg-1", "message": {"role": "user", "content": "hello"}}
    session.write_text(dumps(bad) + '{"type":"message"', encoding="utf-8")
    warnings = []
    report = await repair_session_file_if_needed(session, warn=warnings.append)
    assert (report.repaired, report.reason) == (False, "invalid session header")
    assert warnings == ["session file repair skipped: invalid session header (session.jsonl)"]
    assert not invalid_lines_path(session).exists()


async def test_read_errors_other_than_missing_are_reported(tmp_path):
    warnings = []
    report = await repair_session_file_if_needed(tmp_path, warn=warnings.append)
    assert not report.repaired and report.reason.startswith("failed to read session file")
    assert len(warnings) == 1
    missing = await repair_session_file_if_needed(tmp_path / "nope.jsonl", warn=warnings.append)
    assert missing.reason == "missing session file" and len(warnings) == 1
    assert (await repair_session_file_if_needed("  ")).reason == "missing session file"


async def test_empty_error_assistant_mid_transcript_gets_fallback_text(session):
    poisoned = assistant([], "error", api="bedrock-converse-stream", errorMessage="transient")
    session.write_text(dumps(HEADER, poisoned, USER), encoding="utf-8")
    warnings = []
    report = await repair_session_file_if_needed(session, warn=warnings.append)
    assert (
        report.repaired and report.rewritten_assistant_messages == 1 and report.dropped_lines == 0
    )
    assert "rewrote 1 assistant message(s)" in warnings[0]
    records = read_records(session)
    assert records[1]["message"]["content"] == [
        {"type": "text", "text": "[assistant turn failed before producing content]"}
    ]
    assert records[1]["message"]["errorMessage"] == "transient"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "(continue)"),
        ("   \n", "(continue)"),
        ([{"type": "text", "text": ""}], [{"type": "text", "text": "(continue)"}]),
        ([], [{"type": "text", "text": "(continue)"}]),
        (
            [{"type": "text", "text": " "}, {"type": "text", "text": "\t"}],
            [{"type": "text", "text": "(continue)"}],
        ),
        (
            [
                {"type": "text", "text": "   "},
                {"type": "image", "data": "AA==", "mimeType": "image/png"},
            ],
            [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
        ),
        (
            [{"type": "text", "text": "ok"}, {"type": "text", "text": ""}],
            [{"type": "text", "text": "ok"}],
        ),
    ],
)
async def test_blank_user_content_uses_the_newest_rule(session, content, expected):
    blank = message_entry("msg-blank", {"role": "user", "content": content})
    session.write_text(dumps(HEADER, blank, USER), encoding="utf-8")
    warnings = []
    report = await repair_session_file_if_needed(session, warn=warnings.append)
    assert report.rewritten_user_messages == 1 and report.dropped_blank_user_messages == 0
    assert "rewrote 1 user message(s)" in warnings[0]
    assert read_records(session)[1]["message"]["content"] == expected


@pytest.mark.parametrize(
    "content",
    [
        "hello",
        [{"type": "text", "text": "x"}],
        [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
        None,
    ],
)
async def test_non_blank_user_content_untouched(session, content):
    session.write_text(
        dumps(HEADER, message_entry("u", {"role": "user", "content": content})), encoding="utf-8"
    )
    assert not (await repair_session_file_if_needed(session)).repaired


async def test_drops_and_rewrites_are_both_reported(session):
    poisoned = assistant([], "error")
    session.write_text(dumps(HEADER, poisoned, USER) + '{"type":"message"', encoding="utf-8")
    warnings = []
    report = await repair_session_file_if_needed(session, warn=warnings.append)
    assert (report.dropped_lines, report.rewritten_assistant_messages) == (1, 1)
    assert (
        "dropped 1 malformed line(s)" in warnings[0]
        and "rewrote 1 assistant message(s)" in warnings[0]
    )


async def test_silent_reply_mid_transcript_left_alone(session):
    original = dumps(HEADER, assistant([], "stop", provider="ollama"), USER)
    session.write_text(original, encoding="utf-8")
    report = await repair_session_file_if_needed(session)
    assert not report.repaired and report.rewritten_assistant_messages == 0
    assert session.read_text(encoding="utf-8") == original


async def test_trailing_error_assistant_is_dropped(session):
    session.write_text(dumps(HEADER, USER, assistant([], "error")), encoding="utf-8")
    warnings = []
    report = await repair_session_file_if_needed(session, warn=warnings.append)
    assert (report.rewritten_assistant_messages, report.dropped_trailing_assistant_messages) == (
        1,
        1,
    )
    assert "dropped 1 trailing assistant message(s)" in warnings[0]
    records = read_records(session)
    assert [r.get("message", {}).get("role") for r in records] == [None, "user"]


async def test_consecutive_trailing_error_artifacts_are_dropped(session):
    failed = [{"type": "text", "text": "[assistant turn failed before producing content]"}]
    session.write_text(
        dumps(HEADER, USER, assistant(failed, "error", "a1"), assistant(failed, "error", "a2")),
        encoding="utf-8",
    )
    report = await repair_session_file_if_needed(session)
    assert report.dropped_trailing_assistant_messages == 2
    assert len(read_records(session)) == 2


@pytest.mark.parametrize("stop", ["stop", "aborted", "toolUse", "length"])
async def test_trailing_assistant_that_is_not_an_error_is_kept(session, stop):
    original = dumps(HEADER, USER, assistant([{"type": "text", "text": "Hello."}], stop))
    session.write_text(original, encoding="utf-8")
    report = await repair_session_file_if_needed(session)
    assert not report.repaired and report.dropped_trailing_assistant_messages == 0
    assert session.read_text(encoding="utf-8") == original


async def test_second_run_changes_nothing(session):
    session.write_text(dumps(HEADER, assistant([], "error"), USER) + "garbage\n", encoding="utf-8")
    first = await repair_session_file_if_needed(session, now=now)
    repaired = session.read_bytes()
    second = await repair_session_file_if_needed(session, now=now)
    assert first.repaired and not second.repaired
    assert session.read_bytes() == repaired
    assert len(list(session.parent.glob("session.jsonl.bak-*"))) == 1


async def test_message_without_role_is_malformed(session):
    null_role = message_entry("nr", {"role": None, "content": "x"})
    no_message = {"type": "message", "id": "nm", "parentId": None, "timestamp": "t"}
    session.write_text(dumps(HEADER, USER, null_role, no_message), encoding="utf-8")
    report = await repair_session_file_if_needed(session)
    assert report.dropped_lines == 2
    reasons = [r["reason"] for r in read_records(invalid_lines_path(session))]
    assert reasons == ["has a message without a role", "has no message object"]


async def test_untouched_lines_are_written_back_byte_for_byte(session):
    odd_spacing = '{ "type" : "custom", "id" : "c1", "parentId" : null, "customType" : "x" }\n'
    text = json.dumps(HEADER) + "\n" + odd_spacing + "not json\n"
    session.write_text(text, encoding="utf-8")
    await repair_session_file_if_needed(session)
    assert session.read_text(encoding="utf-8") == json.dumps(HEADER) + "\n" + odd_spacing


async def test_non_utf8_bytes_are_kept_exactly(session):
    broken = b'{"type":"custom","id":"c\xff\xfe"}'
    session.write_bytes(dumps(HEADER, USER).encode() + broken + b"\n")
    await repair_session_file_if_needed(session)
    (kept,) = read_records(invalid_lines_path(session))
    assert base64.b64decode(kept["rawBase64"]) == broken


async def test_side_file_accumulates_across_repairs(session):
    session.write_text(dumps(HEADER, USER) + "bad one\n", encoding="utf-8")
    await repair_session_file_if_needed(session)
    append_text(session, "bad two\n")
    await repair_session_file_if_needed(session)
    assert [r["raw"] for r in read_records(invalid_lines_path(session))] == ["bad one", "bad two"]


def test_repair_keeps_file_mode(session):
    session.write_text(dumps(HEADER, USER) + "x\n", encoding="utf-8")
    os.chmod(session, 0o640)
    report = repair_session_file(session)
    assert os.stat(session).st_mode & 0o777 == 0o640
    assert os.stat(report.backup_path).st_mode & 0o777 == 0o640


# --------------------------------------------------------------------------- crash safety


def realistic_session() -> bytes:
    records = [
        {
            "type": "session",
            "version": 3,
            "id": "realistic",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/w",
        },
        message_entry(
            "u1", {"role": "user", "content": "Résumé the file — ünïcødé ✓", "timestamp": 1}
        ),
        {
            "type": "model_change",
            "id": "mc",
            "parentId": "u1",
            "timestamp": "2026-01-01T00:00:01.000Z",
            "provider": "anthropic",
            "modelId": "claude",
        },
        message_entry(
            "a1",
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Let me look", "thinkingSignature": "c2ln"},
                    {
                        "type": "toolCall",
                        "id": "t1",
                        "name": "read",
                        "arguments": {"path": "/a b/ü.txt"},
                    },
                ],
                "stopReason": "toolUse",
                "timestamp": 2,
            },
            "mc",
        ),
        message_entry(
            "r1",
            {
                "role": "toolResult",
                "toolCallId": "t1",
                "toolName": "read",
                "content": [{"type": "text", "text": 'line1\nline2\t"quoted"'}],
                "isError": False,
                "timestamp": 3,
            },
            "a1",
        ),
        message_entry(
            "a2",
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Done 👍"}],
                "stopReason": "stop",
                "timestamp": 4,
            },
            "r1",
        ),
        {
            "type": "label",
            "id": "l1",
            "parentId": "a2",
            "timestamp": "2026-01-01T00:00:05.000Z",
            "targetId": "u1",
            "label": "start",
        },
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "l1",
            "timestamp": "2026-01-01T00:00:06.000Z",
            "summary": "summary",
            "firstKeptEntryId": "a2",
            "tokensBefore": 900,
        },
        message_entry(
            "u2",
            {"role": "user", "content": [{"type": "text", "text": "next"}], "timestamp": 7},
            "c1",
        ),
    ]
    return dumps(*records).encode("utf-8")


def test_a_file_cut_at_every_byte_still_loads(tmp_path):
    data = realistic_session()
    line_ends = [i for i, byte in enumerate(data) if byte == 0x0A]
    header_end = line_ends[0]
    entry_bounds = list(zip([e + 1 for e in line_ends[:-1]], line_ends[1:], strict=True))
    all_ids = [json.loads(data[s:e])["id"] for s, e in entry_bounds]
    path = tmp_path / "realistic.jsonl"
    side = invalid_lines_path(path)
    for cut in range(len(data) + 1):
        for stale in tmp_path.iterdir():
            stale.unlink()
        path.write_bytes(data[:cut])
        manager = SessionManager.open_sync(path)
        complete = [i for (s, e), i in zip(entry_bounds, all_ids, strict=True) if e <= cut]
        assert [e["id"] for e in manager.get_entries()] == complete, cut
        if cut >= header_end:
            assert manager.session_id == "realistic"
        tail_start = max([0] + [e + 1 for e in line_ends if e < cut])
        tail = data[tail_start:cut]
        complete_tail = (
            tail_start < cut and cut - 1 < len(data) and (cut == len(data) or data[cut] == 0x0A)
        )
        if tail.strip() and not complete_tail:
            (kept,) = [json.loads(line) for line in side.read_text(encoding="utf-8").splitlines()]
            raw = kept["raw"].encode() if "raw" in kept else base64.b64decode(kept["rawBase64"])
            assert raw == tail, cut
        else:
            assert not side.exists(), cut
        # the repaired session keeps working
        SessionManager.open_sync(path)


async def test_crash_mid_append_loses_only_that_line(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    manager = await SessionManager.create(path, session_id="s", cwd="/w")
    kept_ids = [
        await manager.append_message(UserMessage(content=f"m{i}", timestamp=i)) for i in range(5)
    ]

    real_write = os.write

    def dying_write(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise SystemExit("killed mid-append")

    def dying_truncate(fd, size):
        raise SystemExit("killed mid-append")  # the process is gone: nothing undoes the write

    monkeypatch.setattr("openclaw_runtime.transcript.jsonl.os.write", dying_write)
    monkeypatch.setattr("openclaw_runtime._files.os.ftruncate", dying_truncate)
    with pytest.raises(SystemExit):
        await manager.append_message(UserMessage(content="lost " * 20, timestamp=99))
    monkeypatch.undo()

    reopened = await SessionManager.open(path)
    assert [e["id"] for e in reopened.get_branch()] == kept_ids
    assert reopened.repair_report.dropped_lines == 1
    (kept,) = read_records(invalid_lines_path(path))
    assert kept["raw"].startswith('{"type":"message"') and kept["terminated"] is False
    after = await reopened.append_message(UserMessage(content="after", timestamp=100))
    final = await SessionManager.open(path)
    assert [e["id"] for e in final.get_branch()] == [*kept_ids, after]
    assert final.repair_report.repaired is False


async def test_open_repairs_and_reports(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(dumps(HEADER, USER) + "oops\n", encoding="utf-8")
    warnings = []
    manager = await SessionManager.open(path, warn=warnings.append)
    assert manager.repair_report.repaired and manager.repair_report.dropped_lines == 1
    assert warnings[0].startswith("session file repaired: dropped 1 malformed line(s)")
    untouched = await SessionManager.open(path, repair=False)
    assert untouched.repair_report.repaired is False


async def test_read_only_open_skips_bad_lines_without_touching_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    original = dumps(HEADER, USER) + "oops\n"
    path.write_text(original, encoding="utf-8")
    manager = await SessionManager.open(path, repair=False)
    assert [e["id"] for e in manager.get_entries()] == ["msg-1"]
    assert path.read_text(encoding="utf-8") == original
    assert not invalid_lines_path(path).exists()
    # the report says what a repair would change (``sessions show`` tells the reader)
    report = manager.repair_report
    assert (report.repaired, report.dropped_lines, report.changes) == (False, 1, True)
    assert report.invalid_lines_path is None and report.backup_path is None
    path.write_text(dumps(HEADER, USER), encoding="utf-8")
    clean = await SessionManager.open(path, repair=False)
    assert (clean.repair_report.dropped_lines, clean.repair_report.changes) == (0, False)


COUNTERS = (
    "dropped_lines",
    "rewritten_assistant_messages",
    "dropped_blank_user_messages",
    "rewritten_user_messages",
    "dropped_trailing_assistant_messages",
    "set_aside_blocks",
)


@pytest.mark.parametrize("counter", COUNTERS)
def test_a_report_changes_the_file_when_any_counter_is_set(counter: str) -> None:
    assert RepairReport(repaired=False, **{counter: 1}).changes
    assert RepairReport(repaired=True, **{counter: 2}).changes


def test_a_report_without_counters_changes_nothing() -> None:
    assert not RepairReport(repaired=False).changes
    assert not RepairReport(repaired=True, backup_path="b", invalid_lines_path="i").changes
    assert not RepairReport(repaired=False, reason="missing session file").changes


# --------------------------------------------------------------------------- pre-compaction snapshot


def test_snapshot_is_taken_only_when_no_compaction_runs_before_or_after():
    from openclaw_runtime.transcript.snapshot import capture_pre_compaction_snapshot

    history = [{"role": "user", "content": "q"}]
    assert capture_pre_compaction_snapshot(lambda: history, lambda: False) == history
    assert capture_pre_compaction_snapshot(lambda: history, lambda: True) is None
    states = iter([False, True])  # compaction started while the messages were read
    assert capture_pre_compaction_snapshot(lambda: history, lambda: next(states)) is None
    snapshot = capture_pre_compaction_snapshot(lambda: history, lambda: False)
    history.append({"role": "assistant", "content": []})
    assert len(snapshot) == 1  # a copy, not a view


USER_MSG = {"role": "user", "content": "q"}
ASSISTANT_MSG = {"role": "assistant", "content": [{"type": "toolCall", "id": "c"}]}
RESULT_MSG = {"role": "toolResult", "toolCallId": "c", "content": []}


@pytest.mark.parametrize(
    ("during", "pre", "current", "expected_source", "expected"),
    [
        (False, [USER_MSG], [USER_MSG, ASSISTANT_MSG], "current", [USER_MSG, ASSISTANT_MSG]),
        (True, [USER_MSG, ASSISTANT_MSG], [USER_MSG], "pre-compaction", [USER_MSG]),
        (True, [USER_MSG, RESULT_MSG], [], "pre-compaction", [USER_MSG, RESULT_MSG]),
        (True, None, [USER_MSG, ASSISTANT_MSG], "current", [USER_MSG]),
        (True, [ASSISTANT_MSG], [USER_MSG], "current", [USER_MSG]),
        (True, [ASSISTANT_MSG], [ASSISTANT_MSG], "current", []),
        (
            True,
            [{"role": "compactionSummary", "summary": "s"}],
            [],
            "pre-compaction",
            [{"role": "compactionSummary", "summary": "s"}],
        ),
    ],
)
def test_select_compaction_timeout_snapshot(during, pre, current, expected_source, expected):
    from openclaw_runtime.transcript.snapshot import select_compaction_timeout_snapshot

    selection = select_compaction_timeout_snapshot(
        timed_out_during_compaction=during,
        pre_compaction_snapshot=pre,
        pre_compaction_session_id="old",
        current_snapshot=current,
        current_session_id="new",
    )
    assert (selection.source, selection.messages) == (expected_source, expected)
    assert selection.session_id_used == ("old" if expected_source == "pre-compaction" else "new")


@pytest.mark.parametrize(
    ("timeout", "pending", "in_flight", "flagged"),
    [
        (False, True, True, False),
        (True, False, False, False),
        (True, True, False, True),
        (True, False, True, True),
    ],
)
def test_should_flag_compaction_timeout(timeout, pending, in_flight, flagged):
    from openclaw_runtime.transcript.snapshot import should_flag_compaction_timeout

    assert (
        should_flag_compaction_timeout(
            is_timeout=timeout,
            is_compaction_pending_or_retrying=pending,
            is_compaction_in_flight=in_flight,
        )
        is flagged
    )
