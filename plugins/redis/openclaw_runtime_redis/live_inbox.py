"""Live messages across machines: a run's inbox on Redis, owned under a lease.

``Runtime.steer`` / ``follow_up`` in one worker must reach a run that another worker (maybe on
another machine) holds. The file inbox (``runner.live_inbox``) proves its owner alive by pid,
which means nothing on another host; here ownership is a **lease**: the owner key holds the
run id with a TTL, renewed while the run lives (at every turn boundary, for free, and every
third of the TTL by the run's renewal task, ``LiveInboxLease``, for long turns). A worker
killed with ``kill -9`` stops renewing, the key expires, and a later ``steer`` is refused
``no_active_run`` instead of being queued for a run that will never read it.

Two keys per session, ``<prefix>live:<session>:owner`` (the run id, ``PX`` TTL) and
``<prefix>live:<session>:inbox`` (a list of ``{"kind", "text"}`` JSON, oldest first, expiring
with its owner). Every operation is one Lua script, so it is atomic and one round trip:
``push`` appends only while the owner key exists; ``take`` returns and deletes the list (an
empty list costs one round trip and no write). Text is redacted before it reaches Redis, like
everything the steering store keeps.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Literal

import orjson
from redis.exceptions import RedisError

from openclaw_runtime.backends.steering import SteeringStoreError
from openclaw_runtime.redaction import package_logger, redact
from openclaw_runtime.transcript import validate_session_id

from ._conn import RedisConnection

__all__ = ["DEFAULT_LIVE_TTL_MS", "RedisLiveInbox", "decode_live_messages"]

logger = package_logger(logging.getLogger("openclaw_runtime_redis.live_inbox"))

LiveKind = Literal["steer", "follow_up"]
LiveMessage = tuple[LiveKind, str]

#: How long an owner lease lasts without renewal (the lanes' default lease, 30 s).
DEFAULT_LIVE_TTL_MS: Final = 30_000

# KEYS: owner, inbox ; ARGV: run id, ttl ms -> messages dropped (left by an owner that died)
OPEN: Final = """
local dropped = redis.call('LLEN', KEYS[2])
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return dropped
"""

# KEYS: owner, inbox ; ARGV: run id ('' = do not renew), ttl ms -> the messages, oldest first
TAKE: Final = """
local items = redis.call('LRANGE', KEYS[2], 0, -1)
if #items > 0 then redis.call('DEL', KEYS[2]) end
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return items
"""

# KEYS: owner, inbox ; ARGV: message -> 1 queued, 0 no owner
PUSH: Final = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
"""

# KEYS: owner, inbox ; ARGV: run id, ttl ms -> 1 renewed (or re-taken after a lapse), 0 lost
RENEW: Final = """
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
"""

# KEYS: owner, inbox ; ARGV: run id -> the messages that arrived after the last take
CLOSE: Final = """
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return {} end
redis.call('DEL', KEYS[1])
local items = redis.call('LRANGE', KEYS[2], 0, -1)
redis.call('DEL', KEYS[2])
return items
"""


def encode_live_message(kind: LiveKind, text: str) -> bytes:
    """One inbox item: the kind and the redacted text."""
    return orjson.dumps({"kind": kind, "text": redact(text)})


def decode_live_messages(items: list[Any]) -> list[LiveMessage]:
    """The inbox items as ``(kind, text)``, oldest first; damaged items are skipped (logged)."""
    out: list[LiveMessage] = []
    for raw in items:
        try:
            item = orjson.loads(raw)
        except orjson.JSONDecodeError:
            logger.warning("skipping a damaged item of a live-message inbox")
            continue
        kind = item.get("kind") if isinstance(item, dict) else None
        text = item.get("text") if isinstance(item, dict) else None
        if kind in ("steer", "follow_up") and isinstance(text, str):
            out.append((kind, text))
        else:
            logger.warning("skipping a live-message inbox item without kind and text")
    return out


