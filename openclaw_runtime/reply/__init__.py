"""The streamed reply: what of the model's text reaches the user, and in which pieces.

* ``tags`` — ``ReplyTagSplitter``: ``<think>``/``<thinking>``/``<final>`` split out of streamed
  text, incrementally, code-aware (reasoning never reaches the reply);
* ``stream`` — the splitter as a stream transformer (``with_reply_tag_splitting``): inline
  reasoning becomes thinking blocks and thinking events;
* ``chunker`` — ``EmbeddedBlockChunker``: block replies cut at paragraphs, never in a fence;
* ``dedupe`` — ``MessagingToolTracker``: what messaging tools sent during the run;
* ``blocks`` — ``ReplyStreamObserver``: drives the chunker and the tracker from run events.

A policy package: it imports the kernel, ``events``, ``messages`` and ``repair`` only.
See ``docs/replies.md``.
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .blocks import (  # noqa: I001 (packed: a face has at most 100 lines)
        BlockSend, ReplyStreamObserver,
    )
    from .chunker import (
        DEFAULT_BLOCK_MAX_CHARS, DEFAULT_BLOCK_MIN_CHARS, BlockChunking, BreakPreference,
        EmbeddedBlockChunker, FenceSpan, parse_fence_spans,
    )
    from .dedupe import (
        DEFAULT_MESSAGING_TOOLS, MAX_TRACKED_SENDS, MessagingToolTracker, messaging_send_text,
    )
    from .stream import (
        INLINE_TAGS_SIGNATURE, split_message_tags, split_reply_tag_events, with_reply_tag_splitting,
    )
    from .tags import ReplyTagSplitter, Segment, SegmentKind, SplitText, split_reply_tags
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "blocks": "BlockSend ReplyStreamObserver",
    "chunker": (
        "DEFAULT_BLOCK_MAX_CHARS DEFAULT_BLOCK_MIN_CHARS BlockChunking BreakPreference "
        "EmbeddedBlockChunker FenceSpan parse_fence_spans"
    ),
    "dedupe": "DEFAULT_MESSAGING_TOOLS MAX_TRACKED_SENDS MessagingToolTracker messaging_send_text",
    "stream": (
        "INLINE_TAGS_SIGNATURE split_message_tags split_reply_tag_events with_reply_tag_splitting"
    ),
    "tags": "ReplyTagSplitter Segment SegmentKind SplitText split_reply_tags",
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "DEFAULT_BLOCK_MAX_CHARS", "DEFAULT_BLOCK_MIN_CHARS", "DEFAULT_MESSAGING_TOOLS",
    "INLINE_TAGS_SIGNATURE", "MAX_TRACKED_SENDS", "BlockChunking", "BlockSend", "BreakPreference",
    "EmbeddedBlockChunker", "FenceSpan", "MessagingToolTracker", "ReplyStreamObserver",
    "ReplyTagSplitter", "Segment", "SegmentKind", "SplitText", "messaging_send_text",
    "parse_fence_spans", "split_message_tags", "split_reply_tag_events", "split_reply_tags",
    "with_reply_tag_splitting",
]  # fmt: skip
