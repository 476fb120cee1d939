"""A closed session's history leaves memory with it, by reference counting alone.

Two things used to keep it: the token estimator's per-message memo held strong references
to up to 100 000 messages, and the replay checkpointer pointed back at its session (a
reference cycle: every closed session waited for a full collection of the cyclic GC). The
histories of sessions long closed stayed in memory, and every full collection scanned them:
a warm 10 000-message turn that ran after other sessions paid 0.5-1 s when one landed in it.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.context import tokens
from openclaw_runtime.context.tokens import estimate_message_token_pressure
from openclaw_runtime.messages import TextContent, UserMessage
from openclaw_runtime.transcript.store import SessionManager
from tests.run_support import ProbeProvider, probe_config


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
    enabled = gc.isenabled()
    gc.disable()
    try:
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
    finally:
        if enabled:
            gc.enable()
