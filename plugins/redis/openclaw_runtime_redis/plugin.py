"""The entry point of openclaw-runtime-redis: registers the five Redis backends as ``redis``.

Select them in ``openclaw-runtime.toml``::

    [backends]
    lanes = "redis"
    auth_store = "redis"
    steering_store = "redis"
    session_index = "redis"
    session_store = "redis"

All backends of one runtime share one ``RedisConnection`` (one pool), made on first use from
``OPENCLAW_RUNTIME_REDIS_URL`` (``OPENCLAW_RUNTIME_REDIS_PREFIX``, default ``openclaw:``;
``OPENCLAW_RUNTIME_REDIS_LEASE_MS``, default 30000, the lanes' lease and the live inbox's owner
lease) and closed by the runtime's ``aclose()``
(every backend's ``aclose`` closes the shared pool; closing twice is harmless).
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable
from typing import Any

from openclaw_runtime import ConfigurationError, hookimpl
from openclaw_runtime.config import BackendSettings
from openclaw_runtime.redaction import package_logger

from ._conn import RedisConnection, RedisSettings
from .lanes import DEFAULT_LEASE_MS, RedisLanes
from .ledger import RedisAuthProfileStore
from .sessions import RedisSessionIndex, RedisSessionStore
from .steering import RedisSteeringStore

__all__ = ["connection_for", "register_backends"]

LEASE_ENV = "OPENCLAW_RUNTIME_REDIS_LEASE_MS"
logger = package_logger(logging.getLogger("openclaw_runtime_redis"))
_connections: weakref.WeakKeyDictionary[Any, RedisConnection] = weakref.WeakKeyDictionary()


def connection_for(runtime: Any) -> RedisConnection:
    """The one connection (pool) of ``runtime``."""
    conn = _connections.get(runtime)
    if conn is None:
        conn = _connections[runtime] = RedisConnection(RedisSettings.resolve())
    return conn


def _lease_ms() -> int:
    raw = os.environ.get(LEASE_ENV)
    if not raw:
        return DEFAULT_LEASE_MS
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{LEASE_ENV} must be an integer (ms), got {raw!r}") from None
    if value < 100:
        raise ConfigurationError(f"{LEASE_ENV} must be at least 100 ms, got {value}")
    return value


class _Closing:
    """Mixin: ``aclose()`` closes the shared pool (the runtime calls it on every backend)."""

    conn: RedisConnection

    async def aclose(self) -> None:
        await self.conn.aclose()


class _Lanes(_Closing, RedisLanes):
    pass


class _AuthStore(_Closing, RedisAuthProfileStore):
    pass


class _SteeringStore(_Closing, RedisSteeringStore):
    pass


class _SessionIndex(_Closing, RedisSessionIndex):
    pass


class _SessionStore(_Closing, RedisSessionStore):
    pass


FACTORIES: dict[str, Callable[[Any], Any]] = {
    "lanes": lambda rt: _Lanes(connection_for(rt), lease_ms=_lease_ms()),
    "auth_store": lambda rt: _AuthStore(connection_for(rt), profiles=rt.config.auth.profiles),
    "steering_store": lambda rt: _SteeringStore(connection_for(rt), live_ttl_ms=_lease_ms()),
    "session_index": lambda rt: _SessionIndex(connection_for(rt)),
    "session_store": lambda rt: _SessionStore(
        connection_for(rt), durability="none", warn=logger.warning
    ),
}


@hookimpl
def register_backends(register: Callable[..., None]) -> None:
    """Register the Redis backend of every kind this core can select under ``redis``
    (a core that predates a kind does not list it in ``[backends]``)."""
    selectable = set(BackendSettings.model_fields)
    for kind, factory in FACTORIES.items():
        if kind in selectable:
            register(kind, "redis", factory)
