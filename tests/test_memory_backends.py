"""The in-memory backends (``[backends] default = "memory"``) pass every contract suite, built
directly and as the runtime builds them; the memory session store keeps the file store's
records byte for byte and shares appends and rewrites between handles of one session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import TranscriptError
from openclaw_runtime.auth.store import InMemoryAuthProfileStore
from openclaw_runtime.messages import AssistantMessage, TextContent, UserMessage
from openclaw_runtime.runner.lanes import InProcessLanes
from openclaw_runtime.runner.memory_index import InMemorySessionIndex
from openclaw_runtime.runner.steering_store import InMemorySteeringStore
from openclaw_runtime.testing import (
    AuthStoreContract,
    LaneBackendContract,
    SessionIndexContract,
    SessionStoreContract,
    SteeringStoreContract,
)
from openclaw_runtime.transcript.memory import MemorySessionStore
from openclaw_runtime.transcript.store import JsonlSessionStore, SessionManager


@pytest.fixture
def memory_runtime(runtime_factory: Any, tmp_path: Path) -> Any:
    return runtime_factory(
        {
            "state_dir": str(tmp_path / "state"),
            "backends": {"default": "memory"},
            "auth": {"profiles": [p.model_dump() for p in AuthStoreContract.profiles]},
        }
    )


def test_the_runtime_builds_the_memory_backends(memory_runtime: Any) -> None:
    services = memory_runtime.services
    assert isinstance(services.lanes, InProcessLanes)
    assert isinstance(services.auth_store, InMemoryAuthProfileStore)
    assert isinstance(services.steering_store, InMemorySteeringStore)
    assert isinstance(services.session_index, InMemorySessionIndex)
    assert isinstance(services.session_store, MemorySessionStore)
    assert getattr(services.steering_store, "live_inbox", None) is None


# --------------------------------------------------------------------------- contracts


class TestMemoryLanesFromTheRuntime(LaneBackendContract):
    @pytest.fixture
    def lane_backend(self, memory_runtime: Any) -> Any:
        return memory_runtime.services.lanes


class TestMemoryAuthStoreFromTheRuntime(AuthStoreContract):
    @pytest.fixture
    def auth_store(self, memory_runtime: Any) -> Any:
        return memory_runtime.services.auth_store


class TestMemorySteeringStoreFromTheRuntime(SteeringStoreContract):
    @pytest.fixture
    def steering_store(self, memory_runtime: Any) -> Any:
        return memory_runtime.services.steering_store


class TestInMemorySessionIndex(SessionIndexContract):
    @pytest.fixture
    def session_index(self) -> Any:
        return InMemorySessionIndex()


class TestMemorySessionIndexFromTheRuntime(SessionIndexContract):
    @pytest.fixture
    def session_index(self, memory_runtime: Any) -> Any:
        return memory_runtime.services.session_index


class TestMemorySessionStore(SessionStoreContract):
    @pytest.fixture
    def session_store(self) -> Any:
        return MemorySessionStore()


class TestMemorySessionStoreFromTheRuntime(SessionStoreContract):
    @pytest.fixture
    def session_store(self, memory_runtime: Any) -> Any:
        return memory_runtime.services.session_store


# --------------------------------------------------------------------------- the index


@pytest.mark.anyio
async def test_lookup_key_names_the_key_bound_last_and_forgets_repointed_ones() -> None:
    index = InMemorySessionIndex()
    await index.bind("a", "s1")
    await index.bind("b", "s1")  # same millisecond: still the later one
    assert await index.lookup_key("s1") == "b"
    await index.bind("b", "s2")
    assert await index.lookup_key("s1") == "a"
    assert await index.lookup_key("s2") == "b"
    await index.bind("a", "s2")
    assert await index.lookup_key("s1") is None
    assert await index.lookup_key("s2") == "a"
    assert await index.claim("a", "s9") == "s2"


# --------------------------------------------------------------------------- the session store


def _assistant(text: str) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)], api="fake", provider="fake", model="m", timestamp=2
    )


class _Clock:
    def __init__(self) -> None:
        from datetime import UTC, datetime

        self.moment = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)

    def __call__(self) -> Any:
        return self.moment


async def _write_turns(store: Any) -> Any:
    session = await store.create("same-bytes", cwd="/work")
    first = await session.append_message(UserMessage(content="question", timestamp=1))
    await session.append_message(_assistant("answer"))
    await session.append_compaction("summary", first, 321)
    await session.branch(first)
    await session.append_message(_assistant("another answer"))
    await session.flush()
    return session


@pytest.mark.anyio
async def test_the_records_are_the_file_stores_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = iter(f"{n:08x}" for n in range(100))
    monkeypatch.setattr("openclaw_runtime.transcript.append.generate_entry_id", lambda _: next(ids))
    clock = _Clock()
    memory = MemorySessionStore(now=clock)
    session = await _write_turns(memory)
    await session.aclose()
    ids = iter(f"{n:08x}" for n in range(100))
    files = JsonlSessionStore(tmp_path / "sessions", now=clock)
    await (await _write_turns(files)).aclose()
    on_disk = (tmp_path / "sessions" / "same-bytes.jsonl").read_bytes()
    assert memory.export_jsonl("same-bytes") == on_disk
    # and a file session opened from those bytes has the same tree
    reopened = await memory.open("same-bytes")
    from_file = await SessionManager.open(tmp_path / "sessions" / "same-bytes.jsonl")
    assert reopened.get_entries() == from_file.get_entries()
    assert reopened.get_branch() == from_file.get_branch()
    await from_file.aclose()


@pytest.mark.anyio
async def test_handles_interleave_appends_without_losing_or_forking_any() -> None:
    store = MemorySessionStore()
    a = await store.create("shared", cwd="/work")
    b = await store.open("shared")
    one = await a.append_message(UserMessage(content="one", timestamp=1))
    # b has not refreshed: its append joins a's entry first and continues after it
    two = await b.append_message(_assistant("two"))
    assert b.get_entry(two)["parentId"] == one
    assert await a.refresh()
    assert [e["id"] for e in a.get_branch()] == [one, two]
    assert not await a.refresh()  # nothing new: no work
    reopened = await store.open("shared")
    assert [e["id"] for e in reopened.get_branch()] == [one, two]


@pytest.mark.anyio
async def test_a_rewrite_reaches_other_handles_whole() -> None:
    store = MemorySessionStore()
    writer = await store.create("rewritten", cwd="/work")
    await writer.append_message(UserMessage(content="question", timestamp=1))
    long = await writer.append_message(_assistant("long " * 100))
    reader = await store.open("rewritten")
    result = await writer.rewrite_transcript_entries({long: _assistant("short")})
    assert result.changed
    await writer.rewrite_entries(writer.get_branch())  # compaction-style whole rewrite
    assert await reader.refresh()
    assert [m.text() for m in reader.build_session_context().messages] == ["question", "short"]
    assert reader.get_entry(long) is None  # the whole rewrite kept only the branch
    # an append of the stale-free reader lands after the rewritten branch
    tail = await reader.append_message(UserMessage(content="next", timestamp=3))
    assert await writer.refresh()
    assert writer.get_leaf_id() == tail


@pytest.mark.anyio
async def test_a_closed_session_refuses_writes_and_paths_name_no_file() -> None:
    store = MemorySessionStore()
    session = await store.create("closed-one", cwd="/work")
    assert str(session.path) == "memory:closed-one"
    await session.aclose()
    with pytest.raises(TranscriptError, match="closed"):
        await session.append_message(UserMessage(content="late", timestamp=1))
    with pytest.raises(TranscriptError, match="closed"):
        await session.refresh()
    with pytest.raises(TranscriptError, match="does not exist"):
        store.export_jsonl("never-made")


@pytest.mark.anyio
async def test_a_deleted_session_is_gone_and_its_handles_say_so() -> None:
    store = MemorySessionStore()
    session = await store.create("per-request", cwd="/work")
    await session.append_message(UserMessage(content="hi", timestamp=1))
    assert store.delete("per-request")
    assert not store.delete("per-request")
    assert not await store.exists("per-request")
    assert await store.list_ids() == []
    with pytest.raises(TranscriptError, match="deleted"):
        await session.refresh()
    with pytest.raises(TranscriptError, match="deleted"):
        await session.append_message(_assistant("late"))
    # the id is free again: a new session starts empty
    fresh = await store.open_or_create("per-request", cwd="/work")
    assert fresh.get_entries() == []


@pytest.mark.anyio
async def test_a_runtime_continues_on_a_fresh_session_after_its_kept_one_was_deleted(
    memory_runtime: Any,
) -> None:
    services = memory_runtime.services
    store = services.session_store
    session = await services.checkout_session("kept", cwd="/work")
    await session.append_message(UserMessage(content="before", timestamp=1))
    await services.checkin_session(session)
    assert store.delete("kept")
    again = await services.checkout_session("kept", cwd="/work")
    assert again is not session and again.get_entries() == []
    await again.aclose()
