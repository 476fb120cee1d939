"""Tool-result truncation: head only, or head + tail when the end matters.

Cutting the end of a tool result throws away what is usually the most useful part (the
error, the summary line, the closing brace of a JSON document), so ``truncate_tool_result_text``
keeps head and tail when ``has_important_tail`` says so. The notice at the end tells the model
how much was cut and to narrow its arguments, and every function here fits that notice inside
the budget with a bounded loop. Nothing here mutates its input: messages are copied.

Lengths are Python string lengths (code points). OpenClaw counts UTF-16 code units; the two
differ only for characters outside the Basic Multilingual Plane (emoji, rare CJK).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..messages import TextContent, ToolResultMessage
from .limits import MIN_KEEP_CHARS, RECOVERY_MIN_KEEP_CHARS, calculate_max_tool_result_chars

__all__ = [
    "CONTEXT_LIMIT_TRUNCATION_NOTICE",
    "MIDDLE_OMISSION_MARKER",
    "SuffixFactory",
    "ToolResultReductionPotential",
    "ToolResultTruncationStats",
    "compact_recovery_suffix",
    "estimate_tool_result_reduction_potential",
    "format_context_limit_truncation_notice",
    "get_tool_result_text_length",
    "has_important_tail",
    "message_has_truncation_marker",
    "session_likely_has_oversized_tool_results",
    "text_has_truncation_marker",
    "truncate_oversized_tool_results_in_messages",
    "truncate_tool_result_message",
    "truncate_tool_result_text",
]

SuffixFactory: TypeAlias = Callable[[int], str]

CONTEXT_LIMIT_TRUNCATION_NOTICE = "more characters truncated"
_CONTEXT_LIMIT_TRUNCATION_HINT = "rerun with narrower args if needed"

#: Between head and tail in head+tail mode.
MIDDLE_OMISSION_MARKER = "\n\n⚠️ [... middle content omitted — showing head and tail ...]\n\n"

_TAIL_WINDOW_CHARS = 2_000
_TAIL_SHARE = 0.3
_MAX_TAIL_CHARS = 4_000
_HEAD_SNAP_SHARE = 0.8
_TAIL_SNAP_SHARE = 0.2

# JavaScript's \b and \d are ASCII-only; re.ASCII keeps Python's matches identical.
_IMPORTANT_TAIL_RE = re.compile(
    r"\b(error|exception|failed|fatal|traceback|panic|stack trace|errno|exit code)\b", re.ASCII
)
_SUMMARY_TAIL_RE = re.compile(r"\b(total|summary|result|complete|finished|done)\b", re.ASCII)
_TRUNCATION_MARKER_RE = re.compile(r"\[\.\.\. \d+ .*(chars|characters) truncated;", re.ASCII)


def format_context_limit_truncation_notice(truncated_chars: float) -> str:
    """``[... N more characters truncated; rerun with narrower args if needed]``, N ≥ 1."""
    count = max(1, math.floor(truncated_chars))
    return f"[... {count} {CONTEXT_LIMIT_TRUNCATION_NOTICE}; {_CONTEXT_LIMIT_TRUNCATION_HINT}]"


def compact_recovery_suffix(truncated_chars: float) -> str:
    """The short notice used when many results must share a tight recovery budget."""
    return f"[... {max(1, math.floor(truncated_chars))} chars truncated; narrow args]"


def has_important_tail(text: str) -> bool:
    """True when the last 2000 characters look like an error, a summary or closing JSON."""
    tail = text[-_TAIL_WINDOW_CHARS:].lower()
    return bool(
        _IMPORTANT_TAIL_RE.search(tail)
        or tail.strip().endswith("}")
        or _SUMMARY_TAIL_RE.search(tail)
    )


def text_has_truncation_marker(text: str) -> bool:
    """True when ``text`` was already projected by a truncation pass (either suffix or marker)."""
    return bool(_TRUNCATION_MARKER_RE.search(text)) or MIDDLE_OMISSION_MARKER in text


def message_has_truncation_marker(message: Any) -> bool:
    """True when any text block of ``message`` carries a truncation marker."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        return False
    return any(
        isinstance(block, TextContent) and text_has_truncation_marker(block.text)
        for block in content
    )


# --------------------------------------------------------------------------- one text


