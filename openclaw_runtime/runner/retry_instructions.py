"""Directed retries: what the next attempt is told when this one produced nothing usable.

A retry is not a blind resend (seed 001). When an attempt ends with only reasoning, with an
empty response, with a compaction that interrupted the final answer, or with a plan instead of
action, the next attempt's prompt gets one short instruction appended:
``compose_attempt_prompt(base, [reasoning_only, empty_response, compaction_continuation])``
joins the non-blank ones with blank lines. Each ``resolve_*`` function here answers "does
this instruction apply to that attempt?" from the attempt's facts (``AttemptFacts``); the
loop keeps one counter per kind (limits in ``retry_limit``) so exhausting one kind leaves the
others available. The planning-only detector (a plan instead of action) is ``planning_only``.

Every detector refuses to retry an attempt that may have changed the world (a mutating tool,
a sent message, an accepted sub-agent spawn, async tool work, client tool calls, a yield, an
approval prompt, a tool error): re-prompting could run that side effect twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ..failover.result_classifier import SILENT_REPLY_TOKEN, is_silent_reply_payload_text
from ..messages import AssistantMessage, TextContent, ToolCall
from ..transcript.thinking import assess_last_assistant_message
from .failure_signal import ToolErrorSummary
from .reply_payload import ToolMeta, is_likely_mutating_tool_name

__all__ = [
    "COMPACTION_CONTINUATION_RETRY_INSTRUCTION",
    "EMPTY_RESPONSE_RETRY_INSTRUCTION",
    "INCOMPLETE_TURN_SIDE_EFFECT_TEXT",
    "INCOMPLETE_TURN_TEXT",
    "REASONING_ONLY_RETRY_INSTRUCTION",
    "AttemptFacts",
    "attempt_had_potential_side_effects",
    "compose_attempt_prompt",
    "has_replay_blocking_tool_error",
    "is_empty_response_assistant_turn",
    "is_reasoning_only_assistant_turn",
    "is_unsigned_thinking_only_assistant_turn",
    "is_zero_usage_empty_stop_assistant_turn",
    "joined_assistant_texts",
    "resolve_compaction_continuation_retry_instruction",
    "resolve_empty_response_retry_instruction",
    "resolve_incomplete_turn_payload_text",
    "resolve_reasoning_only_retry_instruction",
    "should_retry_missing_assistant_turn",
    "should_retry_silent_error_assistant_turn",
]

REASONING_ONLY_RETRY_INSTRUCTION: Final = (
    "The previous assistant turn recorded reasoning but did not produce a user-visible answer. "
    "Continue from that partial turn and produce the visible answer now. "
    "Do not restate the reasoning or restart from scratch."
)
EMPTY_RESPONSE_RETRY_INSTRUCTION: Final = (
    "The previous attempt did not produce a user-visible answer. "
    "Continue from the current state and produce the visible answer now. "
    "Do not restart from scratch."
)
COMPACTION_CONTINUATION_RETRY_INSTRUCTION: Final = (
    "The previous attempt compacted the conversation context before producing a final "
    "user-visible answer. Continue from the compacted transcript and produce the final answer "
    "now. Do not restart from scratch, do not repeat completed work, and do not rerun tools "
    "unless the transcript clearly lacks required evidence."
)
INCOMPLETE_TURN_TEXT: Final = "⚠️ Agent couldn't generate a response. Please try again."
INCOMPLETE_TURN_SIDE_EFFECT_TEXT: Final = (
    "⚠️ Agent couldn't generate a response. Note: some tool actions may have already been "
    "executed — please verify before retrying."
)

_OLLAMA_PROVIDER_RE: Final = re.compile(r"^ollama(?:-|$)")


# --------------------------------------------------------------------------- facts


@dataclass(frozen=True, slots=True)
class AttemptFacts:
    """What the detectors need to know about one finished attempt.

    ``assistant`` is the attempt's final assistant message (OpenClaw's
    ``currentAttemptAssistant ?? lastAssistant``); ``assistant_texts`` the visible texts the
    subscriber streamed. ``had_potential_side_effects`` is the attempt's replay metadata
    (see ``attempt_had_potential_side_effects``); the ``items_*`` counts are the tool
    lifecycle items started / completed / still active.
    """

    assistant_texts: tuple[str, ...] = ()
    assistant: AssistantMessage | None = None
    tool_metas: tuple[ToolMeta, ...] = ()
    last_tool_error: ToolErrorSummary | None = None
    client_tool_calls: bool = False
    yield_detected: bool = False
    sent_deterministic_approval_prompt: bool = False
    accepted_session_spawns: int = 0
    had_potential_side_effects: bool = False
    messaging_delivery_evidence: bool = False
    committed_messaging_delivery: bool = False
    items_started: int = 0
    items_completed: int = 0
    items_active: int = 0


def attempt_had_potential_side_effects(
    tool_metas: Iterable[ToolMeta],
    *,
    messaging_side_effect: bool = False,
    accepted_session_spawns: int = 0,
    successful_cron_adds: int = 0,
) -> bool:
    """OpenClaw's replay metadata: any mutating or async tool call, a sent message, an
    accepted sub-agent spawn or a created cron job means the attempt is not replay-safe."""
    for meta in tool_metas:  # a loop, not ``any`` over a generator (once per tool call)
        mutating = meta.mutating_action
        if mutating is None:
            mutating = is_likely_mutating_tool_name(meta.tool_name)
        if mutating or meta.async_started:
            return True
    return messaging_side_effect or accepted_session_spawns > 0 or successful_cron_adds > 0


def joined_assistant_texts(texts: Iterable[str]) -> str:
    """The attempt's visible texts as one, the way the detectors read them."""
    return "\n\n".join(texts).strip()


