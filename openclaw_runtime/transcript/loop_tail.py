"""Tool groups that the sanitizer pipeline leaves exactly as they are, told without running it.

Inside a tool loop the incremental sanitizer (``transcript.incremental``) runs the whole
pipeline before every model request over a small context plus the part after its boundary (the
previous tool group and the new one), only to get those messages back unchanged in the normal
case. This module decides that case up front, per message and per stage, so the pipeline does
not have to run.

A message is *clean* (:func:`clean_facts`) when no built-in stage changes it in any tool-loop
context, stage by stage:

* ``images`` — its content is a non-empty list of non-blank text blocks (assistant turns may also
  hold tool calls): no image to check, no blank block to remove, nothing left empty;
* ``thinking_signatures``, ``drop_reasoning_from_history``, ``drop_thinking_blocks`` — no
  thinking block (they only ever change thinking blocks);
* ``tool_call_inputs`` — every call is a ``toolCall`` block with a non-blank id without
  surrounding spaces, arguments, no ``partialJson`` scratch buffer, a name that is already
  trimmed, allowed by the policy and not ``sessions_spawn`` (whose attachments are redacted);
* ``tool_use_result_pairing`` — the turn did not fail (``error``/``aborted`` turns are dropped
  with their results), a result names exactly one id and a trimmed, non-blank tool name;
* ``tool_result_details`` — a result carries no ``details`` (or exactly the synthetic flag);
  details that do not mention the flag are the one change allowed: the stage drops them whole,
  so the result sanitizes to its copy without them (:func:`sanitized`), which is clean;
* ``stale_assistant_usage`` — when the context starts with a compaction summary, an assistant
  turn with usage is newer than it (or either timestamp is unreadable, as the stage reads them);
* ``blank_user_turns``, ``google_turn_ordering`` — only user messages and the first message.

A run of messages is a *clean tail* (:func:`clean_tail`) when it is a sequence of complete tool
groups: a clean assistant turn with calls (no id twice in the turn), followed by one clean
result per call in call order and nothing else. The pairing stage then finds every result
right after its call and adds nothing; every other stage works message by message. Whatever
the context before such a tail, the pipeline's output ends with the tail itself, unchanged
(the tests compare this against the full pipeline on a table of shapes). Anything unsure is
not clean and takes the pipeline.

**Turns that think.** An assistant turn with thinking blocks is not clean in general: the
signature stage, the reasoning drops and the signed-turn rule of the tool-call stage change
or drop them depending on where the turn stands. Under a policy that runs none of those
(``sanitize.thinking_untouched``: a reasoning model on OpenAI-compatible replay, Gemini), no
stage looks at a thinking block at all, so a turn that would be clean but for its thinking
(``MessageFacts.thinking``) comes out as it went in, and :func:`clean_tail` takes it when
asked to (``thinking=True``).

**Signed thinking.** Claude models that keep their thinking (on the Anthropic API) run the
signature stage and the signed-turn replay rule, but neither reasoning drop
(``sanitize.signed_thinking_kept``). There a turn clean but for thinking blocks that all carry
a replayable signature (``MessageFacts.signed``) comes out as it went in when

* it is no older than the compaction: the signature stage strips the signatures of turns
  older than the latest compaction summary, and drops a block without a replayable
  signature only, whether the turn is the latest or not;
* no earlier turn named one of its ids: the replay rule keeps a signed turn whose calls are
  well formed (a clean turn's are) and whose results follow it directly (a clean group's
  do), unless an earlier signed turn it kept named the same id.

So :func:`clean_tail` takes such a turn when given the ids of everything before the tail
(``known_ids``), checking them and the tail's own earlier ids. A provider that numbers its
calls afresh in every turn fails that check and takes the pipeline; Claude's ids are unique.

**Dropped thinking.** Older Claude models on the Anthropic API have the thinking blocks of
every assistant turn but the latest removed (``sanitize.earlier_thinking_dropped``), with
the signature stage run first and no signed-turn replay rule. There a tail's turns clean but
for their thinking come out as their copies without it (:func:`without_thinking`: a clean
turn keeps its calls, so nothing is left empty), except the tail's last turn, the latest:
that one comes out as it is when its blocks are all signed and it is no older than the
compaction, as above (else the tail is not clean). :func:`clean_tail` takes such turns when
asked to (``dropped=True``); ids are free as for clean turns, no rule reads them.
OpenAI-compatible replay of a model not marked as reasoning drops reasoning the other way
round (``sanitize.reasoning_dropped``): every turn's thinking goes but that of the current
tool turn's first assistant turn, and no stage reads signatures, so every turn of such a
tail comes out as its copy without thinking except the loop's first, which comes out as it
is (``last_kept=False``: nothing is asked of the last turn).

**Ids named again.** Some providers number their calls afresh in every turn (``call_0``
each time), so a tail's ids may repeat across its groups and name calls of the context.
That changes nothing above: the pairing stage looks for a call's results in its own frame
first (the turn up to the next turn with calls), where every result of a clean group is,
so no result of the tail is left over to answer an earlier call, and no earlier result
is left over for the tail's calls (those frames end before the tail). The only stage rule
that reads ids across turns otherwise (a signed-thinking turn that reuses an earlier id) is
about thinking blocks, which no clean turn holds, and a signed turn counts only with new ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple

from ..messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage
from .entries import parse_timestamp_ms
from .pairing import SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY
from .thinking import (
    has_replayable_signature,
    is_thinking_block,
    strip_thinking_blocks_from_message,
)
from .tool_calls import (
    extract_tool_calls_from_assistant,
    extract_tool_result_ids,
    is_allowed_tool_call_name,
)
from .wire import role_of, wdel, wget, whas

__all__ = [
    "MessageFacts",
    "TailFacts",
    "clean_facts",
    "clean_tail",
    "is_clean_text_block",
    "message_facts",
    "sanitized",
    "without_thinking",
]

_SYNTHETIC_DETAILS = {SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY: True}


class MessageFacts(NamedTuple):
    """What the tool-loop sanitizer needs to know about one message, read once (a named
    tuple: made for every message a tool loop adds, and a frozen dataclass's ``__init__``
    costs twice as much).

    ``ids``: an assistant turn's tool-call ids (``extract_tool_calls_from_assistant``) or a
    result's ids (``extract_tool_result_ids``); ``clean``: no stage changes it (module
    docstring); ``stamp`` and ``has_usage``: an assistant turn's timestamp in ms and whether
    it carries any usage, zero or not (for the stale-usage rule, which depends on the context;
    a zero usage counts as usage here, which only makes the check stricter).
    """

    role: Any
    ids: tuple[str, ...]
    clean: bool
    stamp: float | None = None
    has_usage: bool = False
    #: a clean result whose ``details`` the ``tool_result_details`` stage removes: it
    #: sanitizes to its copy without them (``sanitized``), the only change any stage makes
    strip_details: bool = False
    #: an assistant turn with calls that would be clean but for its thinking blocks (module
    #: docstring, "Turns that think")
    thinking: bool = False
    #: such a turn whose thinking blocks all carry a replayable signature (module docstring,
    #: "Signed thinking")
    signed: bool = False


def is_clean_text_block(block: Any) -> bool:
    """A text block with something to say: no stage fills, drops or splits it."""
    if wget(block, "type") != "text":
        return False
    text = wget(block, "text")
    return isinstance(text, str) and bool(text.strip())


def _clean_call(block: Any, allowed: frozenset[str] | None) -> bool:
    if wget(block, "type") != "toolCall" or whas(block, "partialJson"):
        return False
    call_id = wget(block, "id")
    name = wget(block, "name")
    return (
        isinstance(call_id, str)
        and bool(call_id)
        and call_id == call_id.strip()
        and (wget(block, "arguments") is not None or wget(block, "input") is not None)
        and isinstance(name, str)
        and name == name.strip()
        and name.lower() != "sessions_spawn"
        and is_allowed_tool_call_name(name, allowed)
    )


def _assistant_facts(message: Any, allowed: frozenset[str] | None) -> MessageFacts:
    ids = tuple(call.id for call in extract_tool_calls_from_assistant(message))
    content = wget(message, "content")
    clean = thinking = False
    replayed = wget(message, "stopReason") not in ("error", "aborted")
    signed = False
    if ids and replayed and isinstance(content, list):
        others = [block for block in content if not is_thinking_block(block)]
        if all(is_clean_text_block(block) or _clean_call(block, allowed) for block in others):
            clean = len(others) == len(content)
            thinking = not clean
            signed = thinking and all(
                has_replayable_signature(block) for block in content if is_thinking_block(block)
            )
    stamp = parse_timestamp_ms(wget(message, "timestamp"))
    return MessageFacts(
        "assistant",
        ids,
        clean,
        None if stamp is None else float(stamp),
        bool(wget(message, "usage")),
        thinking=thinking,
        signed=signed,
    )


def _details_rule(present: bool, details: Any) -> tuple[bool, bool]:
    """Whether a result's ``details`` let it stay clean, and whether the details stage removes
    them: absent or exactly the synthetic flag stay; details that say nothing of the flag go
    (the stage drops them whole); anything else (the flag among other keys) is not clean."""
    if not present or details == _SYNTHETIC_DETAILS:
        return True, False
    if isinstance(details, dict) and SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY in details:
        return False, False
    return True, True


def sanitized(message: Any, facts: MessageFacts, strip_details: bool) -> Any:
    """What the pipeline makes of a clean message: itself, or its copy without ``details``
    when the details stage runs (``strip_details``: it is among the stages and the policy
    wants it; otherwise nothing changes a clean message)."""
    return wdel(message, "details") if strip_details and facts.strip_details else message


def without_thinking(message: Any) -> Any:
    """What a thinking drop makes of a turn clean but for its thinking that does not keep
    it (module docstring, "Dropped thinking"): its copy without the blocks."""
    return strip_thinking_blocks_from_message(message)


def _result_facts(message: Any) -> MessageFacts:
    ids = tuple(extract_tool_result_ids(message))
    content = wget(message, "content")
    name = wget(message, "toolName")
    details_ok, strip = _details_rule(whas(message, "details"), wget(message, "details"))
    clean = (
        len(ids) == 1
        and isinstance(name, str)
        and bool(name)
        and name == name.strip()
        and details_ok
        and isinstance(content, list)
        and bool(content)
        and all(is_clean_text_block(block) for block in content)
    )
    return MessageFacts("toolResult", ids, clean, strip_details=clean and strip)


def _typed_assistant_facts(
    message: AssistantMessage, allowed: frozenset[str] | None
) -> MessageFacts | None:
    ids: list[str] = []
    clean = message.stop_reason not in ("error", "aborted")
    thinking = False
    signed = True  # every thinking block so far has a replayable signature
    for block in message.content:
        if block.__pydantic_extra__:
            return None
        if type(block) is ThinkingContent:
            thinking = True
            signature = block.thinking_signature
            signed = signed and isinstance(signature, str) and bool(signature.strip())
        elif type(block) is TextContent:
            clean = clean and bool(block.text.strip())
        elif type(block) is ToolCall:
            call_id, name = block.id, block.name
            if call_id:
                ids.append(call_id)
            clean = (
                clean
                and bool(call_id)
                and call_id == call_id.strip()
                and block.arguments is not None
                and name == name.strip()
                and name.lower() != "sessions_spawn"
                and is_allowed_tool_call_name(name, allowed)
            )
        else:
            return None
    stamp = parse_timestamp_ms(message.timestamp)
    clean = clean and bool(ids)
    return MessageFacts(
        "assistant",
        tuple(ids),
        clean and not thinking,
        None if stamp is None else float(stamp),
        bool(message.usage),
        thinking=clean and thinking,
        signed=clean and thinking and signed,
    )


def _typed_result_facts(message: ToolResultMessage) -> MessageFacts | None:
    call_id = message.tool_call_id.strip()
    name = message.tool_name
    if "details" in message.__pydantic_fields_set__:
        details_ok, strip = _details_rule(True, message.details)
    else:
        details_ok, strip = True, False  # ``_details_rule`` of absent details
    clean = bool(call_id) and bool(name) and name == name.strip() and details_ok
    content = message.content
    for block in content:
        if type(block) is not TextContent or block.__pydantic_extra__:
            return None
        clean = clean and bool(block.text.strip())
    clean = clean and bool(content)
    return MessageFacts(
        "toolResult", (call_id,) if call_id else (), clean, None, False, clean and strip
    )


def message_facts(message: Any, allowed: frozenset[str] | None) -> MessageFacts:
    """The facts of one message under a normalized tool allowlist (``None``: any name).

    The runtime's own messages (plain models without extra keys) are read through their
    attributes; anything else (wire dicts, opaque messages, other blocks) through ``wget``,
    with the same answers (tested on both forms)."""
    if type(message) is AssistantMessage and not message.__pydantic_extra__:
        typed = _typed_assistant_facts(message, allowed)
        if typed is not None:
            return typed
    elif type(message) is ToolResultMessage and not message.__pydantic_extra__:
        typed = _typed_result_facts(message)
        if typed is not None:
            return typed
    role = role_of(message)
    if role == "assistant":
        return _assistant_facts(message, allowed)
    if role == "toolResult":
        return _result_facts(message)
    return MessageFacts(role, (), False)


def clean_facts(
    facts: MessageFacts, compaction_stamp: float | None, thinking: bool = False
) -> bool:
    """Whether the message sanitizes to itself after a context whose compaction summary
    (if it starts with one) has the timestamp ``compaction_stamp``; ``thinking``: no stage
    touches thinking blocks (module docstring, "Turns that think")."""
    if not (facts.clean or (thinking and facts.thinking)):
        return False
    if compaction_stamp is None or not facts.has_usage or facts.stamp is None:
        return True
    return facts.stamp > compaction_stamp


class TailFacts(NamedTuple):
    """A clean tail's shape: where its last group starts (a named tuple, made for every
    request of a tool loop)."""

    last_group: int


def _signed_clean(facts: MessageFacts, compaction_stamp: float | None) -> bool:
    """A turn clean but for thinking blocks that all carry a replayable signature, which the
    signature stage leaves alone: not older than the compaction (nor stale by its usage)."""
    if not facts.signed:
        return False
    if compaction_stamp is None or facts.stamp is None:
        return True
    if facts.has_usage:
        return facts.stamp > compaction_stamp  # the stale-usage rule, as ``clean_facts``
    return facts.stamp >= compaction_stamp


def clean_tail(
    facts: Sequence[MessageFacts],
    compaction_stamp: float | None,
    thinking: bool = False,
    known_ids: AbstractSet[str] | None = None,
    dropped: bool = False,
    last_kept: bool = True,
) -> TailFacts | None:
    """The shape of ``facts`` when they form a clean tail (module docstring), else ``None``;
    ``thinking``: no stage touches thinking blocks, so a turn clean but for them counts;
    ``known_ids``: the stages keep signed thinking (``sanitize.signed_thinking_kept``) and
    these are the call ids of everything before the tail, so a signed turn counts when its
    ids are new (module docstring, "Signed thinking"); ``dropped``: the stages drop the
    thinking of every turn but the latest (``sanitize.earlier_thinking_dropped``), so a turn
    clean but for it counts, the tail's last one only when signed unless ``last_kept`` is
    false (module docstring, "Dropped thinking")."""
    index = 0
    last = -1
    count = len(facts)
    tail_ids: set[str] | None = None  # the tail's ids so far, once a signed turn asks
    while index < count:
        head = facts[index]
        if head.role != "assistant":
            return None
        calls = head.ids
        if not (
            (head.clean or (thinking and head.thinking))
            if compaction_stamp is None
            else clean_facts(head, compaction_stamp, thinking)
        ):
            if dropped:
                if not clean_facts(head, compaction_stamp, True):
                    return None  # not a clean turn with thinking, or stale by its usage
            else:
                if known_ids is None or not _signed_clean(head, compaction_stamp):
                    return None
                if tail_ids is None:
                    tail_ids = {call_id for earlier in facts[:index] for call_id in earlier.ids}
                if not (known_ids.isdisjoint(calls) and tail_ids.isdisjoint(calls)):
                    return None  # an id named before: the replay rule may drop the turn
        if tail_ids is not None:
            tail_ids.update(calls)
        size = len(calls)
        if size > 1 and len(set(calls)) != size:
            return None  # an id twice in one turn: its results are matched by order
        if index + size >= count:  # a result is missing at the end
            return None
        last = index
        for offset, call_id in enumerate(calls, start=1):
            result = facts[index + offset]
            if result.role != "toolResult" or result.ids != (call_id,) or not result.clean:
                return None
        index += size + 1
    if last < 0:
        return None
    last_head = facts[last]
    if (
        dropped
        and last_kept
        and not last_head.clean
        and not _signed_clean(last_head, compaction_stamp)
    ):
        return None  # the latest turn keeps its thinking: as it is only when signed and fresh
    return TailFacts(last)
