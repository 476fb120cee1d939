"""Messages the loop writes when a turn cannot finish normally, and replay conversion.

An abort is persisted as an empty assistant message with ``stop_reason="aborted"`` so that
nothing downstream (compaction, continuation) resumes from the half-finished ``toolUse``
message before it: the rule lives in the data, not in a flag every reader must know.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..abort import AbortSignal, is_turn_handoff_abort
from ..llm import Model
from ..messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "INTERRUPTED_TURN_CUSTOM_TYPE",
    "INTERRUPTED_TURN_GUIDANCE",
    "convert_agent_message_to_llm",
    "create_failure_message",
    "create_interrupted_turn_message",
    "error_text",
    "should_append_interruption",
]

INTERRUPTED_TURN_CUSTOM_TYPE = "openclaw:turn-aborted"
INTERRUPTED_TURN_GUIDANCE = (
    "<turn_aborted>\n"
    "The previous turn was interrupted. Any running background processes may still be active. "
    "If any tools or commands were aborted, they may have partially executed.\n"
    "</turn_aborted>"
)


def error_text(error: BaseException | object) -> str:
    """The message of an error, or its type name when it has none."""
    if isinstance(error, BaseException):
        return str(error) or type(error).__name__
    return str(error)


def create_failure_message(model: Model, error: object, *, aborted: bool) -> AssistantMessage:
    """The canonical empty assistant recorded when a turn ends without output."""
    return AssistantMessage(
        content=[TextContent(text="")],
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="aborted" if aborted else "error",
        error_message=error_text(error),
    )


def abort_reason(signal: AbortSignal) -> object:
    """What to record as the error of an aborted turn."""
    reason = signal.reason
    return reason if isinstance(reason, BaseException) else "Agent run aborted"


def create_interrupted_turn_message() -> CustomMessage:
    """Hidden guidance telling the next turn that the previous one was interrupted."""
    return CustomMessage(
        custom_type=INTERRUPTED_TURN_CUSTOM_TYPE,
        content=INTERRUPTED_TURN_GUIDANCE,
        display=False,
    )


def should_append_interruption(signal: AbortSignal | None) -> bool:
    """Aborts get interruption guidance, deliberate turn handoffs do not."""
    return signal is not None and signal.aborted and not is_turn_handoff_abort(signal)


_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
)
_BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:"


def convert_agent_message_to_llm(message: Any) -> Any | None:
    """One transcript message as a provider sees it, or None if providers never see it."""
    if isinstance(message, UserMessage | AssistantMessage | ToolResultMessage):
        return message
    if isinstance(message, CustomMessage):
        content = message.content
        if isinstance(content, str):
            content = [TextContent(text=content)]
        return UserMessage(content=content, timestamp=message.timestamp)
    if isinstance(message, CompactionSummaryMessage):
        text = f"{_SUMMARY_PREFIX}\n\n<summary>\n{message.summary}\n</summary>"
        return UserMessage(content=[TextContent(text=text)], timestamp=_ts(message.timestamp))
    if isinstance(message, BranchSummaryMessage):
        text = f"{_BRANCH_PREFIX}\n\n<summary>\n{message.summary}\n</summary>"
        return UserMessage(content=[TextContent(text=text)], timestamp=message.timestamp)
    return None


def _ts(value: int | float | str) -> int | float:
    if isinstance(value, int | float):
        return value
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0
