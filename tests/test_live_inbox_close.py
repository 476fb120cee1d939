"""Giving the live inbox up takes one look at the lock file: the owner file is removed
without the lock, then the inbox is drained under the lock when a pusher ever made one. A
message pushed at any moment of the give-up, with or without a lock file from before, is
either refused or delivered, never lost."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.runner import live_inbox
from openclaw_runtime.runner.live_inbox import FileLiveInbox

pytestmark = pytest.mark.anyio


def _names(directory: Path) -> set[str]:
    return set(os.listdir(directory))


def _counting_exists(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    looked: list[str] = []
    real = os.path.exists

    def exists(path: Any) -> bool:
        looked.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(live_inbox.os.path, "exists", exists)
    return looked


@pytest.mark.parametrize("pushed_before", [False, True])
async def test_the_close_looks_at_the_lock_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pushed_before: bool
) -> None:
    inbox, other = FileLiveInbox(tmp_path / "live"), FileLiveInbox(tmp_path / "live")
    if pushed_before:  # an earlier run was steered: the lock file exists from then on
        await inbox.open("s1", "run-0")
        assert await other.push("s1", "steer", "to run 0")
        assert await inbox.close("s1", "run-0") == [("steer", "to run 0")]
    await inbox.open("s1", "run-1")
    looked = _counting_exists(monkeypatch)
    assert await inbox.close("s1", "run-1") == []
    assert looked == [os.path.join(tmp_path / "live", "s1.lock")]
    assert _names(tmp_path / "live") == ({"s1.lock"} if pushed_before else set())
    assert not await other.push("s1", "steer", "after the end")  # refused: no owner


@pytest.mark.parametrize("pushed_before", [False, True])
async def test_a_push_while_the_run_gives_the_inbox_up_is_delivered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pushed_before: bool
) -> None:
    """A pusher that read the owner file just before the run removed it (with the lock file
    there from an earlier push, or made by this pusher) appends; the run drains it."""
    inbox, other = FileLiveInbox(tmp_path / "live"), FileLiveInbox(tmp_path / "live")
    if pushed_before:
        await inbox.open("s1", "run-0")
        assert await other.push("s1", "steer", "to run 0")
        assert await inbox.close("s1", "run-0") == [("steer", "to run 0")]
    await inbox.open("s1", "run-1")
    read_owner = live_inbox._read_owner
    pushed: list[bool] = []
    racing = [True]

    def racing_read(path: str) -> Any:
        if racing:  # the close is reading the owner: the pusher gets in first
            racing.clear()  # (the pusher reads the owner through here too)
            pushed.append(other.push_sync("s1", "steer", "just in time"))
        return read_owner(path)

    monkeypatch.setattr(live_inbox, "_read_owner", racing_read)
    assert await inbox.close("s1", "run-1") == [("steer", "just in time")]
    assert pushed == [True]
    assert _names(tmp_path / "live") == {"s1.lock"}


async def test_a_push_after_the_owner_file_is_gone_is_refused_and_nothing_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox, other = FileLiveInbox(tmp_path / "live"), FileLiveInbox(tmp_path / "live")
    await inbox.open("s1", "run-0")
    assert await other.push("s1", "steer", "to run 0")
    assert await inbox.take("s1") == [("steer", "to run 0")]
    await inbox.open("s1", "run-1")  # the next run (the lock file exists)
    real_unlink = os.unlink
    refused: list[bool] = []

    def unlink_then_push(path: Any) -> None:
        real_unlink(path)
        if os.fspath(path).endswith(".owner"):
            refused.append(not other.push_sync("s1", "steer", "too late"))

    monkeypatch.setattr(live_inbox.os, "unlink", unlink_then_push)
    assert await inbox.close("s1", "run-1") == []
    assert refused == [True]
    assert _names(tmp_path / "live") == {"s1.lock"}
