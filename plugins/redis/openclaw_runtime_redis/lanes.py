"""Lanes shared by every worker: a Redis priority semaphore with leases and fencing tokens.

A lane is four keys: ``holders`` (sorted set: lease id → lease expiry, server clock),
``tokens`` (hash: lease id → fencing token), ``waiters`` (sorted set: lease id →
priority rank × 10^15 + arrival number, so ``foreground`` < ``normal`` < ``background``, then
first come first served) and ``alive`` (sorted set: waiter → liveness deadline). Every change is
one Lua script, so acquiring is atomic; the clock is Redis's ``TIME`` so machines with skewed
clocks agree on expiry.

* **Fencing.** Each grant takes a fresh number from ``INCR``; the session store appends only
  while the caller's lease is still in ``holders`` with an unexpired score and the same token
  (``fence_check``), so a worker that stalled past its lease (GC pause, SIGSTOP, a lost
  network) can no longer write: its late append is refused with ``StaleFencingTokenError``.
* **Leases and heartbeat.** A holder renews its lease every third of ``lease_ms`` with a
  compare-and-extend script while its process is alive; a holder killed with ``kill -9`` stops
  renewing, its lease expires and the next waiter is granted. Progress heartbeats
  (``LaneLease.heartbeat``) move the run's own deadline (the run timeout + 30 s grace, as the
  in-process lanes do).
* **No polling storms.** A waiter blocks in ``BLPOP`` on its own wake list; a release pushes
  to exactly the waiters that can now proceed. A waiter only wakes on its own when the earliest
  holder's lease would expire (a dead holder never pushes) or to refresh its liveness.
* Waiters that die are dropped when their liveness entry lapses, so they never block a lane.
"""

from __future__ import annotations

import contextvars
import math
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import anyio
from redis.exceptions import RedisError

from openclaw_runtime import OpenClawRuntimeError
from openclaw_runtime.backends.lanes import (
    PRIORITY_RANK,
    LaneLease,
    LaneTimeoutError,
    Priority,
    holding,
    is_session_lane,
)

from ._conn import RedisConnection

__all__ = [
    "DEFAULT_LEASE_MS",
    "Fence",
    "LaneLeaseLostError",
    "RedisLanes",
    "StaleFencingTokenError",
    "current_fences",
]

#: How long a grant lasts without renewal (renewed every third of it while alive).
DEFAULT_LEASE_MS: Final = 30_000
#: How long a waiter that stopped refreshing stays in the queue.
WAITER_ALIVE_MS: Final = 10_000

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# drop expired holders (and their tokens) and dead waiters
_PURGE = """
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, h in ipairs(expired) do
  redis.call('ZREM', KEYS[1], h)
  redis.call('HDEL', KEYS[2], h)
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
for _, w in ipairs(dead) do
  redis.call('ZREM', KEYS[3], w)
  redis.call('ZREM', KEYS[4], w)
end
"""

# push a wake-up to the first ``n`` waiters
_WAKE = """
local function wake(n, prefix)
  if n <= 0 then return end
  local ws = redis.call('ZRANGE', KEYS[3], 0, n - 1)
  for _, w in ipairs(ws) do
    redis.call('RPUSH', prefix .. w, '1')
    redis.call('PEXPIRE', prefix .. w, 60000)
  end
end
"""

# KEYS: holders tokens waiters alive fence seq
# ARGV: capacity lease_ms lease_id rank alive_ms wake_prefix
ACQUIRE: Final = (
    _NOW
    + _PURGE
    + _WAKE
    + """
local id = ARGV[3]
local capacity = tonumber(ARGV[1])
if redis.call('ZSCORE', KEYS[1], id) then
  return {1, tonumber(redis.call('HGET', KEYS[2], id))}
end
if not redis.call('ZSCORE', KEYS[3], id) then
  local seq = redis.call('INCR', KEYS[6])
  redis.call('ZADD', KEYS[3], tonumber(ARGV[4]) * 1000000000000000 + seq, id)
end
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[5]), id)
local free = capacity - redis.call('ZCARD', KEYS[1])
if free > 0 then
  local pos = redis.call('ZRANK', KEYS[3], id)
  if pos < free then
    redis.call('ZREM', KEYS[3], id)
    redis.call('ZREM', KEYS[4], id)
    local token = redis.call('INCR', KEYS[5])
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), id)
    redis.call('HSET', KEYS[2], id, token)
    redis.call('DEL', ARGV[6] .. id)
    wake(free - 1, ARGV[6])
    return {1, token}
  end
end
local wait = tonumber(ARGV[5])
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then wait = math.min(wait, tonumber(first[2]) - now + 1) end
return {0, wait}
"""
)

