"""Sessions and their clean head (``transcript.clean_head``): a closed session records it
beside its file, the next open takes it and the first turn does not read the file's head
again; a changed byte, a torn tail, another writer's lines, an older side file and a side
file older than its session (a process killed between the two writes) each give what opening
the file without any side file gives."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from openclaw_runtime.transcript import replay_checkpoint as rc
from openclaw_runtime.transcript.replay_checkpoint import checkpoint_path, read_checkpoint
from openclaw_runtime.transcript.store import SessionManager
from tests.test_replay_checkpoint import _cold, _turn
from tests.test_replay_checkpoint import _written as _written_once
from tests.test_transcript_incremental import POLICIES, dumped

pytestmark = pytest.mark.anyio

POLICY = POLICIES["openai"]


def _state(session: SessionManager) -> Any:
    """What a load gives: entries, pointers, the repair it did, the replayed messages."""
    tree = session._tree
    report = session.repair_report
    return (
        tree.header,
        tree.entries,
        tree.leaf_id,
        tree.append_parent_id,
        tree.logical_parents,
        (report.repaired, report.dropped_lines, report.set_aside_blocks),
        dumped(session.build_session_context().messages),
    )


def _without_side_file(path: Path, folder: Path) -> Any:
    """Open a copy of the session file with no side file beside it (the full checks)."""
    folder.mkdir(exist_ok=True)
    copy = folder / path.name
    shutil.copyfile(path, copy)
    return _state(SessionManager.open_sync(copy, durability="none"))


async def _written(path: Path, seed: int | None, policy: Any) -> Any:
    """A session a previous process wrote, then opened for one turn and closed (a session
    made by ``create`` was never loaded: its first open finds the head)."""
    history = await _written_once(path, seed, policy)
    await _cold(path, policy)
    return history


def _counting_head_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    real = rc._file_prefix_crc

    def counting(path: Path, length: int, *args: Any) -> Any:
        reads.append(length)
        return real(path, length, *args)

    monkeypatch.setattr(rc, "_file_prefix_crc", counting)
    return reads


async def test_a_closed_session_records_its_head_and_the_next_open_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    await _written(path, None, POLICY)
    checkpoint = read_checkpoint(checkpoint_path(path))
    assert checkpoint is not None and checkpoint.clean is not None
    data = path.read_bytes()
    # the bytes the last open loaded (the lines its turn wrote were never loaded)
    assert 0 < checkpoint.clean[0] < checkpoint.file_bytes == len(data)
    session = SessionManager.open_sync(path, durability="none")
    head = session._tree.clean_head
    assert head is not None and head.crc is not None
    assert head.size == len(data)  # proven, then extended over the last turn's lines
    assert head.checked == (checkpoint.file_bytes, checkpoint.file_crc)
    assert _state(session) == _without_side_file(path, tmp_path / "plain")
    await session.aclose()
    reads = _counting_head_reads(monkeypatch)
    restored, _ = await _cold(path, POLICY)  # asserts the full pipeline's result
    assert restored > 0
    assert reads == [len(path.read_bytes())]  # only the close's record, carried from the head
    # (the record carried the CRC from what the cold start knew: it read only what it wrote)


async def test_a_changed_byte_in_the_head_takes_the_full_checks(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    await _written(path, None, POLICY)
    data = path.read_bytes()
    at = data.index(b"question 0")
    path.write_bytes(data[:at] + b"questiom 0" + data[at + 10 :])  # in place, same size
    session = SessionManager.open_sync(path, durability="none")
    head = session._tree.clean_head
    assert head is not None and head.crc is None  # not proven: found again, not CRC'd yet
    assert _state(session) == _without_side_file(path, tmp_path / "plain")
    await session.aclose()
    restored, _ = await _cold(path, POLICY)
    assert restored == 0  # the first turn's file head changed too


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
async def test_a_torn_tail_is_repaired_as_without_the_head(
    tmp_path: Path, seed: int | None
) -> None:
    path = tmp_path / "s.jsonl"
    await _written(path, seed, POLICY)
    path.write_bytes(path.read_bytes() + b'{"type":"message","id":"torn","parentId":')
    plain = _without_side_file(path, tmp_path / "plain")
    session = SessionManager.open_sync(path, durability="none")
    assert session.repair_report.repaired
    assert _state(session) == plain
    assert path.read_bytes() == (tmp_path / "plain" / path.name).read_bytes()
    await session.aclose()
    await _cold(path, POLICY)


@pytest.mark.parametrize("seed", [None, 3, 4])
async def test_another_writers_lines_extend_the_head(tmp_path: Path, seed: int | None) -> None:
    path = tmp_path / "s.jsonl"
    history = await _written(path, seed, POLICY)
    before = read_checkpoint(checkpoint_path(path))
    assert seed is not None or (before is not None and before.clean is not None)
    other = SessionManager.open_sync(path, durability="none")
    other.replay_checkpoint.enabled = False  # it writes lines, not the side file
    start = len(history.messages)
    for _ in range(3):
        history.turn()
    for message in history.messages[start:]:
        await other.append_message(message)
    await other.aclose()
    session = SessionManager.open_sync(path, durability="none")
    head = session._tree.clean_head
    if before is not None and before.clean is not None:
        assert head is not None and head.crc is not None  # proven, then extended
        assert head.size == len(path.read_bytes()) > before.clean[0]
    assert _state(session) == _without_side_file(path, tmp_path / "plain")
    await session.aclose()
    await _cold(path, POLICY)


async def test_an_older_side_file_without_the_head_still_works(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    await _written(path, None, POLICY)
    side = checkpoint_path(path)
    record = orjson.loads(side.read_bytes())
    del record["cleanBytes"], record["cleanCrc"]
    side.write_bytes(orjson.dumps(record))
    session = SessionManager.open_sync(path, durability="none")
    head = session._tree.clean_head
    assert head is not None and head.crc is None  # found by the full checks
    assert _state(session) == _without_side_file(path, tmp_path / "plain")
    await session.aclose()
    restored, _ = await _cold(path, POLICY)  # still restores (the head is not needed)
    assert restored > 0
    recorded = read_checkpoint(side)
    assert recorded is not None and recorded.clean is not None  # the turn recorded it


@pytest.mark.parametrize("rewrite", [False, True])
async def test_a_side_file_older_than_its_session(tmp_path: Path, rewrite: bool) -> None:
    """A process killed after writing the session but before the side file: the side file
    describes an earlier file (appended to since, or rewritten)."""
    path = tmp_path / "s.jsonl"
    history = await _written(path, None, POLICY)
    side = checkpoint_path(path)
    old = side.read_bytes()
    session = SessionManager.open_sync(path, durability="none")
    start = len(history.messages)
    for _ in range(4):
        history.turn()
    for message in history.messages[start:]:
        await session.append_message(message)
    if rewrite:  # a whole-session rewrite: the same records, other bytes at the start
        entries = session.get_entries()
        entries[0] = {**entries[0], "message": {**entries[0]["message"], "content": "new"}}
        await session.flush()
        await session.rewrite_entries(entries)
    await session.aclose()
    side.write_bytes(old)  # the side file as the kill left it
    reopened = SessionManager.open_sync(path, durability="none")
    head = reopened._tree.clean_head
    assert head is not None and (head.crc is None) == rewrite  # proven only when unchanged
    assert _state(reopened) == _without_side_file(path, tmp_path / "plain")
    await reopened.aclose()
    await _cold(path, POLICY)


async def test_a_head_checked_for_another_checkpoint_reads_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    await _written(path, None, POLICY)
    checkpoint = read_checkpoint(checkpoint_path(path))
    assert checkpoint is not None
    session = SessionManager.open_sync(path, durability="none")
    head = session._tree.clean_head
    assert head is not None and head.checked == (checkpoint.file_bytes, checkpoint.file_crc)
    head.checked = (checkpoint.file_bytes - 1, checkpoint.file_crc)  # another checkpoint's
    reads = _counting_head_reads(monkeypatch)
    got, expected, _ = await _turn(session, POLICY, 30_000_000)
    assert got == expected
    assert session.replay_checkpoint.restored == checkpoint.messages > 0
    assert reads == [checkpoint.file_bytes]  # the file's head read, as without a head
    await session.aclose()


async def test_a_session_opened_without_a_side_file_records_one_the_next_start_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    await _written_once(path, None, POLICY)
    checkpoint_path(path).unlink()
    loaded = len(path.read_bytes())
    reads = _counting_head_reads(monkeypatch)
    restored, _ = await _cold(path, POLICY)  # nothing to restore; its close records
    assert restored == 0
    assert reads == [len(path.read_bytes())]
    # the record CRC'd the loaded bytes it kept and read only what its turn wrote
    recorded = read_checkpoint(checkpoint_path(path))
    assert recorded is not None and recorded.clean is not None
    assert recorded.clean[0] == loaded
    restored, _ = await _cold(path, POLICY)
    assert restored == recorded.messages > 0
