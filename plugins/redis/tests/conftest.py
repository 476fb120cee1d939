"""Fixtures for the Redis backend tests: one real Redis per test session, a fresh key prefix
per test.

redis-py's asyncio client runs on asyncio only (it is built on asyncio streams), so these
tests run on asyncio and skip trio with that reason; see the plugin README.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from openclaw_runtime_redis import RedisConnection
from openclaw_runtime_redis.testing import RedisUnavailable, redis_server_url

TRIO_REASON = "redis-py's asyncio client runs on asyncio only (see plugins/redis/README.md)"


@pytest.fixture(
    params=["asyncio", pytest.param("trio", marks=pytest.mark.skip(reason=TRIO_REASON))]
)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Redis tests run on asyncio; trio is skipped with the reason."""
    return str(request.param)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A live Redis: ``OPENCLAW_RUNTIME_REDIS_URL`` or a ``redis-server`` started for the
    session. Missing Redis skips locally and FAILS on CI (``CI=true``)."""
    try:
        with redis_server_url() as url:
            yield url
    except RedisUnavailable as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"Redis is required on CI: {exc}")
        pytest.skip(str(exc))


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix no other test uses."""
    return f"test:{uuid.uuid4().hex[:12]}:"


@pytest.fixture
async def redis_conn(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisConnection]:
    """A connection under a fresh prefix, closed after the test."""
    conn = RedisConnection.from_url(redis_url, prefix=redis_prefix)
    yield conn
    await conn.aclose()
