"""The run's side of the streamed reply: block replies, messaging sends, verbose tool lines.

The policy lives in ``openclaw_runtime.reply``; this module binds it to a ``RunRequest`` and the
``[agent.reply]`` config: which callback receives block replies (as ``ReplyPayload`` objects,
reply directives parsed), whether block streaming is on, what counts as a duplicate of a
messaging-tool send, and the verbose tool metas the payload builder inlines.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from typing import Any

from ..redaction import package_logger
from ..reply import ReplyStreamObserver
from ..reply.settings import ReplySettings, VerboseMode
from ..reply.verbose import verbose_tool_lines
from .messaging_dedupe import is_messaging_tool_duplicate
from .reply_directives import parse_reply_directives
from .reply_payload import ReplyPayload, ToolMeta
from .request import RunRequest

__all__ = ["reply_observer_for", "verbose_mode_for", "verbose_tool_metas"]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))


def reply_observer_for(request: RunRequest, settings: ReplySettings) -> ReplyStreamObserver:
    """The run's observer: block replies go to ``request.on_block_reply`` when block streaming
    is on (the request's ``block_streaming``, else ``[agent.reply] block_streaming``)."""
    enabled = (
        request.block_streaming if request.block_streaming is not None else settings.block_streaming
    )
    callback = request.on_block_reply
    send = None
    if enabled and callback is not None:

        async def send_block(text: str) -> None:
            parsed = parse_reply_directives(text, current_message_id=request.current_message_id)
            if parsed.is_silent or not (parsed.text or parsed.media_urls):
                return
            payload = ReplyPayload(
                text=parsed.text or None,
                media_urls=parsed.media_urls,
                reply_to_id=parsed.reply_to_id,
                reply_to_tag=parsed.reply_to_tag or None,
                reply_to_current=parsed.reply_to_current or None,
                audio_as_voice=parsed.audio_as_voice,
            )
            try:
                result = callback(payload)
                if inspect.isawaitable(result):
                    await result
            except Exception:  # the caller's callback must not end the run
                logger.warning("on_block_reply raised", exc_info=True)

        send = send_block
    return ReplyStreamObserver(
        send=send, chunking=settings.chunking(), is_duplicate=is_messaging_tool_duplicate
    )


def verbose_mode_for(request: RunRequest, settings: ReplySettings) -> VerboseMode:
    """The run's verbose mode: the request's, else ``[agent.reply] verbose``."""
    if request.verbose is None:
        return settings.verbose
    if request.verbose is True:
        return "on"
    if request.verbose is False:
        return "off"
    return request.verbose


def verbose_tool_metas(messages: Sequence[Any], mode: VerboseMode) -> list[ToolMeta]:
    """Tool metas with verbose summaries (``meta``) for the payload builder."""
    return [
        ToolMeta(
            tool_name=line.tool_name,
            meta=line.meta,
            tool_call_id=line.tool_call_id,
            is_error=line.is_error,
        )
        for line in verbose_tool_lines(messages, mode)
    ]