def _has_only_silent_reply(texts: Iterable[str]) -> bool:
    non_empty = [text for text in texts if text.strip()]
    return bool(non_empty) and all(
        is_silent_reply_payload_text(text, SILENT_REPLY_TOKEN) for text in non_empty
    )


def _has_completed_tool_activity(facts: AttemptFacts) -> bool:
    return facts.items_completed > 0 and len(facts.tool_metas) > 0


def _has_async_activity(facts: AttemptFacts) -> bool:
    return any(meta.async_started for meta in facts.tool_metas)


def has_replay_blocking_tool_error(facts: AttemptFacts) -> bool:
    """The last tool error was a mutating tool's: re-prompting could repeat its effect."""
    error = facts.last_tool_error
    if error is None:
        return False
    if error.mutating_action is not None:
        return error.mutating_action
    return is_likely_mutating_tool_name(error.tool_name)


def _skip_non_visible_retry(facts: AttemptFacts, *, aborted: bool, timed_out: bool) -> bool:
    return (
        aborted
        or timed_out
        or facts.client_tool_calls
        or facts.yield_detected
        or facts.sent_deterministic_approval_prompt
        or facts.last_tool_error is not None
        or facts.accepted_session_spawns > 0
        or _has_async_activity(facts)
        or facts.had_potential_side_effects
    )


# --------------------------------------------------------------------------- assistant shapes


def is_reasoning_only_assistant_turn(message: AssistantMessage | None) -> bool:
    """Signed thinking and nothing visible (``assess_last_assistant_message`` =
    ``incomplete-text``)."""
    return message is not None and assess_last_assistant_message(message) == "incomplete-text"


def is_unsigned_thinking_only_assistant_turn(message: AssistantMessage | None) -> bool:
    """Non-empty content assessed ``incomplete-thinking`` (unsigned thinking blocks)."""
    return (
        message is not None
        and bool(message.content)
        and assess_last_assistant_message(message) == "incomplete-thinking"
    )


def _usage_counts(message: AssistantMessage) -> tuple[int, ...]:
    usage = message.usage
    return (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total_tokens)


def is_zero_usage_empty_stop_assistant_turn(message: AssistantMessage | None) -> bool:
    """``stop`` with no content at all and every token count zero: nothing was generated."""
    return (
        message is not None
        and message.stop_reason == "stop"
        and not message.content
        and all(count == 0 for count in _usage_counts(message))
    )


