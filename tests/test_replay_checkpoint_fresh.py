"""A session file this process has just created has no replay checkpoint to read: the
checkpointer skips the side file's read (an ``open`` that fails, per fresh run) and answers
as the read would have, also when a stale side file of an earlier file of the same id is
still there."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.transcript import replay_checkpoint as rc
from openclaw_runtime.transcript.replay_checkpoint import checkpoint_path, read_checkpoint
from openclaw_runtime.transcript.store import SessionManager
from tests.test_replay_checkpoint import _cold, _turn, _written
from tests.test_transcript_incremental import POLICIES

pytestmark = pytest.mark.anyio


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    real = rc.read_checkpoint

    def counting(path: Path) -> Any:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(rc, "read_checkpoint", counting)
    return reads


async def test_a_created_session_reads_no_side_file_an_opened_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = POLICIES["openai"]
    reads = _counting_reads(monkeypatch)
    path = tmp_path / "fresh.jsonl"
    session = await SessionManager.create(path, session_id="fresh", cwd="/w", durability="none")
    for stamp in (1_000, 2_000, 3_000):
        got, expected, _ = await _turn(session, policy, stamp)
        assert got == expected
    assert session.replay_checkpoint.known_tokens([], "any") is None
    await session.aclose()
    assert reads == []
    assert checkpoint_path(path).exists()  # the fresh session still records its side file
    restored, _ = await _cold(path, policy)  # a restart reads it and resumes from it
    assert reads == [checkpoint_path(path)]
    assert restored > 0


async def _stale_then_fresh(
    directory: Path, policy: Any, seed: int | None, turns: int, *, skip: bool
) -> tuple[Any, ...]:
    """The same id's earlier session file is gone, its side file stays; a new file at the
    name runs ``turns`` turns with the side file skipped (``skip``, the fast path) or read
    (the slow path). What can be seen: restored counts, whether the stale side file is still
    the side file, what a restart restores."""
    os.mkdir(directory)
    path = directory / "s.jsonl"
    await _written(path, seed, policy, turns=6)
    stale = read_checkpoint(checkpoint_path(path))
    assert stale is not None and stale.messages > 0
    os.unlink(path)
    session = await SessionManager.create(path, session_id="s", cwd="/w", durability="none")
    if not skip:
        session.replay_checkpoint._checkpoint = rc._UNREAD  # the slow path: read it
    for turn in range(turns):
        got, expected, _ = await _turn(session, policy, 1_000 * (turn + 1))
        assert got == expected
    during = session.replay_checkpoint.restored
    await session.aclose()
    after = read_checkpoint(checkpoint_path(path))
    restored, _ = await _cold(path, policy)
    return during, after == stale, restored, (after.messages if after is not None else None)


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", [None, 0, 1])
@pytest.mark.parametrize("turns", [1, 12])
async def test_a_stale_side_file_gives_what_reading_it_gives(
    tmp_path: Path, policy_name: str, seed: int | None, turns: int
) -> None:
    policy = POLICIES[policy_name]
    fast = await _stale_then_fresh(tmp_path / "fast", policy, seed, turns, skip=True)
    slow = await _stale_then_fresh(tmp_path / "slow", policy, seed, turns, skip=False)
    assert fast == slow
    assert fast[0] == 0  # nothing taken from the stale file
