"""The core's contract suites, run against every Redis backend (a real Redis, a fresh prefix
per test; the peers are second connections, as another worker would hold)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from openclaw_runtime_redis import RedisConnection, RedisLanes
from openclaw_runtime_redis.ledger import RedisAuthProfileStore
from openclaw_runtime_redis.sessions import RedisSessionIndex, RedisSessionStore
from openclaw_runtime_redis.steering import RedisSteeringStore

from openclaw_runtime.testing import (
    AuthStoreContract,
    LaneBackendContract,
    SessionIndexContract,
    SessionStoreContract,
    SteeringStoreContract,
)

pytestmark = pytest.mark.anyio


class TestRedisLanes(LaneBackendContract):
    async def test_meets_the_protocol(self, lane_backend: Any) -> None:
        super().test_meets_the_protocol(lane_backend)  # async here: the connection fixture is async

    @pytest.fixture
    def lane_backend(self, redis_conn: RedisConnection) -> RedisLanes:
        return RedisLanes(redis_conn)

    async def waiting(self, backend: Any, lane: str) -> int:
        return int(await backend.conn.client.zcard(backend.conn.key("lane", lane, "waiters")))


class TestRedisAuthStore(AuthStoreContract):
    async def test_meets_the_protocol(self, auth_store: Any) -> None:
        super().test_meets_the_protocol(auth_store)  # async here: the connection fixture is async

    @pytest.fixture
    def auth_store(self, redis_conn: RedisConnection) -> RedisAuthProfileStore:
        return RedisAuthProfileStore(redis_conn, profiles=self.profiles)


class TestRedisSteeringStore(SteeringStoreContract):
    async def test_meets_the_protocol(self, steering_store: Any) -> None:
        super().test_meets_the_protocol(
            steering_store
        )  # async here: the connection fixture is async

    @pytest.fixture
    def steering_store(self, redis_conn: RedisConnection) -> RedisSteeringStore:
        return RedisSteeringStore(redis_conn)


class TestRedisSessionIndex(SessionIndexContract):
    async def test_meets_the_protocol(self, session_index: Any) -> None:
        super().test_meets_the_protocol(
            session_index
        )  # async here: the connection fixture is async

    @pytest.fixture
    def session_index(self, redis_conn: RedisConnection) -> RedisSessionIndex:
        return RedisSessionIndex(redis_conn)

    @pytest.fixture
    async def session_index_peer(
        self, redis_url: str, redis_prefix: str
    ) -> AsyncIterator[RedisSessionIndex]:
        peer = RedisConnection.from_url(redis_url, prefix=redis_prefix)
        yield RedisSessionIndex(peer)
        await peer.aclose()


class TestRedisSessionStore(SessionStoreContract):
    async def test_meets_the_protocol(self, session_store: Any) -> None:
        super().test_meets_the_protocol(
            session_store
        )  # async here: the connection fixture is async

    @pytest.fixture
    def session_store(self, redis_conn: RedisConnection) -> RedisSessionStore:
        return RedisSessionStore(redis_conn)
