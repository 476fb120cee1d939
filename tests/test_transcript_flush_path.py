"""The per-turn write of an open session: what it trusts and what it still notices.

A flush (and a durable append) checks the file once under the session lock — inode and
size — and, when nobody else wrote, appends its lines without asking the file system for
the size again. These tests hold it to that bargain: the size it keeps is the file's true
size after every write, a line another process appends between two turns is still read and
ordered before ours, and taking the manager's write lock still honours cancellation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from openclaw_runtime.messages import UserMessage
from openclaw_runtime.transcript import SessionManager
from openclaw_runtime.transcript.jsonl import session_lock, session_lock_at

pytestmark = pytest.mark.anyio

#: Another process appends one entry under the session lock, as a second runtime would.
OTHER_WRITER = r"""
import json, sys
from openclaw_runtime.transcript.jsonl import append_bytes, session_lock
path, parent = sys.argv[1], sys.argv[2]
entry = {"type": "message", "id": "0ther0ne", "parentId": parent,
         "timestamp": "2026-01-02T03:04:05.000Z",
         "message": {"role": "user", "content": "from elsewhere", "timestamp": 5}}
with session_lock(path, timeout=10):
    append_bytes(path, json.dumps(entry).encode() + b"\n", fsync=False)
"""


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def on_disk(manager: SessionManager) -> tuple[int, int]:
    stat = os.stat(manager.path)
    return stat.st_ino, stat.st_size


def contents(manager: SessionManager) -> list[object]:
    rows = [json.loads(line) for line in manager.path.read_text(encoding="utf-8").splitlines()]
    return [row["message"]["content"] for row in rows if row.get("type") == "message"]


@pytest.mark.parametrize("durability", ["none", "flush", "fsync"])
async def test_the_kept_file_state_is_the_files_true_size_after_every_write(tmp_path, durability):
    manager = await SessionManager.create(
        tmp_path / "s.jsonl", session_id="s", cwd="/", durability=durability, now=Clock()
    )
    assert manager._file_state == on_disk(manager)
    for n in range(5):
        await manager.append_message(UserMessage(content=f"é{n}" * (n + 1), timestamp=n))
        await manager.flush()
        assert manager._file_state == on_disk(manager)
    await manager.aclose()
    assert contents(manager) == [f"é{n}" * (n + 1) for n in range(5)]


@pytest.mark.parametrize("durability", ["none", "flush"])
async def test_a_line_another_process_appended_between_turns_is_read_and_kept_first(
    tmp_path, durability
):
    manager = await SessionManager.create(
        tmp_path / "s.jsonl", session_id="s", cwd="/", durability=durability, now=Clock()
    )
    first = await manager.append_message(UserMessage(content="mine 1", timestamp=1))
    await manager.flush()
    await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sys.executable, "-c", OTHER_WRITER, str(manager.path), first], check=True, timeout=60
        )
    )
    await manager.append_message(UserMessage(content="mine 2", timestamp=2))
    await manager.flush()
    assert manager._file_state == on_disk(manager)
    # the other writer's line comes first, in the file and in our entries
    order = ["mine 1", "from elsewhere", "mine 2"]
    assert contents(manager) == order
    assert [entry["message"]["content"] for entry in manager.get_entries()] == order
    if durability == "flush":  # written at once: ours hangs below the line it found
        branch = [entry["message"]["content"] for entry in manager.get_branch()]
        assert branch == order
    await manager.aclose()
    reopened = await SessionManager.open(manager.path)
    assert [e["message"]["content"] for e in reopened.get_entries()] == order


async def test_an_append_in_a_cancelled_scope_is_not_recorded(tmp_path):
    manager = await SessionManager.create(
        tmp_path / "s.jsonl", session_id="s", cwd="/", durability="none", now=Clock()
    )
    with anyio.CancelScope() as scope:
        scope.cancel()
        await manager.append_message(UserMessage(content="never", timestamp=1))
    assert scope.cancelled_caught
    assert manager.get_entries() == []
    await manager.flush()
    assert contents(manager) == []
    await manager.aclose()


def test_session_lock_at_is_the_same_lock_as_session_lock(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    with session_lock(path, timeout=5):
        # re-entrant on this thread, whichever spelling takes it
        with session_lock_at(os.path.abspath(path), timeout=0):
            pass
        # and it excludes another holder of the same file (a second process)
        probe = (
            "import sys\n"
            "from openclaw_runtime.transcript.jsonl import SessionLockTimeout, session_lock_at\n"
            "try:\n"
            "    with session_lock_at(sys.argv[1], timeout=0):\n"
            "        print('got it')\n"
            "except SessionLockTimeout as exc:\n"
            "    print(exc)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", probe, os.path.abspath(path)],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    assert "s.jsonl is locked by another writer" in out
    with session_lock_at(os.path.abspath(path), timeout=0):
        pass  # released: free again
