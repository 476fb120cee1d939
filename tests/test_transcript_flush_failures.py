"""A flush (or durable append) that fails loses nothing and writes nothing twice (dur7).

Faults are injected at every point of the write: the open, the write itself (nothing
written, or half of it then ENOSPC), the undo of a half write, the session lock (held by
another writer past ``lock_timeout``), the reload after others wrote, a cancellation while
waiting for a worker thread and one while the worker thread writes. After each, a good
flush must leave the file byte for byte what the same appends write without the fault, and
the tree reloaded from the file equal to the one in memory. Both backends (``anyio``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.lowlevel import checkpoint

from openclaw_runtime import TranscriptError
from openclaw_runtime import _files as files_module
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.transcript import append as append_module
from openclaw_runtime.transcript import jsonl as jsonl_module
from openclaw_runtime.transcript.jsonl import SessionLockTimeout, session_lock
from openclaw_runtime.transcript.store import JsonlSessionStore, SessionManager
from tests.append_support import Clock

pytestmark = pytest.mark.anyio

#: How many turns each scenario runs (one flush each).
TURNS = 6
#: The turn whose flush fails: the first flushes take the plain path (open, write, close),
#: from the third on the session keeps its descriptors (``flush_files``).
COLD, WARM = 1, 4


class _Os:
    """``os`` with some calls replaced (a module's ``os`` is patched with this)."""

    def __init__(self, **calls: Callable[..., Any]) -> None:
        self.calls = calls

    def __getattr__(self, name: str) -> Any:
        return self.calls.get(name) or getattr(os, name)


def _fail(code: int) -> Callable[..., Any]:
    def fail(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError(code, os.strerror(code))

    return fail


def _half_then_enospc(fd: int, data: bytes) -> None:
    """A write that gets half of ``data`` into the file, then fails (a disk filling up)."""
    view = memoryview(data)[: max(1, len(data) // 2)]
    while view:
        view = view[os.write(fd, view) :]
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@contextlib.contextmanager
def _lock_held_elsewhere(path: Path) -> Iterator[threading.Event]:
    """The session lock held by another writer (a thread: its own lock file descriptor)
    until the block ends or the event it gives is set."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with session_lock(path, timeout=5):
            taken.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(5)
    try:
        yield release
    finally:
        release.set()
        holder.join()


def _reload_fails_once() -> Callable[..., Any]:
    real = append_module.load_session_file
    calls = [0]

    def load(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(*args, **kwargs)

    return load


@contextlib.contextmanager
def _fault(name: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make the next flush fail at ``name``."""
    with monkeypatch.context() as patch:
        if name == "open":
            patch.setattr(jsonl_module, "os", _Os(open=_fail(errno.EACCES)))
        elif name == "write":
            patch.setattr(files_module, "write_all", _fail(errno.EIO))
        elif name == "half":
            patch.setattr(files_module, "write_all", _half_then_enospc)
        elif name == "half, undo fails":
            patch.setattr(files_module, "write_all", _half_then_enospc)
            patch.setattr(files_module, "os", _Os(ftruncate=_fail(errno.EROFS)))
        elif name == "reload":
            patch.setattr(append_module, "load_session_file", _reload_fails_once())
        if name == "lock":
            with _lock_held_elsewhere(path):
                yield
        else:
            yield


#: fault → (the error the failing flush raises, whether its lines were written anyway)
FAULTS: dict[str, tuple[type[BaseException], bool]] = {
    "open": (OSError, False),
    "write": (OSError, False),
    "half": (OSError, False),
    "half, undo fails": (OSError, False),
    "lock": (SessionLockTimeout, False),
    "reload": (OSError, True),  # written, then reading what others wrote failed
}


def _turn_lines(turn: int) -> list[str]:
    return [f"turn {turn} line {n} é" * (n + 1) for n in range(1 + turn % 3)]


async def _other_writer_appends(path: Path, turn: int) -> None:
    other = await SessionManager.open(path, durability="none", now=Clock())
    await other.append_custom_entry("other", {"turn": turn})
    await other.flush()
    await other.aclose()


async def _scenario(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    fault: str | None,
    at: int,
    other: bool,
) -> tuple[bytes, list[dict[str, Any]], list[dict[str, Any]]]:
    """``TURNS`` turns of appends and a flush each (another writer appending before the
    flush of turn ``at`` when ``other``); the flush of turn ``at`` fails at ``fault``.
    The file's bytes, the entries in memory and those reloaded from the file."""
    ids = iter(f"{n:08x}" for n in range(10_000))
    monkeypatch.setattr(append_module, "generate_entry_id", lambda _: next(ids))
    store = JsonlSessionStore(root, durability="none", now=Clock())
    session = await store.create("s", cwd="/w")
    session.lock_timeout = 0.05  # the "lock" fault: give up soon
    for turn in range(TURNS):
        for n, text in enumerate(_turn_lines(turn)):
            await session.append_message(UserMessage(content=text, timestamp=turn * 10 + n))
        if other and turn == at:
            await _other_writer_appends(session.path, turn)
        if fault is None or turn != at:
            await session.flush()
            continue
        assert (session._flush_files is not None) == (at == WARM)  # the path under test
        before, pending = session.path.read_bytes(), list(session._pending)
        error, written = FAULTS[fault]
        with _fault(fault, session.path, monkeypatch), pytest.raises(error):
            await session.flush()
        if written:
            assert session._pending == []
        else:
            assert session._pending == pending  # kept, in order, for the next flush
            if fault == "half, undo fails":  # part of the write is still in the file
                assert session.path.read_bytes().startswith(before)
                assert session.path.read_bytes() != before
            else:
                assert session.path.read_bytes() == before
    await session.aclose()
    again = await SessionManager.open(session.path, repair=False)
    reloaded = again.get_entries()
    await again.aclose()
    return session.path.read_bytes(), session.get_entries(), reloaded


CASES = [
    (fault, at, other)
    for fault in FAULTS
    for at in ((COLD,) if fault == "open" else (COLD, WARM))
    for other in ((True,) if fault == "reload" else (False, True))
]


@pytest.mark.parametrize(("fault", "at", "other"), CASES)
async def test_a_failed_flush_keeps_its_lines_and_the_next_flush_writes_them_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, at: int, other: bool
) -> None:
    expected = await _scenario(tmp_path / "good", monkeypatch, fault=None, at=at, other=other)
    got = await _scenario(tmp_path / "bad", monkeypatch, fault=fault, at=at, other=other)
    assert got[0] == expected[0]  # byte for byte: nothing lost, doubled or torn
    assert got[1] == got[2] == expected[2]  # memory = file = the unfailed session


async def test_the_undo_of_a_half_write_that_failed_is_retried_only_over_its_own_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When a failed write could not be cut back and another writer then wrote after it,
    the session refuses to write (its lines stay buffered) instead of tearing or doubling."""
    store = JsonlSessionStore(tmp_path, durability="none", now=Clock())
    session = await store.create("s", cwd="/w")
    await session.append_message(UserMessage(content="one", timestamp=1))
    await session.flush()
    await session.append_message(UserMessage(content="two", timestamp=2))
    with _fault("half, undo fails", session.path, monkeypatch), pytest.raises(OSError):
        await session.flush()
    torn = session.path.read_bytes()
    _append_raw(session.path, b'\n{"type":"custom","id":"0ther0ne","parentId":null}\n')
    pending = list(session._pending)
    with pytest.raises(TranscriptError, match="part of a failed write"):
        await session.flush()
    assert session._pending == pending
    assert session.path.read_bytes().startswith(torn)
    session._pending.clear()  # (the test's own session: not flushed again at close)
    await session.aclose()


def _append_raw(path: Path, data: bytes) -> None:
    """Another writer's append, after the torn bytes (it took the lock: they stayed)."""
    with open(path, "ab") as handle:
        handle.write(data)


@pytest.mark.parametrize(
    ("durability", "fault"), [("flush", "half"), ("fsync", "half"), ("fsync", "fsync")]
)
async def test_a_durable_append_that_fails_is_neither_in_the_file_nor_in_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durability: str, fault: str
) -> None:
    store = JsonlSessionStore(tmp_path, durability=durability)  # type: ignore[arg-type]
    session = await store.create("s", cwd="/w")
    await session.append_message(UserMessage(content="one", timestamp=1))
    before, entries = session.path.read_bytes(), session.get_entries()
    with monkeypatch.context() as patch:
        if fault == "half":
            patch.setattr(files_module, "write_all", _half_then_enospc)
        else:
            patch.setattr(files_module, "os", _Os(fsync=_fail(errno.EIO)))
        with pytest.raises(OSError):
            await session.append_message(UserMessage(content="lost", timestamp=2))
    assert session.path.read_bytes() == before
    assert session.get_entries() == entries
    await session.append_message(UserMessage(content="three", timestamp=3))
    await session.aclose()
    again = await SessionManager.open(session.path, repair=False)
    assert again.get_entries() == session.get_entries()
    assert [e["message"]["content"] for e in again.get_entries()] == ["one", "three"]
    assert session.path.read_bytes().count(b"\n") == 3
    await again.aclose()


def _tracking_lock_take(entered: threading.Event) -> Callable[..., Any]:
    """``take_session_lock`` that says when a worker thread starts waiting for the lock."""
    real = append_module.take_session_lock

    def take(key: str, timeout: float, kept: Any = None) -> Any:
        if timeout > 0:
            entered.set()
        return real(key, timeout, kept)

    return take


async def _two_turns(tmp_path: Path) -> SessionManager:
    store = JsonlSessionStore(tmp_path, durability="none", now=Clock())
    session = await store.create("s", cwd="/w")
    await session.append_message(UserMessage(content="one", timestamp=1))
    await session.flush()
    await session.append_message(UserMessage(content="two", timestamp=2))
    await session.append_message(UserMessage(content="three", timestamp=3))
    return session


async def _check_written_once(session: SessionManager) -> None:
    await session.flush()
    await session.aclose()
    again = await SessionManager.open(session.path, repair=False)
    assert again.get_entries() == session.get_entries()
    contents = [entry["message"]["content"] for entry in again.get_entries()]
    assert contents == ["one", "two", "three"]
    assert session.path.read_bytes().count(b"\n") == 4
    await again.aclose()


async def test_a_flush_cancelled_while_its_thread_waits_for_the_lock_writes_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """anyio's worker threads are not interruptible: the thread takes the lock once the
    other writer lets go, writes, and takes its lines off the buffer; the cancellation
    lands after that. Nothing is lost and the next flush writes nothing again."""
    session = await _two_turns(tmp_path)
    entered = threading.Event()
    monkeypatch.setattr(append_module, "take_session_lock", _tracking_lock_take(entered))
    with _lock_held_elsewhere(session.path) as release:
        async with anyio.create_task_group() as group:
            group.start_soon(session.flush)
            await anyio.to_thread.run_sync(entered.wait, 10)
            group.cancel_scope.cancel()  # the flush's thread is waiting for the lock
            release.set()
    assert session._pending == []
    await _check_written_once(session)


async def test_a_flush_cancelled_while_waiting_for_a_worker_thread_keeps_its_lines(
    tmp_path: Path,
) -> None:
    """Cancelled before its thread started (every worker thread busy): nothing written,
    its lines kept for the next flush."""
    session = await _two_turns(tmp_path)
    limiter = anyio.to_thread.current_default_thread_limiter()
    tokens, limiter.total_tokens = limiter.total_tokens, 1
    busy = threading.Event()
    try:
        pending = list(session._pending)
        with _lock_held_elsewhere(session.path):
            async with anyio.create_task_group() as group:
                group.start_soon(anyio.to_thread.run_sync, busy.wait, 30)  # the one thread
                while limiter.borrowed_tokens < 1:
                    await checkpoint()
                flushing = anyio.CancelScope()

                async def flush() -> None:
                    with flushing:
                        await session.flush()

                group.start_soon(flush)
                while limiter.statistics().tasks_waiting < 1:
                    await checkpoint()
                flushing.cancel()
                busy.set()
        assert flushing.cancelled_caught
        assert session._pending == pending
        assert session.path.read_bytes().count(b"\n") == 2
    finally:
        busy.set()
        limiter.total_tokens = tokens
    await _check_written_once(session)
