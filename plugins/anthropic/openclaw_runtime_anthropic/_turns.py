"""Anthropic turn rules (spec §12.4): strict alternation, no dangling tool use, no prefill tail.

:func:`validate_anthropic_turns` is OpenClaw's newest implementation: merge consecutive
assistant turns (later ``usage``/``stopReason``/``errorMessage`` win), strip tool calls no
result answers before the next assistant turn (signed-thinking turns all-or-nothing, results
inside user content do not count for them), then merge consecutive user turns unless
``merge_consecutive_user_turns=False``.

**Drift.** An older OpenClaw test expected consecutive assistants *not* to merge and trailing
empty or thinking-only aborted assistants to be dropped inside ``validateAnthropicTurns``. The
newest code (followed here) merges, and leaves the tail to
:func:`drop_trailing_empty_assistant_turns` (only unsendable turns: empty, blank text,
thinking-only) and :func:`drop_all_trailing_non_user_turns` (the last-resort guard).
``toolResult`` and ``tool`` tails count as user-like.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openclaw_runtime.transcript import (
    TranscriptPolicy,
    should_merge_consecutive_user_turns,
    validate_strict_turns,
)
from openclaw_runtime.transcript.policy import ANTHROPIC_APIS, SIGNED_THINKING_PROVIDERS
from openclaw_runtime.transcript.wire import role_of, wget

__all__ = [
    "drop_all_trailing_non_user_turns",
    "drop_trailing_empty_assistant_turns",
    "handles_policy",
    "is_effectively_empty_assistant_content",
    "messages_end_with_user_turn",
    "should_short_circuit_for_missing_user_tail",
    "validate_anthropic_replay_turns",
    "validate_anthropic_turns",
]

_USER_LIKE_ROLES = frozenset({"user", "toolResult", "tool"})


def _get(obj: Any, key: str) -> Any:
    """A wire key of a dict or a message model (``stopReason`` → ``stop_reason``)."""
    return wget(obj, key)


def _role(message: Any) -> Any:
    return role_of(message) if message is not None else None


def validate_anthropic_turns(
    messages: Sequence[Any], *, merge_consecutive_user_turns: bool = True
) -> list[Any]:
    """Make a history acceptable to the Anthropic Messages API (pure; same list if clean)."""
    return validate_strict_turns(
        messages, merge_consecutive_user_turns=merge_consecutive_user_turns
    )


def is_effectively_empty_assistant_content(message: Any) -> bool:
    """No content, blank text, or only (redacted) thinking blocks."""
    content = _get(message, "content")
    if content is None:
        return True
    if not isinstance(content, list):
        return isinstance(content, str) and not content.strip()
    for block in content:
        if block is None or isinstance(block, str | int | float | bool):
            continue
        kind = _get(block, "type")
        if kind in ("thinking", "redacted_thinking"):
            continue
        if kind == "text":
            text = _get(block, "text")
            if isinstance(text, str) and text.strip():
                return False
            continue
        return False
    return True


def _is_unsendable_trailing_assistant(message: Any) -> bool:
    return _role(message) == "assistant" and is_effectively_empty_assistant_content(message)


def drop_trailing_empty_assistant_turns(messages: Sequence[Any]) -> list[Any]:
    """Drop trailing assistant turns Anthropic would reject; never one with real output."""
    end = len(messages)
    while end > 0 and _is_unsendable_trailing_assistant(messages[end - 1]):
        end -= 1
    if end == len(messages):
        return messages if isinstance(messages, list) else list(messages)
    return list(messages[:end])


def messages_end_with_user_turn(messages: Sequence[Any]) -> bool:
    """The last message is ``user``, ``toolResult`` or ``tool`` (Anthropic needs one)."""
    return bool(messages) and _role(messages[-1]) in _USER_LIKE_ROLES


def drop_all_trailing_non_user_turns(messages: Sequence[Any]) -> list[Any]:
    """Drop every trailing turn until a user-like one (the guard right before sending)."""
    end = len(messages)
    while end > 0 and _role(messages[end - 1]) not in _USER_LIKE_ROLES:
        end -= 1
    if end == len(messages):
        return messages if isinstance(messages, list) else list(messages)
    return list(messages[:end])


def should_short_circuit_for_missing_user_tail(
    messages: Sequence[Any], *, validate_anthropic_turns: bool, prompt_text: str, has_images: bool
) -> bool:
    """Skip the provider call when it would end on a real assistant turn with no new prompt."""
    if not validate_anthropic_turns or not messages:
        return False
    if prompt_text.strip() or has_images or messages_end_with_user_turn(messages):
        return False
    last = messages[-1]
    return _role(last) == "assistant" and not is_effectively_empty_assistant_content(last)


def handles_policy(policy: TranscriptPolicy) -> bool:
    """Anthropic Messages / Bedrock Converse, or an Anthropic-family provider."""
    return policy.api in ANTHROPIC_APIS or policy.provider in SIGNED_THINKING_PROVIDERS


def validate_anthropic_replay_turns(
    messages: Sequence[Any], policy: TranscriptPolicy
) -> list[Any] | None:
    """The ``validate_replay_turns`` answer for Anthropic models, ``None`` for others.

    Turn validation (user merging off for append-only runtime context on the Messages API),
    then the unsendable-tail drop, so the request never ends on an empty assistant turn.
    """
    if not handles_policy(policy):
        return None
    memo = getattr(messages, "turn_memo", None)  # the session's (``transcript.turn_memo``)
    if memo is not None:
        # the same rule, reusing the previous request's answer inside a tool loop (else a
        # pass over the whole history at every request: quadratic in the loop)
        validated = memo(messages, policy, strict=True)  # ``validate_strict_replay_turns``
    else:
        validated = validate_anthropic_turns(
            messages, merge_consecutive_user_turns=should_merge_consecutive_user_turns(policy)
        )
    return drop_trailing_empty_assistant_turns(validated)