# KEYS: holders tokens waiters alive ; ARGV: lease_id capacity wake_prefix
RELEASE: Final = (
    _NOW
    + _WAKE
    + """
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
"""
    + _PURGE
    + """
wake(tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1]), ARGV[3])
return removed
"""
)

# KEYS: holders tokens ; ARGV: lease_id token lease_ms
RENEW: Final = (
    _NOW
    + """
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not s) or tonumber(s) <= now or redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return 1
"""
)

#: Lua fragment: returns 0 from the script unless every fence passed as (holders, tokens)
#: key pairs in KEYS[1..2n] and (lease id, token) pairs in ARGV[1..2n] is still valid.
#: Expects ``now`` and ``nfences``.
FENCE_CHECK: Final = """
for i = 1, nfences do
  local s = redis.call('ZSCORE', KEYS[2 * i - 1], ARGV[2 * i - 1])
  if (not s) or tonumber(s) <= now
     or redis.call('HGET', KEYS[2 * i], ARGV[2 * i - 1]) ~= ARGV[2 * i] then
    return {-1}
  end
end
"""


class LaneLeaseLostError(OpenClawRuntimeError):
    """The lane's lease expired or was taken over before the block finished."""

    def __init__(self, lane: str) -> None:
        super().__init__(
            f"lost the Redis lease on lane {lane!r} (it expired: the worker stalled past its "
            "lease, or Redis was unreachable); the work in the lane was cancelled"
        )
        self.lane = lane