def is_empty_response_assistant_turn(facts: AttemptFacts, *, payload_count: int) -> bool:
    """No visible answer and no reasoning (OpenClaw's ``isEmptyResponseAssistantTurn``).

    Visible payloads or streamed text rule it out unless tools completed (a post-tool empty
    stop is still empty); no assistant message at all counts as empty; an ``error`` stop, a
    ``toolUse`` stop and a reasoning-only turn do not.
    """
    completed_tools = _has_completed_tool_activity(facts)
    if payload_count != 0 and not completed_tools:
        return False
    if joined_assistant_texts(facts.assistant_texts) and not completed_tools:
        return False
    assistant = facts.assistant
    if assistant is None:
        return True
    if assistant.stop_reason in ("error", "toolUse"):
        return False
    if assistant.text().strip():
        return False  # the final turn itself answered (after tools, too)
    return not is_reasoning_only_assistant_turn(assistant)


# --------------------------------------------------------------------------- the instructions


def resolve_reasoning_only_retry_instruction(
    facts: AttemptFacts, *, aborted: bool = False, timed_out: bool = False
) -> str | None:
    """``REASONING_ONLY_RETRY_INSTRUCTION`` when the turn has thinking but no visible text,
    no tool call, no error stop, and replaying it is safe."""
    if _skip_non_visible_retry(facts, aborted=aborted, timed_out=timed_out):
        return None
    if joined_assistant_texts(facts.assistant_texts):
        return None
    assistant = facts.assistant
    if assistant is None or assistant.stop_reason == "error":
        return None
    if not (
        is_reasoning_only_assistant_turn(assistant)
        or is_unsigned_thinking_only_assistant_turn(assistant)
    ):
        return None
    return REASONING_ONLY_RETRY_INSTRUCTION


def resolve_empty_response_retry_instruction(
    facts: AttemptFacts,
    *,
    payload_count: int,
    aborted: bool = False,
    timed_out: bool = False,
    provider: str | None = None,
) -> str | None:
    """``EMPTY_RESPONSE_RETRY_INSTRUCTION`` for an empty, replay-safe turn.

    An Ollama ``stop`` with no positive output tokens is left alone (the local model chose
    to stop; resubmitting it does not help).
    """
    if _skip_non_visible_retry(facts, aborted=aborted, timed_out=timed_out):
        return None
    if not is_empty_response_assistant_turn(facts, payload_count=payload_count):
        return None
    assistant = facts.assistant
    if (
        assistant is not None
        and assistant.stop_reason == "stop"
        and _OLLAMA_PROVIDER_RE.match((provider or "").strip().lower())
        and not assistant.usage.output > 0
    ):
        return None
    return EMPTY_RESPONSE_RETRY_INSTRUCTION


def resolve_compaction_continuation_retry_instruction(
    facts: AttemptFacts,
    *,
    attempt_compaction_count: int,
    payload_count: int,
    attempts_so_far: int,
    interrupted: bool = False,
    prompt_error: bool = False,
    empty_reply_is_silent: bool = False,
) -> str | None:
    """``COMPACTION_CONTINUATION_RETRY_INSTRUCTION`` once per run, when a compaction ran
    during the attempt and no visible payload came out of it (and nothing unsafe happened).
    ``attempts_so_far`` is how many compaction continuations the run already used."""
    if (
        empty_reply_is_silent
        or attempt_compaction_count <= 0
        or payload_count != 0
        or interrupted
        or prompt_error
        or facts.client_tool_calls
        or facts.yield_detected
        or facts.sent_deterministic_approval_prompt
        or facts.last_tool_error is not None
        or facts.had_potential_side_effects
        or attempts_so_far >= 1
    ):
        return None
    return COMPACTION_CONTINUATION_RETRY_INSTRUCTION


