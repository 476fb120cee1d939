"""Contract suites for the five backend protocols (``openclaw_runtime.backends``).

A backend author proves a backend by inheriting the suite of its kind and overriding one
fixture that builds a fresh backend::

    from openclaw_runtime.testing import SessionIndexContract

    class TestRedisSessionIndex(SessionIndexContract):
        @pytest.fixture
        def session_index(self, redis_url):
            return RedisSessionIndex(redis_url, prefix=uuid.uuid4().hex)

Every test checks a guarantee the protocol's docstring states: a session lane serializes, waiters
are served by priority then in arrival order, a lease times out unless it heartbeats, a claim is
atomic under concurrency, a steering item is neither lost nor leased twice, a ledger update is an
atomic read-modify-write, a transcript round-trips. The tests wait for conditions, never for
times: where one needs to know that a waiter is queued, the suite asks ``waiting()`` (override it
when the backend has no ``stats()``), and a generous ``fail_after`` turns a hang into a failure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from .._exceptions import TranscriptError
from ..auth.operations import AuthProfileStoreError, mark_auth_profile_failure
from ..auth.profiles import AuthProfile, CredentialRef
from ..auth.state import AuthProfileStoreState, ProfileUsageStats
from ..backends import (
    AuthStore,
    LaneBackend,
    LaneReentryError,
    LaneTimeoutError,
    Session,
    SessionIndex,
    SessionStore,
    SteeringStore,
)
from ..backends.steering import SubagentRunRecord
from ..messages import AssistantMessage, TextContent, UserMessage
from ..runner.steering import STALE_STEERING_LEASE_MS
from ..transcript.session_ids import InvalidSessionIdError

__all__ = [
    "AuthStoreContract",
    "LaneBackendContract",
    "SessionIndexContract",
    "SessionStoreContract",
    "SteeringStoreContract",
]

#: Bounds a test that would otherwise hang on a broken backend (never an assertion on speed).
HANG_GUARD_S = 60.0


async def _until(condition: Callable[[], Any], what: str) -> None:
    """Poll ``condition`` (sync or async) until it is true (a waiter queued, a write seen)."""
    with anyio.fail_after(HANG_GUARD_S):
        while True:
            value = condition()
            if hasattr(value, "__await__"):
                value = await value
            if value:
                return
            await anyio.sleep(0.005)
    raise AssertionError(what)  # pragma: no cover - fail_after raises first


# --------------------------------------------------------------------------- lanes


class LaneBackendContract:
    """Inherit and provide a ``lane_backend`` fixture returning a fresh ``LaneBackend``.

    Override ``waiting(backend, lane)`` when the backend has no ``stats()`` (lane → (running,
    waiting)): the order tests use it to know a waiter is queued before the next one arrives.
    """

    #: A timeout long enough that a loaded machine does not trip it between heartbeats.
    heartbeat_timeout_s = 1.5

    async def waiting(self, backend: Any, lane: str) -> int:
        """How many tasks wait for ``lane``."""
        stats = getattr(backend, "stats", None)
        if stats is None:
            pytest.skip("override waiting() to count a lane's waiters for this backend")
        result = stats()
        if hasattr(result, "__await__"):
            result = await result
        return int(result.get(lane, (0, 0))[1])

    def test_meets_the_protocol(self, lane_backend: Any) -> None:
        assert isinstance(lane_backend, LaneBackend)

    @pytest.mark.anyio
    async def test_a_session_lane_runs_one_holder_at_a_time(self, lane_backend: Any) -> None:
        lane = "session:contract-serial"
        inside = 0
        most = 0
        done: list[int] = []

        async def turn(n: int) -> None:
            nonlocal inside, most
            async with lane_backend.hold(lane, capacity=1, timeout_s=HANG_GUARD_S):
                inside += 1
                most = max(most, inside)
                for _ in range(3):
                    await anyio.lowlevel.checkpoint()
                inside -= 1
                done.append(n)

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for n in range(6):
                    tg.start_soon(turn, n)
        assert most == 1
        assert sorted(done) == list(range(6))

    @pytest.mark.anyio
    async def test_waiters_are_served_by_priority_then_arrival(self, lane_backend: Any) -> None:
        lane = "session:contract-order"
        order: list[str] = []
        release = anyio.Event()
        held = anyio.Event()

        async def holder() -> None:
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                held.set()
                await release.wait()

        async def waiter(name: str, priority: Any) -> None:
            async with lane_backend.hold(lane, priority=priority, timeout_s=HANG_GUARD_S):
                order.append(name)

        arrivals = [
            ("background", "background"),
            ("normal-1", "normal"),
            ("foreground", "foreground"),
            ("normal-2", "normal"),
        ]
        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(holder)
                await held.wait()
                for count, (name, priority) in enumerate(arrivals, start=1):
                    tg.start_soon(waiter, name, priority)
                    await _until(
                        functools.partial(self._queued, lane_backend, lane, count),
                        f"{name} never queued",
                    )
                release.set()
        assert order == ["foreground", "normal-1", "normal-2", "background"]

    async def _queued(self, backend: Any, lane: str, count: int) -> bool:
        return await self.waiting(backend, lane) >= count

    @pytest.mark.anyio
    async def test_a_global_lane_admits_up_to_its_capacity(self, lane_backend: Any) -> None:
        lane = "contract-global"
        inside = 0
        most = 0
        both_in = anyio.Event()

        async def work() -> None:
            nonlocal inside, most
            async with lane_backend.hold(lane, capacity=2, timeout_s=HANG_GUARD_S):
                inside += 1
                most = max(most, inside)
                if inside == 2:
                    both_in.set()
                await both_in.wait()  # capacity 1 would deadlock here: fail_after fails it
                inside -= 1

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(work)
        assert most == 2

    @pytest.mark.anyio
    async def test_a_lease_without_progress_times_out_and_frees_the_lane(
        self, lane_backend: Any
    ) -> None:
        lane = "session:contract-timeout"
        reached_end: list[bool] = []

        async def stuck() -> None:
            async with lane_backend.hold(lane, timeout_s=0.05):
                await anyio.sleep_forever()
                reached_end.append(True)  # pragma: no cover

        with anyio.fail_after(HANG_GUARD_S), pytest.raises(LaneTimeoutError) as caught:
            await stuck()
        assert not reached_end
        assert caught.value.lane == lane
        with anyio.fail_after(HANG_GUARD_S):
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S) as lease:
                assert lease.lane == lane

    @pytest.mark.anyio
    async def test_heartbeats_keep_a_lease_alive_past_its_timeout(self, lane_backend: Any) -> None:
        lane = "session:contract-heartbeat"
        timeout = self.heartbeat_timeout_s
        step = timeout / 10
        beats = 0
        with anyio.fail_after(HANG_GUARD_S):
            async with lane_backend.hold(lane, timeout_s=timeout) as lease:
                while beats * step < timeout * 2:  # twice the timeout in all
                    await anyio.sleep(step)
                    lease.heartbeat()
                    beats += 1
        assert beats * step >= timeout * 2

    @pytest.mark.anyio
    async def test_asking_for_a_held_lane_is_refused_not_deadlocked(
        self, lane_backend: Any
    ) -> None:
        lane = "session:contract-reentry"
        with anyio.fail_after(HANG_GUARD_S):
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                with pytest.raises(LaneReentryError):
                    async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                        pass  # pragma: no cover
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                pass  # released normally after the refusal

    @pytest.mark.anyio
    async def test_a_cancelled_waiter_leaves_no_trace(self, lane_backend: Any) -> None:
        lane = "session:contract-cancel"
        release = anyio.Event()
        held = anyio.Event()
        granted: list[str] = []

        async def holder() -> None:
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                held.set()
                await release.wait()

        async def impatient(scope: anyio.CancelScope) -> None:
            with scope:
                async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                    granted.append("impatient")  # pragma: no cover

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(holder)
                await held.wait()
                scope = anyio.CancelScope()
                tg.start_soon(impatient, scope)
                await _until(lambda: self._queued(lane_backend, lane, 1), "waiter never queued")
                scope.cancel()
                await _until(
                    lambda: self._queued_at_most(lane_backend, lane, 0), "waiter stayed queued"
                )
                release.set()
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                granted.append("next")
        assert granted == ["next"]

    async def _queued_at_most(self, backend: Any, lane: str, count: int) -> bool:
        return await self.waiting(backend, lane) <= count

    @pytest.mark.anyio
    async def test_an_exception_in_the_block_releases_the_lane(self, lane_backend: Any) -> None:
        lane = "session:contract-raise"
        with anyio.fail_after(HANG_GUARD_S):
            with pytest.raises(KeyError):
                async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S):
                    raise KeyError("boom")
            async with lane_backend.hold(lane, timeout_s=HANG_GUARD_S) as lease:
                assert lease.waited_s >= 0

    @pytest.mark.anyio
    async def test_a_capacity_below_one_is_refused(self, lane_backend: Any) -> None:
        with pytest.raises(ValueError):
            async with lane_backend.hold("contract-zero", capacity=0):
                pass  # pragma: no cover


# --------------------------------------------------------------------------- auth store


class AuthStoreContract:
    """Inherit and provide an ``auth_store`` fixture returning a fresh, empty ledger that knows
    the profiles in ``AuthStoreContract.profiles``."""

    profiles = (
        AuthProfile(
            id="contract:a", provider="openai", mode="api_key", credential=CredentialRef(env="A")
        ),
        AuthProfile(
            id="contract:b", provider="openai", mode="api_key", credential=CredentialRef(env="B")
        ),
    )
    concurrent_updates = 16

    def test_meets_the_protocol(self, auth_store: Any) -> None:
        assert isinstance(auth_store, AuthStore)

    @pytest.mark.anyio
    async def test_load_shows_the_profiles_and_an_empty_ledger(self, auth_store: Any) -> None:
        state = await auth_store.load()
        assert {"contract:a", "contract:b"} <= set(state.profiles)
        assert state.stats_for("contract:a") is None

    @pytest.mark.anyio
    async def test_an_update_is_stored_and_returned(self, auth_store: Any) -> None:
        entry = ProfileUsageStats(error_count=3, cooldown_until=123_456.0)
        after = await auth_store.update(lambda s: s.with_usage_stats("contract:a", entry))
        assert after.stats_for("contract:a") == entry
        assert (await auth_store.load()).stats_for("contract:a") == entry

    @pytest.mark.anyio
    async def test_no_change_writes_nothing(self, auth_store: Any) -> None:
        before = await auth_store.load()
        after = await auth_store.update(lambda s: None)
        assert after.usage_stats == before.usage_stats
        assert (await auth_store.load()).usage_stats == before.usage_stats

    @pytest.mark.anyio
    async def test_a_raising_update_writes_nothing(self, auth_store: Any) -> None:
        def explode(state: AuthProfileStoreState) -> AuthProfileStoreState:
            raise ZeroDivisionError("fn failed")

        with pytest.raises(ZeroDivisionError):
            await auth_store.update(explode)
        assert (await auth_store.load()).stats_for("contract:a") is None

    @pytest.mark.anyio
    async def test_an_update_cannot_change_profiles(self, auth_store: Any) -> None:
        def drop_profiles(state: AuthProfileStoreState) -> AuthProfileStoreState:
            return state.replace(profiles={}).with_usage_stats(
                "contract:a", ProfileUsageStats(error_count=1)
            )

        with pytest.raises(AuthProfileStoreError):
            await auth_store.update(drop_profiles)
        state = await auth_store.load()
        assert "contract:a" in state.profiles and state.stats_for("contract:a") is None

    @pytest.mark.anyio
    async def test_concurrent_updates_lose_nothing(self, auth_store: Any) -> None:
        def add_one(state: AuthProfileStoreState) -> AuthProfileStoreState:
            entry = state.stats_for("contract:a") or ProfileUsageStats()
            return state.with_usage_stats(
                "contract:a", entry.replace(error_count=(entry.error_count or 0) + 1)
            )

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for _ in range(self.concurrent_updates):
                    tg.start_soon(auth_store.update, add_one)
        entry = (await auth_store.load()).stats_for("contract:a")
        assert entry is not None and entry.error_count == self.concurrent_updates

    @pytest.mark.anyio
    async def test_a_recorded_failure_cools_the_profile_for_every_reader(
        self, auth_store: Any
    ) -> None:
        now = 1_000_000_000_000.0
        entry = await mark_auth_profile_failure(auth_store, "contract:b", "rate_limit", now_ms=now)
        assert entry is not None and entry.cooldown_until is not None
        stored = (await auth_store.load()).stats_for("contract:b")
        assert stored == entry and entry.cooldown_until > now


# --------------------------------------------------------------------------- steering store


def _record(run_id: str, requester: str, *, text: str = "done", ended_at: float = 1) -> Any:
    return SubagentRunRecord.completed(
        run_id=run_id,
        requester_session_key=requester,
        task=f"task {run_id}",
        result_text=text,
        ended_at=ended_at,
        created_at=ended_at,
    )


class SteeringStoreContract:
    """Inherit and provide a ``steering_store`` fixture returning a fresh, empty store."""

    now = 1_700_000_000_000.0

    def test_meets_the_protocol(self, steering_store: Any) -> None:
        assert isinstance(steering_store, SteeringStore)

    @pytest.mark.anyio
    async def test_put_and_load_round_trip(self, steering_store: Any) -> None:
        record = _record("r1", "chat:1")
        await steering_store.put(record)
        loaded = await steering_store.load()
        assert list(loaded) == ["r1"] and loaded["r1"].to_dict() == record.to_dict()
        loaded["r1"].task = "changed in the copy"
        assert (await steering_store.load())["r1"].task == "task r1"

    @pytest.mark.anyio
    async def test_nothing_waiting_leases_nothing(self, steering_store: Any) -> None:
        assert await steering_store.lease("chat:none", now_ms=self.now) is None

    @pytest.mark.anyio
    async def test_a_lease_takes_the_requesters_items_once(self, steering_store: Any) -> None:
        await steering_store.put(_record("r1", "chat:1", ended_at=1))
        await steering_store.put(_record("r2", "chat:1", ended_at=2))
        await steering_store.put(_record("other", "chat:2"))
        lease = await steering_store.lease("chat:1", now_ms=self.now)
        assert lease is not None and lease.run_ids == ("r1", "r2")
        assert "task r1" in lease.prompt and "task r2" in lease.prompt
        assert [item.run_id for item in lease.items] == ["r1", "r2"]
        assert await steering_store.lease("chat:1", now_ms=self.now + 1) is None  # in progress
        runs = await steering_store.load()
        assert runs["other"].delivery is not None and runs["other"].delivery.status == "pending"
        assert {runs[r].delivery.status for r in ("r1", "r2")} == {"in_progress"}

    @pytest.mark.anyio
    async def test_ack_delivers_once(self, steering_store: Any) -> None:
        await steering_store.put(_record("r1", "chat:1"))
        lease = await steering_store.lease("chat:1", now_ms=self.now)
        assert lease is not None
        assert await steering_store.ack(lease, now_ms=self.now + 5) == 1
        assert await steering_store.ack(lease, now_ms=self.now + 6) == 0
        assert await steering_store.release(lease, error="late") == 0
        delivery = (await steering_store.load())["r1"].delivery
        assert delivery is not None and delivery.status == "delivered"
        assert delivery.payload is None and delivery.delivered_at == self.now + 5
        assert await steering_store.lease("chat:1", now_ms=self.now + 7) is None

    @pytest.mark.anyio
    async def test_release_hands_the_items_back(self, steering_store: Any) -> None:
        await steering_store.put(_record("r1", "chat:1"))
        first = await steering_store.lease("chat:1", now_ms=self.now)
        assert first is not None
        assert await steering_store.release(first, error="turn failed") == 1
        delivery = (await steering_store.load())["r1"].delivery
        assert delivery is not None and delivery.status == "pending"
        assert delivery.last_error == "turn failed"
        second = await steering_store.lease("chat:1", now_ms=self.now + 1)
        assert second is not None and second.run_ids == ("r1",)
        assert second.lease_id != first.lease_id
        assert await steering_store.ack(first, now_ms=self.now + 2) == 0  # retired lease
        assert await steering_store.ack(second, now_ms=self.now + 2) == 1

    @pytest.mark.anyio
    async def test_a_stale_lease_is_reclaimed_and_its_late_ack_refused(
        self, steering_store: Any
    ) -> None:
        await steering_store.put(_record("r1", "chat:1"))
        stale = await steering_store.lease("chat:1", now_ms=self.now)
        assert stale is not None
        assert (
            await steering_store.lease("chat:1", now_ms=self.now + STALE_STEERING_LEASE_MS) is None
        )
        fresh = await steering_store.lease("chat:1", now_ms=self.now + STALE_STEERING_LEASE_MS + 1)
        assert fresh is not None and fresh.run_ids == ("r1",)
        assert await steering_store.ack(stale, now_ms=self.now + STALE_STEERING_LEASE_MS + 2) == 0
        assert await steering_store.ack(fresh, now_ms=self.now + STALE_STEERING_LEASE_MS + 3) == 1

    @pytest.mark.anyio
    async def test_concurrent_leases_never_share_an_item(self, steering_store: Any) -> None:
        ids = [f"r{n:02d}" for n in range(10)]
        for n, run_id in enumerate(ids):
            await steering_store.put(_record(run_id, "chat:1", ended_at=n + 1))
        leases: list[Any] = []

        async def take() -> None:
            lease = await steering_store.lease("chat:1", now_ms=self.now)
            if lease is not None:
                leases.append(lease)

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(take)
        taken = [run_id for lease in leases for run_id in lease.run_ids]
        assert sorted(taken) == ids  # every item leased, none twice

    @pytest.mark.anyio
    async def test_a_bounded_batch_leaves_the_rest_for_the_next_lease(
        self, steering_store: Any
    ) -> None:
        ids = [f"big{n}" for n in range(6)]
        for n, run_id in enumerate(ids):
            await steering_store.put(_record(run_id, "chat:1", text="x" * 5_000, ended_at=n + 1))
        seen: list[str] = []
        with anyio.fail_after(HANG_GUARD_S):
            while True:
                lease = await steering_store.lease("chat:1", now_ms=self.now)
                if lease is None:
                    break
                assert 1 <= len(lease.run_ids) < len(ids)
                seen.extend(lease.run_ids)
                assert await steering_store.ack(lease, now_ms=self.now) == len(lease.run_ids)
        assert seen == ids  # oldest first, each delivered exactly once


# --------------------------------------------------------------------------- session index


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


# --------------------------------------------------------------------------- session store


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
