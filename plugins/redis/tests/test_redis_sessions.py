"""Sessions on Redis: continuable from any worker, fenced appends, byte-compatible export."""

from __future__ import annotations

import pytest
from openclaw_runtime_redis import (
    RedisConnection,
    RedisLanes,
    StaleFencingTokenError,
    current_fences,
)
from openclaw_runtime_redis.sessions import RedisSessionIndex, RedisSessionStore

from openclaw_runtime import TranscriptError
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.transcript.jsonl import encode_record
from openclaw_runtime.transcript.store import JsonlSessionStore

pytestmark = pytest.mark.anyio


def user(text: str) -> UserMessage:
    return UserMessage(content=text)


def texts(manager) -> list[str]:
    out = []
    for entry in manager.get_branch():
        if entry["type"] == "message":
            content = entry["message"]["content"]
            out.append(content if isinstance(content, str) else content[0]["text"])
    return out


@pytest.mark.parametrize("durability", ["none", "flush"])
async def test_two_workers_continue_one_session(redis_conn, durability):
    a = RedisSessionStore(redis_conn, durability=durability)
    b = RedisSessionStore(redis_conn, durability=durability)
    one = await a.open_or_create("s1", cwd="/w")
    await one.append_message(user("first"))
    await one.flush()
    two = await b.open_or_create("s1", cwd="/w")
    assert texts(two) == ["first"]
    await two.append_message(user("second"))
    await two.flush()
    # the first worker sees the second's turn and chains onto it, never forking
    assert await one.refresh() is True
    await one.append_message(user("third"))
    await one.flush()
    fresh = await b.open("s1")
    assert texts(fresh) == ["first", "second", "third"]
    assert await one.refresh() is False  # nothing new: one round trip, no reload


async def test_unsynchronised_appends_are_joined_not_forked(redis_conn):
    store = RedisSessionStore(redis_conn, durability="flush")
    one = await store.open_or_create("s2", cwd="/w")
    two = await store.open("s2")
    await one.append_message(user("a"))
    await two.append_message(user("b"))  # did not see "a": re-reads the tail, then appends
    reopened = await store.open("s2")
    assert texts(reopened) == ["a", "b"]


async def test_a_stale_fencing_token_cannot_append(redis_url, redis_prefix):
    conn = RedisConnection.from_url(redis_url, prefix=redis_prefix)
    try:
        lanes = RedisLanes(conn)
        store = RedisSessionStore(conn, durability="flush")
        async with lanes.hold("session:k"):
            session = await store.open_or_create("s3", cwd="/w")
            await session.append_message(user("mine"))
            (fence,) = current_fences()
            # the lease expires / is taken over behind this worker's back
            await conn.client.hset(fence.tokens_key, fence.lease_id, fence.token + 1)
            with pytest.raises(StaleFencingTokenError):
                await session.append_message(user("late"))
            with pytest.raises(StaleFencingTokenError):
                await session.rewrite_entries(session.get_entries())
            await conn.client.hset(fence.tokens_key, fence.lease_id, fence.token)
        assert texts(await store.open("s3")) == ["mine"]
    finally:
        await conn.aclose()


async def test_export_is_byte_compatible_with_the_file_store(redis_conn, tmp_path):
    store = RedisSessionStore(redis_conn, durability="flush")
    session = await store.create("s4", cwd="/w")
    await session.append_message(user("hello ünïcode"))
    await session.append_model_change("openai", "gpt-5")
    await session.append_message(user("again"))
    exported = await store.export_jsonl("s4")
    # what the file store writes for the same entries: header + one encode_record line each
    assert exported == b"".join(encode_record(r) for r in [session.header, *session.get_entries()])
    (tmp_path / "s4.jsonl").write_bytes(exported)
    files = JsonlSessionStore(tmp_path)
    opened = await files.open("s4")
    assert opened.repair_report.repaired is False
    assert opened.get_entries() == session.get_entries()
    assert (tmp_path / "s4.jsonl").read_bytes() == exported  # nothing needed repairing
    # and back: a file session imported into Redis exports to the same bytes
    await opened.append_message(user("from a file"))
    await opened.aclose()
    other = RedisSessionStore(
        RedisConnection.from_url(redis_conn.settings.url, prefix=redis_conn.prefix + "imp:")
    )
    try:
        assert await other.import_jsonl((tmp_path / "s4.jsonl").read_bytes()) == "s4"
        assert await other.export_jsonl("s4") == (tmp_path / "s4.jsonl").read_bytes()
    finally:
        await other.conn.aclose()


async def test_rewrite_is_seen_by_other_workers(redis_conn):
    store = RedisSessionStore(redis_conn, durability="flush")
    one = await store.create("s5", cwd="/w")
    for word in ("a", "b", "c"):
        await one.append_message(user(word))
    two = await store.open("s5")
    await one.rewrite_entries(one.get_entries()[:1])
    assert await two.refresh() is True
    assert texts(two) == ["a"]
    await two.append_message(user("d"))
    assert texts(await store.open("s5")) == ["a", "d"]


async def test_missing_and_duplicate_sessions_are_clear_errors(redis_conn):
    store = RedisSessionStore(redis_conn)
    with pytest.raises(TranscriptError, match="does not exist"):
        await store.open("nope")
    await store.create("dup", cwd="/w")
    with pytest.raises(TranscriptError, match="already exists"):
        await store.create("dup", cwd="/w")
    with pytest.raises(TranscriptError):
        await store.open("../etc/passwd")
    assert await store.list_ids() == ["dup"]


async def test_session_index_claim_is_first_writer_wins(redis_conn):
    one = RedisSessionIndex(redis_conn)
    two = RedisSessionIndex(redis_conn)
    assert await one.claim("telegram:1", "sid-a") == "sid-a"
    assert await two.claim("telegram:1", "sid-b") == "sid-a"
    await two.bind("telegram:2", "sid-a")
    assert await one.lookup_id("telegram:2") == "sid-a"
    assert await one.lookup_key("sid-a") in {"telegram:1", "telegram:2"}
    assert set(await one.entries()) == {"telegram:1", "telegram:2"}


def test_one_connection_survives_a_second_event_loop(redis_url, redis_prefix):
    # the CLI runs several anyio.run calls against one runtime: the scripts follow the pool
    import anyio

    conn = RedisConnection.from_url(redis_url, prefix=redis_prefix)
    store = RedisSessionStore(conn, durability="flush")

    async def first() -> None:
        session = await store.create("loops", cwd="/w")
        await session.append_message(user("one"))
        await conn.aclose()  # a pool belongs to its loop: closed before the loop ends

    async def second() -> list[str]:
        try:
            return texts(await store.open("loops"))
        finally:
            await conn.aclose()

    anyio.run(first)
    assert anyio.run(second) == ["one"]


def test_on_trio_the_backends_fail_with_a_clear_error(redis_url, redis_prefix):
    import anyio

    from openclaw_runtime import ConfigurationError

    conn = RedisConnection.from_url(redis_url, prefix=redis_prefix)

    async def on_trio() -> None:
        await RedisSessionStore(conn).exists("s")

    with pytest.raises(ConfigurationError, match="asyncio only"):
        anyio.run(on_trio, backend="trio")
