"""How an attempt enters the transcript: a new prompt, or a continuation of what is there.

A retry is not a blind resend. When the last message of the active branch is still this run's
prompt (the failed turn was set aside) or a tool result, the attempt *continues* from it, so
work already done is not redone. When the loop wants retry instructions appended, the run's
prompt is rewound and sent again with them (or, when a compaction sits after the prompt, the
instructions go in a short user message of their own, because rewinding would undo the
compaction). A trailing user message found at the start of a run is an orphan of a crashed run
and is set aside, as OpenClaw does, so two user turns never follow each other.

A steered or follow-up message the live run already delivered (``Runtime.steer``) is part
of the conversation: a retry after it (another auth profile, another model) continues from
it, so it reaches the retried context once and is never followed by the prompt again.

Once a tool result of this run follows its prompt, the prompt is never sent again: the model
would read the request afresh and run the (possibly side-effecting) tools a second time. The
retry then continues after the tool results, with the retry instructions as a short user
message of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .retry_instructions import EMPTY_RESPONSE_RETRY_INSTRUCTION, compose_attempt_prompt

__all__ = ["AttemptInputPlan", "plan_attempt_input"]


@dataclass(frozen=True, slots=True)
class AttemptInputPlan:
    """``mode``: send ``prompt`` as a new user message, or ``continue`` from the branch.
    ``rewind_prompt``: first move the leaf to before the run's prompt entry.
    ``drop_orphan``: first move the leaf to before a trailing user message of an earlier run."""

    mode: Literal["prompt", "continue"]
    prompt: str | None = None
    rewind_prompt: bool = False
    drop_orphan: bool = False


def plan_attempt_input(
    *,
    first_attempt: bool,
    base_prompt: str,
    additions: Sequence[str],
    last_role: str | None,
    last_is_run_prompt: bool,
    leaf_is_run_prompt: bool,
    tool_result_after_prompt: bool = False,
    last_is_live_message: bool = False,
) -> AttemptInputPlan:
    """Decide how the next attempt starts.

    | attempt | last message of the branch         | additions | plan                         |
    | ------- | ---------------------------------- | --------- | ---------------------------- |
    | first   | a user message (orphan)            | any       | drop orphan, prompt          |
    | first   | anything else                      | any       | prompt                       |
    | retry   | the run's prompt, at the leaf      | none      | continue                     |
    | retry   | the run's prompt, at the leaf      | some      | rewind, prompt + additions   |
    | retry   | the run's prompt, entries after it | some      | prompt with additions only   |
    | retry   | a tool result                      | none      | continue                     |
    | retry   | a tool result                      | some      | prompt with additions only   |
    | retry   | a delivered steer / follow-up      | none      | continue                     |
    | retry   | a delivered steer / follow-up      | some      | prompt with additions only   |
    | retry   | else, a tool result after prompt   | some      | prompt with additions only   |
    | retry   | else, a tool result after prompt   | none      | prompt: continue instruction |
    | retry   | anything else                      | any       | prompt + additions           |

    ``tool_result_after_prompt``: a tool result of this run sits on the branch after the run's
    prompt, so re-sending the prompt could run its tools twice. ``last_is_live_message``: the
    branch ends with a steered or follow-up message this run delivered.
    """
    extra = [text for text in additions if text and text.strip()]
    if first_attempt:
        return AttemptInputPlan(
            mode="prompt",
            prompt=compose_attempt_prompt(base_prompt, extra),
            drop_orphan=last_role == "user",
        )
    if last_is_run_prompt:
        if not extra:
            return AttemptInputPlan(mode="continue")
        if leaf_is_run_prompt:
            return AttemptInputPlan(
                mode="prompt", prompt=compose_attempt_prompt(base_prompt, extra), rewind_prompt=True
            )
        return AttemptInputPlan(mode="prompt", prompt="\n\n".join(extra))
    if last_role == "toolResult" or last_is_live_message:
        if not extra:
            return AttemptInputPlan(mode="continue")
        return AttemptInputPlan(mode="prompt", prompt="\n\n".join(extra))
    if tool_result_after_prompt:
        return AttemptInputPlan(
            mode="prompt", prompt="\n\n".join(extra or [EMPTY_RESPONSE_RETRY_INSTRUCTION])
        )
    return AttemptInputPlan(mode="prompt", prompt=compose_attempt_prompt(base_prompt, extra))
