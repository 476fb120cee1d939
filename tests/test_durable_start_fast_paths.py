"""The durable mode's start-up and release file work, done with fewer operations, gives what
the longer way gave (issue 13, session 7).

* A lane claim's first step writes the step for an empty lane straight into a new record and
  reads the record only when one was there: the same step and the same record bytes as
  reading first, for every shape of record another process may have left.
* A release that reads back the record this store wrote (one holder, no waiters, nobody wrote
  since) removes it without parsing it: the same outcome as parsing and releasing, for every
  shape another process may have turned the record into meanwhile.
* A fresh session of a store that does not wait for the disk (``durability="none"``, the
  runtime's) is created on the event loop, with no worker-thread hop; its lock file is made
  by its first flush, on the loop too (session 8: not with the session file). Other
  durabilities still create it in a worker thread.
* The live inbox works on plain string paths and makes its folder once; a folder removed
  later is made again.
* ``read_file`` reads what ``Path.read_bytes`` reads.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import orjson
import pytest

from openclaw_runtime._exceptions import TranscriptError
from openclaw_runtime._files import read_file
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.runner import file_lanes
from openclaw_runtime.runner.file_lane_policy import FileLaneClaimant, FileLaneStep
from openclaw_runtime.runner.file_lanes import FileLaneStore
from openclaw_runtime.runner.live_inbox import FileLiveInbox
from openclaw_runtime.transcript.session_ids import InvalidSessionIdError
from openclaw_runtime.transcript.store import JsonlSessionStore

LANE = "session:k"
DEAD_PID = 4_000_001  # judged gone by ``alive`` below


def alive(pid: int) -> bool:
    return pid != DEAD_PID


def make_store(directory: Path) -> FileLaneStore:
    return FileLaneStore(directory, host="host-a", pid_alive=alive, clock=lambda: 1000.0)


def record(rid: str, *, pid: int = 1, beat: float = 990.0, stale: float | None = None) -> dict:
    return {
        "id": rid,
        "pid": pid,
        "host": "host-a",
        "started": 900.0,
        "beat": beat,
        "staleAfterS": stale,
    }


def lane_file(holders: list[dict], queue: list[dict], capacity: int = 1) -> bytes:
    return orjson.dumps({"lane": LANE, "capacity": capacity, "holders": holders, "queue": queue})


# What another process may have left in a lane's record before a claim's first step.
RECORDS_BEFORE_A_STEP: dict[str, bytes | None] = {
    "no record": None,
    "an empty record": lane_file([], []),
    "held by a live process": lane_file([record("other")], []),
    "held by a dead process": lane_file([record("gone", pid=DEAD_PID)], []),
    "held by one gone silent": lane_file([record("silent", beat=100.0, stale=30.0)], []),
    "held, with a waiter": lane_file([record("other")], [record("waiter", beat=999.5)]),
    "capacity 3, one holder": lane_file([record("other")], [], capacity=3),
    "waiters only (holder left)": lane_file([], [record("w1", beat=999.5)]),
    "damaged": b'{"lane": "session:k", "capa',
    "not an object": b"[1, 2]",
}


def files_of(directory: Path) -> dict[str, bytes | None]:
    """The directory's files (set-aside copies by their kind, their names carry a time)."""
    out: dict[str, bytes | None] = {}
    for path in sorted(directory.iterdir()):
        name = path.name
        if ".corrupt-" in name:
            out[name.split(".corrupt-")[0] + ".corrupt"] = path.read_bytes()
        else:
            out[name] = path.read_bytes() if path.is_file() else None
    return out


def step_in(directory: Path, before: bytes | None, *, expect_new: bool) -> FileLaneStep:
    directory.mkdir()
    store = make_store(directory)
    if before is not None:
        Path(store.path(LANE)).write_bytes(before)
    step = store.step(
        LANE, FileLaneClaimant("mine", 7, "host-a", 60.0), 1, 0, expect_new=expect_new
    )
    assert step is not None
    return step


