"""A durable (``durability="none"``) session's buffered appends and turn-end flush without
taking the free write lock (``SessionWriter._append`` / ``flush``, issue 13): the same file,
entries, tree and errors as the locked path they replace, and the same waiting when another
task holds the write lock or another writer holds the session lock."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.lowlevel import checkpoint

from openclaw_runtime import TranscriptError
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.transcript.append import SessionWriter
from openclaw_runtime.transcript.jsonl import (
    SessionLockTimeout,
    encode_record,
    session_lock_at,
)
from openclaw_runtime.transcript.store import JsonlSessionStore
from tests.append_support import Clock, fixed_entry_ids
from tests.test_memory_append_fast_path import _random_appends


async def _old_append(
    self: SessionWriter,
    kind: str,
    payload: dict[str, Any],
    append_mode: str | None = None,
    *,
    parent: str | None = "append",
    json_values: bool = False,  # passed since mem8; this path encodes every line at once
) -> str:
    """``SessionWriter._append`` before this change: the write lock at every append."""
    if self.closed:
        raise TranscriptError(f"session {self.path.name} is closed")
    if append_mode not in (None, "side"):
        raise ValueError(f"append_mode must be None or 'side', got {append_mode!r}")
    async with self._write_lock:
        if self.durability == "none":
            entry = self._new_entry(kind, payload, append_mode, parent)
            self._pending.append(encode_record(entry))
            self._record([entry])
            return str(entry["id"])
        return await self._append_durably(kind, payload, append_mode, parent)


async def _old_flush(self: SessionWriter) -> None:
    """``SessionWriter.flush`` before this change: the write lock at every flush."""
    async with self._write_lock:
        if not self._pending:
            return
        payload = b"".join(self._pending)
        self._pending.clear()
        if not self._lock_file_ready:
            # (0: the lines are off the buffer already)
            tree = await anyio.to_thread.run_sync(
                self._write_buffered, payload, 0, self.lock_timeout
            )
        else:
            try:
                tree = self._write_buffered(payload, 0, 0)
            except SessionLockTimeout:
                tree = await anyio.to_thread.run_sync(
                    self._write_buffered, payload, 0, self.lock_timeout
                )
        self._lock_file_ready = True
        if tree is not None:
            tree.repair_pointers()
            self._tree = tree
            self._branch_cache = self._context_cache = None
            self._message_cache.clear()


async def _script(
    root: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Any], bytes, Any, Any, Any]:
    """Random appends and flushes on one session, with a second handle on the same file
    (another writer) appending and flushing between some of them, and the session reopened
    once (its lock file found, not made)."""
    rng = random.Random(seed)
    fixed_entry_ids(monkeypatch)
    store = JsonlSessionStore(root, durability="none", now=Clock())
    session = await store.create("s", cwd="/w")
    returned: list[Any] = []
    for step in range(8):
        returned += await _random_appends(session, rng, rng.randrange(1, 9))
        if rng.random() < 0.8:
            await session.flush()
        if rng.random() < 0.3:
            await session.flush()  # nothing pending
        if rng.random() < 0.35:
            await session.flush()
            other = await JsonlSessionStore(root, durability="none", now=Clock()).open("s")
            fixed_entry_ids(monkeypatch, 100_000 * (step + 1))
            returned.append(await other.append_custom_entry("other", {"step": step}))
            await other.flush()
            await other.aclose()
            fixed_entry_ids(monkeypatch, 1_000 * (step + 1))
        if step == 4:
            await session.flush()
            await session.aclose()
            session = await store.open("s")
    await session.flush()
    data = session.path.read_bytes()
    result = (
        returned,
        data.split(b"\n", 1)[1],  # the header's id and time are the store's own
        session.get_entries(),
        session.get_branch(),
        session.build_session_context(),
    )
    await session.aclose()
    return result


@pytest.mark.anyio
async def test_the_fast_path_writes_what_the_locked_path_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for seed in range(10):
        fast = await _script(tmp_path / f"fast{seed}", seed, monkeypatch)
        with monkeypatch.context() as patch:
            patch.setattr(SessionWriter, "_append", _old_append)
            patch.setattr(SessionWriter, "flush", _old_flush)
            slow = await _script(tmp_path / f"slow{seed}", seed, monkeypatch)
        assert fast == slow, seed
        assert fast[1].count(b"\n") >= 8


@pytest.mark.anyio
@pytest.mark.parametrize("what", ["append", "flush"])
async def test_a_cancelled_append_or_flush_raises_and_writes_nothing(
    tmp_path: Path, what: str
) -> None:
    store = JsonlSessionStore(tmp_path, durability="none")
    session = await store.create("s", cwd="/w")
    await session.append_message(UserMessage(content="one", timestamp=1))
    await session.flush()
    await session.append_message(UserMessage(content="two", timestamp=2))
    before, entries, pending = session.path.read_bytes(), session.get_entries(), session._pending[:]
    reached = False
    with anyio.CancelScope() as scope:
        scope.cancel()
        if what == "append":
            await session.append_message(UserMessage(content="three", timestamp=3))
        else:
            await session.flush()
        reached = True
    assert scope.cancelled_caught and not reached
    assert session.path.read_bytes() == before
    assert session.get_entries() == entries and session._pending == pending
    await session.flush()
    assert len(session.path.read_bytes().splitlines()) == 3
    await session.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("what", ["append", "flush"])
async def test_they_wait_while_another_task_holds_the_write_lock(tmp_path: Path, what: str) -> None:
    store = JsonlSessionStore(tmp_path, durability="none")
    session = await store.create("s", cwd="/w")
    await session.append_message(UserMessage(content="one", timestamp=1))
    await session.flush()
    await session.append_message(UserMessage(content="two", timestamp=2))
    taken, release = anyio.Event(), anyio.Event()
    done: list[str] = []
    size = len(session.path.read_bytes())

    async def hold() -> None:
        async with session._write_lock:
            taken.set()
            await release.wait()
            done.append("holder")

    async def act() -> None:
        await taken.wait()
        if what == "append":
            await session.append_message(UserMessage(content="three", timestamp=3))
        else:
            await session.flush()
        done.append(what)

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        tg.start_soon(act)
        await taken.wait()
        for _ in range(5):
            await checkpoint()
        assert done == [] and len(session._pending) == 1
        assert len(session.path.read_bytes()) == size
        release.set()
    assert done == ["holder", what]
    await session.aclose()


@pytest.mark.anyio
async def test_a_flush_waiting_for_another_writer_holds_the_write_lock(tmp_path: Path) -> None:
    """The session lock held elsewhere (another thread's descriptor: another writer): the
    flush waits for it in a thread with the write lock held, so an append made meanwhile
    waits too and lands in the next flush, after the other writer's line."""
    store = JsonlSessionStore(tmp_path, durability="none")
    session = await store.create("s", cwd="/w")
    await session.append_message(UserMessage(content="one", timestamp=1))
    await session.flush()
    await session.append_message(UserMessage(content="two", timestamp=2))
    held, release = threading.Event(), threading.Event()

    def other_writer() -> None:
        with session_lock_at(str(session.path), timeout=5):
            held.set()
            release.wait(10)
            with open(session.path, "ab") as handle:
                handle.write(encode_record({"type": "custom", "id": "ffffffff",
                                            "parentId": None, "timestamp": "2026-12-04T00:00:00.000Z",
                                            "customType": "x"}))  # fmt: skip

    thread = threading.Thread(target=other_writer)
    thread.start()
    held.wait(10)
    order: list[str] = []

    async def flush() -> None:
        await session.flush()
        order.append("flushed")

    async def append() -> None:
        await _until_locked(session)
        order.append(await session.append_message(UserMessage(content="three", timestamp=3)))

    try:
        # a mutation that never takes the write lock fails here instead of hanging
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(flush)
                tg.start_soon(append)
                await _until_locked(session)
                for _ in range(5):
                    await checkpoint()
                assert order == [] and session._write_lock.locked()
                release.set()
    finally:
        release.set()
        thread.join(10)
    assert order[0] == "flushed"
    await session.flush()
    lines = session.path.read_bytes().splitlines()
    assert [b'"ffffffff"' in line for line in lines] == [False, False, True, False, False]
    assert b'"two"' in lines[3] and b'"three"' in lines[4]
    assert [e["id"] for e in session.get_entries()][-1] == order[1]
    await session.aclose()


async def _until_locked(session: Any) -> None:
    while not session._write_lock.locked():
        await checkpoint()