class RedisLiveInbox:
    """The ``LiveInbox`` of the Redis steering store (see the module docstring)."""

    def __init__(self, conn: RedisConnection, *, ttl_ms: int = DEFAULT_LIVE_TTL_MS) -> None:
        if not isinstance(ttl_ms, int) or ttl_ms < 100:
            raise ValueError(f"the live-inbox lease must be at least 100 ms, got {ttl_ms!r}")
        self.conn = conn
        self.ttl_ms = ttl_ms
        #: seconds between two renewals while a run is live (a third of the lease)
        self.renew_every_s = ttl_ms / 3000
        #: session id -> the run id this process opened it for (renewed at every ``take``)
        self._runs: dict[str, str] = {}
        self._open = conn.script(OPEN)
        self._take = conn.script(TAKE)
        self._push = conn.script(PUSH)
        self._renew = conn.script(RENEW)
        self._close = conn.script(CLOSE)

    def __repr__(self) -> str:
        return f"RedisLiveInbox(prefix={self.conn.prefix!r}, ttl_ms={self.ttl_ms})"

    def keys(self, session_id: str) -> list[str]:
        """``[owner, inbox]`` of ``session_id`` (a clear error for an invalid id)."""
        name = validate_session_id(session_id)
        return [self.conn.key("live", name, "owner"), self.conn.key("live", name, "inbox")]

    async def _call(self, script: Any, session_id: str, args: list[Any]) -> Any:
        keys = self.keys(session_id)
        try:
            return await script(keys=keys, args=args)
        except (RedisError, OSError) as exc:
            raise SteeringStoreError(
                f"cannot use the live-message inbox on Redis: {type(exc).__name__}"
            ) from None

    # the owner ---------------------------------------------------------------------------------

    async def open(self, session_id: str, run_id: str) -> None:
        """This worker's run of ``session_id`` owns the inbox from now on (lease of
        ``ttl_ms``); messages a dead owner left unread are dropped (they were for that run)."""
        dropped = await self._call(self._open, session_id, [run_id, self.ttl_ms])
        self._runs[session_id] = run_id
        if dropped:
            logger.warning(
                "dropped %d live message(s) left for an earlier run of session %s",
                int(dropped),
                session_id,
            )

    async def take(self, session_id: str) -> list[LiveMessage]:
        """The messages that arrived, oldest first (emptying the inbox); renews the lease."""
        run_id = self._runs.get(session_id, "")
        items = await self._call(self._take, session_id, [run_id, self.ttl_ms])
        return decode_live_messages(items) if items else []

    async def renew(self, session_id: str, run_id: str) -> bool:
        """Extend the lease (or take it again after a lapse: the session lane still keeps
        other runs out); False when another run owns it."""
        return bool(await self._call(self._renew, session_id, [run_id, self.ttl_ms]))

    async def close(self, session_id: str, run_id: str) -> list[LiveMessage]:
        """The run ended: give the inbox up (if this run still owns it); returns what arrived
        after the last ``take``."""
        if self._runs.get(session_id) == run_id:
            del self._runs[session_id]
        items = await self._call(self._close, session_id, [run_id])
        return decode_live_messages(items) if items else []

    # everyone else -----------------------------------------------------------------------------

    async def push(self, session_id: str, kind: LiveKind, text: str) -> bool:
        """Append a message for the run that owns the inbox; False when no unexpired lease
        exists (no run, or its worker died and the lease lapsed)."""
        if kind not in ("steer", "follow_up"):
            raise ValueError(f"a live message is 'steer' or 'follow_up', got {kind!r}")
        pushed = await self._call(self._push, session_id, [encode_live_message(kind, text)])
        return bool(pushed)

    async def owned(self, session_id: str) -> bool:
        """Does an unexpired lease hold the inbox of ``session_id`` (a run is active)?"""
        owner = self.keys(session_id)[0]
        try:
            return bool(await self.conn.client.exists(owner))
        except (RedisError, OSError) as exc:
            raise SteeringStoreError(
                f"cannot use the live-message inbox on Redis: {type(exc).__name__}"
            ) from None