def truncate_tool_result_text(
    text: str,
    max_chars: float,
    *,
    suffix: str | SuffixFactory | None = None,
    min_keep_chars: int | None = None,
    preserve_important_tail: bool = True,
    compact: bool = False,
) -> str:
    """OpenClaw's ``truncateToolResultText``: fit ``text`` into ``max_chars`` characters.

    * Head only: the head is cut at ``budget`` (snapped back to a newline when that keeps more
      than 80 % of it) and the suffix follows with no separator.
    * Head + tail, when ``has_important_tail`` and ``budget > 2 · min_keep``: the tail takes
      ``min(floor(budget · 0.3), 4000)``, its start snaps forward to a newline within its first
      20 %; the head takes the rest minus the omission marker.
    * The suffix reports how many characters were cut; a bounded loop shortens the kept text
      until text + suffix fits.

    ``compact`` selects recovery mode: the short suffix and no minimum head. Text that fits is
    returned unchanged, so truncating a truncated result with the same budget is a no-op.
    """
    limit = _char_budget(max_chars, "max_chars")
    if len(text) <= limit:
        return text
    factory = _suffix_factory(suffix, compact)
    min_keep = _effective_min_keep(limit, _default_min_keep(min_keep_chars, compact), factory)
    default_suffix = factory(max(1, len(text) - limit))
    budget = max(min_keep, limit - len(default_suffix))

    if preserve_important_tail and budget > min_keep * 2 and has_important_tail(text):
        tail_budget = min(math.floor(budget * _TAIL_SHARE), _MAX_TAIL_CHARS)
        head_budget = budget - tail_budget - len(MIDDLE_OMISSION_MARKER)
        if head_budget > min_keep:
            head_cut = _snap_head(text, head_budget)
            tail_start = len(text) - tail_budget
            newline = text.find("\n", tail_start)
            if newline != -1 and newline < tail_start + tail_budget * _TAIL_SNAP_SHARE:
                tail_start = newline + 1
            kept = text[:head_cut] + MIDDLE_OMISSION_MARKER + text[tail_start:]
            return _append_bounded_suffix(kept, len(text), limit, factory)

    return _append_bounded_suffix(text[: _snap_head(text, budget)], len(text), limit, factory)


def _snap_head(text: str, cut: int) -> int:
    """Move a head cut back to the last newline at or before it if that keeps > 80 %."""
    newline = text.rfind("\n", 0, cut + 1)
    return newline if newline > cut * _HEAD_SNAP_SHARE else cut


def _append_bounded_suffix(
    kept: str, original_length: int, limit: int, factory: SuffixFactory
) -> str:
    """Append the suffix, shortening ``kept`` from its end until the whole fits ``limit``."""
    while True:
        final = kept + factory(max(1, original_length - len(kept)))
        if len(final) <= limit:
            return final
        if not kept:
            return final[:limit]
        overflow = len(final) - limit
        shorter = kept[: max(0, len(kept) - overflow)]
        kept = shorter if len(shorter) < len(kept) else kept[:-1]


def _suffix_factory(suffix: str | SuffixFactory | None, compact: bool) -> SuffixFactory:
    if callable(suffix):
        return suffix
    if isinstance(suffix, str):
        constant = suffix
        return lambda _truncated: constant
    if suffix is not None:
        raise TypeError(f"suffix must be a string or a callable, got {type(suffix).__name__}")
    return compact_recovery_suffix if compact else format_context_limit_truncation_notice


def _default_min_keep(min_keep_chars: int | None, compact: bool) -> int:
    if min_keep_chars is not None:
        if min_keep_chars < 0:
            raise ValueError(f"min_keep_chars must not be negative, got {min_keep_chars}")
        return min_keep_chars
    return RECOVERY_MIN_KEEP_CHARS if compact else MIN_KEEP_CHARS


def _effective_min_keep(limit: int, min_keep: int, factory: SuffixFactory) -> int:
    """The minimum head never crowds out the shortest suffix."""
    return max(0, min(min_keep, max(0, limit - len(factory(1)))))


