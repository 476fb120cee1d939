"""Separate worker processes on one Redis: dead holders, stalled holders, dead steering leases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from openclaw_runtime_redis import RedisLanes, current_fences
from openclaw_runtime_redis.sessions import RedisSessionStore
from openclaw_runtime_redis.steering import RedisSteeringStore

from openclaw_runtime.messages import UserMessage
from openclaw_runtime.runner.steering import STALE_STEERING_LEASE_MS, SubagentRunRecord

pytestmark = pytest.mark.anyio
WORKER = str(Path(__file__).with_name("redis_worker.py"))


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, WORKER, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def close(process: subprocess.Popen[str]) -> None:
    """Kill (if alive, resuming a stopped one first), reap, close the pipes."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGCONT)
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()


async def read_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    with anyio.fail_after(60):
        return (await anyio.to_thread.run_sync(process.stdout.readline)).strip()


def texts(manager) -> list[str]:
    return [e["message"]["content"] for e in manager.get_branch() if e["type"] == "message"]


async def test_kill_9_lease_holder_next_worker_continues(redis_conn, redis_url, redis_prefix):
    dead = spawn("lane", redis_url, redis_prefix, "s", "never", "600", "0.2")
    try:
        held = await read_line(dead)
        assert held.startswith("HELD ")
        dead.kill()  # SIGKILL while holding the session lease
        dead.wait()
        lanes = RedisLanes(redis_conn, lease_ms=600)
        store = RedisSessionStore(redis_conn, durability="flush")
        with anyio.fail_after(30):
            async with lanes.hold("session:s"):
                (fence,) = current_fences()
                assert fence.token > int(held.split()[1])
                session = await store.open_or_create("s", cwd="/w")
                await session.append_message(UserMessage(content="next"))
        assert texts(await store.open("s")) == ["next"]
    finally:
        close(dead)


async def test_zombie_with_a_stalled_heartbeat_cannot_write_late(
    redis_conn, redis_url, redis_prefix
):
    # the zombie holds the lane but its lease renewal stalls (renews once an hour)
    zombie = spawn("lane", redis_url, redis_prefix, "z", "zombie", "500", "3600")
    try:
        assert (await read_line(zombie)).startswith("HELD ")
        os.kill(zombie.pid, signal.SIGSTOP)  # and the process itself stalls
        lanes = RedisLanes(redis_conn, lease_ms=500)
        store = RedisSessionStore(redis_conn, durability="flush")
        with anyio.fail_after(30):
            async with lanes.hold("session:z"):
                session = await store.open_or_create("z", cwd="/w")
                await session.append_message(UserMessage(content="successor"))
        os.kill(zombie.pid, signal.SIGCONT)
        assert zombie.stdin is not None
        zombie.stdin.write("go\n")
        zombie.stdin.flush()
        assert await read_line(zombie) == "REFUSED StaleFencingTokenError"
        assert texts(await store.open("z")) == ["successor"]
    finally:
        close(zombie)


async def test_kill_9_steering_lease_items_are_reclaimed_once(redis_conn, redis_url, redis_prefix):
    store = RedisSteeringStore(redis_conn)
    for i in range(3):
        record = SubagentRunRecord.completed(
            run_id=f"run-{i}",
            requester_session_key="req",
            created_at=1_000,
            ended_at=2_000 + i,
            task="t",
            result_text=f"result {i}",
        )
        await store.put(record)
    dead = spawn("steer", redis_url, redis_prefix, "req", "3000")
    try:
        assert await read_line(dead) == "LEASED run-0,run-1,run-2"
        dead.kill()
        dead.wait()
        assert await store.lease("req", now_ms=3_001) is None  # still leased (not stale yet)
        later = 3_000 + STALE_STEERING_LEASE_MS + 1
        lease = await store.lease("req", now_ms=later)
        assert lease is not None and lease.run_ids == ("run-0", "run-1", "run-2")
        assert await store.ack(lease, now_ms=later) == 3
        assert await store.lease("req", now_ms=later + STALE_STEERING_LEASE_MS * 2) is None
    finally:
        close(dead)
