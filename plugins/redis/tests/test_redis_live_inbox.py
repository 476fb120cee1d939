"""The Redis live inbox (``RedisLiveInbox``) on a real Redis: ownership as a lease, atomic
drains, redaction, and the same answers as the file inbox."""

from __future__ import annotations

import anyio
import pytest
from openclaw_runtime_redis.live_inbox import RedisLiveInbox, decode_live_messages
from openclaw_runtime_redis.steering import RedisSteeringStore

from openclaw_runtime.backends import LiveInbox, LiveInboxLease
from openclaw_runtime.runner.live_follow import live_inbox_of
from openclaw_runtime.transcript.session_ids import InvalidSessionIdError

pytestmark = pytest.mark.anyio
SECRET = "sk-LIVEINBOXSECRET0123456789abcdef"


async def test_the_redis_steering_store_has_a_leased_live_inbox(redis_conn):
    inbox = live_inbox_of(RedisSteeringStore(redis_conn, live_ttl_ms=9_000))
    assert isinstance(inbox, RedisLiveInbox)
    assert isinstance(inbox, LiveInbox) and isinstance(inbox, LiveInboxLease)
    assert inbox.ttl_ms == 9_000 and inbox.renew_every_s == pytest.approx(3.0)


async def test_push_needs_an_owner_and_take_drains_oldest_first(redis_conn):
    inbox = RedisLiveInbox(redis_conn)
    assert await inbox.push("s1", "steer", "nobody runs") is False
    assert await inbox.owned("s1") is False
    await inbox.open("s1", "run-a")
    assert await inbox.owned("s1") is True
    assert await inbox.take("s1") == []
    assert await inbox.push("s1", "steer", "one") is True
    assert await inbox.push("s1", "follow_up", "two") is True
    assert await inbox.push("s1", "steer", "three") is True
    assert await inbox.take("s1") == [("steer", "one"), ("follow_up", "two"), ("steer", "three")]
    assert await inbox.take("s1") == []  # drained atomically: nothing is handed out twice
    # another session's inbox is separate
    assert await inbox.push("s2", "steer", "elsewhere") is False


async def test_close_returns_late_messages_and_gives_the_inbox_up(redis_conn):
    inbox = RedisLiveInbox(redis_conn)
    await inbox.open("s", "run-a")
    await inbox.push("s", "steer", "late")
    assert await inbox.close("s", "run-a") == [("steer", "late")]
    assert await inbox.owned("s") is False
    assert await inbox.push("s", "steer", "after the end") is False
    owner, box = inbox.keys("s")
    assert await redis_conn.client.exists(owner, box) == 0


async def test_a_run_that_lost_the_inbox_to_a_later_run_leaves_it_alone(redis_conn):
    inbox = RedisLiveInbox(redis_conn)
    await inbox.open("s", "run-a")
    await inbox.open("s", "run-b")  # the next run of the session took over
    await inbox.push("s", "steer", "for b")
    assert await inbox.close("s", "run-a") == []
    assert await inbox.owned("s") is True
    assert await inbox.renew("s", "run-a") is False
    assert await inbox.renew("s", "run-b") is True
    assert await inbox.take("s") == [("steer", "for b")]


async def test_open_drops_what_a_dead_owner_left_unread(redis_conn):
    inbox = RedisLiveInbox(redis_conn)
    await inbox.open("s", "run-dead")
    await inbox.push("s", "steer", "for the dead run")
    await inbox.open("s", "run-next")
    assert await inbox.take("s") == []


async def test_the_lease_expires_when_nobody_renews_it(redis_conn):
    inbox = RedisLiveInbox(redis_conn, ttl_ms=150)
    await inbox.open("s", "run-a")
    await inbox.push("s", "steer", "queued while alive")
    # Redis expires the key on its own clock: poll it with a deadline
    with anyio.fail_after(10):
        while await inbox.owned("s"):  # noqa: ASYNC110 - the state is in Redis, not an event
            await anyio.sleep(0.02)
    assert await inbox.push("s", "steer", "too late") is False
    owner, box = inbox.keys("s")
    assert await redis_conn.client.exists(owner, box) == 0  # the inbox expired with its owner


async def test_renew_and_take_extend_the_lease(redis_conn):
    inbox = RedisLiveInbox(redis_conn, ttl_ms=60_000)
    await inbox.open("s", "run-a")
    owner, box = inbox.keys("s")
    await inbox.push("s", "steer", "x")
    await redis_conn.client.pexpire(owner, 1_000)
    assert await inbox.take("s") == [("steer", "x")]
    assert await redis_conn.client.pttl(owner) > 1_000
    await redis_conn.client.pexpire(owner, 1_000)
    await inbox.push("s", "steer", "y")
    assert await inbox.renew("s", "run-a") is True
    assert await redis_conn.client.pttl(owner) > 1_000 and await redis_conn.client.pttl(box) > 1_000
    # renewing after a lapse takes the lease again (the session lane keeps other runs out)
    await redis_conn.client.delete(owner)
    assert await inbox.renew("s", "run-a") is True
    assert await inbox.owned("s") is True


async def test_text_is_redacted_before_it_reaches_redis(redis_conn):
    inbox = RedisLiveInbox(redis_conn)
    await inbox.open("s", "run-a")
    await inbox.push("s", "steer", f"use key {SECRET} please")
    _owner, box = inbox.keys("s")
    raw = b"".join(await redis_conn.client.lrange(box, 0, -1))
    assert SECRET.encode() not in raw
    ((kind, text),) = await inbox.take("s")
    assert kind == "steer" and SECRET not in text and text.startswith("use key ")


async def test_damaged_items_are_skipped(redis_conn):
    inbox = RedisLiveInbox(redis_conn)
    await inbox.open("s", "run-a")
    _owner, box = inbox.keys("s")
    await redis_conn.client.rpush(box, b"{not json", b'{"kind": "shout", "text": "x"}')
    await inbox.push("s", "follow_up", "kept")
    assert await inbox.take("s") == [("follow_up", "kept")]


def test_decode_table():
    assert decode_live_messages([b'{"kind":"steer","text":"a"}', b"[]", b'{"kind":"steer"}']) == [
        ("steer", "a")
    ]


async def test_bad_input_gets_a_clear_error(redis_conn):
    inbox = RedisLiveInbox(redis_conn)
    with pytest.raises(InvalidSessionIdError):
        await inbox.push("../x", "steer", "t")
    with pytest.raises(ValueError, match="'steer' or 'follow_up'"):
        await inbox.push("s", "shout", "t")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 100 ms"):
        RedisLiveInbox(redis_conn, ttl_ms=5)
