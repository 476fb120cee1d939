"""Thinking blocks on replay: invalid and stale signatures, reasoning that must go.

Providers that sign thinking blocks (Anthropic, Bedrock) reject a replayed block whose
signature is missing, blank, or was made for a different context prefix. The gradient:

* :func:`strip_stale_thinking_signatures_for_compaction_replay` — signatures of assistant
  turns *strictly older* than the latest compaction summary are bound to the old prefix and
  are removed (the thinking text stays); newer turns keep theirs;
* :func:`strip_invalid_thinking_signatures` — thinking blocks whose signature is absent or
  blank are dropped, except in the latest assistant turn: a provider rejects a modified latest
  block, so a broken latest turn goes through recovery instead of a silent rewrite;
* :func:`drop_thinking_blocks` / :func:`drop_reasoning_from_history` — remove reasoning for
  providers that cannot take it back (the current tool turn keeps its reasoning);
* :func:`assess_last_assistant_message` — ``valid``, ``incomplete-thinking`` or
  ``incomplete-text``, for the recovery path.

An assistant turn left with no content gets ``[assistant reasoning omitted]`` so the turn
survives provider converters that drop empty messages. All functions are pure and return
the input list itself when nothing changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .entries import parse_timestamp_ms
from .wire import role_of, text_block, wdel, wget, whas, wset

__all__ = [
    "OMITTED_ASSISTANT_REASONING_TEXT",
    "RecoveryAssessment",
    "assess_last_assistant_message",
    "drop_reasoning_from_history",
    "drop_thinking_blocks",
    "has_replayable_signature",
    "is_assistant_message_with_content",
    "is_thinking_block",
    "should_preserve_latest_assistant_thinking",
    "strip_invalid_thinking_signatures",
    "strip_stale_thinking_signatures_for_compaction_replay",
    "strip_thinking_blocks_from_message",
    "strip_thinking_signatures_from_message",
]

OMITTED_ASSISTANT_REASONING_TEXT = "[assistant reasoning omitted]"
RecoveryAssessment = Literal["valid", "incomplete-thinking", "incomplete-text"]
_SIGNATURE_KEYS = ("thinkingSignature", "signature", "thought_signature")
_TOOL_CALL_TYPES = frozenset({"toolCall", "tool_use", "function_call"})


def is_assistant_message_with_content(message: Any) -> bool:
    """An assistant message whose content is a list of blocks."""
    return role_of(message) == "assistant" and isinstance(wget(message, "content"), list)


def is_thinking_block(block: Any) -> bool:
    """A thinking block (plain or redacted): the only blocks the thinking stages change."""
    return wget(block, "type") in ("thinking", "redacted_thinking")


def _is_redacted(block: Any) -> bool:
    return wget(block, "type") == "redacted_thinking"


def _is_signed(block: Any) -> bool:
    if not is_thinking_block(block):
        return False
    return _is_redacted(block) or any(wget(block, key) is not None for key in _SIGNATURE_KEYS)


def has_replayable_signature(block: Any) -> bool:
    """A thinking block whose signature (or a redacted block's data) a provider can take back:
    the blocks the signature stage keeps wherever their turn stands."""
    keys = ("data", *_SIGNATURE_KEYS) if _is_redacted(block) else _SIGNATURE_KEYS
    return any(
        isinstance(value, str) and value.strip() for value in (wget(block, key) for key in keys)
    )


def _omitted_content(message: Any) -> list[Any]:
    return [text_block(message, OMITTED_ASSISTANT_REASONING_TEXT)]


def _unchanged(messages: Sequence[Any]) -> list[Any]:
    return messages if isinstance(messages, list) else list(messages)


def _latest_assistant_index(messages: Sequence[Any]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if is_assistant_message_with_content(messages[index]):
            return index
    return -1


def _latest_user_index(messages: Sequence[Any]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if role_of(messages[index]) == "user":
            return index
    return -1


def _strip_block_signatures(block: Any) -> Any:
    keys = [key for key in _SIGNATURE_KEYS if whas(block, key)]
    if _is_redacted(block) and whas(block, "data"):
        keys.append("data")
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k not in keys}
    # A model block: unset its signature fields (written back as absent, not null).
    return wdel(block, *keys)


def strip_thinking_signatures_from_message(message: Any) -> Any:
    """The assistant message with every thinking signature removed (text kept)."""
    if not is_assistant_message_with_content(message):
        return message
    changed = False
    content = []
    for block in wget(message, "content"):
        if is_thinking_block(block) and (
            any(wget(block, key) is not None for key in _SIGNATURE_KEYS)
            or (_is_redacted(block) and wget(block, "data") is not None)
        ):
            content.append(_strip_block_signatures(block))
            changed = True
        else:
            content.append(block)
    return wset(message, content=content) if changed else message


def strip_stale_thinking_signatures_for_compaction_replay(messages: Sequence[Any]) -> list[Any]:
    """Remove signatures of assistant turns older than the latest compaction summary.

    Compares timestamps (numbers, or ISO strings); a turn without a parseable timestamp, or
    at/after the compaction, keeps its signatures.
    """
    latest: float | None = None
    for message in messages:
        if role_of(message) != "compactionSummary":
            continue
        stamp = parse_timestamp_ms(wget(message, "timestamp"))
        if stamp is not None:
            latest = stamp if latest is None else max(latest, stamp)
    if latest is None:
        return _unchanged(messages)
    out = []
    touched = False
    for message in messages:
        if is_assistant_message_with_content(message):
            stamp = parse_timestamp_ms(wget(message, "timestamp"))
            if stamp is not None and stamp < latest:
                stripped = strip_thinking_signatures_from_message(message)
                touched = touched or stripped is not message
                out.append(stripped)
                continue
        out.append(message)
    return out if touched else _unchanged(messages)


def strip_invalid_thinking_signatures(
    messages: Sequence[Any], *, preserve_latest_assistant: bool = True
) -> list[Any]:
    """Drop thinking blocks whose signature is absent or blank (latest assistant exempt)."""
    latest = _latest_assistant_index(messages) if preserve_latest_assistant else -1
    out = []
    touched = False
    for index, message in enumerate(messages):
        if index == latest or not is_assistant_message_with_content(message):
            out.append(message)
            continue
        content = wget(message, "content")
        kept = [b for b in content if not is_thinking_block(b) or has_replayable_signature(b)]
        if len(kept) == len(content):
            out.append(message)
            continue
        touched = True
        out.append(wset(message, content=kept or _omitted_content(message)))
    return out if touched else _unchanged(messages)


def drop_thinking_blocks(messages: Sequence[Any]) -> list[Any]:
    """Remove thinking blocks from every assistant turn except the latest one."""
    latest = _latest_assistant_index(messages)
    out = []
    touched = False
    for index, message in enumerate(messages):
        if index == latest or not is_assistant_message_with_content(message):
            out.append(message)
            continue
        content = wget(message, "content")
        kept = [block for block in content if not is_thinking_block(block)]
        if len(kept) == len(content):
            out.append(message)
            continue
        touched = True
        out.append(wset(message, content=kept or _omitted_content(message)))
    return out if touched else _unchanged(messages)


def _has_tool_call(message: Any) -> bool:
    return any(wget(block, "type") in _TOOL_CALL_TYPES for block in wget(message, "content"))


def _preserves_current_tool_turn(messages: Sequence[Any], index: int, latest_user: int) -> bool:
    """The assistant turn mid-way through the current tool loop keeps its reasoning."""
    message = messages[index]
    if index < latest_user or not is_assistant_message_with_content(message):
        return False
    if not _has_tool_call(message):
        return False
    for earlier in range(index - 1, -1, -1):
        role = role_of(messages[earlier])
        if role == "user":
            break
        if role == "assistant":
            return False
    for later in messages[index + 1 :]:
        role = role_of(later)
        if role == "toolResult":
            return True
        if role == "user":
            return False
    return False


def should_preserve_latest_assistant_thinking(messages: Sequence[Any]) -> bool:
    """Whether the latest assistant turn is still the provider's "latest" turn on replay."""
    latest = _latest_assistant_index(messages)
    if latest < 0:
        return False
    if latest == len(messages) - 1:
        return True
    return _preserves_current_tool_turn(messages, latest, _latest_user_index(messages))


def strip_thinking_blocks_from_message(message: Any) -> Any:
    """One assistant message without thinking blocks."""
    if not is_assistant_message_with_content(message):
        return message
    content = wget(message, "content")
    kept = [block for block in content if not is_thinking_block(block)]
    if len(kept) == len(content):
        return message
    return wset(message, content=kept or _omitted_content(message))


def drop_reasoning_from_history(messages: Sequence[Any]) -> list[Any]:
    """Remove reasoning from history, except in the tool turn that is still in progress."""
    latest_user = _latest_user_index(messages)
    out = []
    touched = False
    for index, message in enumerate(messages):
        if not is_assistant_message_with_content(message) or _preserves_current_tool_turn(
            messages, index, latest_user
        ):
            out.append(message)
            continue
        stripped = strip_thinking_blocks_from_message(message)
        touched = touched or stripped is not message
        out.append(stripped)
    return out if touched else _unchanged(messages)


def assess_last_assistant_message(message: Any) -> RecoveryAssessment:
    """Classify the latest assistant turn for recovery.

    ``incomplete-thinking``: empty content, a malformed block, or an unsigned thinking block.
    ``incomplete-text``: signed thinking with nothing else, or next to a blank text block.
    """
    if not is_assistant_message_with_content(message):
        return "valid"
    content = wget(message, "content")
    if not content:
        return "incomplete-thinking"
    signed = unsigned = other = blank_text = False
    for block in content:
        if block is None or isinstance(block, str | int | float | bool | list):
            return "incomplete-thinking"
        if is_thinking_block(block):
            if _is_signed(block):
                signed = True
            else:
                unsigned = True
            continue
        other = True
        if wget(block, "type") == "text":
            text = wget(block, "text")
            if not (isinstance(text, str) and text.strip()):
                blank_text = True
    if unsigned:
        return "incomplete-thinking"
    if signed and (not other or blank_text):
        return "incomplete-text"
    return "valid"