class StaleFencingTokenError(OpenClawRuntimeError):
    """A write carried a fencing token that no longer holds its lane."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"refused {what}: this worker's session lease expired and another worker holds the "
            "session now (stale fencing token)"
        )


@dataclass(frozen=True, slots=True)
class Fence:
    """Proof of a lane grant that a store can check atomically on Redis."""

    lane: str
    holders_key: str
    tokens_key: str
    lease_id: str
    token: int


_fences: contextvars.ContextVar[tuple[Fence, ...]] = contextvars.ContextVar(
    "openclaw_runtime_redis_fences", default=()
)


def current_fences() -> tuple[Fence, ...]:
    """The session lanes this task holds on Redis (what the session store fences with)."""
    return _fences.get()


def fence_args(fences: tuple[Fence, ...]) -> tuple[list[str], list[str]]:
    """KEYS and ARGV for ``FENCE_CHECK``."""
    keys: list[str] = []
    args: list[str] = []
    for fence in fences:
        keys += [fence.holders_key, fence.tokens_key]
        args += [fence.lease_id, str(fence.token)]
    return keys, args


class RedisLanes:
    """``LaneBackend`` on Redis: the same ``hold(...)`` as ``InProcessLanes``, across workers."""

    def __init__(
        self,
        conn: RedisConnection,
        *,
        lease_ms: int = DEFAULT_LEASE_MS,
        renew_every_s: float | None = None,
    ) -> None:
        if lease_ms < 100:
            raise ValueError(f"lease_ms must be at least 100, got {lease_ms}")
        self.conn = conn
        self.lease_ms = lease_ms
        #: Seconds between lease renewals (a third of the lease unless given; tests stretch
        #: it to play a worker whose heartbeat stalled).
        self.renew_every_s = lease_ms / 3000 if renew_every_s is None else renew_every_s
        self._acquire = conn.script(ACQUIRE)
        self._release = conn.script(RELEASE)
        self._renew = conn.script(RENEW)
        self._wake_prefix = conn.prefix + "wake:"

    def __repr__(self) -> str:
        return f"RedisLanes(prefix={self.conn.prefix!r}, lease_ms={self.lease_ms})"

    def _keys(self, lane: str) -> list[str]:
        parts = ("holders", "tokens", "waiters", "alive")
        return [self.conn.key("lane", lane, part) for part in parts]

    @asynccontextmanager
    async def hold(
        self,
        lane: str,
        *,
        capacity: int = 1,
        priority: Priority = "normal",
        timeout_s: float | None = None,
    ) -> AsyncIterator[LaneLease]:
        """Wait for ``lane`` across all workers, hold it for the block, release it after.

        Raises ``LaneTimeoutError`` when the block runs ``timeout_s`` past its last heartbeat
        and ``LaneLeaseLostError`` when the Redis lease could not be renewed.
        """
        if capacity < 1:
            raise ValueError(f"lane capacity must be at least 1, got {capacity}")
        with holding(lane):  # re-entry is refused at once, before queueing
            keys = self._keys(lane)
            lease_id = uuid.uuid4().hex
            started = anyio.current_time()
            token = await self._wait_for_grant(lane, keys, lease_id, capacity, priority)
            fences = _fences.get()
            fence_token = None
            if is_session_lane(lane):
                fence_token = _fences.set((*fences, Fence(lane, keys[0], keys[1], lease_id, token)))
            deadline = math.inf if timeout_s is None else anyio.current_time() + timeout_s
            scope = anyio.CancelScope(deadline=deadline)
            lease = LaneLease(lane, timeout_s, anyio.current_time() - started, scope)
            lost = False

            async def renew() -> None:
                nonlocal lost
                renewed_at = anyio.current_time()
                while True:
                    await anyio.sleep(self.renew_every_s)
                    try:
                        ok = await self._renew(
                            keys=keys[:2], args=[lease_id, str(token), self.lease_ms]
                        )
                    except (OSError, RedisError):
                        # Redis unreachable: keep trying until the lease must have expired
                        ok = anyio.current_time() - renewed_at < self.lease_ms / 1000
                    else:
                        renewed_at = anyio.current_time()
                    if not ok:
                        lost = True
                        scope.cancel()
                        return

            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(renew)
                    try:
                        with scope:
                            yield lease
                    finally:
                        tg.cancel_scope.cancel()
            except BaseExceptionGroup as group:
                # the block's own exception, not wrapped by our renewal task group
                if len(group.exceptions) == 1:
                    raise group.exceptions[0] from None
                raise
            finally:
                if fence_token is not None:
                    _fences.reset(fence_token)
                with anyio.CancelScope(shield=True):
                    await self._release(keys=keys, args=[lease_id, capacity, self._wake_prefix])
        if lost:
            raise LaneLeaseLostError(lane)
        if scope.cancelled_caught and timeout_s is not None:
            raise LaneTimeoutError(lane, timeout_s)

    async def _wait_for_grant(
        self,
        lane: str,
        keys: list[str],
        lease_id: str,
        capacity: int,
        priority: Priority,
    ) -> int:
        client = self.conn.client
        wake_key = self._wake_prefix + lease_id
        args: list[Any] = [
            capacity,
            self.lease_ms,
            lease_id,
            PRIORITY_RANK.get(priority, 1),
            WAITER_ALIVE_MS,
            self._wake_prefix,
        ]
        fence_key = self.conn.key("lane", lane, "fence")
        seq_key = self.conn.key("lane", lane, "seq")
        try:
            while True:
                granted, value = await self._acquire(keys=[*keys, fence_key, seq_key], args=args)
                if int(granted) == 1:
                    return int(value)
                wait_s = max(0.01, min(int(value), WAITER_ALIVE_MS // 2) / 1000)
                await client.blpop([wake_key], timeout=wait_s)
        except BaseException:
            # leave the queue (or hand back a grant whose answer was lost) and pass the turn on
            with anyio.CancelScope(shield=True):
                await self._release(keys=keys, args=[lease_id, capacity, self._wake_prefix])
                await client.delete(wake_key)
            raise