@pytest.mark.parametrize("shape", list(RECORDS_BEFORE_A_STEP))
def test_a_first_step_written_straight_away_equals_reading_first(
    tmp_path: Path, shape: str
) -> None:
    before = RECORDS_BEFORE_A_STEP[shape]
    fast = step_in(tmp_path / "fast", before, expect_new=True)
    slow = step_in(tmp_path / "slow", before, expect_new=False)
    assert fast == slow
    assert files_of(tmp_path / "fast") == files_of(tmp_path / "slow")


# How another process may have changed the record after this store's claim was granted.
def _unchanged(path: Path) -> None:
    pass


def _waiter_joined(path: Path) -> None:
    other = make_store(path.parent)
    step = other.step(LANE, FileLaneClaimant("waiter", 8, "host-a", None), 1)
    assert step is not None and not step.granted


def _removed(path: Path) -> None:
    path.unlink()


def _rewritten_with_a_later_beat(path: Path) -> None:
    data = orjson.loads(path.read_bytes())
    data["holders"][0]["beat"] += 1.0
    path.write_bytes(orjson.dumps(data))


def _taken_over(path: Path) -> None:
    path.write_bytes(lane_file([record("thief")], []))


def _same_state_other_spelling(path: Path) -> None:
    # the same record, written with other spacing: the bytes differ, so it is parsed
    path.write_bytes(orjson.dumps(orjson.loads(path.read_bytes()), option=orjson.OPT_INDENT_2))


def _damaged(path: Path) -> None:
    path.write_bytes(b"{")


CHANGES_WHILE_HELD: dict[str, Callable[[Path], None]] = {
    "unchanged": _unchanged,
    "a waiter joined": _waiter_joined,
    "removed": _removed,
    "rewritten with a later beat": _rewritten_with_a_later_beat,
    "taken over by another claim": _taken_over,
    "same state, other bytes": _same_state_other_spelling,
    "damaged": _damaged,
}


@pytest.mark.parametrize("change", list(CHANGES_WHILE_HELD))
@pytest.mark.parametrize("releasing", ["mine", "someone else's id"])
def test_a_release_that_skips_parsing_equals_parsing(
    tmp_path: Path, change: str, releasing: str
) -> None:
    outcomes = []
    for side in ("fast", "slow"):
        directory = tmp_path / side
        directory.mkdir()
        store = make_store(directory)
        step = store.step(LANE, FileLaneClaimant("mine", 7, "host-a", 60.0), 1, 0)
        assert step is not None and step.granted
        assert LANE in store._sole  # the fast side knows what it wrote
        if side == "slow":
            store._sole.clear()  # the slow side parses what it reads
        CHANGES_WHILE_HELD[change](Path(store.path(LANE)))
        released = store.release(LANE, releasing)
        outcomes.append((released, files_of(directory)))
        assert store._sole == {}
    assert outcomes[0] == outcomes[1]


def test_a_beat_keeps_the_release_fast_and_right(tmp_path: Path) -> None:
    """A beat rewrites the record: the store remembers the new bytes, so the release still
    removes the record without parsing it (and a stale memo would have left it)."""
    now = [1000.0]
    store = FileLaneStore(tmp_path, host="host-a", pid_alive=alive, clock=lambda: now[0])
    step = store.step(LANE, FileLaneClaimant("mine", 7, "host-a", 60.0), 1, 0, expect_new=True)
    assert step is not None and step.granted
    now[0] = 1010.0
    assert store.beat(LANE, "mine") is True
    path = store.path(LANE)
    assert store._sole[LANE] == (path.read_bytes(), "mine")
    parsed: list[bytes] = []
    real = file_lanes._parse_state

    def counting(data: bytes) -> Any:
        parsed.append(data)
        return real(data)

    file_lanes_parse = pytest.MonkeyPatch()
    file_lanes_parse.setattr(file_lanes, "_parse_state", counting)
    try:
        assert store.release(LANE, "mine")
    finally:
        file_lanes_parse.undo()
    assert parsed == [] and not path.exists()


