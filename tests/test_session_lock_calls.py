"""The session lock taken by plain calls (``take_session_lock`` / ``give_session_lock``, what
the turn-end flush uses since session 8) is the lock ``session_lock_at`` holds: the same file
lock, the same re-entry count on one thread, the same errors, and a flush inside a held lock
still appends (issue 13)."""

from __future__ import annotations

import os
from pathlib import Path

import filelock
import pytest

from openclaw_runtime._exceptions import TranscriptError
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.transcript.jsonl import (
    SessionLockTimeout,
    give_session_lock,
    session_lock_at,
    session_lock_path,
    take_session_lock,
)
from openclaw_runtime.transcript.store import JsonlSessionStore


def is_free(path: Path) -> bool:
    """Whether another holder (a ``filelock`` lock: another descriptor) can take it now."""
    other = filelock.FileLock(str(session_lock_path(path)), timeout=0)
    try:
        other.acquire()
    except filelock.Timeout:
        return False
    other.release()
    return True


# (how the outer lock is taken, how the inner one is) -> the lock stays held until the outer
# one is given back, whichever way each was taken
WAYS = ["calls", "context"]


@pytest.mark.parametrize("outer", WAYS)
@pytest.mark.parametrize("inner", WAYS)
def test_re_entry_is_counted_the_same_either_way(tmp_path: Path, outer: str, inner: str) -> None:
    path = tmp_path / "s.jsonl"
    key = os.path.abspath(path)

    def hold(way: str, body: object) -> None:
        if way == "calls":
            lock = take_session_lock(key, 0)
            try:
                body()  # type: ignore[operator]
            finally:
                give_session_lock(key, lock)
        else:
            with session_lock_at(key, timeout=0):
                body()  # type: ignore[operator]

    seen: list[bool] = []

    def inner_body() -> None:
        seen.append(is_free(path))

    def outer_body() -> None:
        seen.append(is_free(path))
        hold(inner, inner_body)
        seen.append(is_free(path))  # the inner give-back did not free it

    hold(outer, outer_body)
    seen.append(is_free(path))
    assert seen == [False, False, False, True]


def test_a_taken_lock_is_the_one_another_writer_waits_for(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    other = filelock.FileLock(str(session_lock_path(path)))
    other.acquire()
    try:
        with pytest.raises(SessionLockTimeout, match=r"s\.jsonl is locked by another writer"):
            take_session_lock(os.path.abspath(path), 0)
    finally:
        other.release()
    lock = take_session_lock(os.path.abspath(path), 0)
    assert lock is not None and not is_free(path)
    give_session_lock(os.path.abspath(path), lock)
    assert is_free(path)


def test_a_planted_link_is_refused_by_both(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    os.symlink(tmp_path / "elsewhere", session_lock_path(path))
    refused = r"cannot lock session file s\.jsonl"
    with pytest.raises(TranscriptError, match=refused):
        take_session_lock(os.path.abspath(path), 0)
    with pytest.raises(TranscriptError, match=refused), session_lock_at(str(path), timeout=0):
        pass
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.anyio
async def test_a_flush_inside_the_held_lock_appends_and_leaves_it_held(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path, durability="none")
    session = await store.open_or_create("s1", cwd="/w")
    await session.append_message(UserMessage(content="one", timestamp=1))
    key = session._lock_key  # the session file's absolute path
    with session_lock_at(key, timeout=0):
        await session.flush()  # re-entry on this thread: no second lock, no hop, no wait
        assert not is_free(session.path)
    assert is_free(session.path)
    await session.append_message(UserMessage(content="two", timestamp=2))
    await session.flush()
    assert len(session.path.read_bytes().splitlines()) == 3
    assert is_free(session.path)
    await session.aclose()
