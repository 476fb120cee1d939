"""A clean tool group is appended without running the pipeline, with the pipeline's result.

Inside a tool loop the incremental sanitizer skips the stages when the part after its boundary
is a *clean tail* (``transcript.loop_tail``). Every shape below is put in the middle of a tool
loop (after two clean groups, before two more), in model and wire-dict form, under several
policies, with and without a compaction summary first; before every request the incremental
result must equal ``run_transcript_sanitizers`` over the whole history, and the clean shapes
must not have run the pipeline at all.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

import pytest

from openclaw_runtime.messages import (
    AssistantMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from openclaw_runtime.transcript import resolve_transcript_policy, run_transcript_sanitizers
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from openclaw_runtime.transcript.loop_tail import (
    MessageFacts,
    TailFacts,
    clean_facts,
    clean_tail,
    message_facts,
)
from openclaw_runtime.transcript.pairing import SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY
from openclaw_runtime.transcript.sanitize import (
    BUILTIN_SANITIZERS,
    SanitizerSpec,
    earlier_thinking_dropped,
    reasoning_dropped,
    signed_thinking_kept,
    thinking_untouched,
)
from tests.test_transcript_incremental import dumped
from tests.test_transcript_sanitizer_reads import AsDicts

POLICIES = {
    "completions": resolve_transcript_policy("openai-completions", "openai", "gpt-4o"),
    "responses, read only": resolve_transcript_policy(
        "openai-responses", "openai", "gpt-5", allowed_tool_names=["read", "sessions_spawn"]
    ),
    "anthropic": resolve_transcript_policy(
        "anthropic-messages", "anthropic", "claude-sonnet-4", model_reasoning=True
    ),
    "anthropic, signed replay": dataclasses.replace(
        resolve_transcript_policy(
            "anthropic-messages", "anthropic", "claude-sonnet-4", model_reasoning=True
        ),
        drop_thinking_blocks=False,
    ),
    "google": resolve_transcript_policy("google-generative-ai", "google", "gemini-2.5-pro"),
    "completions, reasoning": resolve_transcript_policy(
        "openai-completions", "deepseek", "deepseek-reasoner", model_reasoning=True
    ),
}
#: The policies under which no stage touches a thinking block (read off the policy rules: no
#: signed provider, no reasoning drop, no Claude thinking drop, no signed-turn replay).
THINKING_KEPT = {"responses, read only", "google", "completions, reasoning"}
#: The policies that keep signed thinking short of that (``signed_thinking_kept``: the
#: signature stage and the signed-turn replay rule run, no reasoning drop): Claude models
#: that keep their thinking.
SIGNED_KEPT = {"anthropic, signed replay"}
#: The policies that drop every turn's thinking but the latest's (``earlier_thinking_dropped``:
#: older Claude models).
DROPPED = {"anthropic"}
#: The policies that drop every turn's thinking but the current tool loop's first turn's
#: (``reasoning_dropped``: OpenAI-compatible replay of a model not marked as reasoning).
REASONING_DROPPED = {"completions"}

SUMMARY_STAMP = 5_000


class Loop:
    """A tool loop under construction; ids and timestamps count up."""

    def __init__(self, *, compacted: bool) -> None:
        self.clock = SUMMARY_STAMP + 10
        self.calls = 0
        self.messages: list[Any] = []
        if compacted:
            summary = CompactionSummaryMessage(
                summary="so far", tokens_before=100, timestamp=SUMMARY_STAMP
            )
            self.messages.append(summary)
        self.messages.append(UserMessage(content="go", timestamp=self.stamp()))

    def stamp(self) -> int:
        self.clock += 7
        return self.clock

    def call_id(self) -> str:
        self.calls += 1
        return f"call_{self.calls}"

    def call(self, name: str = "read", **fields: Any) -> ToolCall:
        fields.setdefault("arguments", {"path": f"/f{self.calls}"})
        return ToolCall(id=fields.pop("id", None) or self.call_id(), name=name, **fields)

    def assistant(self, *blocks: Any, stop: str = "toolUse", **fields: Any) -> AssistantMessage:
        fields.setdefault("timestamp", self.stamp())
        return AssistantMessage(
            content=list(blocks),
            stop_reason=stop,  # type: ignore[arg-type]
            api="openai-completions",
            provider="openai",
            model="m",
            usage=Usage(input=10, output=2),
            **fields,
        )

    def result(self, call: ToolCall, *blocks: Any, **fields: Any) -> ToolResultMessage:
        fields.setdefault("tool_name", call.name)
        return ToolResultMessage(
            tool_call_id=call.id,
            content=list(blocks) or [TextContent(text=f"out {call.id}")],
            timestamp=self.stamp(),
            **fields,
        )

    def group(self, *, text: bool = False) -> list[Any]:
        call = self.call()
        blocks: list[Any] = [TextContent(text="reading")] if text else []
        return [self.assistant(*blocks, call), self.result(call)]


Shape = Callable[[Loop], list[Any]]


def _two_calls(reverse: bool) -> Shape:
    def shape(loop: Loop) -> list[Any]:
        first, second = loop.call(), loop.call()
        results = [loop.result(first), loop.result(second)]
        return [loop.assistant(first, second), *(reversed(results) if reverse else results)]

    return shape


def _call(**fields: Any) -> Shape:
    def shape(loop: Loop) -> list[Any]:
        call = loop.call(**fields)
        return [loop.assistant(call), loop.result(call)]

    return shape


def _result(*blocks: Any, **fields: Any) -> Shape:
    def shape(loop: Loop) -> list[Any]:
        call = loop.call()
        return [loop.assistant(call), loop.result(call, *blocks, **fields)]

    return shape


def _assistant(*extra: Any, stop: str = "toolUse", **fields: Any) -> Shape:
    def shape(loop: Loop) -> list[Any]:
        call = loop.call()
        return [loop.assistant(*extra, call, stop=stop, **fields), loop.result(call)]

    return shape


def _duplicate_ids(loop: Loop) -> list[Any]:
    call = loop.call()
    again = loop.call(id=call.id)
    return [loop.assistant(call, again), loop.result(call), loop.result(again)]


def _displaced(loop: Loop) -> list[Any]:
    call = loop.call()
    note = CustomMessage(custom_type="note", content="aside", timestamp=loop.stamp())
    return [loop.assistant(call), note, loop.result(call)]


def _missing_result(loop: Loop) -> list[Any]:
    return [loop.assistant(loop.call())]


def _orphan_result(loop: Loop) -> list[Any]:
    call, stray = loop.call(), loop.call()
    return [loop.assistant(call), loop.result(call), loop.result(stray)]


def _reused_id(loop: Loop) -> list[Any]:
    call = loop.call(id="call_1")  # the loop's first call
    return [loop.assistant(call), loop.result(call)]


def _thinking_renamed(loop: Loop) -> list[Any]:
    """A thinking turn whose result names another tool than its call (the replay validator
    drops such a turn's calls; no sanitizer stage compares the names)."""
    call = loop.call()
    return [loop.assistant(SIGNED, call), loop.result(call, tool_name="write")]


def _signed_reusing(loop: Loop) -> list[Any]:
    """A signed-thinking turn calling with the id of the loop's first (plain) call."""
    call = loop.call(id="call_1")
    return [loop.assistant(SIGNED, call), loop.result(call)]


def _signed_twice(loop: Loop) -> list[Any]:
    """Two signed-thinking turns with the same call id (the replay rule drops the second)."""
    call = loop.call()
    again = loop.call(id=call.id)
    first = [loop.assistant(SIGNED, call), loop.result(call)]
    return [*first, loop.assistant(SIGNED, again), loop.result(again)]


def _signed_stale(loop: Loop) -> list[Any]:
    """A signed-thinking turn stamped before the compaction summary (a clock that went back):
    the signature stage strips its signature, the stale-usage stage zeroes its usage."""
    call = loop.call()
    return [loop.assistant(SIGNED, call, timestamp=SUMMARY_STAMP - 3), loop.result(call)]


def _stale_usage(loop: Loop) -> list[Any]:
    call = loop.call()
    return [loop.assistant(call, timestamp=SUMMARY_STAMP - 1), loop.result(call)]


SIGNED = ThinkingContent(thinking="plan", thinking_signature="sig")
UNSIGNED = ThinkingContent(thinking="plan")
BLANK_SIGNED = ThinkingContent(thinking="plan", thinking_signature="  ")
PNG = "iVBORw0KGgo="

#: name → (shape, clean: whether the fast path may take it as it is)
SHAPES: dict[str, tuple[Shape, bool]] = {
    "one call": (_call(), True),
    "text and a call": (lambda loop: loop.group(text=True), True),
    "two calls in order": (_two_calls(False), True),
    "two calls, results reversed": (_two_calls(True), False),
    "an error result": (_result(is_error=True), True),
    "a synthetic flag as details": (
        _result(details={SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY: True}, is_error=True),
        True,
    ),
    "a bad name": (_call(name="bad name!"), False),
    "a name with spaces": (_call(name=" read "), False),
    "a name off the allowlist": (_call(name="exec"), False),
    "sessions_spawn": (
        _call(name="sessions_spawn", arguments={"attachments": [{"content": 1}]}),
        False,
    ),
    "a blank id": (_call(id="  "), False),
    "an id with spaces": (_call(id=" padded "), False),
    "a partialJson buffer": (_call(partialJson="{"), False),
    "duplicate ids": (_duplicate_ids, False),
    "a displaced result": (_displaced, False),
    "a missing result": (_missing_result, False),
    "an orphan result": (_orphan_result, False),
    # a provider numbering its calls afresh in every turn: the pairing stage answers each
    # call in its own turn first (``loop_tail``, "Ids named again")
    "an id reused from earlier": (_reused_id, True),
    "an image result": (_result(ImageContent(data=PNG, mime_type="image/png")), False),
    "a broken image result": (_result(ImageContent(data="%%%", mime_type="image/png")), False),
    "a blank result text": (_result(TextContent(text=" ")), False),
    "result details": (_result(details={"raw": 1}), True),  # sanitized to a copy without
    "result details set to None": (_result(details=None), True),
    "the synthetic flag among other details": (
        _result(details={SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY: True, "raw": 1}, is_error=True),
        False,
    ),
    "a result name with spaces": (_result(tool_name=" read"), False),
    # clean only where no stage touches thinking blocks (``THINKING_KEPT``)
    "signed thinking": (_assistant(SIGNED), False),
    "unsigned thinking": (_assistant(UNSIGNED), False),
    "blank-signed thinking": (_assistant(BLANK_SIGNED), False),
    "thinking, its result naming another tool": (_thinking_renamed, False),
    "signed thinking, an id a plain turn used": (_signed_reusing, False),
    "signed thinking, an id twice": (_signed_twice, False),
    "signed thinking older than the compaction": (_signed_stale, False),
    "a blank text block": (_assistant(TextContent(text="  ")), False),
    "an errored turn": (_assistant(stop="error"), False),
    "an aborted turn": (_assistant(stop="aborted"), False),
    "usage older than the compaction": (_stale_usage, True),  # clean unless compacted
}
THINKS = {
    "signed thinking",
    "unsigned thinking",
    "blank-signed thinking",
    "thinking, its result naming another tool",
    "signed thinking, an id a plain turn used",
    "signed thinking, an id twice",
    "signed thinking older than the compaction",
}
#: The thinking shapes taken as they are where the stages keep signed thinking: every block
#: signed, ids new to the history (an id named before takes the pipeline, even where the
#: replay rule would keep the turn: only a kept *signed* turn's id counts there).
SIGNED_SHAPES = {
    "signed thinking",
    "thinking, its result naming another tool",
    "signed thinking older than the compaction",
}
#: The thinking shapes taken as they are where earlier turns' thinking is dropped: a turn
#: whose thinking goes is clean, and the latest one is when its blocks are all signed (ids
#: are free: no rule reads them there).
DROPPED_SHAPES = {
    *SIGNED_SHAPES,
    "signed thinking, an id a plain turn used",
    "signed thinking, an id twice",
}
#: Shapes stamped before the compaction summary: not clean after one.
STALE = {"usage older than the compaction", "signed thinking older than the compaction"}


def _counting(calls: list[int]) -> Callable[..., list[Any]]:
    def full(messages: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        calls.append(len(messages))
        return run_transcript_sanitizers(messages, *args, **kwargs)

    return full


@pytest.mark.parametrize("representation", ["models", "dicts"])
@pytest.mark.parametrize("compacted", [False, True])
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("shape_name", sorted(SHAPES))
def test_a_tool_group_in_a_loop_sanitizes_as_in_full(
    shape_name: str, policy_name: str, compacted: bool, representation: str
) -> None:
    policy = POLICIES[policy_name]
    shape, clean = SHAPES[shape_name]
    if shape_name == "a name off the allowlist":
        clean = policy.allowed_tool_names is None  # ``exec`` is fine without an allowlist
    if shape_name in THINKS:
        # no stage reads the thinking blocks there, or signed ones with new ids are kept
        clean = (
            policy_name in THINKING_KEPT
            or (policy_name in SIGNED_KEPT and shape_name in SIGNED_SHAPES)
            or (policy_name in DROPPED and shape_name in DROPPED_SHAPES)
            or policy_name in REASONING_DROPPED  # any thinking: it goes (not the first turn)
        )
    clean = clean and not (compacted and shape_name in STALE)
    loop = Loop(compacted=compacted)
    convert = AsDicts() if representation == "dicts" else list
    incremental = IncrementalSanitizer()
    ran: list[int] = []
    full = _counting(ran)
    groups = [loop.group(), loop.group(text=True), loop.group(), shape(loop), loop.group()]
    groups.append(loop.group(text=True))
    for number, group in enumerate(groups):
        loop.messages.extend(group)
        messages = convert(loop.messages)
        before = len(ran)
        if number in (2, 3):
            # the third clean group, then the shape, arrive with the loop cache in place
            assert incremental._loop is not None
        got = incremental.run(messages, policy, BUILTIN_SANITIZERS, full=full)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(got) == dumped(expected), f"{shape_name}: after group {number}"
        if number in (2, 3):
            # a clean one runs no stage at all
            assert (len(ran) == before) == (clean or number == 2), shape_name


def _facts(messages: list[Any], policy_name: str = "completions") -> Any:
    allowed = POLICIES[policy_name].allowed_tool_names
    return [message_facts(message, allowed) for message in messages]


@pytest.mark.parametrize("shape_name", sorted(SHAPES))
def test_clean_tail_of_each_shape(shape_name: str) -> None:
    shape, clean = SHAPES[shape_name]
    loop = Loop(compacted=False)
    tail = [*loop.group(), *shape(loop)]
    policy = "responses, read only" if shape_name == "a name off the allowlist" else "completions"
    found = clean_tail(_facts(tail, policy), None)
    assert (found is not None) == clean, shape_name
    if found is not None:
        assert found.last_group == 2  # the shape's group starts after the first group
    stamp = clean_tail(_facts(tail, policy), float(SUMMARY_STAMP))
    assert (stamp is not None) == (clean and shape_name not in STALE), shape_name
    # where no stage touches thinking blocks, a turn clean but for them counts too
    thinking = clean_tail(_facts(tail, policy), None, thinking=True)
    assert (thinking is not None) == (clean or shape_name in THINKS), shape_name
    # where the stages keep signed thinking, a signed turn whose ids are new counts too
    known = frozenset({"call_0"})  # the history's ids: none the tail names
    signed = clean_tail(_facts(tail, policy), None, known_ids=known)
    assert (signed is not None) == (clean or shape_name in SIGNED_SHAPES), shape_name
    compacted = clean_tail(_facts(tail, policy), float(SUMMARY_STAMP), known_ids=known)
    expected = (clean or shape_name in SIGNED_SHAPES) and shape_name not in STALE
    assert (compacted is not None) == expected, shape_name
    # ... and not when the history named one of them already (the shape's call is
    # ``call_2``): plain clean turns do not mind
    named = clean_tail(_facts(tail, policy), None, known_ids=frozenset({"call_2"}))
    assert (named is not None) == clean, shape_name
    # where earlier turns' thinking is dropped: the latest turn must be signed, earlier ones
    # may think in any way (their thinking goes)
    dropped = clean_tail(_facts(tail, policy), None, dropped=True)
    assert (dropped is not None) == (clean or shape_name in DROPPED_SHAPES), shape_name
    later = [*tail, *loop.group()]
    dropped_later = clean_tail(_facts(later, policy), None, dropped=True)
    assert (dropped_later is not None) == (clean or shape_name in THINKS), shape_name
    # where reasoning is dropped, every turn's thinking goes (but the loop's first, kept as
    # it is): nothing is asked of the last turn
    reasoning = clean_tail(_facts(tail, policy), None, dropped=True, last_kept=False)
    assert (reasoning is not None) == (clean or shape_name in THINKS), shape_name


def test_a_tail_must_be_whole_groups() -> None:
    loop = Loop(compacted=False)
    one, two = loop.group(), loop.group()
    assert clean_tail(_facts([*one, *two]), None) is not None
    assert clean_tail(_facts([*one, two[0]]), None) is None  # a result still to come
    assert clean_tail(_facts([one[1], *two]), None) is None  # starts with a result
    assert clean_tail(_facts([]), None) is None
    assert clean_tail(_facts([loop.messages[0], *one]), None) is None  # a user message
    # an id again in a later group (a provider numbering its calls per turn) is whole groups
    again = [one[0], loop.result(one[0].content[0])]
    assert clean_tail(_facts([*one, *again]), None) == (2,)
    # twice in one turn, results in either order: not told apart, the pipeline runs
    twice = loop.assistant(one[0].content[0], one[0].content[0])
    result = loop.result(one[0].content[0])
    assert clean_tail(_facts([twice, result, result]), None) is None


def test_a_long_clean_loop_runs_the_pipeline_only_to_start() -> None:
    """Flat: after the loop cache is set up, no request of a clean loop runs a stage."""
    policy = POLICIES["anthropic"]
    loop = Loop(compacted=False)
    incremental = IncrementalSanitizer()
    ran: list[int] = []
    full = _counting(ran)
    for _ in range(40):
        loop.messages.extend(loop.group())
        got = incremental.run(list(loop.messages), policy, BUILTIN_SANITIZERS, full=full)
        assert got == loop.messages  # nothing to change: the same messages
    # none: the first request seen is a plain prompt and one tool group (a fresh session's
    # second request), which starts the loop cache without running the pipeline
    assert ran == []
    boundary = incremental._loop.boundary if incremental._loop is not None else None
    assert boundary is not None and boundary.index == len(loop.messages) - 2


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(6))
def test_random_loops_mixing_clean_and_other_groups(policy_name: str, seed: int) -> None:
    """Clean groups (mostly) and every other shape, several user turns: the fast path, the
    pipeline and the switches between them agree with the full pipeline at every request."""
    rng = random.Random(seed)
    policy = POLICIES[policy_name]
    names = sorted(SHAPES)
    loop = Loop(compacted=seed % 2 == 1)
    incremental = IncrementalSanitizer()
    ran: list[int] = []
    full = _counting(ran)
    requests = 0
    for turn in range(4):
        if turn:
            loop.messages.append(UserMessage(content=f"turn {turn}", timestamp=loop.stamp()))
        for step in range(rng.randint(4, 12)):
            if rng.random() < 0.8 or (turn == 0 and step < 4):  # the cache gets used once
                loop.messages.extend(loop.group(text=rng.random() < 0.3))
            else:
                loop.messages.extend(SHAPES[rng.choice(names)][0](loop))
            messages = list(loop.messages)
            got = incremental.run(messages, policy, BUILTIN_SANITIZERS, full=full)
            expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
            assert dumped(got) == dumped(expected), f"seed {seed}, turn {turn}"
            requests += 1
        loop.messages.append(loop.assistant(TextContent(text="done"), stop="stop"))
    assert len(ran) < requests  # the fast path was taken along the way


def _with_extra(message: Any) -> Any:
    return type(message).model_validate({**message.to_dict(), "note": "x"})


@pytest.mark.parametrize("policy_name", ["completions", "responses, read only"])
@pytest.mark.parametrize("shape_name", sorted(SHAPES))
def test_model_facts_equal_wire_dict_facts(shape_name: str, policy_name: str) -> None:
    """The runtime's models are read through their attributes: the same facts as reading
    their wire dicts (and as the same model with an extra key, read the generic way)."""
    allowed = POLICIES[policy_name].allowed_tool_names
    loop = Loop(compacted=True)
    messages = [*loop.group(text=True), *SHAPES[shape_name][0](loop)]
    set_none = ToolResultMessage(tool_call_id="c", tool_name="read", details=None)
    messages += [set_none, _with_extra(messages[0])]
    for message in messages:
        facts = message_facts(message, allowed)
        assert facts == message_facts(message.to_dict(), allowed), (shape_name, message)
        assert facts == message_facts(_with_extra(message), allowed), (shape_name, message)


def test_a_turn_stamped_before_the_compaction_after_a_stable_boundary() -> None:
    """A clock that went back: a turn after the stable boundary stamped before the compaction
    summary has its usage zeroed by the full pipeline; the stable cache must not keep it (it
    did on main: the part after the boundary was sanitized without the summary)."""
    policy = POLICIES["completions"]
    loop = Loop(compacted=True)
    incremental = IncrementalSanitizer()
    loop.messages += [*loop.group(), loop.assistant(TextContent(text="done"), stop="stop")]
    incremental.run(list(loop.messages), policy, BUILTIN_SANITIZERS)
    loop.messages.append(UserMessage(content="again", timestamp=loop.stamp()))
    incremental.run(list(loop.messages), policy, BUILTIN_SANITIZERS)
    assert incremental.cached_length > 0  # the stable cache is in use
    call = loop.call()
    loop.messages += [loop.assistant(call, timestamp=SUMMARY_STAMP - 1), loop.result(call)]
    messages = list(loop.messages)
    got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
    expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
    assert dumped(got) == dumped(expected)
    assert expected[-2].usage.input == 0


def test_facts_are_immutable_records() -> None:
    """``MessageFacts`` and ``TailFacts`` are named tuples (cheaper to make than frozen
    dataclasses): the same fields, defaults and read-only attributes as before."""
    facts = MessageFacts("toolResult", ("c1",), True)
    assert (facts.role, facts.ids, facts.clean) == ("toolResult", ("c1",), True)
    assert (facts.stamp, facts.has_usage, facts.strip_details) == (None, False, False)
    tail = TailFacts(2)
    assert tail.last_group == 2
    for record, name in ((facts, "clean"), (tail, "last_group")):
        with pytest.raises(AttributeError):
            setattr(record, name, 0)


def _fresh_signed(head: Any, compaction_stamp: float | None) -> bool:
    """Every thinking block signed, not older than the compaction (nor stale by usage)."""
    if not head.signed:
        return False
    stamp = head.stamp
    if compaction_stamp is None or stamp is None:
        return True
    return not (stamp < compaction_stamp or (head.has_usage and stamp <= compaction_stamp))


def _signed_reference(
    facts: list[Any], index: int, compaction_stamp: float | None, known_ids: Any
) -> bool:
    """The signed rule as the module docstring states it: every thinking block signed, not
    older than the compaction (nor stale by usage), no id named before the turn."""
    head = facts[index]
    if known_ids is None or not _fresh_signed(head, compaction_stamp):
        return False
    before = set(known_ids)
    for earlier in facts[:index]:
        before.update(earlier.ids)
    return not before & set(head.ids)


def _clean_tail_reference(
    facts: list[Any],
    compaction_stamp: float | None,
    kept_thinking: bool = False,
    known_ids: Any = None,
    dropped: bool = False,
    last_kept: bool = True,
) -> Any:
    """``clean_tail`` before its shortcuts (no set made for one-call groups, the stamp check
    only with a stamp, the tail's ids only once a signed turn asks)."""
    index = 0
    thinking = kept_thinking
    last = -1
    count = len(facts)
    while index < count:
        head = facts[index]
        if head.role != "assistant":
            return None
        if dropped:
            if not clean_facts(head, compaction_stamp, True):
                return None
        elif not clean_facts(head, compaction_stamp, thinking) and not _signed_reference(
            facts, index, compaction_stamp, known_ids
        ):
            return None
        calls = head.ids
        if len(set(calls)) != len(calls):
            return None
        if index + len(calls) >= count:
            return None
        last = index
        for offset, call_id in enumerate(calls, start=1):
            result = facts[index + offset]
            if result.role != "toolResult" or result.ids != (call_id,) or not result.clean:
                return None
        index += len(calls) + 1
    if last < 0:
        return None
    latest = facts[last]
    if dropped and last_kept and not latest.clean and not _fresh_signed(latest, compaction_stamp):
        return None
    return TailFacts(last)


def _random_facts(rng: random.Random) -> list[Any]:
    pool = ["a", "b", "c", "d"]
    out: list[Any] = []
    for _ in range(rng.randrange(0, 5)):
        calls = tuple(rng.choice(pool) for _ in range(rng.choice([0, 1, 1, 1, 2, 3])))
        thinking = rng.random() < 0.3  # a turn that thinks is never plainly clean
        out.append(
            MessageFacts(
                rng.choice(["assistant", "assistant", "assistant", "user"]),
                calls,
                not thinking and rng.random() < 0.9,
                rng.choice([None, 10.0, 5_000.0, 9_000.0]),
                rng.random() < 0.7,
                thinking=thinking,
                signed=thinking and rng.random() < 0.6,
            )
        )
        for call_id in calls:
            if rng.random() < 0.05:
                continue  # a result missing
            ids = (call_id,) if rng.random() < 0.93 else rng.choice([(), ("z",), (call_id, "y")])
            role = "toolResult" if rng.random() < 0.95 else "user"
            out.append(MessageFacts(role, ids, rng.random() < 0.93))
    return out


@pytest.mark.parametrize("seed", range(10))
def test_clean_tail_equals_its_reference(seed: int) -> None:
    rng = random.Random(seed)
    found = 0
    for _ in range(2_000):
        facts = _random_facts(rng)
        stamp = rng.choice([None, None, 5_000.0])
        thinking = rng.random() < 0.5
        known = rng.choice([None, None, frozenset(), frozenset({"a"}), frozenset({"b", "c"})])
        dropped = not thinking and known is None and rng.random() < 0.5  # one mode at a time
        last_kept = rng.random() < 0.5
        got = clean_tail(facts, stamp, thinking, known, dropped, last_kept)
        expected = _clean_tail_reference(facts, stamp, thinking, known, dropped, last_kept)
        assert got == expected, (facts, stamp, thinking, known, dropped, last_kept)
        found += got is not None
    assert found > 100  # clean tails were among them


_OPENAI = resolve_transcript_policy("openai-completions", "openai", "gpt-4o")


@pytest.mark.parametrize(
    ("label", "policy", "stages"),
    [
        ("details stage on", _OPENAI, BUILTIN_SANITIZERS),
        (
            "details stage switched off by the policy",
            dataclasses.replace(_OPENAI, disabled=frozenset({"tool_result_details"})),
            BUILTIN_SANITIZERS,
        ),
        ("a stage set without it", _OPENAI, BUILTIN_SANITIZERS[::3]),
        (
            "the stages renamed and reordered",
            _OPENAI,
            tuple(
                SanitizerSpec(f"x{i}", spec.fn, 100 - i)
                for i, spec in enumerate(BUILTIN_SANITIZERS)
            ),
        ),
    ],
)
def test_a_loops_results_keep_their_details_unless_the_details_stage_runs(
    label: str, policy: Any, stages: Any
) -> None:
    """The loop cache took the details stage for granted: with it switched off or not among
    the stages, results lost their ``details`` from a loop's fourth request on, unlike the
    full pipeline (and from the second, with the loop cache starting earlier)."""
    messages: list[Any] = [UserMessage(content="go", timestamp=1)]
    incremental = IncrementalSanitizer()
    for number in range(6):
        call = ToolCall(id=f"c{number}", name="read", arguments={})
        messages += [
            AssistantMessage(content=[call], stop_reason="toolUse", timestamp=2),
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name="read",
                content=[TextContent(text="r")],
                details={"raw": number},
            ),
        ]
        got = incremental.run(list(messages), policy, stages)
        expected = run_transcript_sanitizers(list(messages), policy, stages)
        assert dumped(got) == dumped(expected), (label, number)
    assert incremental._loop is not None  # the loop cache was used


