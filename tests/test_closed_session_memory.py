"""A closed session's history leaves memory with it, by reference counting alone.

Two things used to keep it: the token estimator's per-message memo held strong references
to up to 100 000 messages, and the replay checkpointer pointed back at its session (a
reference cycle: every closed session waited for a full collection of the cyclic GC). The
histories of sessions long closed stayed in memory, and every full collection scanned them:
a warm 10 000-message turn that ran after other sessions paid 0.5-1 s when one landed in it.
A third let the last reference go on the wrong thread: the worker thread that recorded the
checkpoint at close, which drops its function only after handing the result back, so the
evicted session was torn down there during the next turn, or not, by thread timing.
"""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.context import tokens
from openclaw_runtime.context.tokens import estimate_message_token_pressure
from openclaw_runtime.messages import AssistantMessage, TextContent, UserMessage
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS
from openclaw_runtime.transcript.store import SessionManager
from tests.run_support import ProbeProvider, probe_config
from tests.test_transcript_incremental import POLICIES


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    measured: list[Any] = []
    original = tokens._estimate_message

    def measure(message: Any) -> int:
        measured.append(message)
        return original(message)

    monkeypatch.setattr(tokens, "_estimate_message", measure)
    return measured


def test_a_message_is_measured_once_while_it_lives(monkeypatch: pytest.MonkeyPatch) -> None:
    measured = _counting(monkeypatch)
    message = UserMessage(content=[TextContent(text="hello " * 50)])
    first = estimate_message_token_pressure(message)
    assert estimate_message_token_pressure(message) == first
    assert len(measured) == 1


def test_the_memo_does_not_keep_a_message_alive() -> None:
    message = UserMessage(content=[TextContent(text="a message nobody else holds")])
    key = id(message)
    estimate_message_token_pressure(message)
    assert key in tokens._MEMO
    alive = weakref.ref(message)
    del message
    # freed by reference counting alone (no gc.collect): the memo held no strong reference
    assert alive() is None
    assert key not in tokens._MEMO


def test_an_entry_left_by_another_object_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """An id is reused once its object is gone: the entry must be for this very object."""
    measured = _counting(monkeypatch)
    message = UserMessage(content="x" * 400)
    other = UserMessage(content="y")
    monkeypatch.setitem(tokens._MEMO, id(message), (weakref.ref(other), 999_999))
    assert estimate_message_token_pressure(message) != 999_999
    assert measured == [message]


def test_a_full_memo_starts_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_MEMO_LIMIT", 3)
    monkeypatch.setattr(tokens, "_MEMO", {})
    monkeypatch.setattr(tokens, "_KEYS", {})
    messages = [UserMessage(content=f"message {index}") for index in range(5)]
    for message in messages:
        estimate_message_token_pressure(message)
    assert 0 < len(tokens._MEMO) <= 3
    assert len(tokens._KEYS) == len(tokens._MEMO)
    for message in messages:
        hit = tokens._MEMO.get(id(message))
        assert hit is None or hit[0]() is message


@pytest.mark.anyio
async def test_a_closed_session_leaves_no_message_behind(tmp_path: Path) -> None:
    """Turns on one session, then on another (the runtime keeps one session open): no
    message of the first session is alive any more."""
    probe = ProbeProvider()
    runtime = Runtime(probe_config(tmp_path), plugins=[probe.plugin()], load_entrypoints=False)
    runtime.max_open_sessions = 1
    try:
        for index in range(3):
            result = await runtime.run(f"question {index}", session_id="first")
            assert result.ok, result
        session: Any = await runtime.checkout_session("first", cwd=str(tmp_path))
        messages = session.build_session_context().messages
        assert len(messages) == 6
        alive = [weakref.ref(message) for message in messages]
        await runtime.checkin_session(session)
        del session, messages
        result = await runtime.run("elsewhere", session_id="second")
        assert result.ok, result
        probe.fake.history.clear()  # the provider's own record of the requests
        gc.collect()
        assert [ref() for ref in alive] == [None] * 6
    finally:
        await runtime.aclose()


