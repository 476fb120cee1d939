"""Turn validation for replay: the generic rules behind ``validate_replay_turns``.

Strict providers want alternating turns and no tool call without a result. These are
OpenClaw's turn primitives; the Anthropic and Google plugins build their provider rules from
them, and :func:`validate_replay_turns` is the ``trylast`` fallback for every other provider
(policy flags ``validate_gemini_turns`` / ``validate_anthropic_turns``, e.g. strict
OpenAI-compatible servers such as vLLM):

* consecutive **assistant** turns merge (content concatenated; the later ``usage``,
  ``stopReason`` and ``errorMessage`` win);
* tool calls that no result answers before the next assistant turn are stripped; a turn left
  with nothing says ``[tool calls omitted]`` (``[]`` when it was aborted or failed). A turn with
  (redacted) thinking is all-or-nothing: every call must resolve by id *and* tool name;
* consecutive **user** turns merge (string content becomes a text block; the later message's
  fields win, its timestamp if it has one);
* a transcript that starts with an assistant turn gets a ``(session bootstrap)`` user turn.

All functions are pure; an input that needs nothing comes back as the same list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..messages import UserMessage
from .policy import TranscriptPolicy, should_merge_consecutive_user_turns
from .tool_calls import extract_tool_calls_from_assistant, extract_tool_result_id
from .wire import coerce_blocks, is_typed_model, role_of, text_block, wget, wset

__all__ = [
    "GOOGLE_TURN_ORDER_BOOTSTRAP_TEXT",
    "TOOL_CALLS_OMITTED_TEXT",
    "merge_consecutive_assistant_turns",
    "merge_consecutive_user_messages",
    "merge_consecutive_user_turns",
    "sanitize_google_turn_ordering",
    "strip_dangling_tool_uses",
    "validate_gemini_turns",
    "validate_replay_turns",
    "validate_strict_replay_turns",
    "validate_strict_turns",
    "validate_turns_with_consecutive_merge",
]

TOOL_CALLS_OMITTED_TEXT = "[tool calls omitted]"
GOOGLE_TURN_ORDER_BOOTSTRAP_TEXT = "(session bootstrap)"
_CALL_TYPES = frozenset({"toolUse", "toolCall", "functionCall"})
_MATCH_ID_KEYS = ("toolUseId", "toolCallId", "tool_use_id", "tool_call_id", "callId", "call_id")

Merge = Callable[[Any, Any], Any]


def _same(messages: Sequence[Any]) -> list[Any]:
    return messages if isinstance(messages, list) else list(messages)


def _optional_string(value: Any) -> str | None:
    if isinstance(value, str):
        trimmed = value.strip()
        return trimmed or None
    return None


# --------------------------------------------------------------------------- merging


def validate_turns_with_consecutive_merge(
    messages: Sequence[Any], role: str, merge: Merge
) -> list[Any]:
    """Merge runs of ``role`` turns with ``merge(previous, current)``."""
    if not messages:
        return _same(messages)
    result: list[Any] = []
    last_role: Any = None
    for message in messages:
        current = role_of(message)
        if not current:
            result.append(message)
            continue
        if current == last_role == role and result:
            result[-1] = merge(result[-1], message)
            continue
        result.append(message)
        last_role = current
    return _same(messages) if len(result) == len(messages) else result


def merge_consecutive_assistant_turns(previous: Any, current: Any) -> Any:
    """One assistant turn from two: content joined, the later usage/stop/error kept."""
    before = wget(previous, "content")
    after = wget(current, "content")
    content = (before if isinstance(before, list) else []) + (
        after if isinstance(after, list) else []
    )
    updates: dict[str, Any] = {"content": coerce_blocks(previous, content)}
    for key in ("usage", "stopReason", "errorMessage"):
        value = wget(current, key)
        if value:
            updates[key] = value
    return wset(previous, **updates)


def _user_blocks(message: Any) -> list[Any]:
    content = wget(message, "content")
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [text_block(message, content)]
    return []


def merge_consecutive_user_turns(previous: Any, current: Any) -> Any:
    """One user turn from two: blocks joined, the later message's fields kept."""
    content = coerce_blocks(current, _user_blocks(previous) + _user_blocks(current))
    timestamp = wget(current, "timestamp")
    if timestamp is None:
        timestamp = wget(previous, "timestamp")
    if timestamp is None:  # JSON.stringify drops an undefined timestamp
        return wset(current, content=content)
    return wset(current, content=content, timestamp=timestamp)


def merge_consecutive_user_messages(messages: Sequence[Any]) -> list[Any]:
    """Merge every run of consecutive user turns."""
    return validate_turns_with_consecutive_merge(messages, "user", merge_consecutive_user_turns)


def validate_gemini_turns(messages: Sequence[Any]) -> list[Any]:
    """Gemini's turn contract: no two model (assistant) turns in a row."""
    return validate_turns_with_consecutive_merge(
        messages, "assistant", merge_consecutive_assistant_turns
    )


# --------------------------------------------------------------------------- dangling calls


def _match_ids(record: Any) -> list[str]:
    ids: list[str] = []
    for key in _MATCH_ID_KEYS:
        value = _optional_string(wget(record, key))
        if value and value not in ids:
            ids.append(value)
    return ids


