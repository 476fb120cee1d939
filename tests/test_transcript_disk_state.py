"""Transcripts damaged on disk (issue 9 §5): a bad header byte, a content block whose
``type`` is not a string, the store's own error entry, planted symlinks, and ASCII ids.

Every session here is written by a real run (or by hand where OpenClaw would have written
it), then damaged the way a disk, an editor or an attacker would, then opened again.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime, TranscriptError
from openclaw_runtime.messages import load_message
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer
from openclaw_runtime.transcript import JsonlSessionStore, SessionManager, validate_session_id
from openclaw_runtime.transcript.jsonl import invalid_lines_path, session_lock_path
from openclaw_runtime.transcript.repair import STREAM_ERROR_FALLBACK_TEXT
from openclaw_runtime.transcript.session_ids import InvalidSessionIdError
from tests.run_support import openai_config, pending_repairs, repair_backups

pytestmark = pytest.mark.anyio

MODELS = {"main": 64_000}


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(
        models=MODELS, keys={"good": "ok", "bad": "invalid"}
    ) as running:
        yield running


def runtime_for(state: Path, server: FaultInjectingOpenAIServer, key: str = "good") -> Runtime:
    config = openai_config(state, server.base_url, provider="mock", models=MODELS, keys=[key])
    runtime = Runtime(config, load_entrypoints=False)
    runtime.retry_backoff_scale = 0
    return runtime


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def content(path: Path) -> bytes:
    return path.read_bytes()


def side_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in invalid_lines_path(path).read_text().splitlines()]


async def two_turn_session(state: Path, server: FaultInjectingOpenAIServer) -> Path:
    async with runtime_for(state, server) as runtime:
        assert (await runtime.run("first question", session_id="s1")).ok
        assert (await runtime.run("second question", session_id="s1")).ok
        return Path(runtime.session_store.path_for("s1"))


# --------------------------------------------------------------------------- header


async def test_one_bad_byte_anywhere_in_the_header_never_loses_an_entry(tmp_path, server):
    path = await two_turn_session(tmp_path / "state", server)
    original = path.read_bytes()
    header_end = original.index(b"\n")
    expected = [e["id"] for e in SessionManager.open_sync(path).get_entries()]
    assert len(expected) == 4
    repaired_cases = 0
    for offset in range(header_end):
        for bad in (b"\x00", b"}", b'"'):
            if original[offset : offset + 1] == bad:
                continue
            for stale in path.parent.glob("s1.jsonl.*"):
                if not stale.name.endswith(".lock"):
                    stale.unlink()
            damaged = original[:offset] + bad + original[offset + 1 :]
            path.write_bytes(damaged)
            manager = SessionManager.open_sync(path)
            where = f"offset {offset} byte {bad!r}"
            assert [e["id"] for e in manager.get_entries()] == expected, where
            if manager.repair_report.repaired:
                repaired_cases += 1
                assert manager.session_id == "s1", where  # from the file name
                (kept,) = side_records(path)
                assert kept["raw"].encode() == damaged[:header_end] or "rawBase64" in kept, where
                assert kept["reason"].startswith("damaged session header"), where
                (backup,) = repair_backups(path)
                assert backup.read_bytes() == damaged, where
            # once repaired, the file opens without any further change
            again = SessionManager.open_sync(path)
            assert not again.repair_report.repaired, where
            assert [e["id"] for e in again.get_entries()] == expected, where
    assert repaired_cases > header_end  # most single-byte damage really needed the repair


async def test_a_header_line_deleted_altogether_loses_no_entry(tmp_path, server):
    path = await two_turn_session(tmp_path / "state", server)
    expected = [e["id"] for e in SessionManager.open_sync(path).get_entries()]
    path.write_bytes(path.read_bytes().split(b"\n", 1)[1])
    manager = SessionManager.open_sync(path)
    assert manager.repair_report.repaired and manager.session_id == "s1"
    assert [e["id"] for e in manager.get_entries()] == expected
    assert not invalid_lines_path(path).exists()  # nothing was damaged, only missing


async def test_a_salvaged_header_keeps_what_can_still_be_read(tmp_path):
    path = tmp_path / "keep-me.jsonl"
    header = '{"type":"sessi0n","version":3,"id":"keep-me","timestamp":"2026-01-01T00:00:00.000Z",'
    header += '"cwd":"/work/repo","parentSession":"parent-1"}\n'
    user = {"type": "message", "id": "u1", "parentId": None, "timestamp": "t", "message": {}}
    user["message"] = {"role": "user", "content": "hello"}
    path.write_text(header + json.dumps(user) + "\n")
    manager = await SessionManager.open(path)
    assert manager.header == {
        "type": "session",
        "version": 3,
        "id": "keep-me",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/work/repo",
        "parentSession": "parent-1",
    }
    assert manager.repair_report.reason == "damaged session header"
    assert [e["id"] for e in manager.get_entries()] == ["u1"]


async def test_a_read_only_open_of_a_damaged_header_reads_the_entries_and_writes_nothing(
    tmp_path, server
):
    path = await two_turn_session(tmp_path / "state", server)
    damaged = b"#" + path.read_bytes()[1:]
    path.write_bytes(damaged)
    manager = SessionManager.open_sync(path, repair=False)
    assert len(manager.get_entries()) == 4 and manager.session_id == "s1"
    assert path.read_bytes() == damaged
    assert not invalid_lines_path(path).exists()


async def test_a_run_continues_a_session_whose_header_was_damaged(tmp_path, server):
    path = await two_turn_session(tmp_path / "state", server)
    path.write_bytes(b"\xff" + path.read_bytes()[1:])
    async with runtime_for(tmp_path / "state", server) as runtime:
        result = await runtime.run("third question", session_id="s1")
    assert result.ok, result.error
    history = server.requests[-1].body["messages"]
    texts = [m["content"] for m in history if m["role"] == "user"]
    assert texts[:2] == ["first question", "second question"]  # nothing was lost


# --------------------------------------------------------------------------- block types


@pytest.mark.parametrize("bad_type", [["text"], {"kind": "text"}, 7, None, ""])
async def test_a_block_whose_type_is_not_a_string_is_set_aside_and_runs_go_on(
    tmp_path, server, bad_type
):
    path = await two_turn_session(tmp_path / "state", server)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    user = records[1]
    bad_block = {"type": bad_type, "text": "poison"}
    user["message"]["content"] = [{"type": "text", "text": "first question"}, bad_block]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))

    async with runtime_for(tmp_path / "state", server) as runtime:
        result = await runtime.run("third question", session_id="s1")
    assert result.ok, result.error
    history = server.requests[-1].body["messages"]
    assert "poison" not in json.dumps(history)
    assert "first question" in json.dumps(history[:2])  # the rest of the message still sent
    (kept,) = side_records(path)
    assert json.loads(kept["raw"]) == {"entryId": user["id"], "index": 1, "block": bad_block}
    assert kept["lineNumber"] == 2
    assert pending_repairs(path) == {}


def test_loading_a_message_with_an_unhashable_type_or_role_never_raises_type_error():
    for data in (
        {"role": "user", "content": [{"type": ["text"], "text": "x"}]},
        {"role": "assistant", "content": [{"type": {"a": 1}}]},
        {"role": ["user"], "content": "x"},
        {"role": {"r": 1}, "content": "x"},
    ):
        with contextlib.suppress(ValueError):  # pydantic's ValidationError: documented
            load_message(data)


# --------------------------------------------------------------------------- error entries


async def test_the_error_entry_a_failed_run_writes_is_loaded_as_written(tmp_path, server):
    state = tmp_path / "state"
    async with runtime_for(state, server, key="bad") as runtime:
        failed = await runtime.run("hello", session_id="s1")
        path = Path(runtime.session_store.path_for("s1"))
    assert not failed.ok and failed.error is not None and failed.error.reason == "auth"
    written = content(path)
    last = json.loads(written.splitlines()[-1])
    assert last["message"]["stopReason"] == "error"

    reopened = SessionManager.open_sync(path)
    assert not reopened.repair_report.repaired
    assert content(path) == written and repair_backups(path) == []
    assert reopened.get_entries()[-1]["id"] == last["id"]

    (state / "auth-profiles.json").unlink()  # the user fixed the key: forget its cooldown
    async with runtime_for(state, server) as runtime:
        result = await runtime.run("hello again", session_id="s1")
    assert result.ok, result.error
    assert repair_backups(path) == []
    assert any(e["id"] == last["id"] for e in SessionManager.open_sync(path).get_entries())


async def test_an_openclaw_error_turn_with_empty_content_is_valid_as_written(tmp_path, server):
    path = await two_turn_session(tmp_path / "state", server)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    failed = dict(records[-1])
    failed["id"] = "failed01"
    failed["parentId"] = records[-1]["id"]
    failed["message"] = {
        **records[-1]["message"],
        "content": [],
        "stopReason": "error",
        "errorMessage": "upstream died",
    }
    path.write_text(path.read_text() + json.dumps(failed) + "\n")
    written = path.read_bytes()
    manager = SessionManager.open_sync(path)
    assert not manager.repair_report.repaired and path.read_bytes() == written
    assert manager.get_entries()[-1]["message"]["content"] == []
    async with runtime_for(tmp_path / "state", server) as runtime:
        result = await runtime.run("third question", session_id="s1")
    assert result.ok, result.error
    assert STREAM_ERROR_FALLBACK_TEXT not in path.read_text()  # never rewritten


# --------------------------------------------------------------------------- symlinks


async def test_a_planted_symlinked_side_file_is_never_written_through(tmp_path, server):
    path = await two_turn_session(tmp_path / "state", server)
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    os.symlink(outside, invalid_lines_path(path))
    append(path, b"not json\n")
    with pytest.raises(TranscriptError, match="symbolic link"):
        SessionManager.open_sync(path)
    assert outside.read_text() == "precious\n"


async def test_a_planted_symlinked_backup_is_never_written_through(tmp_path, server):
    path = await two_turn_session(tmp_path / "state", server)
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    moment = datetime(2026, 5, 5, tzinfo=UTC)
    planted = path.with_name(f"{path.name}.bak-{os.getpid()}-{int(moment.timestamp() * 1000)}")
    os.symlink(outside, planted)
    append(path, b"not json\n")
    with pytest.raises(TranscriptError, match="symbolic link"):
        SessionManager.open_sync(path, now=lambda: moment)
    assert outside.read_text() == "precious\n"


def test_a_session_file_symlinked_outside_the_folder_is_refused(tmp_path):
    """The sessions folder is resolved once per store; a link planted at the file itself is
    still followed and refused when it leads outside (and accepted when it stays inside)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    store = JsonlSessionStore(sessions)
    assert store.path_for("plain") == sessions.resolve() / "plain.jsonl"
    outside = tmp_path / "outside.jsonl"
    outside.write_text("precious\n")
    os.symlink(outside, sessions / "planted.jsonl")
    with pytest.raises(InvalidSessionIdError, match="outside the sessions folder"):
        store.path_for("planted")
    os.symlink(sessions / "plain.jsonl", sessions / "alias.jsonl")
    assert store.path_for("alias") == sessions.resolve() / "plain.jsonl"
    assert outside.read_text() == "precious\n"