@pytest.mark.anyio
async def test_a_closed_session_is_freed_without_the_cyclic_gc(tmp_path: Path) -> None:
    """Opened, replayed (its sanitizer and checkpoint used), recorded and closed: the session
    object and its messages go as soon as the last reference does."""
    path = tmp_path / "s.jsonl"
    writer = await SessionManager.create(path, session_id="s", cwd="/w", durability="none")
    for index in range(40):
        await writer.append_message(UserMessage(content=f"question {index}", timestamp=index))
    await writer.aclose()
    with _no_cyclic_gc():
        session = SessionManager.open_sync(path, durability="none")
        messages = session.build_session_context().messages
        session.replay_checkpoint.restore(messages, ("key",))
        session.replay_checkpoint.record(force=True)
        await session.aclose()
        alive = weakref.ref(session)
        first = weakref.ref(messages[0])
        del session, messages
        assert alive() is None
        assert first() is None


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """The cyclic GC off: what goes, goes by reference counting alone."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _late_workers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, tuple[Any, ...]]]:
    """Worker threads that keep every function (and its arguments) they ran: the worst case
    of anyio's and trio's workers, which let go of the function only after handing its
    result back, at a time thread scheduling decides."""
    held: list[tuple[Any, tuple[Any, ...]]] = []
    original = anyio.to_thread.run_sync

    async def late_worker(func: Any, *args: Any, **kwargs: Any) -> Any:
        held.append((func, args))
        return await original(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", late_worker)
    return held


@pytest.mark.anyio
async def test_a_worker_thread_never_holds_a_closed_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A close that records the replay checkpoint in a worker thread: the session still goes
    with the caller's last reference. Were the worker's function the last one, the worker
    would tear the session down later, holding the GIL during the next turn (≈ 17 ms at
    10 000 messages: the warm turn's slow mode, benchmarks/README.md, session 14 warm9)."""
    path = tmp_path / "s.jsonl"
    writer = await SessionManager.create(path, session_id="s", cwd="/w", durability="none")
    for index in range(20):
        await writer.append_message(UserMessage(content=f"question {index}", timestamp=index))
        answer = AssistantMessage(
            content=[TextContent(text=f"answer {index}")],
            api="openai-completions",
            provider="openai",
            model="gpt-4o",
            timestamp=index,
        )
        await writer.append_message(answer)
    await writer.aclose()
    held = _late_workers(monkeypatch)
    with _no_cyclic_gc():
        session = await SessionManager.open(path, durability="none")
        messages = session.build_session_context().messages
        session.replay_sanitizer.run(messages, POLICIES["openai"], BUILTIN_SANITIZERS)
        assert session.replay_checkpoint.due()
        before = len(held)
        await session.aclose()
        assert len(held) == before + 1  # the record ran in a worker thread
        assert not session.replay_checkpoint.due()
        alive = weakref.ref(session)
        first = weakref.ref(messages[0])
        del session, messages
        assert alive() is None
        assert first() is None


@pytest.mark.anyio
async def test_an_evicted_session_is_not_held_by_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime's eviction (one session kept open) closes the first session, recording
    its checkpoint in a worker: nothing a worker ran keeps its messages."""
    held = _late_workers(monkeypatch)
    probe = ProbeProvider()
    runtime = Runtime(probe_config(tmp_path), plugins=[probe.plugin()], load_entrypoints=False)
    runtime.max_open_sessions = 1
    try:
        for index in range(5):  # the recorded prefix lags: a record is due at close
            result = await runtime.run(f"question {index}", session_id="first")
            assert result.ok, result
        session: Any = await runtime.checkout_session("first", cwd=str(tmp_path))
        messages = session.build_session_context().messages
        alive = [weakref.ref(message) for message in messages] + [weakref.ref(session)]
        assert session.replay_checkpoint.due()
        await runtime.checkin_session(session)
        del session, messages
        before = len(held)
        result = await runtime.run("elsewhere", session_id="second")
        assert result.ok, result
        assert len(held) > before
        probe.fake.history.clear()  # the provider's own record of the requests
        gc.collect()
        assert [ref() for ref in alive] == [None] * len(alive)
    finally:
        await runtime.aclose()
