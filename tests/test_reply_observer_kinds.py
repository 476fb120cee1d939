"""``ReplyStreamObserver.observes``: the run skips ``observe`` for kinds it answers False for.

For every event kind the runtime defines (each ``Event`` subclass's ``type``), with and
without block replies, an event of that kind carrying everything ``observe`` could read (a
messaging tool's call, a text delta long enough to make a block) is observed by an observer
with a message and a messaging call open; when ``observes(kind)`` is False the observer must
be left exactly as it was (no tracked send, nothing chunked, no block sent). On asyncio and
trio.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import openclaw_runtime.runner.events  # noqa: F401  (the run-level event classes)
from openclaw_runtime.events import Event
from openclaw_runtime.reply import ReplyStreamObserver
from openclaw_runtime.reply.chunker import BlockChunking

pytestmark = pytest.mark.anyio


def _kinds() -> list[str]:
    seen: set[str] = set()
    stack: list[type] = [Event]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        seen.add(cls.type)  # type: ignore[attr-defined]
    return sorted(seen)


KINDS = _kinds()


def _observer(sent: list[str], block_replies: bool) -> ReplyStreamObserver:
    if not block_replies:
        return ReplyStreamObserver()
    return ReplyStreamObserver(send=sent.append, chunking=BlockChunking(min_chars=1, max_chars=20))


def _state(observer: ReplyStreamObserver, sent: list[str]) -> Any:
    chunker = observer.chunker
    return (
        repr(vars(observer.tracker)),
        None if chunker is None else repr(vars(chunker)),
        list(observer.sent_blocks),
        observer.last_block,
        list(sent),
    )


def _loaded(kind: str) -> Any:
    """An event of ``kind`` with every attribute ``observe`` reads, set to act."""
    delta = SimpleNamespace(type="text_delta", delta="Hello there, a block of text. ")
    return SimpleNamespace(
        type=kind,
        tool_call_id="call_1",
        tool_name="message",
        args={"action": "send", "message": "hi"},
        is_error=False,
        assistant_message_event=delta,
    )


def test_every_kind_is_covered() -> None:
    assert {"tool_execution_start", "tool_execution_end", "message_update"} <= set(KINDS)
    assert len(KINDS) > 20


@pytest.mark.parametrize("block_replies", [False, True], ids=["no-blocks", "block-replies"])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_kind_it_does_not_observe_changes_nothing(kind: str, block_replies: bool) -> None:
    sent: list[str] = []
    reference_sent: list[str] = []
    observer = _observer(sent, block_replies)
    reference = _observer(reference_sent, block_replies)
    for prefix in ("message_start", "tool_execution_start"):  # a message and a call open
        await observer.observe(_loaded(prefix))
        await reference.observe(_loaded(prefix))
    await observer.observe(_loaded(kind))
    if not observer.observes(kind):
        assert _state(observer, sent) == _state(reference, reference_sent)


async def test_what_it_observes_it_acts_on() -> None:
    """The table above is not empty-handed: the kinds observed do change the observer."""
    sent: list[str] = []
    blocks = _observer(sent, True)
    for kind in ("message_start", "message_update", "message_end"):
        assert blocks.observes(kind)
        await blocks.observe(_loaded(kind))
    assert sent
    plain = ReplyStreamObserver()
    assert not plain.observes("message_update") and not plain.observes("turn_end")
    for kind in ("tool_execution_start", "tool_execution_end"):
        assert plain.observes(kind)
        before = repr(vars(plain.tracker))
        await plain.observe(_loaded(kind))
        assert repr(vars(plain.tracker)) != before
