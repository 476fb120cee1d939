"""The ``SessionStore`` contract suite: a transcript round-trips through another open, branches
and atomic rewrites keep what they must, refresh sees another writer, unsafe ids are refused."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ..._exceptions import TranscriptError
from ...backends import (
    Session,
    SessionStore,
)
from ...messages import AssistantMessage, TextContent, UserMessage
from ...transcript.session_ids import InvalidSessionIdError
from ._support import HANG_GUARD_S

__all__ = ["SessionStoreContract"]


def _assistant(text: str, timestamp: int) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)],
        api="fake",
        provider="fake",
        model="m",
        timestamp=timestamp,
    )


def _texts(session: Any) -> list[str]:
    """The texts of the user and assistant messages the session replays."""
    messages = session.build_session_context().messages
    return [m.text() for m in messages if isinstance(m, UserMessage | AssistantMessage)]


def _context(session: Any) -> list[Any]:
    return [m.model_dump() for m in session.build_session_context().messages]


class SessionStoreContract:
    """Inherit and provide a ``session_store`` fixture returning a fresh, empty store."""

    concurrent_opens = 6

    async def _fresh(self, store: Any, session_id: str) -> Any:
        session = await store.create(session_id, cwd="/contract")
        assert isinstance(session, Session)
        return session

    def test_meets_the_protocol(self, session_store: Any) -> None:
        assert isinstance(session_store, SessionStore)

    @pytest.mark.anyio
    async def test_create_exists_and_list(self, session_store: Any) -> None:
        assert not await session_store.exists("contract-a")
        session = await self._fresh(session_store, "contract-a")
        assert session.session_id == "contract-a"
        await session.aclose()
        assert await session_store.exists("contract-a")
        assert "contract-a" in await session_store.list_ids()
        assert "contract-missing" not in await session_store.list_ids()

    @pytest.mark.anyio
    async def test_create_twice_and_open_missing_fail(self, session_store: Any) -> None:
        session = await self._fresh(session_store, "contract-b")
        await session.aclose()
        with pytest.raises(TranscriptError):
            await session_store.create("contract-b", cwd="/contract")
        with pytest.raises(TranscriptError):
            await session_store.open("contract-never")

    @pytest.mark.anyio
    async def test_unsafe_session_ids_are_refused(self, session_store: Any) -> None:
        for bad in ("../escape", "a/b", ""):
            with pytest.raises(InvalidSessionIdError):
                await session_store.open_or_create(bad, cwd="/contract")

    @pytest.mark.anyio
    async def test_appends_round_trip_through_another_open(self, session_store: Any) -> None:
        session = await self._fresh(session_store, "contract-c")
        first = await session.append_message(UserMessage(content="hello", timestamp=1))
        second = await session.append_message(_assistant("hi there", 2))
        assert session.get_leaf_id() == second
        assert session.get_entry(second)["parentId"] == first
        compaction = await session.append_compaction("summary so far", second, 1234)
        third = await session.append_message(UserMessage(content="more", timestamp=3))
        await session.flush()
        written = session.get_entries()
        context = _context(session)
        branch = [entry["id"] for entry in session.get_branch()]
        assert branch == [first, second, compaction, third]
        await session.aclose()

        reopened = await session_store.open("contract-c")
        assert reopened.get_entries() == written
        assert [entry["id"] for entry in reopened.get_branch()] == branch
        assert reopened.get_leaf_id() == third
        assert _context(reopened) == context
        last = reopened.get_entry(third)
        assert last is not None and reopened.message_of(last).text() == "more"
        assert _texts(reopened)[-1] == "more"
        await reopened.aclose()

    @pytest.mark.anyio
    async def test_branching_keeps_the_abandoned_branch(self, session_store: Any) -> None:
        session = await self._fresh(session_store, "contract-d")
        a = await session.append_message(UserMessage(content="a", timestamp=1))
        b = await session.append_message(_assistant("b", 2))
        await session.branch(a)
        c = await session.append_message(_assistant("c", 3))
        assert [e["id"] for e in session.get_branch()] == [a, c]
        assert [e["id"] for e in session.get_branch(b)] == [a, b]
        await session.aclose()
        reopened = await session_store.open("contract-d")
        assert [e["id"] for e in reopened.get_branch()] == [a, c]
        assert reopened.get_entry(b) is not None
        await reopened.reset_leaf()
        assert reopened.get_branch() == []
        await reopened.aclose()

    @pytest.mark.anyio
    async def test_a_rewrite_replaces_branch_messages_atomically(self, session_store: Any) -> None:
        session = await self._fresh(session_store, "contract-e")
        await session.append_message(UserMessage(content="question", timestamp=1))
        long = await session.append_message(_assistant("a very long answer " * 50, 2))
        await session.append_message(UserMessage(content="follow-up", timestamp=3))
        result = await session.rewrite_transcript_entries({long: _assistant("short", 2)})
        assert result.changed and result.rewritten_entries == 1
        assert _texts(session) == ["question", "short", "follow-up"]
        await session.aclose()
        reopened = await session_store.open("contract-e")
        assert _texts(reopened) == ["question", "short", "follow-up"]
        assert reopened.get_entry(long) is not None  # history is kept, off the branch
        await reopened.aclose()

    @pytest.mark.anyio
    async def test_refresh_takes_in_another_writers_appends(self, session_store: Any) -> None:
        writer = await self._fresh(session_store, "contract-f")
        await writer.append_message(UserMessage(content="one", timestamp=1))
        await writer.flush()
        reader = await session_store.open("contract-f")
        assert _texts(reader) == ["one"]
        await writer.append_message(_assistant("two", 2))
        await writer.flush()
        assert await reader.refresh()
        assert _texts(reader) == ["one", "two"]
        assert reader.get_leaf_id() == writer.get_leaf_id()
        await writer.aclose()
        await reader.aclose()

    @pytest.mark.anyio
    async def test_concurrent_open_or_create_agree(self, session_store: Any) -> None:
        opened: list[Any] = []

        async def open_one() -> None:
            opened.append(await session_store.open_or_create("contract-g", cwd="/contract"))

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for _ in range(self.concurrent_opens):
                    tg.start_soon(open_one)
        assert len(opened) == self.concurrent_opens
        assert {session.session_id for session in opened} == {"contract-g"}
        for session in opened:
            await session.aclose()
        assert await session_store.list_ids() == ["contract-g"]
