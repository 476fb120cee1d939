"""Planning-only turns: an actionable request answered with a plan instead of action.

OpenClaw's planning-only detector. ``is_planning_only_assistant_text`` recognizes a visible
answer that only promises or outlines work (a heading or bullets, "I'll …", no completion
claim); ``resolve_planning_only_retry_instruction`` decides whether the next attempt is told to
act now (``PLANNING_ONLY_RETRY_INSTRUCTION``) — never for prompts that asked for a plan,
acknowledgements, turns that stopped for another reason, or turns with real tool work, and,
like every directed retry (``retry_instructions``), never after a possible side effect. A
short approval to proceed gets ``ACK_EXECUTION_FAST_PATH_INSTRUCTION`` up front.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Final

from .reply_payload import ToolMeta
from .retry_instructions import (
    AttemptFacts,
    has_replay_blocking_tool_error,
    joined_assistant_texts,
)

__all__ = [
    "ACK_EXECUTION_FAST_PATH_INSTRUCTION",
    "PLANNING_ONLY_BLOCKED_TEXT",
    "PLANNING_ONLY_RETRY_INSTRUCTION",
    "is_likely_execution_ack_prompt",
    "is_planning_only_assistant_text",
    "resolve_ack_execution_fast_path_instruction",
    "resolve_planning_only_retry_instruction",
]

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

_PLAN_TOOL: Final = "update_plan"
_RETRY_SAFE_TOOL_NAMES: Final = frozenset({"read", "search", "find", "grep", "glob", "ls"})

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
    text = joined_assistant_texts(assistant_texts)
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
    text = joined_assistant_texts(facts.assistant_texts)
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
    text = joined_assistant_texts(facts.assistant_texts)
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
        has_replay_blocking_tool_error(facts)
        or (non_plan and not bypass and not safe_activity)
        or (facts.items_started > plan_count and not bypass and not safe_activity)
        or facts.had_potential_side_effects
    ):
        return None
    return PLANNING_ONLY_RETRY_INSTRUCTION
