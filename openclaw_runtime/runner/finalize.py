"""``before_agent_finalize``: plugins may ask for a revision of the final answer (seed 001).

When a turn ends with a natural final answer, the runner asks the ``before_agent_finalize``
hook before accepting it. A plugin (a verifier, a style checker, a policy gate) answers
``continue`` (accept), ``revise`` with a reason (one more model pass), or ``finalize`` (accept
even if another plugin wants a revision). Merging follows OpenClaw's hook runner: ``finalize``
wins over everything; the reasons of several ``revise`` answers are joined by a blank line.

A revision is another attempt on the same model whose prompt is the revision request: the
draft stays in the transcript, followed by a user message with the request, and the model's
next final answer is the one returned. The budget, ``MAX_BEFORE_AGENT_FINALIZE_REVISIONS``
(OpenClaw's value, 3), bounds the revisions per model candidate; once it is spent the hook is
not consulted again and the last answer is accepted, so a plugin that always revises cannot
keep a run going. Only a completed turn with a visible answer is offered to the hook (not an
error, an abort, or an empty reply).

A steered (or follow-up) message that waits when the run would end wins over finalization:
the hook is not consulted and the run goes on with the message (``finalize_step``, wired by
``finalize_steer``).

The decisions are pure functions (``normalize_finalize_decision``, ``merge_finalize_decisions``,
``build_before_agent_finalize_retry_prompt``, ``finalize_step``); ``request_finalize_revision``
wires them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..redaction import package_logger

__all__ = [
    "BEFORE_AGENT_FINALIZE_ADDITION",
    "BEFORE_AGENT_FINALIZE_RETRY_PROMPT_PREFIX",
    "MAX_BEFORE_AGENT_FINALIZE_REVISIONS",
    "FinalizeDecision",
    "FinalizingRun",
    "build_before_agent_finalize_retry_prompt",
    "finalize_step",
    "merge_finalize_decisions",
    "normalize_finalize_decision",
    "request_finalize_revision",
    "should_consult_finalize_hook",
]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))

#: Revisions a run may be asked for per model candidate (OpenClaw: 3).
MAX_BEFORE_AGENT_FINALIZE_REVISIONS = 3
#: The name of the retry addition that carries a revision request.
BEFORE_AGENT_FINALIZE_ADDITION = "before_agent_finalize"
BEFORE_AGENT_FINALIZE_RETRY_PROMPT_PREFIX = (
    "Your previous final answer was not accepted yet. Revise it as requested below and reply "
    "with the complete revised final answer. Do not redo finished work or call tools again "
    "unless the request needs it."
)

FinalizeAction = Literal["continue", "revise", "finalize"]


@dataclass(frozen=True, slots=True)
class FinalizeDecision:
    """A ``before_agent_finalize`` answer: ``action`` and, for ``revise``, the ``reason``
    (the revision request the model is given)."""

    action: FinalizeAction = "continue"
    reason: str | None = None


CONTINUE = FinalizeDecision()


def normalize_finalize_decision(value: Any) -> FinalizeDecision:
    """A hook's return value as a decision: a ``FinalizeDecision``, a mapping with ``action``
    and ``reason`` (or OpenClaw's ``retry.instruction``), or a bare string (a revision
    reason). ``None``, an unknown action, and ``revise`` without a reason mean ``continue``."""
    if value is None:
        return CONTINUE
    if isinstance(value, str):
        value = {"action": "revise", "reason": value}
    action: object
    reason: object
    if isinstance(value, FinalizeDecision):
        action, reason = value.action, value.reason
    elif isinstance(value, Mapping):
        action, reason = value.get("action"), value.get("reason")
        retry = value.get("retry")
        if action == "revise" and isinstance(retry, Mapping):
            instruction = retry.get("instruction")
            if isinstance(instruction, str) and instruction.strip():
                reason = instruction
    else:
        raise TypeError(
            "before_agent_finalize must return None, a FinalizeDecision, a mapping with "
            f"'action' or a revision reason string, not {type(value).__name__}"
        )
    text = reason.strip() if isinstance(reason, str) else ""
    if action == "finalize":
        return FinalizeDecision("finalize", text or None)
    if action == "revise" and text:
        return FinalizeDecision("revise", text)
    return CONTINUE


def merge_finalize_decisions(decisions: Iterable[FinalizeDecision]) -> FinalizeDecision:
    """One decision from every plugin's: ``finalize`` wins, else the ``revise`` reasons
    joined by a blank line, else ``continue``."""
    reasons: list[str] = []
    for decision in decisions:
        if decision.action == "finalize":
            return decision
        if decision.action == "revise" and decision.reason:
            reasons.append(decision.reason)
    if reasons:
        return FinalizeDecision("revise", "\n\n".join(reasons))
    return CONTINUE


def build_before_agent_finalize_retry_prompt(reason: str) -> str:
    """The user message of a revision attempt: the fixed prefix, a blank line, the reason."""
    return f"{BEFORE_AGENT_FINALIZE_RETRY_PROMPT_PREFIX}\n\n{reason}"


def should_consult_finalize_hook(
    *, revisions_so_far: int, payload_count: int, limit: int = MAX_BEFORE_AGENT_FINALIZE_REVISIONS
) -> bool:
    """Ask the hook only while the budget lasts and when there is an answer to judge."""
    return payload_count > 0 and revisions_so_far < limit


FinalizeStep = Literal["steer", "consult", "accept"]


def finalize_step(
    *,
    message_queued: bool,
    revisions_so_far: int,
    payload_count: int,
    limit: int = MAX_BEFORE_AGENT_FINALIZE_REVISIONS,
) -> FinalizeStep:
    """What a run that would end does next (OpenClaw: a queued user message wins over
    finalization).

    | message queued | budget left | answer | step    |
    | -------------- | ----------- | ------ | ------- |
    | yes            | any         | any    | steer   |
    | no             | yes         | yes    | consult |
    | no             | no          | any    | accept  |
    | no             | any         | none   | accept  |

    ``message_queued``: a steered or follow-up message waits for the run. ``steer``: the run
    goes on with it (``finalize_steer``) and the hook is not asked about this answer;
    ``consult``: ask ``before_agent_finalize``.
    """
    if message_queued:
        return "steer"
    if should_consult_finalize_hook(
        revisions_so_far=revisions_so_far, payload_count=payload_count, limit=limit
    ):
        return "consult"
    return "accept"


class FinalizingRun(Protocol):
    """What ``request_finalize_revision`` reads of the run (``RunState`` is one)."""

    hooks: Any
    run_id: str
    session_id: str
    session_key: str | None
    session: Any


async def request_finalize_revision(
    run: FinalizingRun,
    *,
    provider: str,
    model: str,
    last_answer: str,
    revisions_so_far: int,
    payload_count: int,
) -> str | None:
    """Consult the hook for the completed turn; the revision prompt, or ``None`` to accept."""
    hook = getattr(run.hooks, "before_agent_finalize", None)
    if hook is None or getattr(run.hooks, "finalizes", True) is False:
        return None  # no plugin judges answers: nothing to ask, no messages to gather
    if not should_consult_finalize_hook(
        revisions_so_far=revisions_so_far, payload_count=payload_count
    ):
        if revisions_so_far >= MAX_BEFORE_AGENT_FINALIZE_REVISIONS:
            logger.info(
                "before_agent_finalize revision budget spent (%d/%d): accepting the answer "
                "run_id=%s",
                revisions_so_far,
                MAX_BEFORE_AGENT_FINALIZE_REVISIONS,
                run.run_id,
            )
        return None
    session = run.session
    messages = list(session.build_session_context().messages) if session is not None else []
    decision = hook(
        run_id=run.run_id,
        session_id=run.session_id,
        session_key=run.session_key,
        provider=provider,
        model=model,
        last_assistant_message=last_answer,
        messages=messages,
        revision=revisions_so_far,
    )
    if decision.action != "revise" or not decision.reason:
        return None
    logger.warning(
        "before_agent_finalize requested one more pass: run_id=%s session_id=%s revision=%d/%d",
        run.run_id,
        run.session_id,
        revisions_so_far + 1,
        MAX_BEFORE_AGENT_FINALIZE_REVISIONS,
    )
    return build_before_agent_finalize_retry_prompt(decision.reason)
