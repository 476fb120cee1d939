"""Directed retries: what the next attempt is told when this one produced nothing usable.

A retry is not a blind resend (seed 001). When an attempt ends with only reasoning, with an
empty response, with a compaction that interrupted the final answer, or with a plan instead of
action, the next attempt's prompt gets one short instruction appended:
``compose_attempt_prompt(base, [reasoning_only, empty_response, compaction_continuation])``
joins the non-blank ones with blank lines. Each ``resolve_*`` function here answers "does
this instruction apply to that attempt?" from the attempt's facts (``AttemptFacts``); the
loop keeps one counter per kind (limits in ``retry_limit``) so exhausting one kind leaves the
others available.

Every detector refuses to retry an attempt that may have changed the world (a mutating tool,
a sent message, an accepted sub-agent spawn, async tool work, client tool calls, a yield, an
approval prompt, a tool error): re-prompting could run that side effect twice.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from ..failover.result_classifier import SILENT_REPLY_TOKEN, is_silent_reply_payload_text
from ..messages import AssistantMessage, TextContent, ToolCall
from ..transcript.thinking import assess_last_assistant_message
from .failure_signal import ToolErrorSummary
from .reply_payload import ToolMeta, is_likely_mutating_tool_name

__all__ = [
    "ACK_EXECUTION_FAST_PATH_INSTRUCTION",
    "COMPACTION_CONTINUATION_RETRY_INSTRUCTION",
    "EMPTY_RESPONSE_RETRY_INSTRUCTION",
    "INCOMPLETE_TURN_SIDE_EFFECT_TEXT",
    "INCOMPLETE_TURN_TEXT",
    "PLANNING_ONLY_BLOCKED_TEXT",
    "PLANNING_ONLY_RETRY_INSTRUCTION",
    "REASONING_ONLY_RETRY_INSTRUCTION",
    "AttemptFacts",
    "attempt_had_potential_side_effects",
    "compose_attempt_prompt",
    "is_empty_response_assistant_turn",
    "is_likely_execution_ack_prompt",
    "is_planning_only_assistant_text",
    "is_reasoning_only_assistant_turn",
    "is_unsigned_thinking_only_assistant_turn",
    "is_zero_usage_empty_stop_assistant_turn",
    "resolve_ack_execution_fast_path_instruction",
    "resolve_compaction_continuation_retry_instruction",
    "resolve_empty_response_retry_instruction",
    "resolve_incomplete_turn_payload_text",
    "resolve_planning_only_retry_instruction",
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
PLANNING_ONLY_RETRY_INSTRUCTION: Final = (
    "The previous assistant turn only described the plan. Do not restate the plan. "
    "Act now: take the first concrete tool action you can. "
    "If a real blocker prevents action, reply with the exact blocker in one sentence."
)
ACK_EXECUTION_FAST_PATH_INSTRUCTION: Final = (
    "The latest user message is a short approval to proceed. Do not recap or restate the plan. "
    "Start with the first concrete tool action immediately. "
    "Keep any user-facing follow-up brief and natural."
)
PLANNING_ONLY_BLOCKED_TEXT: Final = (
    "Agent stopped after repeated plan-only turns without taking a concrete action. "
    "No concrete tool action or external side effect advanced the task."
)
INCOMPLETE_TURN_TEXT: Final = "⚠️ Agent couldn't generate a response. Please try again."
INCOMPLETE_TURN_SIDE_EFFECT_TEXT: Final = (
    "⚠️ Agent couldn't generate a response. Note: some tool actions may have already been "
    "executed — please verify before retrying."
)

_OLLAMA_PROVIDER_RE: Final = re.compile(r"^ollama(?:-|$)")
_PLAN_TOOL: Final = "update_plan"
_RETRY_SAFE_TOOL_NAMES: Final = frozenset({"read", "search", "find", "grep", "glob", "ls"})


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
    return (
        any(
            (meta.mutating_action if meta.mutating_action is not None
             else is_likely_mutating_tool_name(meta.tool_name))
            or meta.async_started
            for meta in tool_metas
        )
        or messaging_side_effect
        or accepted_session_spawns > 0
        or successful_cron_adds > 0
    )  # fmt: skip


def _joined_texts(texts: Iterable[str]) -> str:
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


def _has_replay_blocking_tool_error(facts: AttemptFacts) -> bool:
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
    if _joined_texts(facts.assistant_texts) and not completed_tools:
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
    if _joined_texts(facts.assistant_texts):
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
    if _joined_texts(facts.assistant_texts) or facts.had_potential_side_effects:
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
    if _has_only_silent_reply(facts.assistant_texts) or _joined_texts(facts.assistant_texts):
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
    reasoning_only = is_reasoning_only_assistant_turn(assistant)
    unsigned_thinking = is_unsigned_thinking_only_assistant_turn(assistant)
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
        or _has_replay_blocking_tool_error(facts)
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


# --------------------------------------------------------------------------- planning-only

_A: Final = re.IGNORECASE | re.ASCII
_PROMISE_RE: Final = re.compile(
    r"\b(?:i(?:'ll| will)|let me|lemme|i(?:'m| am)\s+(?:going to|gonna|about to)|"
    r"first[, ]+i(?:'ll| will)|next[, ]+i(?:'ll| will)|i can (?:do that|check|look|inspect|"
    r"investigate|verify|review|search|run|test|handle|take|start|launch|send|monitor))\b",
    _A,
)
_PROGRESS_CLAIM_RE: Final = re.compile(
    r"^(?:i(?:'m| am)\s+)?(?:checking|running|working(?:\s+on\s+it)?|on\s+it|taking\s+a\s+look|"
    r"inspecting|reading|searching|looking(?:\s+into|\s+at)?|debugging|testing|verifying|"
    r"investigating|reviewing|fetching|probing|starting|launching|"
    r"sending(?:\s+(?:it|this|that|the\s+\w+))?\s+off|kicking\s+(?:it|this|that|the\s+\w+\s+)?off|"
    r"monitoring\s+(?:it|this|that|now|for\b))\b(?!\s*:)",
    _A,
)
_COMPLETION_RE: Final = re.compile(
    r"\b(?:done|finished|implemented|updated|fixed|changed|ran|verified|found|"
    r"here(?:'s| is) what|blocked by|the blocker is|requires?|unavailable|not available|"
    r"can't|cannot)\b",
    _A,
)
_HEADING_RE: Final = re.compile(r"^(?:plan|steps?|next steps?)\s*:", _A)
_BULLET_RE: Final = re.compile(r"^(?:[-*•]\s+|\d+[.)]\s+)")
_MAX_VISIBLE_TEXT: Final = 700
_ACTION_VERB_RE: Final = re.compile(
    r"\b(?:inspect(?:ing)?|investigat(?:e|ing)|check(?:ing)?|look(?:ing)?(?:\s+into|\s+at)?|"
    r"read(?:ing)?|search(?:ing)?|find(?:ing)?|debug(?:ging)?|fix(?:ing)?|patch(?:ing)?|"
    r"updat(?:e|ing)|chang(?:e|ing)|edit(?:ing)?|writ(?:e|ing)|implement(?:ing)?|runn?ing|run|"
    r"test(?:ing)?|verify|verifying|review(?:ing)?|analy(?:s|z)(?:e|ing)|"
    r"summari(?:s|z)(?:e|ing)|explain(?:ing)?|answer(?:ing)?|show(?:ing)?|shar(?:e|ing)|"
    r"report(?:ing)?|prepar(?:e|ing)|captur(?:e|ing)|tak(?:e|ing)|handl(?:e|ing)|"
    r"sort(?:ing|ed)?|follow(?:ing)?\s+up|get(?:ting)?\s+back|start(?:ing)?|launch(?:ing)?|"
    r"send(?:ing)?|monitor(?:ing)?|refactor(?:ing)?|restart(?:ing)?|deploy(?:ing)?|"
    r"ship(?:ping)?)\b",
    _A,
)
_TASK_NOUN_RE: Final = re.compile(
    r"\b(?:endpoint|results?|proof|restart|model|default|question|image|pull request|pr|cron|"
    r"scheduler|jobs?|status|logs?|build|tests?|deploy|bug|error|fix|patch|config|settings?|"
    r"reply|delivery|runtime|gateway|container|docker|discord)\b",
    _A,
)
_SHORT_PLACEHOLDER_RE: Final = re.compile(
    r"\bi(?:'ll| will)\s+(?:do|handle|take care of|work on)\s+(?:it|that|this)\b", _A
)
_WAIT_PLACEHOLDER_RE: Final = re.compile(
    r"^(?:stand by|one sec(?:ond)?|give me (?:a )?(?:moment|minute|sec(?:ond)?)|hang on|"
    r"hold on|bear with me|just a moment|please wait)(?:\s+(?:while|and)\b.{0,100})?[.!…]*$",
    re.IGNORECASE,
)
_ACK_PLACEHOLDER_RE: Final = re.compile(
    r"^(?:sure(?: thing)?|got it|understood|absolutely|will do|roger(?: that)?|copy(?: that)?|"
    r"sounds good|okay|ok)(?:[.!…]*)$",
    re.IGNORECASE,
)
_DIRECT_ACK_ANSWER_RE: Final = re.compile(
    r"^(?:sure(?: thing)?|absolutely|sounds good|okay|ok)(?:[.!…]*)$", re.IGNORECASE
)
_ACK_REQUEST_PROMPT_RE: Final = re.compile(
    r"\b(?:acknowledg(?:e|ement)|confirm|reply|respond|say|answer)\b.{0,80}\b(?:ok(?:ay)?|"
    r"got it|understood|roger(?: that)?|copy(?: that)?|will do|sounds good|"
    r"acknowledg(?:e|ed|ement)|confirm(?:ed|ation)?|short reply|brief reply)\b|"
    r"\b(?:acknowledg(?:e|ement)|confirm)\s+(?:this|that|it|receipt)\b",
    _A,
)
_DIRECT_ACK_QUESTION_RE: Final = re.compile(
    r"^(?:is|are|was|were|do|does|did|has|have|had|can|could|would|should|will)\b[^?]*\?", _A
)
_SECOND_PERSON_REQUEST_RE: Final = re.compile(
    r"\b(?:can|could|would|will|should)\s+you\b|\bplease\b", _A
)
_GENERIC_ACTION_REQUEST_RE: Final = re.compile(
    r"\b(?:do|handle|take care of|work on)\s+(?:it|this|that)\b", _A
)
_SINGLE_ACTION_CONTINUATION_RE: Final = re.compile(
    r"\b(?:going to|gonna|about to|first[, ]+i(?:'ll| will)|next[, ]+i(?:'ll| will)|"
    r"then[, ]+i(?:'ll| will)|i can do that next|let me (?!know\b)\w+(?:\s+\w+){0,3}\s+"
    r"(?:next|then|first)\b|lemme \w+(?:\s+\w+){0,3}\s+(?:next|then|first)\b)",
    _A,
)
_SINGLE_ACTION_MULTI_STEP_RE: Final = re.compile(
    r"\bi(?:'ll| will)\b(?=[^.!?]{0,160}\b(?:next|then|after(?:wards)?|once)\b)", _A
)
_SINGLE_ACTION_RESULT_STYLE_RE: Final = re.compile(
    r"\b(?:i(?:'ll| will)\s+(?:summarize|explain|share|show|report|describe|clarify|answer|"
    r"recap)(?:\s+\w+){0,4}\s*:|(?:here(?:'s| is)|summary|result|answer|findings?|"
    r"root cause)\s*:)",
    _A,
)
_EXPLICIT_PLANNING_REQUEST_RE: Final = re.compile(
    r"\b(?:what(?:'s| is) (?:(?:the|your|our|my) )?(?:plan|approach)|"
    r"give me (?:a )?(?:plan|approach|outline)|outline (?:the )?(?:plan|approach|steps)|"
    r"(?:only|just) (?:plan|outline)|how would you\b|propose (?:a )?(?:plan|approach))\b",
    _A,
)
_NON_ACTIONABLE_UPDATE_RE: Final = re.compile(
    r"^\s*(?:i|we)\b(?!.{0,120}\b(?:need|want|would like)\s+you\b).{0,180}\b"
    r"(?:haven't|have not|am not|ain't|haven’t)\b.{0,120}\b(?:yet|though|fyi|heads up)\b",
    re.IGNORECASE,
)
_ACK_EXECUTION_SET: Final = frozenset(
    {
        "ok", "okay", "ok do it", "okay do it", "do it", "go ahead", "please do", "sounds good",
        "sounds good do it", "ship it", "fix it", "make it so", "yes do it", "yep do it",
        "تمام", "حسنا", "حسنًا", "امض قدما", "نفذها", "mach es", "leg los", "los geht s",
        "weiter", "やって", "進めて", "そのまま進めて", "allez y", "vas y", "fais le",
        "continue", "hazlo", "adelante", "sigue", "faz isso", "vai em frente", "pode fazer",
        "해줘", "진행해", "계속해",
    }
)  # fmt: skip
_NON_ACTIONABLE_SET: Final = frozenset(
    {
        "cool", "great", "haha", "lol", "nice", "nice work", "ok", "okay", "perfect", "thanks",
        "thank you", "ty", "yep", "yes",
    }
)  # fmt: skip


def _normalize_ack_prompt(text: str) -> str:
    normalized = unicodedata.normalize("NFKC", text).strip()
    normalized = "".join(
        " " if unicodedata.category(ch)[0] in ("P", "S") else ch for ch in normalized
    )
    return re.sub(r"\s+", " ", normalized).strip().lower()


def is_likely_execution_ack_prompt(text: str) -> bool:
    """A short "go ahead" (in several languages): no newline, no question, ≤ 80 chars."""
    trimmed = text.strip()
    if not trimmed or len(trimmed) > 80 or "\n" in trimmed or "?" in trimmed:
        return False
    return _normalize_ack_prompt(trimmed) in _ACK_EXECUTION_SET


def resolve_ack_execution_fast_path_instruction(prompt: str) -> str | None:
    """``ACK_EXECUTION_FAST_PATH_INSTRUCTION`` when the user just said "go ahead"."""
    return ACK_EXECUTION_FAST_PATH_INSTRUCTION if is_likely_execution_ack_prompt(prompt) else None


def _is_likely_non_actionable_prompt(text: str) -> bool:
    trimmed = text.strip()
    if not trimmed or "?" in trimmed or "\n" in trimmed:
        return False
    if len(trimmed) <= 80 and _normalize_ack_prompt(trimmed) in _NON_ACTIONABLE_SET:
        return True
    return _NON_ACTIONABLE_UPDATE_RE.search(trimmed) is not None


def _is_likely_actionable_prompt(text: str) -> bool:
    trimmed = text.strip()
    if not trimmed or _is_likely_non_actionable_prompt(trimmed):
        return False
    if _EXPLICIT_PLANNING_REQUEST_RE.search(trimmed):
        return False
    return (
        "?" in trimmed
        or _ACTION_VERB_RE.search(trimmed) is not None
        or _TASK_NOUN_RE.search(trimmed) is not None
    )


def _is_direct_ack_answer_prompt(text: str) -> bool:
    trimmed = text.strip()
    action_request = bool(_SECOND_PERSON_REQUEST_RE.search(trimmed)) and bool(
        _ACTION_VERB_RE.search(trimmed) or _GENERIC_ACTION_REQUEST_RE.search(trimmed)
    )
    return bool(trimmed) and not action_request and bool(_DIRECT_ACK_QUESTION_RE.search(trimmed))


def _non_empty_lines(text: str) -> list[str]:
    return [line.strip() for line in re.split(r"\r?\n", text) if line.strip()]


def _has_structured_planning_format(text: str) -> bool:
    lines = _non_empty_lines(text)
    if not lines:
        return False
    bullets = sum(1 for line in lines if _BULLET_RE.search(line))
    cue = any(_PROMISE_RE.search(line) or _PROGRESS_CLAIM_RE.search(line) for line in lines)
    heading = bool(_HEADING_RE.search(lines[0]))
    return (heading and cue) or (bullets >= 2 and cue)


def _classifier_text(text: str) -> str:
    return re.sub("[\u2018\u2019\u02bc]", "'", text)


def is_planning_only_assistant_text(
    assistant_texts: Sequence[str], *, single_action_narrative: bool = False
) -> bool:
    """Short text (≤ 700 chars, no code fence) that promises or claims work without having
    done it ("I'll check the logs", "Plan: 1. … 2. …", "On it", "Sure!")."""
    text = _joined_texts(assistant_texts)
    if not text or len(text) > _MAX_VISIBLE_TEXT or "```" in text:
        return False
    text = _classifier_text(text)
    structured = _has_structured_planning_format(text)
    progress = bool(_PROGRESS_CLAIM_RE.search(text))
    short = bool(_SHORT_PLACEHOLDER_RE.search(text))
    wait = bool(_WAIT_PLACEHOLDER_RE.search(text))
    ack = bool(_ACK_PLACEHOLDER_RE.search(text))
    cue = bool(_PROMISE_RE.search(text)) or progress or wait or ack
    if not cue and not structured:
        return False
    if not (
        structured
        or single_action_narrative
        or progress
        or short
        or wait
        or ack
        or _ACTION_VERB_RE.search(text)
    ):
        return False
    return _COMPLETION_RE.search(text) is None


def _non_plan_tools(facts: AttemptFacts) -> list[ToolMeta]:
    return [meta for meta in facts.tool_metas if meta.tool_name != _PLAN_TOOL]


def _is_retry_safe_tool(meta: ToolMeta) -> bool:
    return meta.mutating_action is False or meta.tool_name.strip().lower() in _RETRY_SAFE_TOOL_NAMES


def _single_action_narrative(facts: AttemptFacts) -> bool:
    if len(_non_plan_tools(facts)) != 1:
        return False
    text = _joined_texts(facts.assistant_texts)
    if not text or len(text) > _MAX_VISIBLE_TEXT:
        return False
    text = _classifier_text(text)
    if _SINGLE_ACTION_RESULT_STYLE_RE.search(text):
        return False
    return bool(
        _SINGLE_ACTION_CONTINUATION_RE.search(text) or _SINGLE_ACTION_MULTI_STEP_RE.search(text)
    )


def resolve_planning_only_retry_instruction(
    facts: AttemptFacts,
    *,
    prompt: str | None = None,
    aborted: bool = False,
    timed_out: bool = False,
) -> str | None:
    """``PLANNING_ONLY_RETRY_INSTRUCTION`` when an actionable request got a plan instead of
    action (OpenClaw's ``resolvePlanningOnlyRetryInstruction``).

    Not for prompts that asked for a plan, thanks/acknowledgements, turns that stopped for
    another reason than ``stop``, or turns with real tool work; one retry-safe read-only
    tool followed by "I'll … next" still counts as planning.
    """
    narrative = _single_action_narrative(facts)
    if (
        (prompt is not None and not _is_likely_actionable_prompt(prompt))
        or aborted
        or timed_out
        or facts.client_tool_calls
        or facts.yield_detected
        or facts.sent_deterministic_approval_prompt
        or facts.messaging_delivery_evidence
    ):
        return None
    stop_reason = facts.assistant.stop_reason if facts.assistant is not None else None
    if stop_reason and stop_reason != "stop":
        return None
    text = _joined_texts(facts.assistant_texts)
    if not text or len(text) > _MAX_VISIBLE_TEXT or "```" in text:
        return None
    classifier = _classifier_text(text)
    if (
        _ACK_PLACEHOLDER_RE.search(classifier)
        and prompt is not None
        and (
            _ACK_REQUEST_PROMPT_RE.search(prompt.strip())
            or (_DIRECT_ACK_ANSWER_RE.search(classifier) and _is_direct_ack_answer_prompt(prompt))
        )
    ):
        return None
    if not is_planning_only_assistant_text(
        facts.assistant_texts, single_action_narrative=narrative
    ):
        return None
    non_plan = _non_plan_tools(facts)
    bypass = narrative and len(non_plan) == 1 and _is_retry_safe_tool(non_plan[0])
    safe_activity = (
        len(non_plan) >= 2
        and facts.items_active == 0
        and facts.items_completed >= len(non_plan)
        and all(_is_retry_safe_tool(meta) for meta in non_plan)
    )
    plan_count = len(facts.tool_metas) - len(non_plan)
    if (
        _has_replay_blocking_tool_error(facts)
        or (non_plan and not bypass and not safe_activity)
        or (facts.items_started > plan_count and not bypass and not safe_activity)
        or facts.had_potential_side_effects
    ):
        return None
    return PLANNING_ONLY_RETRY_INSTRUCTION
