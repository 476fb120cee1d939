"""Which assistant messages the tag splitter would hand back unchanged (its fast path).

``split_message_tags`` runs at the end of every assistant message. For a plain reply — no
``<`` anywhere, so no ``<think>``/``<final>`` tag can start — the splitter still walked the
text character by character, rebuilt the content and compared it with the original, only to
return the original. ``splits_to_itself`` says, from the text alone, when that is certain, so
the splitter can return the message at once. It follows the splitter's rules exactly
(``reply.tags``): without a tag the only change the splitter makes to text is dropping the
reply's leading whitespace and empty text blocks; with ``enforce_final_tag`` text outside
``<final>`` is dropped, so nothing is certain. A text block carrying more than its text (a
signature, extra wire fields) is rebuilt without it, so it does not qualify either.
"""

from __future__ import annotations

from ..messages import AssistantMessage, TextContent

__all__ = ["splits_to_itself"]


def splits_to_itself(message: AssistantMessage, *, enforce_final_tag: bool = False) -> bool:
    """True when splitting ``message``'s tags certainly returns ``message`` itself."""
    if enforce_final_tag:
        return False
    first = True
    for block in message.content:
        if not isinstance(block, TextContent):
            continue
        text = block.text
        if not text or "<" in text or block.text_signature is not None or block.model_extra:
            return False
        if first and text[0].isspace():
            return False  # the reply's leading whitespace is dropped
        first = False
    return True