# --------------------------------------------------------------------------- ids


@pytest.mark.parametrize(
    "session_id",
    [
        "\u212aelvin",  # KELVIN SIGN folds to "k"
        "a\u017f",  # LATIN SMALL LETTER LONG S folds to "s"
        "\u0131d",  # LATIN SMALL LETTER DOTLESS I
        "x\u0130",  # LATIN CAPITAL LETTER I WITH DOT ABOVE
        "caf\u00e9",
        "\uff41bc",  # FULLWIDTH LATIN SMALL LETTER A
        "abc\u0663",  # ARABIC-INDIC DIGIT THREE
    ],
)
def test_session_ids_are_ascii_only(session_id):
    with pytest.raises(InvalidSessionIdError) as info:
        validate_session_id(session_id)
    assert str(info.value).isascii()  # a look-alike is shown escaped, never as "Kelvin"


@pytest.mark.parametrize("session_id", ["Kelvin", "a.b_c-D9", "0" * 128])
def test_ascii_ids_still_pass(session_id):
    assert validate_session_id(session_id) == session_id


# --------------------------------------------------------------------------- found by fuzzing


async def test_a_trailing_user_message_whose_parent_line_was_damaged_does_not_fail_runs(
    tmp_path, server
):
    path = await two_turn_session(tmp_path / "state", server)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    # the run died after the prompt (a trailing user turn), then the answer before it rotted
    prompt = {**records[3], "id": "orphan01", "parentId": records[4]["id"]}
    lines = path.read_text().splitlines()
    lines[4] = lines[4][: len(lines[4]) // 2]  # the parent's line is torn mid-way
    path.write_text("\n".join(lines) + "\n" + json.dumps(prompt) + "\n")
    async with runtime_for(tmp_path / "state", server) as runtime:
        result = await runtime.run("third question", session_id="s1")
    assert result.ok, result.error


async def test_a_planted_symlinked_lock_file_is_a_clear_error_and_touches_nothing(tmp_path, server):
    path = await two_turn_session(tmp_path / "state", server)
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    lock = session_lock_path(path)
    lock.unlink()
    os.symlink(outside, lock)
    append(path, b"not json\n")  # opening must repair, which takes the lock
    with pytest.raises(TranscriptError, match="cannot lock session file"):
        SessionManager.open_sync(path)
    assert outside.read_text() == "precious\n"


def test_line_numbers_are_counted_only_for_set_aside_blocks(tmp_path, monkeypatch):
    """Counting a line number scans the file up to it: doing it for every message made
    loading quadratic (3.5 ms per line on a 50 000-entry session)."""
    from openclaw_runtime.transcript import repair

    counted: list[int] = []
    real = repair._line_number

    def counting(data: bytes, offset: int) -> int:
        counted.append(offset)
        return real(data, offset)

    monkeypatch.setattr(repair, "_line_number", counting)
    path = tmp_path / "s.jsonl"
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/w"}
    records = [header]
    for index in range(50):
        content = [{"type": "text", "text": f"m{index}"}]
        if index == 30:
            content.append({"type": ["bad"]})
        message = {"role": "user", "content": content}
        parent = records[-1].get("id") if index else None
        records.append(
            {
                "type": "message",
                "id": f"e{index}",
                "parentId": parent,
                "timestamp": "t",
                "message": message,
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    manager = SessionManager.open_sync(path)
    assert len(counted) == 1 and side_records(path)[0]["lineNumber"] == 32
    assert len(manager.get_entries()) == 50
