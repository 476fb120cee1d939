"""Whole turns that the sanitizer pipeline leaves exactly as they are, told without running it.

When a session's next turn starts, the incremental sanitizer (``transcript.incremental``)
runs the whole pipeline over the part after its last stable boundary: the previous turn and
the new prompt, then once more at the new turn's second request (the boundary only moves to
the new prompt once an assistant turn follows it). In the normal case that part comes out
unchanged, and running ten stages to find out costs more than the rest of a text-only turn's
sanitizing. This module decides that case up front.

A *clean region* is a history part that

* starts with a user message (so the Google ordering, the only stage that looks at where a
  history starts, adds nothing),
* holds only plain user messages (``sanitize.is_plain_user_message``: non-blank text, no
  image), clean text answers (an assistant turn that did not fail, whose content is a
  non-empty list of non-blank text blocks: no thinking, no call, no image, nothing blank)
  and clean complete tool groups (``loop_tail``: a clean assistant turn with calls followed by
  one clean result per call, in call order; no call id twice in one turn, while a later turn
  may name an id again, as providers that number calls afresh in every turn do:
  ``loop_tail``, "Ids named again"),
* and holds no compaction summary, custom message or anything else.

Under a policy whose stages never touch thinking blocks (``sanitize.thinking_untouched``: a
reasoning model on OpenAI-compatible replay, Gemini), an answer or a tool-calling turn may
also hold thinking blocks (``loop_tail``, "Turns that think"); an answer still needs a
non-blank text block.

Run over such a region alone, under a policy of declared types
(``sanitize.has_declared_types``), every built-in stage returns it as it is (a result whose
``details`` the details stage removes becomes its copy without them, ``loop_tail.sanitized``,
when that stage is among the stages and the policy wants it),
whatever the stages' names, orders and switches: nothing blank, no image, no thinking
block, every call well-formed and allowed and answered right after it, no failed turn, no
summary for the stale-usage stage to date anything by. ``clean_region_outputs`` returns that
output, or ``None`` when anything is unsure (the pipeline then runs, as before). The tests
hold it against the full pipeline over tables of shapes, policies and stage sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import AssistantMessage, TextContent
from .loop_tail import is_clean_text_block, message_facts, sanitized
from .policy import TranscriptPolicy
from .sanitize import has_declared_types, is_plain_user_message, thinking_untouched
from .thinking import is_thinking_block
from .tool_calls import normalize_allowed_names
from .wire import role_of, wget

__all__ = ["clean_region_outputs", "is_clean_text_answer"]


def is_clean_text_answer(message: Any, thinking: bool = False) -> bool:
    """An assistant turn no built-in stage changes wherever it stands (module docstring):
    not failed, and its content a non-empty list of non-blank text blocks (and, with
    ``thinking``, thinking blocks besides at least one of them)."""
    if thinking:
        return _wire_clean_text_answer(message, thinking=True)
    if type(message) is AssistantMessage and not message.__pydantic_extra__:
        if message.stop_reason in ("error", "aborted") or not message.content:
            return False
        for block in message.content:
            if type(block) is not TextContent or block.__pydantic_extra__:
                return _wire_clean_text_answer(message)
            if not block.text.strip():
                return False
        return True
    return _wire_clean_text_answer(message)


def _wire_clean_text_answer(message: Any, thinking: bool = False) -> bool:
    """``is_clean_text_answer`` read through ``wget`` (any form); ``thinking``: thinking
    blocks are left out before the text blocks are checked."""
    if role_of(message) != "assistant" or wget(message, "stopReason") in ("error", "aborted"):
        return False
    content = wget(message, "content")
    if not isinstance(content, list):
        return False
    if thinking:
        content = [block for block in content if not is_thinking_block(block)]
    return bool(content) and all(map(is_clean_text_block, content))


def clean_region_outputs(
    messages: Sequence[Any], policy: TranscriptPolicy, details_stage: bool
) -> list[Any] | None:
    """What the built-in pipeline makes of ``messages`` run alone, when they form a clean
    region (module docstring); ``None`` otherwise. ``details_stage``: whether the stage that
    removes results' details is among the stages (``StageSpecs.strips_details``)."""
    if not messages or not has_declared_types(policy):
        return None
    strip = details_stage and policy.wants("tool_result_details", True)
    thinking = thinking_untouched(policy)
    allowed = normalize_allowed_names(policy.allowed_tool_names)  # as ``loop_tail`` reads it
    out: list[Any] = []
    index, count = 0, len(messages)
    if role_of(messages[0]) != "user":
        return None
    while index < count:
        message = messages[index]
        role = role_of(message)
        if role == "user":
            if not is_plain_user_message(message):
                return None
            out.append(message)
            index += 1
            continue
        if role != "assistant":
            return None
        facts = message_facts(message, allowed)
        calls = facts.ids
        if not calls:
            if not is_clean_text_answer(message, thinking):
                return None
            out.append(message)
            index += 1
            continue
        size = len(calls)
        if not (facts.clean or (thinking and facts.thinking)):
            return None
        if size > 1 and len(set(calls)) != size:
            return None
        if index + size >= count:  # a result still to come
            return None
        out.append(message)
        for offset, call_id in enumerate(calls, start=1):
            result = messages[index + offset]
            found = message_facts(result, allowed)
            if found.role != "toolResult" or found.ids != (call_id,) or not found.clean:
                return None
            out.append(sanitized(result, found, strip))
        index += size + 1
    return out
