"""A memory session's append without taking its free write lock
(``MemorySession._appends_at_once``) and the lowercased hint scan of ``contains_secret`` on
bytes: both must change nothing."""

from __future__ import annotations

import random
from typing import Any

import anyio
import orjson
import pytest
from anyio.lowlevel import checkpoint

from openclaw_runtime import TranscriptError
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.redaction import contains_secret, redact_data
from openclaw_runtime.transcript.jsonl import encode_record
from openclaw_runtime.transcript.memory import MemorySession, MemorySessionStore
from tests.append_support import Clock as _Clock
from tests.append_support import fixed_entry_ids as _ids


async def _random_appends(session: Any, rng: random.Random, count: int) -> list[Any]:
    """A random mix of every append kind; what each returned."""
    returned: list[Any] = []
    for n in range(count):
        ids = [entry["id"] for entry in session.get_entries()]
        pick = rng.randrange(9)
        side = "side" if rng.random() < 0.15 else None
        if pick == 0:
            out = await session.append_message(UserMessage(content=f"u{n}", timestamp=n))
        elif pick == 1:
            call = ToolCall(id=f"c{n}", name="read", arguments={"path": f"f{n}"})
            message = AssistantMessage(
                content=[call], api="a", provider="p", model="m", stop_reason="toolUse", timestamp=n
            )
            out = await session.append_message(message, append_mode=side)
        elif pick == 2:
            result = ToolResultMessage(
                tool_call_id=f"c{n}",
                tool_name="read",
                content=[TextContent(text=f"text {n} Bearer abcdefgh12345678")],
                is_error=False,
                timestamp=n,
            )
            out = await session.append_message(result, append_mode=side)
        elif pick == 3:
            out = await session.append_custom_entry("state", {"n": n}, append_mode=side)
        elif pick == 4 and ids:
            out = await session.append_label(rng.choice(ids), rng.choice(["x", " ", None]))
        elif pick == 5 and ids:
            out = await session.move_to(rng.choice([*ids, None]), rng.choice([None, "sum"]))
        elif pick == 6:
            out = await session.append_model_change("p", f"m{n % 3}")
        elif pick == 7:
            out = await session.append_thinking_level_change(rng.choice(["low", "high"]))
        else:
            out = await session.append_compaction("summary", ids[0] if ids else "root", n)
        returned.append(out)
    return returned


@pytest.mark.anyio
async def test_the_fast_path_writes_what_the_locked_path_wrote(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for seed in range(12):
        _ids(monkeypatch)
        fast_store = MemorySessionStore(now=_Clock())
        fast = await fast_store.create("s", cwd="/w")
        fast_out = await _random_appends(fast, random.Random(seed), 60)
        fast_store_state = fast_store.export_jsonl("s")
        _ids(monkeypatch)
        with monkeypatch.context() as patch:
            # the path every append took before: the write lock, then ``_append_durably``
            patch.setattr(MemorySession, "_appends_at_once", lambda self: False)
            slow_store = MemorySessionStore(now=_Clock())
            slow = await slow_store.create("s", cwd="/w")
            slow_out = await _random_appends(slow, random.Random(seed), 60)
        assert fast_out == slow_out
        assert fast_store_state == slow_store.export_jsonl("s")
        assert fast.get_entries() == slow.get_entries()
        assert fast.get_branch() == slow.get_branch()
        assert fast.build_session_context() == slow.build_session_context()
        assert fast._tree == slow._tree


@pytest.mark.anyio
async def test_a_cancelled_append_raises_and_records_nothing() -> None:
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    await session.append_message(UserMessage(content="one", timestamp=1))
    before = store.export_jsonl("s")
    entries = session.get_entries()
    reached = False
    with anyio.CancelScope() as scope:
        scope.cancel()
        await session.append_message(UserMessage(content="two", timestamp=2))
        reached = True
    assert scope.cancelled_caught and not reached
    assert store.export_jsonl("s") == before
    assert session.get_entries() == entries


@pytest.mark.anyio
async def test_an_append_waits_while_another_task_holds_the_write_lock() -> None:
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    taken, release = anyio.Event(), anyio.Event()
    appended: list[str] = []

    async def hold() -> None:
        async with session._write_lock:
            taken.set()
            await release.wait()
            appended.append("holder done")

    async def append() -> None:
        await taken.wait()
        appended.append(await session.append_message(UserMessage(content="x", timestamp=1)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        tg.start_soon(append)
        await taken.wait()
        for _ in range(5):
            await checkpoint()
        assert appended == [] and session.get_entries() == []
        release.set()
    assert appended[0] == "holder done"
    assert [entry["id"] for entry in session.get_entries()] == appended[1:]


@pytest.mark.anyio
async def test_the_fast_path_keeps_the_checks_before_the_lock() -> None:
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    with pytest.raises(ValueError, match="append_mode"):
        await session.append_custom_entry("x", append_mode="sideways")
    store.delete("s")
    with pytest.raises(TranscriptError, match="deleted"):
        await session.append_custom_entry("x")
    await session.aclose()
    with pytest.raises(TranscriptError, match="closed"):
        await session.append_custom_entry("x")


_OLD_HINTS = (b"sk-", b"AIza", b"earer", b"EARER", b"asic", b"ASIC")
_PIECES = [
    "sk-", "SK-", "Sk-", "aiza", "AIza", "AIZA", "bearer ", "Bearer ", "BEARER ", "BeArEr ",
    "basic ", "Basic ", "BASIC ", "bAsIc ", "sk-ant-abcdefgh1234", "sk-abcdefgh12345678",
    "AIza" + "x" * 20, "Bearer abcdefgh12345678", "é", "ß", "\u0130", "k", "-", "a", " ", "0",
]  # fmt: skip


def _old_gate(line: bytes) -> bool:
    return any(hint in line for hint in _OLD_HINTS)


def test_the_lowercased_scan_finds_everything_the_six_hints_found() -> None:
    rng = random.Random(13)
    for _ in range(3000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(12)))
        line = orjson.dumps({"message": {"content": [{"type": "text", "text": text}]}})
        found = contains_secret(line)
        if _old_gate(line):
            assert found, text
        # a false alarm changes nothing: the line is what the six-hint gate wrote
        old_line = orjson.dumps(redact_data(orjson.loads(line))) if _old_gate(line) else line
        assert encode_record(orjson.loads(line)) == old_line + b"\n", text
    assert contains_secret(b"an ordinary line with no hint " * 10) is False


@pytest.mark.anyio
async def test_a_memory_session_refuses_to_buffer_what_no_flush_would_write() -> None:
    # durability "none" buffers lines until a flush; a memory session's flush writes nothing,
    # so the lines would reach neither the store nor any other handle: refused, nothing lost
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    with pytest.raises(ValueError, match="memory session publishes every append at once"):
        session.durability = "none"
    with pytest.raises(ValueError, match="got 'sometimes'"):
        session.durability = "sometimes"  # type: ignore[assignment]
    session.durability = "fsync"  # nothing to sync: accepted, appends stay published at once
    assert session.durability == "flush"
    first = await session.append_custom_entry("n", {"n": 1})
    other = await store.open("s")
    assert [entry["id"] for entry in other.get_entries()] == [first]
    async with anyio.create_task_group() as tg:  # the locked path too (the lock held)
        await session._write_lock.acquire()
        ids: list[str] = []

        async def append() -> None:
            ids.append(await session.append_custom_entry("n", {"n": 2}))

        tg.start_soon(append)
        await checkpoint()
        session._write_lock.release()
    await other.refresh()
    assert [entry["id"] for entry in other.get_entries()] == [first, *ids]