def _char_budget(value: float, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    if math.isinf(value):
        return 2**63
    return math.floor(value)


# --------------------------------------------------------------------------- one message


def get_tool_result_text_length(message: Any) -> int:
    """Characters of all text blocks of a tool result; 0 for any other message."""
    if not isinstance(message, ToolResultMessage):
        return 0
    return sum(len(block.text) for block in message.content if isinstance(block, TextContent))


def truncate_tool_result_message(
    message: Any,
    max_chars: float,
    *,
    suffix: str | SuffixFactory | None = None,
    min_keep_chars: int | None = None,
    preserve_important_tail: bool = True,
    compact: bool = False,
) -> Any:
    """A copy of a tool result whose text blocks fit ``max_chars`` together.

    The budget is shared among text blocks in proportion to their length (each keeps at least
    the minimum head plus a suffix); images and other blocks are kept as they are. Messages
    that fit, and messages that are not tool results, are returned as they are.
    """
    limit = _char_budget(max_chars, "max_chars")
    total = get_tool_result_text_length(message)
    if total <= limit:
        return message
    factory = _suffix_factory(suffix, compact)
    min_keep = _effective_min_keep(limit, _default_min_keep(min_keep_chars, compact), factory)
    content = []
    for block in message.content:
        if not isinstance(block, TextContent):
            content.append(block)
            continue
        share = len(block.text) / total
        proportional = math.floor(limit * share)
        default_suffix = factory(max(1, len(block.text) - proportional))
        block_budget = max(1, min(limit, max(min_keep + len(default_suffix), proportional)))
        text = truncate_tool_result_text(
            block.text,
            block_budget,
            suffix=factory,
            min_keep_chars=min_keep,
            preserve_important_tail=preserve_important_tail,
        )
        content.append(block.model_copy(update={"text": text}))
    return message.model_copy(update={"content": content})


def _clear_tool_result_text(message: ToolResultMessage) -> ToolResultMessage:
    content = [
        block.model_copy(update={"text": ""}) if isinstance(block, TextContent) else block
        for block in message.content
    ]
    return message.model_copy(update={"content": content})


# --------------------------------------------------------------------------- many messages


@dataclass(frozen=True, slots=True)
class ToolResultReductionPotential:
    """How many tool-result characters recovery truncation could remove."""

    max_chars: int
    aggregate_budget_chars: int
    tool_result_count: int
    total_tool_result_chars: int
    oversized_count: int
    oversized_reducible_chars: int
    aggregate_reducible_chars: int
    max_reducible_chars: int


@dataclass(frozen=True, slots=True)
class ToolResultTruncationStats:
    """What ``truncate_oversized_tool_results_in_messages`` changed."""

    truncated_count: int
    oversized_count: int
    aggregate_count: int
    oversized_reducible_chars: int
    aggregate_reducible_chars: int
    max_chars: int
    aggregate_budget_chars: int
    reason: str | None = None

    @property
    def truncated(self) -> bool:
        """True when at least one tool result was replaced."""
        return self.truncated_count > 0


@dataclass(slots=True)
class _Plan:
    replacements: dict[int, ToolResultMessage]
    oversized_count: int
    aggregate_count: int
    oversized_reducible_chars: int
    aggregate_reducible_chars: int


def estimate_tool_result_reduction_potential(
    messages: Sequence[Any] | Mapping[str, Any],
    *,
    context_window_tokens: float | None = None,
    max_chars_override: int | None = None,
    aggregate_max_chars_override: int | None = None,
) -> ToolResultReductionPotential:
    """Oversized and aggregate reducible characters, as recovery truncation would cut them.

    Accepts OpenClaw's parameter mapping (``messages``, ``contextWindowTokens``,
    ``maxCharsOverride``, ``aggregateMaxCharsOverride``) as well.
    """
    if isinstance(messages, Mapping):
        params = messages
        messages = params["messages"]
        context_window_tokens = params.get("contextWindowTokens", context_window_tokens)
        max_chars_override = params.get("maxCharsOverride", max_chars_override)
        aggregate_max_chars_override = params.get(
            "aggregateMaxCharsOverride", aggregate_max_chars_override
        )
    messages = list(messages)
    max_chars, aggregate_budget = _budgets(
        context_window_tokens, max_chars_override, aggregate_max_chars_override
    )
    lengths = [get_tool_result_text_length(m) for m in messages]
    counted = [length for m, length in zip(messages, lengths, strict=True) if length > 0]
    plan = _build_plan(messages, max_chars, aggregate_budget, RECOVERY_MIN_KEEP_CHARS)
    return ToolResultReductionPotential(
        max_chars=max_chars,
        aggregate_budget_chars=aggregate_budget,
        tool_result_count=len(counted),
        total_tool_result_chars=sum(counted),
        oversized_count=plan.oversized_count,
        oversized_reducible_chars=plan.oversized_reducible_chars,
        aggregate_reducible_chars=plan.aggregate_reducible_chars,
        max_reducible_chars=plan.oversized_reducible_chars + plan.aggregate_reducible_chars,
    )


def session_likely_has_oversized_tool_results(
    messages: Sequence[Any],
    *,
    context_window_tokens: float,
    max_chars_override: int | None = None,
) -> bool:
    """True when recovery truncation would change something."""
    potential = estimate_tool_result_reduction_potential(
        messages, context_window_tokens=context_window_tokens, max_chars_override=max_chars_override
    )
    return potential.oversized_count > 0 or potential.aggregate_reducible_chars > 0


def truncate_oversized_tool_results_in_messages(
    messages: Sequence[Any],
    context_window_tokens: float | None = None,
    *,
    max_chars_override: int | None = None,
    aggregate_max_chars_override: int | None = None,
) -> tuple[list[Any], ToolResultTruncationStats]:
    """Recovery truncation over a message list: a new list and what changed.

    First every tool result over the per-result cap is truncated; then, if all tool results
    together still exceed the aggregate budget (by default the per-result cap), older results
    are cut first, down to the shortest notice, and emptied if that is not enough. Results that
    already carried a truncation marker before this pass are left byte-identical, so prompt
    caches stay valid across turns. Unchanged messages are the same objects as in the input.
    """
    messages = list(messages)
    max_chars, aggregate_budget = _budgets(
        context_window_tokens, max_chars_override, aggregate_max_chars_override
    )
    plan = _build_plan(messages, max_chars, aggregate_budget, RECOVERY_MIN_KEEP_CHARS)
    result = [plan.replacements.get(index, message) for index, message in enumerate(messages)]
    stats = ToolResultTruncationStats(
        truncated_count=len(plan.replacements),
        oversized_count=plan.oversized_count,
        aggregate_count=plan.aggregate_count,
        oversized_reducible_chars=plan.oversized_reducible_chars,
        aggregate_reducible_chars=plan.aggregate_reducible_chars,
        max_chars=max_chars,
        aggregate_budget_chars=aggregate_budget,
        reason=None if plan.replacements else _no_change_reason(messages),
    )
    return result, stats


def _no_change_reason(messages: list[Any]) -> str:
    return "empty session" if not messages else "no oversized or aggregate tool results"


def _budgets(
    context_window_tokens: float | None,
    max_chars_override: int | None,
    aggregate_max_chars_override: int | None,
) -> tuple[int, int]:
    if max_chars_override is None:
        if context_window_tokens is None:
            raise ValueError("context_window_tokens is required unless max_chars_override is set")
        max_chars = max(1, calculate_max_tool_result_chars(context_window_tokens))
    else:
        max_chars = max(1, _char_budget(max_chars_override, "max_chars_override"))
    aggregate = (
        max_chars
        if aggregate_max_chars_override is None
        else _char_budget(aggregate_max_chars_override, "aggregate_max_chars_override")
    )
    return max_chars, max(1, aggregate)


def _build_plan(messages: list[Any], max_chars: int, aggregate_budget: int, min_keep: int) -> _Plan:
    oversized: dict[int, ToolResultMessage] = {}
    for index, message in enumerate(messages):
        if get_tool_result_text_length(message) > max_chars:
            oversized[index] = truncate_tool_result_message(
                message, max_chars, min_keep_chars=min_keep
            )
    oversized_reduction = _reduction(messages, oversized)
    trimmed = [oversized.get(index, message) for index, message in enumerate(messages)]
    aggregate = _aggregate_replacements(messages, trimmed, aggregate_budget, min_keep)
    return _Plan(
        replacements={**oversized, **aggregate},
        oversized_count=len(oversized),
        aggregate_count=len(aggregate),
        oversized_reducible_chars=oversized_reduction,
        aggregate_reducible_chars=_reduction(trimmed, aggregate),
    )


def _reduction(messages: list[Any], replacements: Mapping[int, ToolResultMessage]) -> int:
    return sum(
        max(0, get_tool_result_text_length(messages[index]) - get_tool_result_text_length(new))
        for index, new in replacements.items()
    )


def _aggregate_replacements(
    originals: list[Any], trimmed: list[Any], budget: int, min_keep: int
) -> dict[int, ToolResultMessage]:
    """Spend the aggregate reduction on older results first so fresh output stays intact."""
    candidates = [
        (index, message, get_tool_result_text_length(message))
        for index, message in enumerate(trimmed)
        if isinstance(message, ToolResultMessage)
        and get_tool_result_text_length(message) > 0
        and not message_has_truncation_marker(originals[index])
    ]
    if len(candidates) < 2:
        return {}
    factory: SuffixFactory = (
        compact_recovery_suffix
        if min_keep == RECOVERY_MIN_KEEP_CHARS
        and budget < len(candidates) * len(format_context_limit_truncation_notice(1))
        else format_context_limit_truncation_notice
    )
    min_truncated = min_keep + len(factory(1))
    total = sum(length for _, _, length in candidates)
    if total <= budget:
        return {}
    remaining = total - budget
    replacements: dict[int, ToolResultMessage] = {}
    for index, message, length in candidates:
        if remaining <= 0:
            break
        reducible = max(0, length - min_truncated)
        if reducible <= 0:
            continue
        target = max(min_truncated, length - min(reducible, remaining))
        truncated = truncate_tool_result_message(
            message, target, min_keep_chars=min_keep, suffix=factory
        )
        reduction = max(0, length - get_tool_result_text_length(truncated))
        if reduction <= 0:
            continue
        replacements[index] = truncated
        remaining -= reduction
    if remaining > 0:
        # Still over: empty whole results, oldest first (OpenClaw counts each full length).
        for index, message, length in candidates:
            if remaining <= 0:
                break
            emptied = _clear_tool_result_text(replacements.get(index, message))
            reduction = max(0, length - get_tool_result_text_length(emptied))
            if reduction <= 0:
                continue
            replacements[index] = emptied
            remaining -= reduction
    return replacements
