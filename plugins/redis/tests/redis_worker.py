"""A separate worker process for the multi-process Redis tests (run as a script).

python redis_worker.py lane URL PREFIX SESSION TEXT LEASE_MS RENEW_S
    holds the session lane, prints ``HELD <token>``, waits for a line on stdin, appends TEXT
    to the session, prints ``APPENDED`` or ``REFUSED <error class>``.
python redis_worker.py steer URL PREFIX REQUESTER NOW_MS
    leases the requester's steering items, prints ``LEASED <run ids>``, then waits forever.
"""

from __future__ import annotations

import sys

import anyio
from openclaw_runtime_redis import RedisConnection, RedisLanes, current_fences
from openclaw_runtime_redis.sessions import RedisSessionStore
from openclaw_runtime_redis.steering import RedisSteeringStore

from openclaw_runtime import OpenClawRuntimeError
from openclaw_runtime.messages import UserMessage


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def lane(url: str, prefix: str, session: str, text: str, lease_ms: str, renew: str) -> None:
    conn = RedisConnection.from_url(url, prefix=prefix)
    lanes = RedisLanes(conn, lease_ms=int(lease_ms), renew_every_s=float(renew))
    store = RedisSessionStore(conn, durability="flush")
    try:
        async with lanes.hold(f"session:{session}"):
            manager = await store.open_or_create(session, cwd="/w")
            say(f"HELD {current_fences()[0].token}")
            await anyio.to_thread.run_sync(sys.stdin.readline)
            await manager.append_message(UserMessage(content=text))
            say("APPENDED")
    except OpenClawRuntimeError as exc:
        say(f"REFUSED {type(exc).__name__}")
    finally:
        await conn.aclose()


async def steer(url: str, prefix: str, requester: str, now_ms: str) -> None:
    conn = RedisConnection.from_url(url, prefix=prefix)
    lease = await RedisSteeringStore(conn).lease(requester, now_ms=float(now_ms))
    say("LEASED " + ",".join(lease.run_ids if lease else ()))
    await anyio.sleep(3600)


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    anyio.run({"lane": lane, "steer": steer}[mode], *args)
