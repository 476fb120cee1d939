"""A Redis session's flush that fails loses nothing and pushes nothing twice (dur7).

The append script either lands whole or not at all, but its reply can be lost (a dropped
connection, a flush cancelled while it waited): the lines then stay buffered although they
may be in the list already. The next flush must push only what is not there. Checked
against a real Redis: the list holds every line once, in order, and a session opened from it
equals the one in memory.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from openclaw_runtime_redis.sessions import RedisSessionManager, RedisSessionStore
from redis.exceptions import ConnectionError as RedisConnectionError

from openclaw_runtime.messages import UserMessage

pytestmark = pytest.mark.anyio

Script = Callable[..., Awaitable[Any]]


def _reply_lost(script: Script, landed: bool, calls: int = 1) -> Script:
    """The append script's next ``calls`` calls fail with a dropped connection, after the
    script ran (``landed``) or before it was sent."""
    left = [calls]

    async def run(*, keys: list[str], args: list[Any]) -> Any:
        if left[0] <= 0:
            return await script(keys=keys, args=args)
        left[0] -= 1
        if landed:
            await script(keys=keys, args=args)
        raise RedisConnectionError("Connection closed by server.")

    return run


async def _lines(session: RedisSessionManager) -> list[bytes]:
    return list(await session.conn.client.lrange(session.lines_key, 0, -1))


async def _turn(session: RedisSessionManager, *texts: str) -> None:
    for text in texts:
        await session.append_message(UserMessage(content=text, timestamp=len(text)))


async def _check(store: RedisSessionStore, session: RedisSessionManager, count: int) -> None:
    lines = await _lines(session)
    assert len(lines) == len(set(lines)) == count + 1  # the header, then each entry once
    again = await store.open(session.session_id)
    assert again.get_entries() == session.get_entries()
    assert session._pending == []


@pytest.mark.parametrize("landed", [False, True])
@pytest.mark.parametrize("contended", [False, True])
async def test_a_flush_whose_reply_was_lost_pushes_each_line_once(
    redis_conn: Any, landed: bool, contended: bool
) -> None:
    store = RedisSessionStore(redis_conn)
    session = await store.open_or_create("s", cwd="/w")
    await _turn(session, "one")
    await session.flush()
    await _turn(session, "two", "three")
    if contended:  # another worker appended: the flush's conditional push is refused first
        other = await store.open("s")
        await _turn(other, "elsewhere")
        await other.flush()
        # the refused push, then the one after reading the list loses its reply
        real = session._append_script
        lost = _reply_lost(real, landed)
        refused = [True]

        async def first_refused(*, keys: list[str], args: list[Any]) -> Any:
            if refused[0]:
                refused[0] = False
                return await real(keys=keys, args=args)
            return await lost(keys=keys, args=args)

        session._append_script = first_refused
    else:
        session._append_script = _reply_lost(session._append_script, landed)
    pending = list(session._pending)
    with pytest.raises(RedisConnectionError):
        await session.flush()
    assert session._pending == pending  # kept: the push may or may not have landed
    await _turn(session, "four")
    await session.flush()
    await _check(store, session, 5 if contended else 4)


async def test_a_flush_cancelled_while_its_push_waits_for_the_reply_pushes_once(
    redis_conn: Any,
) -> None:
    store = RedisSessionStore(redis_conn)
    session = await store.open_or_create("s", cwd="/w")
    await _turn(session, "one", "two")
    real = session._append_script
    pushed = anyio.Event()

    async def slow_reply(*, keys: list[str], args: list[Any]) -> Any:
        result = await real(keys=keys, args=args)  # landed ...
        pushed.set()
        await anyio.sleep_forever()  # ... but the reply never comes
        return result

    session._append_script = slow_reply
    async with anyio.create_task_group() as group:
        group.start_soon(session.flush)
        await pushed.wait()
        group.cancel_scope.cancel()
    session._append_script = real
    assert len(session._pending) == 2
    await session.flush()
    await _check(store, session, 2)
