"""Applying a streamed text or thinking delta to the message being streamed.

Providers send every delta with the whole partial message (``partial``), and the loop just
adopts that snapshot. A stream that sends only the delta (a third-party ``stream_fn`` or a
repairer that rebuilds events) would otherwise leave the live message unchanged, so
``message_update`` listeners would show nothing until the end. OpenClaw's loop applies such a
delta itself; ``apply_stream_delta`` is that step, on a copy: the message is never mutated.
"""

from __future__ import annotations

from typing import Any

from ..messages import AssistantMessage, TextContent, ThinkingContent

__all__ = ["apply_stream_delta"]


def apply_stream_delta(message: AssistantMessage, event: Any) -> AssistantMessage | None:
    """``message`` with ``event``'s text/thinking delta appended at its ``content_index``.

    A missing block at that index (or at the end) is created; a block of another kind at the
    index is left alone and the delta appended to a new block of the right kind. Returns None
    for events that carry no applicable delta.
    """
    kind = getattr(event, "type", None)
    delta = getattr(event, "delta", None)
    if kind not in ("text_delta", "thinking_delta") or not isinstance(delta, str):
        return None
    content = list(message.content)
    index = getattr(event, "content_index", None)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        index = len(content) - 1 if content else 0
    block = content[index] if index < len(content) else None
    if kind == "text_delta":
        if isinstance(block, TextContent):
            content[index] = block.model_copy(update={"text": block.text + delta})
        else:
            _put(content, index, block, TextContent(text=delta))
    elif isinstance(block, ThinkingContent):
        content[index] = block.model_copy(update={"thinking": block.thinking + delta})
    else:
        _put(content, index, block, ThinkingContent(thinking=delta))
    return message.model_copy(update={"content": content})


def _put(content: list[Any], index: int, existing: Any, block: Any) -> None:
    if existing is None and index >= len(content):
        content.append(block)
    else:
        content.insert(index + (existing is not None), block)
