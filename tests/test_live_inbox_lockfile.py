"""The live inbox's lock file is made by the first pusher, not by every run: a run nobody
steers from another process creates only its owner file, and a message pushed at any moment
of the run (even while the run gives the inbox up) is either refused or delivered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.runner import live_inbox
from openclaw_runtime.runner.live_inbox import FileLiveInbox

pytestmark = pytest.mark.anyio


def names(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()} if directory.exists() else set()


async def test_a_run_nobody_pushes_to_creates_only_its_owner_file(tmp_path: Path) -> None:
    inbox = FileLiveInbox(tmp_path / "live")
    await inbox.open("s1", "run-1")
    assert names(tmp_path / "live") == {"s1.owner"}
    assert await inbox.owned("s1")
    assert await inbox.take("s1") == []
    assert await inbox.close("s1", "run-1") == []
    assert names(tmp_path / "live") == set()
    assert not await inbox.push("s1", "steer", "after the end")  # refused: no owner


async def test_a_push_makes_the_lock_and_the_run_drains_under_it(tmp_path: Path) -> None:
    inbox, other = FileLiveInbox(tmp_path / "live"), FileLiveInbox(tmp_path / "live")
    await inbox.open("s1", "run-1")
    assert await other.push("s1", "steer", "first")
    assert "s1.lock" in names(tmp_path / "live")
    assert await inbox.take("s1") == [("steer", "first")]
    assert await other.push("s1", "follow_up", "late")
    assert await inbox.close("s1", "run-1") == [("follow_up", "late")]
    assert names(tmp_path / "live") == {"s1.lock"}
    # the next run of the session owns it under the lock that now exists
    await inbox.open("s1", "run-2")
    assert await other.push("s1", "steer", "to run 2")
    assert await inbox.close("s1", "run-1") == []  # an earlier run does not close a later one
    assert await inbox.close("s1", "run-2") == [("steer", "to run 2")]


async def test_a_push_while_the_run_gives_the_inbox_up_is_delivered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pusher that read the owner file just before the run removed it appends after the
    run's last drain would have missed it: the run sees the new lock file and drains."""
    inbox, other = FileLiveInbox(tmp_path / "live"), FileLiveInbox(tmp_path / "live")
    await inbox.open("s1", "run-1")
    read_owner = live_inbox._read_owner
    pushed: list[bool] = []
    racing = [True]

    def racing_read(path: Path) -> Any:
        if racing:  # the close is reading the owner: the pusher got in first
            racing.clear()  # (the pusher reads the owner through here too)
            pushed.append(other.push_sync("s1", "steer", "just in time"))
        return read_owner(path)

    monkeypatch.setattr(live_inbox, "_read_owner", racing_read)
    assert await inbox.close("s1", "run-1") == [("steer", "just in time")]
    assert pushed == [True]
    assert names(tmp_path / "live") == {"s1.lock"}


async def test_an_owner_file_being_written_reads_as_not_owned(tmp_path: Path) -> None:
    inbox = FileLiveInbox(tmp_path / "live")
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "s1.owner").write_bytes(b"")  # created, not yet written
    assert not await inbox.owned("s1")
    assert not await inbox.push("s1", "steer", "too early")
