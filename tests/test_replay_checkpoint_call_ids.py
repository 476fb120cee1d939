"""The replay checkpoint keeps the tool-call ids of its prefix (``callIds``): a cold start
takes them instead of reading every message again, and they are exactly the ids the
sanitizer would have read out of the restored messages (random histories, clean ones, and a
side file written before the field existed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from openclaw_runtime.transcript.incremental import _call_ids
from openclaw_runtime.transcript.replay_checkpoint import checkpoint_path, read_checkpoint
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS
from openclaw_runtime.transcript.store import SessionManager
from tests.test_replay_checkpoint import _turn, _written
from tests.test_transcript_incremental import POLICIES

pytestmark = pytest.mark.anyio


async def _cold_ids(path: Path, policy: Any) -> int:
    """A restarted process's first turn (equal to the full pipeline, ``_turn`` asserts it);
    returns how many messages it restored, after checking that the ids its sanitizer holds
    are the ids of the messages it holds (restored ids included)."""
    session = SessionManager.open_sync(path, durability="none")
    got, expected, _ = await _turn(session, policy, 20_000_000, BUILTIN_SANITIZERS)
    assert got == expected
    sanitizer = session.replay_sanitizer
    assert sanitizer._prefix_ids == _call_ids(sanitizer._inputs)
    restored = session.replay_checkpoint.restored
    await session.aclose()
    return restored


def _prefix_ids(path: Path, count: int) -> set[str]:
    """The ids the first ``count`` messages of the session file name, read afresh."""
    session = SessionManager.open_sync(path, durability="none")
    return _call_ids(session.build_session_context().messages[:count])


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", [None, 0, 7, 25])  # (random ones that leave a checkpoint)
async def test_the_kept_ids_are_the_prefix_ids(
    tmp_path: Path, seed: int | None, policy_name: str
) -> None:
    path = tmp_path / "s.jsonl"
    policy = POLICIES[policy_name]
    await _written(path, seed, policy)
    checkpoint = read_checkpoint(checkpoint_path(path))
    assert checkpoint is not None and checkpoint.call_ids is not None
    assert list(checkpoint.call_ids) == sorted(checkpoint.call_ids)
    named = _prefix_ids(path, checkpoint.messages)
    assert set(checkpoint.call_ids) == named
    if seed is None:
        assert named  # the clean history calls tools: the check is not vacuous
    assert await _cold_ids(path, policy) == checkpoint.messages > 0


async def test_a_side_file_without_ids_still_restores(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    policy = POLICIES["openai"]
    await _written(path, None, policy)
    side = checkpoint_path(path)
    record = orjson.loads(side.read_bytes())
    del record["callIds"]
    side.write_bytes(orjson.dumps(record))
    assert await _cold_ids(path, policy) > 0
