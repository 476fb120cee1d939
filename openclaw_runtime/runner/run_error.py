"""Every failed run says why: the error of a run whose outcome is not ``ok``.

Most failure paths know their error (a provider error, the retry limit, a timeout). One did
not: a turn that ended without a usable answer — a tool failed and the model then said
nothing — came out ``ok=False``, outcome ``abandoned``, ``error=None``. The run's result is
built in one place (``run_result.final_result``), and it asks ``failed_run_error`` for any
failed outcome that arrives without an error, so the rule "every ``ok=False`` result has an
error with a kind and a message naming the cause" holds for every path, present and future.
"""

from __future__ import annotations

from typing import Final

from ..failover.events import redact_secret_text
from ..messages import AssistantMessage
from .failure_signal import ToolErrorSummary
from .outcome import AgentRunTerminalOutcome
from .request import RunErrorInfo
from .retry_instructions import (
    is_reasoning_only_assistant_turn,
    is_unsigned_thinking_only_assistant_turn,
)

__all__ = ["INCOMPLETE_TURN_ERROR_KIND", "describe_unfinished_turn", "failed_run_error"]

#: ``RunErrorInfo.kind`` of a run that ended on a turn without a usable answer.
INCOMPLETE_TURN_ERROR_KIND: Final = "incomplete_turn"

_KIND_OF_REASON: Final = {"abandoned": INCOMPLETE_TURN_ERROR_KIND}


def describe_unfinished_turn(
    last_tool_error: ToolErrorSummary | None, assistant: AssistantMessage | None
) -> str:
    """Why the last turn produced no answer, in words a user can act on.

    | last tool call      | last assistant message        | cause                         |
    | ------------------- | ----------------------------- | ----------------------------- |
    | failed              | any                           | the tool, its error, no answer |
    | none failed         | none                          | no assistant message          |
    | none failed         | stopped asking for tools      | stopped after asking for tools |
    | none failed         | reasoning only                | only reasoning                |
    | none failed         | anything else                 | an empty answer               |
    """
    if last_tool_error is not None:
        detail = (last_tool_error.error or "").strip()
        failed = f"the tool {last_tool_error.tool_name!r} failed"
        if last_tool_error.timed_out:
            failed += " (timed out)"
        if detail:
            failed += f": {detail}"
        return f"{failed}; the model then gave no answer"
    if assistant is None:
        return "the model returned no assistant message"
    if assistant.stop_reason == "toolUse":
        return "the turn stopped after asking for tools, without an answer"
    if is_reasoning_only_assistant_turn(assistant) or is_unsigned_thinking_only_assistant_turn(
        assistant
    ):
        return "the model returned only reasoning, no answer"
    return "the model returned an empty answer"


def failed_run_error(
    outcome: AgentRunTerminalOutcome,
    error: RunErrorInfo | None,
    *,
    cause: str | None = None,
) -> RunErrorInfo | None:
    """The run's error: ``error`` when there is one; None for an ``ok`` outcome; otherwise
    one made from the outcome (``kind``: ``incomplete_turn`` for an abandoned turn, else the
    outcome's reason) whose message says what happened and, with ``cause``, why."""
    if error is not None or outcome.status == "ok":
        return error
    kind = _KIND_OF_REASON.get(outcome.reason, outcome.reason)
    what = (outcome.error or "").strip() or f"the run ended with outcome {outcome.reason!r}"
    message = f"{what.rstrip('.')}: {cause}" if cause else what
    return RunErrorInfo(kind, redact_secret_text(message))
