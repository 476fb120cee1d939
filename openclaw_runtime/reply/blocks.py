"""Block replies and messaging-tool tracking, driven by the run's events.

``ReplyStreamObserver.observe(event)`` sees every event a run emits (after the tag splitter,
so text deltas carry no reasoning):

* ``tool_execution_start``/``_end`` feed the ``MessagingToolTracker``;
* with block streaming on, reply text deltas go into an ``EmbeddedBlockChunker`` whose ready
  chunks are sent at once, and the rest is flushed at the end of each text block
  (``text_end``; OpenClaw's default ``blockReplyBreak``) and at ``message_end``;
* a chunk is sent as OpenClaw's ``emitBlockChunk`` does (spec 004 §4.2): trailing whitespace
  trimmed; dropped when blank, when equal to the previous block reply, or when it repeats a
  committed messaging-tool send (``is_duplicate``); otherwise handed to ``send``.

The chunker state is reset with each new assistant message. ``send`` (which turns a chunk into
a reply payload) and ``is_duplicate`` are given by the runner, so this module stays pure policy.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from ..events import Event
from .chunker import BlockChunking, EmbeddedBlockChunker
from .dedupe import MessagingToolTracker

__all__ = ["BlockSend", "ReplyStreamObserver"]

_TOOL_KINDS = frozenset({"tool_execution_start", "tool_execution_end"})
_MESSAGE_KINDS = frozenset({"message_start", "message_update", "message_end"})
_TOOL_AND_MESSAGE_KINDS = _TOOL_KINDS | _MESSAGE_KINDS

#: Sends one block reply's text (sync or async).
BlockSend = Callable[[str], Awaitable[None] | None]


class ReplyStreamObserver:
    """Per-run observer: messaging sends always, block replies when ``send`` is given."""

    def __init__(
        self,
        *,
        tracker: MessagingToolTracker | None = None,
        send: BlockSend | None = None,
        chunking: BlockChunking | None = None,
        is_duplicate: Callable[[str, list[str]], bool] | None = None,
    ) -> None:
        self.tracker = tracker or MessagingToolTracker()
        self.send = send
        self.chunker = EmbeddedBlockChunker(chunking) if send is not None else None
        self.is_duplicate = is_duplicate
        self.last_block: str | None = None
        self.sent_blocks: list[str] = []
        #: the kinds ``observes`` answers yes for (the run reads the set itself: one look-up
        #: per event instead of a method call)
        self.observed_kinds = _TOOL_KINDS if self.chunker is None else _TOOL_AND_MESSAGE_KINDS

    def observes(self, kind: str) -> bool:
        """Can ``observe`` act on an event of ``kind``? (No: the run need not call it; most of
        a tool loop's events are neither tool executions nor, without block replies, text.)"""
        return kind in self.observed_kinds

    async def observe(self, event: Event) -> None:
        """Track one run event (see the module docstring)."""
        kind = event.type
        if kind == "tool_execution_start":
            self.tracker.tool_started(
                getattr(event, "tool_call_id", ""), getattr(event, "tool_name", ""),
                getattr(event, "args", None),
            )  # fmt: skip
            return
        if kind == "tool_execution_end":
            self.tracker.tool_ended(
                getattr(event, "tool_call_id", ""), is_error=bool(getattr(event, "is_error", False))
            )
            return
        chunker = self.chunker
        if chunker is None:
            return
        if kind == "message_start":
            chunker.reset()
        elif kind == "message_update":
            inner: Any = getattr(event, "assistant_message_event", None)
            inner_kind = getattr(inner, "type", None)
            if inner_kind == "text_delta":
                chunker.append(inner.delta)
                await self._send_all(chunker.drain())
            elif inner_kind == "text_end":
                await self._send_all(chunker.drain(force=True))
        elif kind == "message_end":
            await self._send_all(chunker.drain(force=True))

    async def _send_all(self, chunks: list[str]) -> None:
        for chunk in chunks:
            await self._send_one(chunk)

    async def _send_one(self, chunk: str) -> None:
        text = chunk.rstrip()
        if not text.strip() or text == self.last_block:
            return
        if self.is_duplicate is not None and self.is_duplicate(text, self.tracker.sent_texts):
            return
        self.last_block = text
        self.sent_blocks.append(text)
        assert self.send is not None
        result = self.send(text)
        if inspect.isawaitable(result):
            await result