def _future_results(messages: Sequence[Any], start: int) -> tuple[set[str], dict[str, set[str]]]:
    """Result ids before the next assistant turn, and the tool names each id was answered by.

    Results embedded in user content count for plain turns only: signed thinking needs a real
    result turn.
    """
    ids: set[str] = set()
    matches: dict[str, set[str]] = {}
    for candidate in messages[start + 1 :]:
        role = role_of(candidate)
        if role == "assistant":
            break
        content = wget(candidate, "content")
        for block in content if isinstance(content, list) else []:
            if wget(block, "type") in ("toolResult", "tool"):
                ids.update(_match_ids(block))
        if role not in ("toolResult", "tool"):
            continue
        if role == "toolResult":
            canonical = extract_tool_result_id(candidate)
            if canonical:
                ids.add(canonical)
        name = _optional_string(wget(candidate, "toolName")) or _optional_string(
            wget(candidate, "name")
        )
        for result_id in _match_ids(candidate):
            if role == "tool":
                ids.add(result_id)
            bucket = matches.setdefault(result_id, set())
            if name:
                bucket.add(name)
    return ids, matches


def _is_failed(message: Any) -> bool:
    return wget(message, "stopReason") in ("aborted", "error")


def strip_dangling_tool_uses(messages: Sequence[Any]) -> list[Any]:
    """Remove tool calls no later result (before the next assistant turn) resolves."""
    result: list[Any] = []
    for index, message in enumerate(messages):
        if message is None:
            continue
        if role_of(message) != "assistant":
            result.append(message)
            continue
        content = wget(message, "content")
        original = content if isinstance(content, list) else []
        if not original or not extract_tool_calls_from_assistant(message):
            result.append(message)
            continue
        thinking = any(
            wget(block, "type") in ("thinking", "redacted_thinking") for block in original
        )
        ids, matches = _future_results(messages, index)
        omitted: list[Any] = (
            [] if _is_failed(message) else [text_block(message, TOOL_CALLS_OMITTED_TEXT)]
        )
        content_out = original
        if thinking:
            for block in original:
                if wget(block, "type") not in _CALL_TYPES:
                    continue
                call_id = _optional_string(wget(block, "id"))
                name = _optional_string(wget(block, "name"))
                names = matches.get(call_id) if call_id and name else None
                if names is None or (names and name not in names):
                    content_out = omitted
                    break
        else:
            kept = [
                block
                for block in original
                if wget(block, "type") not in _CALL_TYPES
                or (_optional_string(wget(block, "id")) or "") in ids
            ]
            if len(kept) != len(original):
                content_out = kept or omitted
        result.append(message if content_out is original else wset(message, content=content_out))
    return result


def validate_strict_turns(
    messages: Sequence[Any], *, merge_consecutive_user_turns: bool = True
) -> list[Any]:
    """Merge assistants, strip dangling calls, merge users (OpenClaw ``validateAnthropicTurns``).

    Assistants merge first so an injected assistant turn cannot hide the result that
    resolves the preceding signed tool call.
    """
    merged = validate_gemini_turns(messages)
    stripped = strip_dangling_tool_uses(merged)
    if not merge_consecutive_user_turns:
        return stripped
    return merge_consecutive_user_messages(stripped)


# --------------------------------------------------------------------------- ordering


def sanitize_google_turn_ordering(messages: Sequence[Any]) -> list[Any]:
    """Prepend a ``(session bootstrap)`` user turn when the history starts with the assistant.

    Idempotent (an existing bootstrap turn is recognised). The bootstrap takes the first
    message's timestamp so the same history always gives the same bytes.
    """
    if not messages:
        return _same(messages)
    first = messages[0]
    role = role_of(first)
    content = wget(first, "content")
    if (
        role == "user"
        and isinstance(content, str)
        and content.strip() == GOOGLE_TURN_ORDER_BOOTSTRAP_TEXT
    ):
        return _same(messages)
    if role != "assistant":
        return _same(messages)
    timestamp = wget(first, "timestamp")
    if not isinstance(timestamp, int | float) or isinstance(timestamp, bool):
        timestamp = 0
    bootstrap: Any
    if is_typed_model(first):
        bootstrap = UserMessage(content=GOOGLE_TURN_ORDER_BOOTSTRAP_TEXT, timestamp=timestamp)
    else:
        bootstrap = {
            "role": "user",
            "content": GOOGLE_TURN_ORDER_BOOTSTRAP_TEXT,
            "timestamp": timestamp,
        }
    return [bootstrap, *messages]


# --------------------------------------------------------------------------- the fallback hook


def validate_strict_replay_turns(messages: Sequence[Any], policy: TranscriptPolicy) -> list[Any]:
    """:func:`validate_strict_turns` with the policy's user-turn merging: Anthropic's rule
    (the provider plugin answers with it, through the attempt's ``turn_memo``)."""
    return validate_strict_turns(
        messages, merge_consecutive_user_turns=should_merge_consecutive_user_turns(policy)
    )


def validate_replay_turns(messages: Sequence[Any], policy: TranscriptPolicy) -> list[Any]:
    """Generic validation: Gemini rules, then strict alternation, as the policy asks."""
    validated = validate_gemini_turns(messages) if policy.validate_gemini_turns else _same(messages)
    if policy.validate_anthropic_turns:
        return validate_strict_turns(
            validated, merge_consecutive_user_turns=should_merge_consecutive_user_turns(policy)
        )
    return validated
