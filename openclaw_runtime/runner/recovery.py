"""Recovery chains as pure decisions (seed 003, seed 000 §6.1).

**Overflow.** The provider said the context is too long. In order:

1. the attempt already compacted in-flight (preemptive compaction) → retry once without
   compacting again: the overflow may be a leftover of the turn that triggered it;
2. fewer than ``MAX_OVERFLOW_COMPACTION_ATTEMPTS`` (3) explicit compactions → compact through
   the context engine and retry;
3. the transcript holds oversized tool results and truncation was not tried → truncate them
   (head and tail kept) and retry;
4. otherwise surface ``compaction_failure`` (the last compaction failed) or
   ``context_overflow``.

**Timeout.** A model timeout while the prompt fills more than 65 % of the window is probably
"too long to answer in time", so compact (at most ``MAX_TIMEOUT_COMPACTION_ATTEMPTS``, 2) and
retry, which breaks the loop of ever-slower attempts.

**Thinking level.** When an attempt fails because the provider rejects the reasoning setting,
step the level down (high → medium → low → off) instead of failing the run (seed 004).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..llm import ThinkingLevel
from .retry_limit import MAX_OVERFLOW_COMPACTION_ATTEMPTS, MAX_TIMEOUT_COMPACTION_ATTEMPTS

__all__ = [
    "COMPACTION_FAILURE_USER_TEXT",
    "CONTEXT_OVERFLOW_USER_TEXT",
    "POST_COMPACTION_LOOP_REPEATS",
    "TIMEOUT_COMPACTION_PROMPT_SHARE",
    "OverflowRecoveryState",
    "OverflowStep",
    "PostCompactionLoopGuard",
    "downgrade_thinking_level",
    "is_thinking_level_rejection",
    "parse_context_overflow_limit",
    "resolve_overflow_recovery_step",
    "should_compact_after_timeout",
]

#: Share of the context window above which a timeout triggers compaction.
TIMEOUT_COMPACTION_PROMPT_SHARE = 0.65

CONTEXT_OVERFLOW_USER_TEXT = (
    "Context overflow: prompt too large for the model. Try /reset (or /new) to start a fresh "
    "session, or use a larger-context model."
)
COMPACTION_FAILURE_USER_TEXT = (
    "Context overflow: the conversation could not be compacted to fit the model. Try /reset "
    "(or /new) to start a fresh session, or use a larger-context model."
)

OverflowStep = Literal[
    "retry_without_compaction",
    "compact",
    "truncate_tool_results",
    "surface_overflow",
    "surface_compaction_failure",
]


@dataclass(frozen=True, slots=True)
class OverflowRecoveryState:
    """What the run has tried so far against overflow."""

    attempt_compactions: int = 0
    retried_after_in_attempt_compaction: bool = False
    overflow_compaction_attempts: int = 0
    compaction_exhausted: bool = False
    last_compaction_failed: bool = False
    truncation_attempted: bool = False
    has_oversized_tool_results: bool = False
    max_overflow_compaction_attempts: int = MAX_OVERFLOW_COMPACTION_ATTEMPTS


def resolve_overflow_recovery_step(state: OverflowRecoveryState) -> OverflowStep:
    """The next step of the overflow chain (module docstring).

    ``compaction_exhausted`` is set by the loop when a compaction came back without
    compacting (nothing left to summarize, or it failed): more compactions would not help.
    """
    if state.attempt_compactions > 0 and not state.retried_after_in_attempt_compaction:
        return "retry_without_compaction"
    if (
        not state.compaction_exhausted
        and state.overflow_compaction_attempts < state.max_overflow_compaction_attempts
    ):
        return "compact"
    if state.has_oversized_tool_results and not state.truncation_attempted:
        return "truncate_tool_results"
    if state.last_compaction_failed:
        return "surface_compaction_failure"
    return "surface_overflow"


def should_compact_after_timeout(
    *,
    timed_out: bool,
    timed_out_during_tool_execution: bool,
    prompt_tokens: int | None,
    context_window_tokens: int,
    timeout_compaction_attempts: int,
    max_attempts: int = MAX_TIMEOUT_COMPACTION_ATTEMPTS,
    share: float = TIMEOUT_COMPACTION_PROMPT_SHARE,
) -> bool:
    """A model timeout with the prompt above ``share`` of the window, budget left."""
    if not timed_out or timed_out_during_tool_execution:
        return False
    if timeout_compaction_attempts >= max_attempts:
        return False
    if not prompt_tokens or context_window_tokens <= 0:
        return False
    return prompt_tokens / context_window_tokens > share


_DOWNGRADE: dict[str, ThinkingLevel] = {
    "max": "xhigh",
    "xhigh": "high",
    "high": "medium",
    "medium": "low",
    "low": "minimal",
    "minimal": "off",
}

_THINKING_REJECTION_RE = re.compile(
    r"(reasoning[_ ]effort|thinking|budget[_ ]tokens|reasoning).{0,80}"
    r"(not supported|unsupported|invalid|is not available|does not support|must be)",
    re.IGNORECASE | re.DOTALL,
)


def is_thinking_level_rejection(error_message: str | None) -> bool:
    """The provider refused the request because of the reasoning/thinking setting."""
    return bool(error_message) and bool(_THINKING_REJECTION_RE.search(error_message or ""))


def downgrade_thinking_level(level: ThinkingLevel) -> ThinkingLevel | None:
    """The next lower level, or None at ``off``."""
    return _DOWNGRADE.get(level)


_LIMIT_PATTERNS = (
    # OpenAI and most compatible servers
    re.compile(r"maximum context length is ([\d,]+) tokens", re.IGNORECASE),
    re.compile(r"maximum context length of ([\d,]+) tokens", re.IGNORECASE),
    # Anthropic: "prompt is too long: 215000 tokens > 200000 maximum"
    re.compile(r"([\d,]+) tokens > ([\d,]+) maximum", re.IGNORECASE),
    # Gemini: "input token count (1200000) exceeds the maximum number of tokens allowed (1048576)"
    re.compile(r"exceeds the maximum number of tokens allowed \(?([\d,]+)\)?", re.IGNORECASE),
    re.compile(r"context (?:window|length|limit) (?:is|of) ([\d,]+)(?: tokens)?", re.IGNORECASE),
)


def parse_context_overflow_limit(error_message: str | None) -> int | None:
    """The context limit a provider states in its overflow error, if it states one.

    The catalog's window can be wrong (a proxy, a smaller deployment); the provider's own
    number is what the rest of the run must plan with.
    """
    if not error_message:
        return None
    for pattern in _LIMIT_PATTERNS:
        match = pattern.search(error_message)
        if match:
            value = int(match.group(match.lastindex or 1).replace(",", ""))
            return value if value > 0 else None
    return None


#: Identical tool-call rounds in a row after a compaction that count as a loop.
POST_COMPACTION_LOOP_REPEATS = 3


class PostCompactionLoopGuard:
    """Stops an attempt that, right after a compaction, keeps making the same tool calls
    (OpenClaw #77474): the summary lost the result it needed and the model asks again and
    again; waiting for the timeout would only burn paid calls.

    ``observe(calls)`` takes one assistant turn's tool calls as ``(name, arguments)`` pairs and
    returns True when the same round has now been seen ``repeats`` times in a row.
    """

    def __init__(self, repeats: int = POST_COMPACTION_LOOP_REPEATS) -> None:
        self.repeats = repeats
        self._last: tuple[tuple[str, str], ...] | None = None
        self._count = 0

    def observe(self, calls: Sequence[tuple[str, object]]) -> bool:
        if not calls:
            self._last, self._count = None, 0
            return False
        signature = tuple(sorted((name, _canonical(arguments)) for name, arguments in calls))
        if signature == self._last:
            self._count += 1
        else:
            self._last, self._count = signature, 1
        return self._count >= self.repeats


def _canonical(value: object) -> str:
    import json

    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(value)
