"""Blank user turns are given their stand-in text on replay, not on disk.

OpenClaw's file repair rewrites a user message whose content is blank to ``(continue)``
(``BLANK_USER_FALLBACK_TEXT``): strict providers reject an empty user turn, and dropping the
turn could leave no user role at all. A file OpenClaw wrote is valid as written, though, so the
store's loader keeps such a line byte for byte and this stage does the same rewrite in memory,
on every replay (the ``blank_user_turns`` sanitizer): blank content becomes ``(continue)``,
blank text blocks beside images are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import TextContent
from .repair import BLANK_USER_FALLBACK_TEXT
from .wire import role_of, wget

__all__ = ["fill_blank_user_content", "fill_blank_user_turns"]


def _is_blank_text(block: Any) -> bool:
    if wget(block, "type") != "text":
        return False
    text = wget(block, "text")
    return isinstance(text, str) and not text.strip()


def _with_content(message: Any, content: Any) -> Any:
    if type(message) is dict:
        return {**message, "content": content}
    return message.model_copy(update={"content": content})


def fill_blank_user_content(message: Any) -> Any:
    """``message`` with blank user content replaced (a dict or a model, never mutated); the
    same object when it is not a user message or has something to say."""
    if role_of(message) != "user":
        return message
    content = wget(message, "content")
    if isinstance(content, str):
        return message if content.strip() else _with_content(message, BLANK_USER_FALLBACK_TEXT)
    if not isinstance(content, list):
        return message
    kept = [block for block in content if not _is_blank_text(block)]
    if len(kept) == len(content) and kept:
        return message
    if not kept:
        filler: Any = (
            {"type": "text", "text": BLANK_USER_FALLBACK_TEXT}
            if type(message) is dict
            else TextContent(text=BLANK_USER_FALLBACK_TEXT)
        )
        kept = [filler]
    return _with_content(message, kept)


def fill_blank_user_turns(messages: Sequence[Any]) -> list[Any]:
    """Every message through :func:`fill_blank_user_content` (unchanged ones are the same
    objects, so the pipeline sees when nothing changed)."""
    return [fill_blank_user_content(message) for message in messages]
