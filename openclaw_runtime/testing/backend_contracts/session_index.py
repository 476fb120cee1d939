"""The ``SessionIndex`` contract suite: binds are seen by every reader, and a claim of a session
key binds once, atomically under concurrency."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ...backends import (
    SessionIndex,
)
from ._support import HANG_GUARD_S

__all__ = ["SessionIndexContract"]


class SessionIndexContract:
    """Inherit and provide a ``session_index`` fixture returning a fresh, empty index.

    ``session_index_peer`` is a second handle on the same index, as another process would
    open it; override it (the default is the same object) to prove writes are shared.
    """

    concurrent_claims = 12

    @pytest.fixture
    def session_index_peer(self, session_index: Any) -> Any:
        return session_index

    def test_meets_the_protocol(self, session_index: Any) -> None:
        assert isinstance(session_index, SessionIndex)

    @pytest.mark.anyio
    async def test_an_empty_index_knows_nothing(self, session_index: Any) -> None:
        assert await session_index.lookup_id("chat:1") is None
        assert await session_index.lookup_key("s1") is None
        assert await session_index.entries() == {}

    @pytest.mark.anyio
    async def test_bind_is_seen_by_every_reader(
        self, session_index: Any, session_index_peer: Any
    ) -> None:
        await session_index.bind("telegram:1", "s1")
        await session_index.bind("slack:9", "s2")
        assert await session_index_peer.lookup_id("telegram:1") == "s1"
        assert await session_index_peer.lookup_key("s2") == "slack:9"
        entries = await session_index_peer.entries()
        assert {k: v["sessionId"] for k, v in entries.items()} == {
            "telegram:1": "s1",
            "slack:9": "s2",
        }
        entries["telegram:1"]["sessionId"] = "changed in the copy"
        assert await session_index.lookup_id("telegram:1") == "s1"

    @pytest.mark.anyio
    async def test_claim_binds_once_and_bind_repoints(self, session_index: Any) -> None:
        assert await session_index.claim("chat:1", "first") == "first"
        assert await session_index.claim("chat:1", "second") == "first"
        assert await session_index.lookup_id("chat:1") == "first"
        await session_index.bind("chat:1", "third")
        assert await session_index.lookup_id("chat:1") == "third"
        assert await session_index.claim("chat:1", "fourth") == "third"

    @pytest.mark.anyio
    async def test_concurrent_claims_agree_on_one_session(
        self, session_index: Any, session_index_peer: Any
    ) -> None:
        answers: dict[int, str] = {}

        async def claim(n: int) -> None:
            handle = session_index if n % 2 else session_index_peer
            answers[n] = await handle.claim("chat:race", f"candidate-{n}")

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for n in range(self.concurrent_claims):
                    tg.start_soon(claim, n)
        winners = set(answers.values())
        assert len(answers) == self.concurrent_claims and len(winners) == 1
        (winner,) = winners
        assert winner in {f"candidate-{n}" for n in range(self.concurrent_claims)}
        assert await session_index.lookup_id("chat:race") == winner