def should_retry_silent_error_assistant_turn(facts: AttemptFacts) -> bool:
    """Resubmit an ``error`` turn that produced nothing (zero output tokens, no visible or
    tool content) when the attempt is replay-safe; budget ``MAX_EMPTY_ERROR_RETRIES``."""
    assistant = facts.assistant
    if assistant is None or assistant.stop_reason != "error":
        return False
    if joined_assistant_texts(facts.assistant_texts) or facts.had_potential_side_effects:
        return False
    if (
        facts.client_tool_calls
        or facts.yield_detected
        or facts.sent_deterministic_approval_prompt
        or facts.last_tool_error is not None
    ):
        return False
    content_empty = not any(
        (isinstance(block, TextContent) and block.text.strip()) or isinstance(block, ToolCall)
        for block in assistant.content
    )
    return content_empty and assistant.usage.output == 0


def should_retry_missing_assistant_turn(
    facts: AttemptFacts,
    *,
    payload_count: int,
    aborted: bool = False,
    prompt_error: bool = False,
    timed_out: bool = False,
) -> bool:
    """Resubmit once when the attempt produced no assistant message at all and nothing ran."""
    if (
        payload_count != 0
        or aborted
        or prompt_error
        or timed_out
        or facts.client_tool_calls
        or facts.assistant is not None
        or facts.yield_detected
        or facts.sent_deterministic_approval_prompt
        or facts.last_tool_error is not None
    ):
        return False
    if _has_only_silent_reply(facts.assistant_texts) or joined_assistant_texts(
        facts.assistant_texts
    ):
        return False
    if facts.committed_messaging_delivery or facts.accepted_session_spawns > 0:
        return False
    if _has_async_activity(facts) or facts.items_started > 0 or facts.items_active > 0:
        return False
    return not facts.had_potential_side_effects


def resolve_incomplete_turn_payload_text(
    facts: AttemptFacts,
    *,
    payload_count: int,
    aborted: bool = False,
    external_abort: bool = False,
    timed_out: bool = False,
) -> str | None:
    """The ``⚠️ Agent couldn't generate a response…`` text when the run ends on an incomplete
    turn (tool-use stop, reasoning only, empty, or an error stop) — None otherwise. The side
    effect variant warns that tools may already have run."""
    assistant = facts.assistant
    tool_use_terminal = assistant is not None and assistant.stop_reason == "toolUse"
    empty = is_empty_response_assistant_turn(facts, payload_count=payload_count)
    # is_reasoning_only_assistant_turn and is_unsigned_thinking_only_assistant_turn, from
    # one assessment of the message (each assessed it again)
    assessment = None if assistant is None else assess_last_assistant_message(assistant)
    reasoning_only = assessment == "incomplete-text"
    unsigned_thinking = (
        assistant is not None and bool(assistant.content) and assessment == "incomplete-thinking"
    )
    non_visible_post_tool = (
        empty or unsigned_thinking or (reasoning_only and _has_completed_tool_activity(facts))
    )
    if (
        (payload_count != 0 and not tool_use_terminal and not non_visible_post_tool)
        or (aborted and external_abort)
        or timed_out
        or facts.client_tool_calls
        or facts.yield_detected
        or facts.sent_deterministic_approval_prompt
        or has_replay_blocking_tool_error(facts)
    ):
        return None
    if _has_only_silent_reply(facts.assistant_texts) or facts.committed_messaging_delivery:
        return None
    if facts.accepted_session_spawns > 0:
        return None
    stop_reason = assistant.stop_reason if assistant is not None else None
    if not (tool_use_terminal or reasoning_only or unsigned_thinking or empty) and (
        stop_reason != "error"
    ):
        return None
    return (
        INCOMPLETE_TURN_SIDE_EFFECT_TEXT
        if facts.had_potential_side_effects
        else (INCOMPLETE_TURN_TEXT)
    )


def compose_attempt_prompt(base_prompt: str, additions: Iterable[str | None]) -> str:
    """``base`` + blank line + the non-blank additions joined by blank lines (seed 001)."""
    kept = [addition for addition in additions if isinstance(addition, str) and addition.strip()]
    return f"{base_prompt}\n\n" + "\n\n".join(kept) if kept else base_prompt
