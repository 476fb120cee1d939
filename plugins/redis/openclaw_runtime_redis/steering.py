"""The steering queue on Redis: sub-agent results leased, acked and released across workers.

Records live in one hash, ``<prefix>steering:runs`` (run id → the record's JSON, the same
shape as ``runs.json``). ``update(fn)`` runs the core's pure lease / ack / release functions
(``runner/steering.py``: oldest first, the 24,000-character merged-prompt bound, the 5-minute
stale-lease reclaim, ack/release only under the owning lease id) on a snapshot read with the
hash's version counter (``:ver``), and writes back only the records that changed, in one Lua
script that applies them only if the version is unchanged (else the update runs again).

Why a hash with optimistic transactions rather than streams with consumer groups: a stream's
pending-entry list knows one consumer per message, but a steering lease is a *batch* chosen by
the prompt bound, released back with its attempt count kept, reclaimed by the record's own
lease time, and sometimes suspended; XAUTOCLAIM would reclaim by idle time per message and
the policy would have to be written a second time in Lua. With the records as data, the one
policy the file store runs also runs here, and the versioned compare-and-set makes each step
atomic: a worker
killed between lease and ack leaves its items ``in_progress`` with their lease time, and the
next lease after 5 minutes takes them again (neither lost nor delivered twice).

The store's ``live_inbox`` (``live_inbox.RedisLiveInbox``) carries live ``steer`` /
``follow_up`` messages to a run held by another worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import orjson
from pydantic import ValidationError

from openclaw_runtime.backends.steering import SteeringStoreError, SubagentRunRecord
from openclaw_runtime.redaction import contains_secret, package_logger, redact_data
from openclaw_runtime.runner.steering_store import RecordsSteeringStore

from ._atomic import cas_update
from ._conn import RedisConnection
from .live_inbox import DEFAULT_LIVE_TTL_MS, RedisLiveInbox

__all__ = ["RedisSteeringStore"]

T = TypeVar("T")
Runs = dict[str, SubagentRunRecord]
logger = package_logger(logging.getLogger("openclaw_runtime_redis.steering"))

# KEYS: version, runs ; ARGV: expected version, n changed, (run id, record) * n, removed ids...
CAS: Final = """
if (redis.call('GET', KEYS[1]) or '0') ~= ARGV[1] then return 0 end
local n = tonumber(ARGV[2])
for i = 0, n - 1 do redis.call('HSET', KEYS[2], ARGV[3 + 2 * i], ARGV[4 + 2 * i]) end
for i = 3 + 2 * n, #ARGV do redis.call('HDEL', KEYS[2], ARGV[i]) end
redis.call('INCR', KEYS[1])
return 1
"""


def _decode(raw: Mapping[Any, Any]) -> tuple[Runs, dict[str, dict[str, Any]]]:
    runs: Runs = {}
    before: dict[str, dict[str, Any]] = {}
    for key, value in raw.items():
        run_id = key.decode("utf-8", "replace") if isinstance(key, bytes) else str(key)
        try:
            record = SubagentRunRecord.model_validate_json(value)
        except ValidationError as exc:
            # kept in Redis untouched, never dropped; just not offered to the policy
            logger.warning(
                "keeping unreadable steering record %r aside: %s",
                run_id,
                exc.errors()[0].get("msg", "invalid"),
            )
            continue
        runs[run_id] = record
        before[run_id] = record.to_dict()
    return runs, before


def _encode(record: dict[str, Any]) -> bytes:
    payload = orjson.dumps(record)
    if contains_secret(payload):  # sub-agent results are text from models and tools
        payload = orjson.dumps(redact_data(record))
    return payload


class RedisSteeringStore(RecordsSteeringStore):
    """``SteeringStore`` on Redis (see the module doc for the layout and why); ``put`` /
    ``lease`` / ``ack`` / ``release`` come from ``RecordsSteeringStore``: the core's policy."""

    def __init__(self, conn: RedisConnection, *, live_ttl_ms: int = DEFAULT_LIVE_TTL_MS) -> None:
        self.conn = conn
        #: ``Runtime.steer`` / ``follow_up`` to a run of another worker (``live_inbox``)
        self.live_inbox = RedisLiveInbox(conn, ttl_ms=live_ttl_ms)
        self.key = conn.key("steering", "runs")
        self.version_key = conn.key("steering", "ver")
        self._cas = conn.script(CAS)

    def __repr__(self) -> str:
        return f"RedisSteeringStore(key={self.key!r})"

    async def load(self) -> Runs:
        return _decode(await self.conn.client.hgetall(self.key))[0]

    async def update(self, fn: Callable[[Runs], T]) -> T:
        async def read() -> tuple[bytes | None, tuple[Runs, dict[str, dict[str, Any]]]]:
            async with self.conn.client.pipeline(transaction=True) as pipe:
                pipe.get(self.version_key)
                pipe.hgetall(self.key)
                version, raw = await pipe.execute()
            return version, _decode(raw)

        def apply(state: tuple[Runs, dict[str, dict[str, Any]]]) -> tuple[T, Any]:
            runs, before = state
            result = fn(runs)
            after = {run_id: record.to_dict() for run_id, record in runs.items()}
            changed = {k: _encode(v) for k, v in after.items() if before.get(k) != v}
            removed = [k for k in before if k not in after]
            if not changed and not removed:
                return result, None
            return result, (changed, removed)

        async def commit(version: bytes | None, change: Any) -> bool:
            changed, removed = change
            args: list[Any] = [version or b"0", len(changed)]
            for run_id, payload in changed.items():
                args += [run_id, payload]
            args += removed
            return bool(await self._cas(keys=[self.version_key, self.key], args=args))

        try:
            return await cas_update(read, apply, commit, what="steering store")
        except RuntimeError as exc:
            raise SteeringStoreError(str(exc)) from None