def _policy(api: str, provider: str, model: str, **switches: Any) -> Any:
    """A resolved policy, with ``reasoning`` (the model is marked as reasoning) and stage
    switches (``enabled``/``disabled`` names) applied."""
    reasoning = switches.pop("reasoning", None)
    policy = resolve_transcript_policy(api, provider, model, model_reasoning=reasoning)
    sets = {key: frozenset(names) for key, names in switches.items()}
    return dataclasses.replace(policy, **sets) if sets else policy


#: policy → (thinking_untouched, signed_thinking_kept, earlier_thinking_dropped,
#: reasoning_dropped), read off the policy rules by hand: which stages and rules read or
#: change thinking blocks under it (the table tests above hold the stages' output against the
#: full pipeline under each mode).
THINKING_MODES: dict[str, tuple[Any, tuple[bool, bool, bool, bool]]] = {
    # OpenAI-compatible replay drops reasoning from history unless the model reasons
    "gpt-4o": (_policy("openai-completions", "openai", "gpt-4o"), (False, False, False, True)),
    "qwen3 on ollama": (
        _policy("openai-completions", "ollama", "qwen3:8b"),
        (False, False, False, True),
    ),
    "gpt-4o, reasoning": (
        _policy("openai-completions", "openai", "gpt-4o", reasoning=True),
        (True, True, False, False),
    ),
    # a model known to need its reasoning back
    "kimi-k2.5": (
        _policy("openai-completions", "moonshot", "kimi-k2.5"),
        (True, True, False, False),
    ),
    "gpt-5, responses": (
        _policy("openai-responses", "openai", "gpt-5"),
        (True, True, False, False),
    ),
    "gemini": (
        _policy("google-generative-ai", "google", "gemini-2.5-pro"),
        (True, True, False, False),
    ),
    # Claude models that keep their thinking: the signature stage and the replay rule run
    "claude-opus-4-6": (
        _policy("anthropic-messages", "anthropic", "claude-opus-4-6"),
        (False, True, False, False),
    ),
    "claude-sonnet-4-6": (
        _policy("anthropic-messages", "anthropic", "claude-sonnet-4-6"),
        (False, True, False, False),
    ),
    # older ones drop their earlier turns' thinking
    "claude-sonnet-4-5": (
        _policy("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
        (False, False, True, False),
    ),
    "claude-sonnet-4": (
        _policy("anthropic-messages", "anthropic", "claude-sonnet-4"),
        (False, False, True, False),
    ),
    "claude-3 on bedrock": (
        _policy("bedrock-converse-stream", "amazon-bedrock", "anthropic.claude-3"),
        (False, False, True, False),
    ),
    # the switches count: a stage forced on or off
    "gpt-4o, reasoning drop off": (
        _policy("openai-completions", "openai", "gpt-4o", disabled={"drop_reasoning_from_history"}),
        (True, True, False, False),
    ),
    "gpt-4o, signature stage on": (
        _policy("openai-completions", "openai", "gpt-4o", enabled={"thinking_signatures"}),
        (False, False, False, False),
    ),
    "gemini, signature stage on": (
        _policy(
            "google-generative-ai", "google", "gemini-2.5-pro", enabled={"thinking_signatures"}
        ),
        (False, True, False, False),
    ),
    "gemini, thinking drop on": (
        _policy(
            "google-generative-ai", "google", "gemini-2.5-pro", enabled={"drop_thinking_blocks"}
        ),
        (False, False, True, False),
    ),
    "gemini, reasoning drop on": (
        _policy(
            "google-generative-ai",
            "google",
            "gemini-2.5-pro",
            enabled={"drop_reasoning_from_history"},
        ),
        (False, False, False, True),
    ),
    "claude-opus-4-6, reasoning drop on": (
        _policy(
            "anthropic-messages",
            "anthropic",
            "claude-opus-4-6",
            enabled={"drop_reasoning_from_history"},
        ),
        (False, False, False, False),
    ),
    # the drop forced on where the signed-turn replay rule still runs: neither mode
    "claude-opus-4-6, thinking drop on": (
        _policy(
            "anthropic-messages", "anthropic", "claude-opus-4-6", enabled={"drop_thinking_blocks"}
        ),
        (False, False, False, False),
    ),
    "claude-opus-4-6, thinking drop on, no tool-call stage": (
        _policy(
            "anthropic-messages",
            "anthropic",
            "claude-opus-4-6",
            enabled={"drop_thinking_blocks"},
            disabled={"tool_call_inputs"},
        ),
        (False, False, True, False),
    ),
    "claude-sonnet-4, thinking drop off": (
        _policy(
            "anthropic-messages", "anthropic", "claude-sonnet-4", disabled={"drop_thinking_blocks"}
        ),
        (False, True, False, False),
    ),
    "claude-sonnet-4, reasoning drop on": (
        _policy(
            "anthropic-messages",
            "anthropic",
            "claude-sonnet-4",
            enabled={"drop_reasoning_from_history"},
        ),
        (False, False, False, False),
    ),
}


@pytest.mark.parametrize("name", sorted(THINKING_MODES))
def test_which_policies_touch_thinking_how(name: str) -> None:
    """The four predicates the loop cache picks its thinking mode from."""
    policy, expected = THINKING_MODES[name]
    got = (
        thinking_untouched(policy),
        signed_thinking_kept(policy),
        earlier_thinking_dropped(policy),
        reasoning_dropped(policy),
    )
    assert got == expected, name