def test_a_record_with_waiters_is_not_remembered_as_sole(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert store.step(LANE, FileLaneClaimant("a", 7, "host-a", None), 1, 0, expect_new=True)
    step = store.step(LANE, FileLaneClaimant("b", 7, "host-a", None), 1, 0, expect_new=True)
    assert step is not None and not step.granted  # b found a's record and queued
    assert LANE not in store._sole
    assert store.release(LANE, "a")
    assert [h.id for h in store.read(LANE).queue] == ["b"]


# --------------------------------------------------------------------------- sessions


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The worker-thread hops made (by the name of the function sent)."""
    made: list[str] = []
    real = anyio.to_thread.run_sync

    async def counting(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        made.append(getattr(func, "__qualname__", type(func).__name__))
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    return made


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def fixed_clock() -> datetime:
    return datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


@pytest.mark.anyio
@pytest.mark.parametrize("durability", ["none", "flush", "fsync"])
async def test_a_fresh_session_is_created_on_the_loop_only_without_fsync(
    tmp_path: Path, hops: list[str], durability: Any
) -> None:
    store = JsonlSessionStore(tmp_path / "a" / "sessions", durability=durability, now=fixed_clock)
    session = await store.open_or_create("s1", cwd="/w")
    assert hops == ([] if durability == "none" else ["partial"])
    path = tmp_path / "a" / "sessions" / "s1.jsonl"
    header = orjson.loads(path.read_bytes())
    assert header["type"] == "session" and header["id"] == "s1" and header["cwd"] == "/w"
    assert header["timestamp"].startswith("2026-12-03T12:00:00")
    # no temp file is left, and no lock file yet: the first flush makes it (on the loop)
    assert names_in(path.parent) == ["s1.jsonl"]
    assert session._lock_file_ready
    await session.append_message(UserMessage(content="hi", timestamp=1))
    await session.flush()
    assert len(path.read_bytes().splitlines()) == 2
    assert names_in(path.parent) == ["s1.jsonl", "s1.jsonl.runtime.lock"]
    if durability == "none":
        assert hops == []  # the flush that made the lock file took no hop either
    reopened = await store.open_or_create("s1", cwd="/elsewhere")  # opened, not created again
    assert [e["type"] for e in reopened.get_entries()] == ["message"]
    await session.aclose()
    await reopened.aclose()


@pytest.mark.anyio
async def test_the_first_session_makes_the_folder_and_a_removed_one_is_made_again(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "state" / "sessions"
    store = JsonlSessionStore(folder, durability="none")
    first = await store.open_or_create("s1", cwd="/w")
    await first.aclose()
    shutil.rmtree(folder)
    second = await store.create("s2", cwd="/w")
    await second.append_message(UserMessage(content="hi", timestamp=1))
    await second.aclose()
    assert names_in(folder) == ["s2.jsonl", "s2.jsonl.runtime.lock"]


@pytest.mark.anyio
async def test_a_planted_lock_link_is_refused_at_the_first_flush(tmp_path: Path) -> None:
    """The lock file is made as ``FlockLock`` opens it: a symbolic link there is not followed
    (the session is created; its first flush meets the same refusal as before)."""
    store = JsonlSessionStore(tmp_path, durability="none")
    target = tmp_path / "elsewhere"
    os.symlink(target, tmp_path / "s1.jsonl.runtime.lock")
    session = await store.open_or_create("s1", cwd="/w")
    assert not target.exists()
    await session.append_message(UserMessage(content="hi", timestamp=1))
    with pytest.raises(TranscriptError, match="cannot lock session file"):
        await session.flush()
    assert not target.exists()


@pytest.mark.anyio
async def test_a_session_another_writer_created_first_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race ``open_or_create`` handles: the file appears between its look and its create."""
    store = JsonlSessionStore(tmp_path, durability="none")
    theirs = await JsonlSessionStore(tmp_path, durability="none").create("s1", cwd="/theirs")
    await theirs.append_message(UserMessage(content="first", timestamp=1))
    await theirs.aclose()
    monkeypatch.setattr("openclaw_runtime.transcript.store._exists", lambda path: False)
    mine = await store.open_or_create("s1", cwd="/mine")
    assert mine.header["cwd"] == "/theirs"
    assert [e["message"]["content"] for e in mine.get_entries()] == ["first"]
    await mine.aclose()


@pytest.mark.anyio
async def test_a_link_at_a_session_name_is_judged_as_before(tmp_path: Path) -> None:
    """Only a name with nothing at it takes the one-``lstat`` way; a symbolic link there is
    resolved and checked as ``path_for`` does: inside the folder it is followed (a dangling
    one creates its target), outside it is refused."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    store = JsonlSessionStore(folder, durability="none")
    os.symlink(folder / "target.jsonl", folder / "inside.jsonl")
    session = await store.open_or_create("inside", cwd="/w")
    await session.aclose()
    assert orjson.loads((folder / "target.jsonl").read_bytes())["id"] == "inside"
    os.symlink(tmp_path / "outside.jsonl", folder / "outside.jsonl")
    with pytest.raises(InvalidSessionIdError, match="outside the sessions folder"):
        await store.open_or_create("outside", cwd="/w")
    assert not (tmp_path / "outside.jsonl").exists()


# --------------------------------------------------------------------------- live inbox


def test_the_live_inbox_folder_removed_later_is_made_again(tmp_path: Path) -> None:
    folder = tmp_path / "live"
    inbox = FileLiveInbox(folder)
    inbox.open_sync("s1", "run-1")
    assert orjson.loads((folder / "s1.owner").read_bytes()) == {
        "pid": os.getpid(),
        "runId": "run-1",
    }
    assert inbox.push_sync("s1", "steer", "go left")
    assert inbox.close_sync("s1", "run-1") == [("steer", "go left")]
    shutil.rmtree(folder)
    inbox.open_sync("s2", "run-2")  # without a lock file: the owner file alone
    assert (folder / "s2.owner").is_file()
    shutil.rmtree(folder)
    assert inbox.push_sync("s2", "steer", "x") is False  # under the lock: folder made again
    assert sorted(p.name for p in folder.iterdir()) == ["s2.lock"]
    inbox.open_sync("s2", "run-3")  # with the lock file now: under the lock
    assert inbox.push_sync("s2", "follow_up", "y")
    assert inbox.close_sync("s2", "run-3") == [("follow_up", "y")]
    assert not (folder / "s2.owner").exists()


def test_the_owner_file_is_written_as_before(tmp_path: Path) -> None:
    """Same bytes and the same permissions as ``Path.write_bytes`` gave it."""
    inbox = FileLiveInbox(tmp_path)
    inbox.open_sync("s1", "run-1")
    reference = tmp_path / "reference"
    reference.write_bytes(orjson.dumps({"pid": os.getpid(), "runId": "run-1"}))
    owner = tmp_path / "s1.owner"
    assert owner.read_bytes() == reference.read_bytes()
    assert owner.stat().st_mode == reference.stat().st_mode
    inbox.open_sync("s1", "run-2")  # a shorter or longer id replaces the whole content
    assert orjson.loads(owner.read_bytes())["runId"] == "run-2"


# --------------------------------------------------------------------------- read_file


@pytest.mark.parametrize("size", [0, 1, 100, 65_535, 65_536, 65_537, 300_000])
def test_read_file_reads_what_read_bytes_reads(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(os.urandom(size))
    assert read_file(path) == path.read_bytes()
    assert read_file(str(path)) == path.read_bytes()


def test_read_file_errors_as_read_bytes(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "missing")
    with pytest.raises(IsADirectoryError):
        read_file(tmp_path)
