"""Where the Redis backends connect and how they name their keys.

One ``RedisConnection`` per runtime: one connection pool shared by all five backends, opened
lazily in the running event loop and closed by ``aclose()``. The URL comes from the plugin
settings or ``OPENCLAW_RUNTIME_REDIS_URL``; every key starts with a configurable prefix so
several deployments (or tests) can share one Redis. The URL is never logged or put in an
error: it may carry a password.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import redis.asyncio as aioredis
import sniffio
from redis.commands.core import AsyncScript

from openclaw_runtime import ConfigurationError

__all__ = ["DEFAULT_PREFIX", "REDIS_URL_ENV", "RedisConnection", "RedisSettings", "key_part"]

REDIS_URL_ENV: Final = "OPENCLAW_RUNTIME_REDIS_URL"
REDIS_PREFIX_ENV: Final = "OPENCLAW_RUNTIME_REDIS_PREFIX"
DEFAULT_PREFIX: Final = "openclaw:"


def key_part(value: str) -> str:
    """A caller-supplied name made safe inside a key: ``{`` / ``}`` (cluster hash tags) and
    control characters are escaped, so one name can never address another name's keys."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"a Redis key part must be a non-empty string, got {value!r}")
    out = []
    for ch in value:
        if ch in "{}%" or ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"%{ord(ch):02X}")
        else:
            out.append(ch)
    return "".join(out)


@dataclass(frozen=True, slots=True)
class RedisSettings:
    """``url`` and key ``prefix`` (from plugin settings, else the environment)."""

    url: str
    prefix: str = DEFAULT_PREFIX

    @classmethod
    def resolve(cls, settings: dict[str, Any] | None = None) -> RedisSettings:
        """Plugin settings win over ``OPENCLAW_RUNTIME_REDIS_URL`` / ``_PREFIX``."""
        settings = settings or {}
        url = settings.get("url") or os.environ.get(REDIS_URL_ENV)
        if not url:
            raise ConfigurationError(
                f"the redis backends need a Redis URL: set {REDIS_URL_ENV} "
                "(e.g. redis://127.0.0.1:6379/0)"
            )
        if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigurationError(
                "the Redis URL must start with redis://, rediss:// or unix:// "
                "(the value is not shown: it may hold a password)"
            )
        prefix = settings.get("prefix") or os.environ.get(REDIS_PREFIX_ENV) or DEFAULT_PREFIX
        if not isinstance(prefix, str):
            raise ConfigurationError(f"the Redis key prefix must be a string, got {prefix!r}")
        return cls(url=url, prefix=prefix)

    def __repr__(self) -> str:  # never show the URL: it may carry a password
        return f"RedisSettings(prefix={self.prefix!r})"


class RedisConnection:
    """The pool one runtime shares across its Redis backends."""

    def __init__(self, settings: RedisSettings) -> None:
        self.settings = settings
        self.prefix = settings.prefix
        self._client: aioredis.Redis | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX) -> RedisConnection:
        """A connection to ``url`` with keys under ``prefix``."""
        return cls(RedisSettings(url=url, prefix=prefix))

    @property
    def client(self) -> aioredis.Redis:
        """The shared client (its pool is created on first use, in the running event loop).

        Connections belong to the loop that opened them, so a runtime used from a second
        ``anyio.run`` (the CLI does that) gets a fresh pool there instead of a dead one.
        """
        try:
            library = sniffio.current_async_library()
        except sniffio.AsyncLibraryNotFoundError:
            library = None
        if library not in (None, "asyncio"):
            raise ConfigurationError(
                f"the redis backends run on asyncio only (redis-py's asyncio client), not on "
                f"{library}; run this runtime with anyio's asyncio backend"
            )
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self._client is None or (loop is not None and loop is not self._loop):
            self._client = aioredis.Redis.from_url(self.settings.url, decode_responses=False)
            self._loop = loop
        return self._client

    def script(self, source: str) -> Callable[..., Awaitable[Any]]:
        """A Lua script run on the current client (``EVALSHA``, loaded on first miss)."""
        # bytes: the SHA is computed without a client; each call names the client to use
        script = AsyncScript(cast(Any, None), source.encode())

        async def run(*, keys: list[str], args: list[Any]) -> Any:
            return await script(keys=keys, args=args, client=self.client)

        return run

    def key(self, *parts: str) -> str:
        """``<prefix>part:part...`` (parts escaped with ``key_part``)."""
        return self.prefix + ":".join(key_part(p) for p in parts)

    async def aclose(self) -> None:
        """Close the pool (idempotent)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def __repr__(self) -> str:
        return f"RedisConnection(prefix={self.prefix!r})"
