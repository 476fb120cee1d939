"""The auth ledger and the steering store on a real Redis, through the core's policy."""

from __future__ import annotations

import anyio
import pytest
from openclaw_runtime_redis.ledger import RedisAuthProfileStore
from openclaw_runtime_redis.steering import RedisSteeringStore

from openclaw_runtime.auth import (
    AuthProfile,
    mark_auth_profile_failure,
    mark_auth_profile_success,
)
from openclaw_runtime.auth.cooldown import clear_expired_cooldowns, is_profile_in_cooldown
from openclaw_runtime.runner.steering import (
    MAX_MERGED_STEERING_CHARS,
    STALE_STEERING_LEASE_MS,
    SubagentRunRecord,
    ack_leased_agent_steering_items,
    lease_pending_agent_steering_items,
    release_leased_agent_steering_items,
    upsert_subagent_run,
    utf16_length,
)

pytestmark = pytest.mark.anyio
NOW = 1_700_000_000_000
SECRET = "sk-REDIS-LEDGER-SECRET-1234"
REQUESTER = "agent:main:main"


def profiles() -> list[AuthProfile]:
    return [
        AuthProfile(id="openai:a", provider="openai", mode="api_key", credential=SECRET),
        AuthProfile(id="anthropic:c", provider="anthropic", mode="token", credential=SECRET),
    ]


async def test_cooldown_ladder_and_widening_are_shared_between_two_stores(redis_conn):
    one = RedisAuthProfileStore(redis_conn, profiles=profiles())
    two = RedisAuthProfileStore(redis_conn, profiles=profiles())  # another worker
    entry = await mark_auth_profile_failure(
        one, "openai:a", "rate_limit", model_id="gpt-5", now_ms=NOW
    )
    assert entry.cooldown_until == NOW + 30_000 and entry.cooldown_model == "gpt-5"
    seen = (await two.load()).stats_for("openai:a")
    assert is_profile_in_cooldown(seen, "gpt-5", NOW + 1)
    assert not is_profile_in_cooldown(seen, "gpt-4o", NOW + 1)  # model-scoped
    entry = await mark_auth_profile_failure(two, "openai:a", "auth", now_ms=NOW + 1)
    assert entry.error_count == 2 and entry.cooldown_model is None  # widened
    # non-extendable active window: a third failure inside the window keeps its end
    entry3 = await mark_auth_profile_failure(one, "openai:a", "auth", now_ms=NOW + 2)
    assert entry3.cooldown_until == entry.cooldown_until
    await mark_auth_profile_success(one, "openai:a", now_ms=NOW + 3)
    assert dict((await two.load()).last_good) == {"openai": "openai:a"}


async def test_billing_disable_and_clear_expired_cooldowns(redis_conn):
    store = RedisAuthProfileStore(redis_conn, profiles=profiles())
    entry = await mark_auth_profile_failure(store, "anthropic:c", "billing", now_ms=NOW)
    assert entry.disabled_until == NOW + 600_000
    later = NOW + 600_001
    state = await store.update(lambda s: clear_expired_cooldowns(s, later))
    assert state.stats_for("anthropic:c").disabled_until is None


async def test_concurrent_failures_from_many_clients_lose_nothing(redis_url, redis_prefix):
    from openclaw_runtime_redis import RedisConnection

    conns = [RedisConnection.from_url(redis_url, prefix=redis_prefix) for _ in range(5)]
    try:
        stores = [RedisAuthProfileStore(c, profiles=profiles()) for c in conns]
        async with anyio.create_task_group() as tg:
            for i in range(30):
                tg.start_soon(
                    lambda s=stores[i % 5]: mark_auth_profile_failure(
                        s, "openai:a", "auth", now_ms=NOW
                    )
                )
        entry = (await stores[0].load()).stats_for("openai:a")
        assert entry.error_count == 30 and entry.failure_count("auth") == 30
    finally:
        for c in conns:
            await c.aclose()


