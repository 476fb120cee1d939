"""What of a transcript a provider may see again (OpenClaw's replay transform), shared by the
providers that replay history natively (Anthropic Messages, Gemini).

* failed turns (``error``/``aborted``) are dropped, or replaced by a marker when they showed
  text, so the user message before them does not look unanswered;
* thinking from another provider/model becomes plain text, signed and redacted thinking stay
  only for the model that produced them; tool calls from elsewhere lose their signatures;
* a tool call without a result gets a synthetic ``No result provided`` error result, results
  that answer no call of the turn before them (or repeat one) are dropped — the APIs reject
  both;
* images become a note for text-only models.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Any

from .._prefix import starts_with
from ..llm import Model
from ..messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..transcript.repair import STREAM_ERROR_FALLBACK_TEXT

__all__ = [
    "FAILED_ASSISTANT_REPLAY_TEXT",
    "MISSING_TOOL_RESULT_TEXT",
    "STREAM_ERROR_FALLBACK_TEXT",
    "TOOL_IMAGE_OMITTED_TEXT",
    "USER_IMAGE_OMITTED_TEXT",
    "prepare_replay_messages",
]

FAILED_ASSISTANT_REPLAY_TEXT = (
    "[This turn failed before it completed. "
    "Do not redo its work without confirming with the user first.]"
)
MISSING_TOOL_RESULT_TEXT = "No result provided"
USER_IMAGE_OMITTED_TEXT = "(image omitted: model does not support images)"
TOOL_IMAGE_OMITTED_TEXT = "(tool image omitted: model does not support images)"


_FAILED = ("error", "aborted")
_NO_IDS: frozenset[str] = frozenset()


def _same_model(message: AssistantMessage, model: Model) -> bool:
    return (
        message.provider == model.provider
        and message.api == model.api
        and message.model == model.id
    )


def _replay_assistant_content(message: AssistantMessage, model: Model) -> list[Any]:
    same = _same_model(message, model)
    content: list[Any] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if block.redacted:
                if same:
                    content.append(block)
                continue
            if same and block.thinking_signature:
                content.append(block)
            elif block.thinking.strip():
                content.append(block if same else TextContent(text=block.thinking))
        elif isinstance(block, TextContent):
            content.append(block if same else TextContent(text=block.text))
        elif isinstance(block, ToolCall):
            call_id = block.id.strip()
            if same:
                content.append(
                    block if call_id == block.id else block.model_copy(update={"id": call_id})
                )
            else:
                content.append(ToolCall(id=call_id, name=block.name, arguments=block.arguments))
    return content


def _failed_replay(message: AssistantMessage, content: list[Any]) -> str:
    """``keep`` a normal turn; a failed one is ``drop``-ped or replaced by a ``marker``."""
    if message.stop_reason not in ("error", "aborted"):
        return "keep"
    if any(isinstance(block, ToolCall) for block in content):
        return "drop"
    for block in content:
        if isinstance(block, TextContent):
            text = block.text.strip()
            if text and text != STREAM_ERROR_FALLBACK_TEXT:
                return "marker"
    return "drop"


def _same_blocks(content: list[Any], original: Sequence[Any]) -> bool:
    """``content`` holds the very blocks of ``original``, in order."""
    return len(content) == len(original) and starts_with(content, original)


def _has_image(content: str | Sequence[Any]) -> bool:
    return not isinstance(content, str) and any(
        isinstance(block, ImageContent) for block in content
    )


def _without_images(content: Sequence[Any], placeholder: str) -> list[Any]:
    out: list[Any] = []
    for block in content:
        if not isinstance(block, ImageContent):
            out.append(block)
            continue
        previous = out[-1] if out else None
        repeated = isinstance(previous, TextContent) and previous.text == placeholder
        if block.data and not repeated:
            out.append(TextContent(text=placeholder))
    return out


def prepare_replay_messages(messages: Sequence[Message], model: Model) -> list[Message]:
    """The transcript as this model may see it (inputs are never mutated; a message replayed
    as it is, the usual case, is the input's own object)."""
    images_ok = "image" in model.input
    result: list[Message] = []
    pending: list[ToolCall] = []  # the open turn's calls
    answered: set[str] = set()  # ... those a result answered
    open_ids: Set[str] = _NO_IDS
    for message in messages:
        if isinstance(message, AssistantMessage):
            content = _replay_assistant_content(message, model)
            if pending:
                result.extend(_missing_results(pending, answered))
                pending, answered = [], set()
            open_ids = _NO_IDS
            if message.stop_reason in _FAILED:
                decision = _failed_replay(message, content)
                if decision == "drop":
                    continue
                if decision == "marker":
                    content = [TextContent(text=FAILED_ASSISTANT_REPLAY_TEXT)]
            # a turn replayed as it is (the model's own, the usual case) is not copied: a
            # copy per message was most of a long history's conversion
            if not _same_blocks(content, message.content):
                message = message.model_copy(update={"content": content})
            result.append(message)
            pending = [b for b in content if isinstance(b, ToolCall)]
            if pending:
                open_ids = {call.id for call in pending}
        elif isinstance(message, ToolResultMessage):
            call_id = message.tool_call_id.strip()
            if call_id not in open_ids or call_id in answered:
                continue  # an orphan or duplicate result: the API would reject it
            answered.add(call_id)
            content = message.content
            if not images_ok and _has_image(content):
                content = _without_images(content, TOOL_IMAGE_OMITTED_TEXT)
            if call_id != message.tool_call_id or content is not message.content:
                message = message.model_copy(
                    update={"tool_call_id": call_id, "content": list(content)}
                )
            result.append(message)
        elif isinstance(message, UserMessage):
            if pending:
                result.extend(_missing_results(pending, answered))
                pending, answered = [], set()
            open_ids = _NO_IDS
            if not images_ok and _has_image(message.content):
                message = message.model_copy(
                    update={
                        "content": _without_images(list(message.content), USER_IMAGE_OMITTED_TEXT)
                    }
                )
            result.append(message)
    if pending:
        result.extend(_missing_results(pending, answered))
    return result


def _missing_results(calls: list[ToolCall], answered: Set[str]) -> list[ToolResultMessage]:
    """The synthetic error results of ``calls`` no result answered."""
    return [
        ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=[TextContent(text=MISSING_TOOL_RESULT_TEXT)],
            is_error=True,
        )
        for call in calls
        if call.id not in answered
    ]
