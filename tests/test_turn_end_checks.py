"""The durable turn end's checks made cheaper (issue 13, session 13, dur8): same answers.

What changed and what each test holds equal to the old way, over tables and random cases:
``_files.write_all`` writes a whole buffer with one ``os.write`` and no view (a short write
still continues from where it stopped); the flush's look at the session file
(``_read_external_changes``) names the file by a string worked out once and hands back one
shared "nobody wrote" answer; ``FlushFiles.begin`` tells a closed entry by its place in the
process's table; the live inbox's "any mail?" is ``os.access`` instead of ``os.path.exists``.
"""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path
from typing import Any

import pytest

import openclaw_runtime._files as files_module
import openclaw_runtime.transcript.flush_files as flush_files
from openclaw_runtime._files import append_or_undo, write_all
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.runner.live_inbox import FileLiveInbox
from openclaw_runtime.transcript.flush_files import FlushFiles
from openclaw_runtime.transcript.load import (
    NO_CHANGES,
    ExternalChanges,
    load_session_file,
    parse_appended,
)
from openclaw_runtime.transcript.store import JsonlSessionStore, SessionManager

# ----------------------------------------------------------------------- write_all


class _ShortWrites:
    """``os`` whose ``write`` writes at most ``limit`` bytes a call (counting the calls)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: Any) -> int:
        self.calls += 1
        return os.write(fd, bytes(data)[: self.limit])


@pytest.mark.parametrize("size", [0, 1, 7, 4096, 70_001])
@pytest.mark.parametrize("limit", [1, 3, 1000, 1 << 30])
def test_write_all_writes_everything_whatever_each_write_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, limit: int
) -> None:
    data = random.Random(size * 31 + limit).randbytes(size)
    fake = _ShortWrites(limit)
    monkeypatch.setattr(files_module, "os", fake)
    path = tmp_path / "f"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, b"head\n")
        write_all(fd, data)
        if size:
            append_or_undo(fd, data, 5 + size)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"head\n" + data + (data if size else b"")
    # a whole write is one call; nothing at all is written for no data (as before)
    per_buffer = 0 if size == 0 else -(-size // min(limit, size))
    assert fake.calls == 2 * per_buffer


# ----------------------------------------------------------------------- the session file


def _old_read_external_changes(session: SessionManager) -> ExternalChanges:
    """``SessionReader._read_external_changes`` before dur8 (word for word but the names)."""
    stat = os.stat(session.path)
    inode, size = session._file_state
    if stat.st_ino == inode and stat.st_size == size:
        return ExternalChanges()
    if stat.st_ino != inode or stat.st_size < size:
        data = session.path.read_bytes()
        tree, _, state = load_session_file(
            session.path, data, repair=False, clock=session._now, timeout=session.lock_timeout
        )
        tree.repair_pointers()
        session._file_state = state
        torn = bool(data) and not data.endswith(b"\n")
        return ExternalChanges(tree=tree, torn_tail=torn)
    with open(session.path, "rb") as handle:
        handle.seek(size)
        delta = handle.read()
    session._file_state = (inode, size + len(delta))
    entries, torn = parse_appended(delta)
    return ExternalChanges(entries=entries, torn_tail=torn)


def _line(n: int) -> bytes:
    return (
        b'{"type":"custom","id":"zz%06d","parentId":null,'
        b'"timestamp":"2026-01-02T03:04:05.000Z","customType":"x"}\n' % n
    )


def _other_writer(path: Path, action: str, n: int) -> None:
    """What another writer does to the session file between two of our looks."""
    data = path.read_bytes()
    if action == "append":
        with open(path, "ab") as handle:
            handle.write(_line(n))
    elif action == "torn":
        with open(path, "ab") as handle:
            handle.write(_line(n)[:20])
    elif action == "cut":  # the last line cut off (a shorter file, same inode)
        body = data.rstrip(b"\n")
        os.truncate(path, len(body[: body.rfind(b"\n") + 1]))
    elif action == "rewrite":  # replaced whole (a new inode at the name)
        temp = path.with_name(path.name + ".new")
        temp.write_bytes(data.split(b"\n", 1)[0] + b"\n" + _line(n))
        os.replace(temp, path)
    elif action == "touch":  # same size, rewritten in place: no change a stat can see
        os.utime(path)


def _summary(changes: ExternalChanges) -> tuple[Any, ...]:
    tree = changes.tree
    return (
        changes.entries,
        changes.torn_tail,
        # the two sessions' own entries have their own random ids; the others' lines are alike
        None
        if tree is None
        else [(e["type"], e["id"] if e["id"].startswith("zz") else "") for e in tree.entries],
    )


@pytest.mark.anyio
@pytest.mark.parametrize("seed", range(8))
async def test_the_flush_look_at_the_file_answers_as_before(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    store = JsonlSessionStore(tmp_path, durability="none")
    new = await store.open_or_create("new", cwd="/w")
    old = await store.open_or_create("old", cwd="/w")
    for n in range(12):
        for session in (new, old):
            await session.append_message(UserMessage(content=f"turn {n}", timestamp=n))
            await session.flush()
        action = rng.choice(["none", "none", "append", "torn", "cut", "rewrite", "touch"])
        if action != "none":
            for session in (new, old):
                _other_writer(session.path, action, 100 * seed + n)
        got = new._read_external_changes()
        expected = _old_read_external_changes(old)
        assert _summary(got) == _summary(expected), action
        if action in ("none", "touch"):
            assert got is NO_CHANGES
        assert new._file_state[1] == old._file_state[1]
        if action == "torn":  # leave the file whole for the next turn
            for session in (new, old):
                session._flushed(session._read_external_changes().tree)
    await new.aclose()
    await old.aclose()


def test_the_shared_no_changes_answer_cannot_be_changed() -> None:
    assert ExternalChanges() == NO_CHANGES
    assert not NO_CHANGES.entries and NO_CHANGES.tree is None and not NO_CHANGES.torn_tail
    with pytest.raises(dataclasses.FrozenInstanceError):
        NO_CHANGES.torn_tail = True  # type: ignore[misc]


# ----------------------------------------------------------------------- FlushFiles.begin


class _Owner:
    """A session stand-in (``FlushFiles`` holds its owner weakly)."""


def test_begin_refuses_exactly_what_is_closed_given_back_or_a_forks(tmp_path: Path) -> None:
    owners = [_Owner() for _ in range(3)]
    lock = str(tmp_path / "s.runtime.lock")
    entries = [FlushFiles.take(owner, lock) for owner in owners]
    assert all(entry is not None for entry in entries)
    live, closed, forked = (entry for entry in entries if entry is not None)
    for entry in (live, closed, forked):
        entry.end()
    closed.close()
    real = flush_files._generation
    try:
        assert live.begin() and not closed.begin()
        live.end()
        flush_files._generation += 1  # what a fork's child sees (``_forked``)
        assert not forked.begin()
    finally:
        flush_files._generation = real
    # a place given back to make room is refused too (``_make_room`` closes it)
    live.close()
    forked.close()
    assert flush_files.kept_count() == 0


# ----------------------------------------------------------------------- the live inbox


@pytest.mark.parametrize(
    "shape", ["missing", "empty", "lines", "dangling-link", "link", "directory", "no-folder"]
)
def test_any_mail_answers_as_path_exists(tmp_path: Path, shape: str) -> None:
    folder = tmp_path / "live"
    inbox = FileLiveInbox(folder)
    if shape != "no-folder":
        folder.mkdir()
    path = Path(inbox._paths("s")[1])
    if shape == "empty":
        path.write_bytes(b"")
    elif shape == "lines":
        path.write_bytes(b'{"kind":"steer","text":"hi"}\n')
    elif shape == "dangling-link":
        path.symlink_to(tmp_path / "nowhere")
    elif shape == "link":
        (tmp_path / "target").write_bytes(b"")
        path.symlink_to(tmp_path / "target")
    elif shape == "directory":
        path.mkdir()
    assert inbox._has_mail("s") is os.path.exists(path)