async def test_credentials_never_reach_redis(redis_conn):
    store = RedisAuthProfileStore(redis_conn, profiles=profiles())
    await mark_auth_profile_failure(store, "openai:a", "auth", now_ms=NOW)
    raw = await redis_conn.client.get(store.key)
    assert b"usageStats" in raw and SECRET.encode() not in raw and b"profiles" not in raw


def make_run(run_id: str, text: str = "done", *, ended_at: int = 2_000) -> SubagentRunRecord:
    record = SubagentRunRecord.completed(
        run_id=run_id,
        requester_session_key=REQUESTER,
        created_at=1_000,
        ended_at=ended_at,
        task="inspect",
        result_text=text,
    )
    record.delivery.created_at = ended_at + 1
    return record


async def test_steering_lease_ack_release_and_stale_reclaim(redis_conn):
    store = RedisSteeringStore(redis_conn)
    other = RedisSteeringStore(redis_conn)
    for i in range(3):
        await upsert_subagent_run(store, make_run(f"run-{i}", ended_at=2_000 + i))
    first = await lease_pending_agent_steering_items(store, REQUESTER, 3_000)
    assert first is not None and first.run_ids == ("run-0", "run-1", "run-2")
    # leased items are invisible to another worker's lease until the lease goes stale
    assert await lease_pending_agent_steering_items(other, REQUESTER, 3_001) is None
    # the first worker "dies": after 5 minutes the items are reclaimed, once
    late = 3_000 + STALE_STEERING_LEASE_MS + 1
    second = await lease_pending_agent_steering_items(other, REQUESTER, late)
    assert second is not None and second.run_ids == first.run_ids
    # the zombie's ack changes nothing; the new owner's ack delivers
    assert await ack_leased_agent_steering_items(store, first, now_ms=late) == 0
    assert await ack_leased_agent_steering_items(other, second, now_ms=late) == 3
    assert await lease_pending_agent_steering_items(store, REQUESTER, late + 1) is None
    runs = await store.load()
    assert {r.delivery.status for r in runs.values()} == {"delivered"}


async def test_release_returns_items_and_the_prompt_stays_bounded(redis_conn):
    store = RedisSteeringStore(redis_conn)
    for i in range(8):
        await upsert_subagent_run(store, make_run(f"run-{i}", "x" * 5_900, ended_at=2_000 + i))
    lease = await lease_pending_agent_steering_items(store, REQUESTER, 3_000)
    assert lease is not None and 1 <= len(lease.run_ids) < 8
    assert utf16_length(lease.prompt) <= MAX_MERGED_STEERING_CHARS
    assert await release_leased_agent_steering_items(store, lease) == len(lease.run_ids)
    again = await lease_pending_agent_steering_items(store, REQUESTER, 3_001)
    assert again is not None and again.run_ids == lease.run_ids


async def test_concurrent_leases_never_hand_out_an_item_twice(redis_url, redis_prefix):
    from openclaw_runtime_redis import RedisConnection

    conns = [RedisConnection.from_url(redis_url, prefix=redis_prefix) for _ in range(4)]
    try:
        stores = [RedisSteeringStore(c) for c in conns]
        for i in range(12):
            await upsert_subagent_run(
                stores[0], make_run(f"run-{i:02}", "y" * 5_000, ended_at=2_000 + i)
            )
        got: list[str] = []

        async def worker(store: RedisSteeringStore) -> None:
            while True:
                lease = await lease_pending_agent_steering_items(store, REQUESTER, 3_000)
                if lease is None:
                    return
                got.extend(lease.run_ids)
                await ack_leased_agent_steering_items(store, lease, now_ms=3_000)

        async with anyio.create_task_group() as tg:
            for store in stores:
                tg.start_soon(worker, store)
        assert sorted(got) == [f"run-{i:02}" for i in range(12)]
    finally:
        for c in conns:
            await c.aclose()
