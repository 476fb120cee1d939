"""Whole turns the pipeline leaves as they are (``transcript.clean_turns``), held against it.

``clean_region_outputs`` claims that every built-in stage, in any set, order and switch,
returns a clean region as it is (results' removable details dropped). Held here against
the full pipeline over a table of shapes (typed models and wire dicts) under every policy
and stage set of ``test_plain_user_turn``, over random regions, and inside the incremental
sanitizer over random multi-turn sessions sanitized before every request.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
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
from openclaw_runtime.transcript import incremental as incremental_module
from openclaw_runtime.transcript import run_transcript_sanitizers
from openclaw_runtime.transcript.clean_turns import clean_region_outputs, is_clean_text_answer
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from openclaw_runtime.transcript.pairing import SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS, thinking_untouched
from openclaw_runtime.transcript.stage_specs import build_stage_specs
from openclaw_runtime.transcript.tool_calls import normalize_allowed_names
from tests.test_plain_user_turn import POLICIES, STAGE_SETS


def _dumped(messages: list[Any]) -> list[Any]:
    return [m.model_dump(mode="json") if hasattr(m, "model_dump") else m for m in messages]


def _user(text: Any = "question", stamp: int = 1) -> UserMessage:
    return UserMessage(content=text, timestamp=stamp)


def _answer(*blocks: Any, stop: str = "stop", stamp: int = 2) -> AssistantMessage:
    return AssistantMessage(
        content=list(blocks) if blocks else [TextContent(text="answer")],
        stop_reason=stop,  # type: ignore[arg-type]
        api="x",
        provider="x",
        model="m",
        usage=Usage(input=10, output=3),
        timestamp=stamp,
    )


def _call(call_id: str, name: str = "read", **extra: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments={"path": call_id}, **extra)


def _group(*calls: ToolCall, details: Any = None, order: list[int] | None = None) -> list[Any]:
    assistant = _answer(*calls, stop="toolUse")
    results = []
    for index in order if order is not None else range(len(calls)):
        call = calls[index]
        fields: dict[str, Any] = {"content": [TextContent(text=f"out of {call.id}")]}
        if details is not None:
            fields["details"] = details
        results.append(ToolResultMessage(tool_call_id=call.id, tool_name=call.name, **fields))
    return [assistant, *results]


def _wire(messages: list[Any]) -> list[Any]:
    return [m.to_dict() for m in messages]


#: (label, region, clean)
SHAPES: list[tuple[str, list[Any], bool]] = [
    ("a text turn and the next prompt", [_user(), _answer(), _user("next")], True),
    ("a prompt alone", [_user()], True),
    ("text blocks", [_user([TextContent(text="a"), TextContent(text="b")]), _answer()], True),
    (
        "a tool loop, its answer and the next prompt",
        [_user(), *_group(_call("c1")), *_group(_call("c2"), _call("c3")), _answer(), _user()],
        True,
    ),
    ("the prompt and one group (a second request)", [_user(), *_group(_call("c1"))], True),
    (
        "text beside the calls",
        [
            _user(),
            _answer(TextContent(text="let me look"), _call("c1"), stop="toolUse"),
            ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="r")]),
        ],
        True,
    ),
    ("details the stage drops", [_user(), *_group(_call("c1"), details={"raw": 1})], True),
    (
        "the synthetic flag alone",
        [_user(), *_group(_call("c1"), details={SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY: True})],
        True,
    ),
    ("two prompts in a row", [_user(), _user("again"), _answer()], True),
    ("starts with an answer", [_answer(), _user()], False),
    ("a blank prompt", [_user("  "), _answer()], False),
    ("a blank block in the prompt", [_user([TextContent(text="a"), TextContent(text=" ")])], False),
    ("an image", [_user([ImageContent(data="aGk=", mime_type="image/png")]), _answer()], False),
    (
        "thinking",
        [
            _user(),
            _answer(ThinkingContent(thinking="t", thinking_signature="s"), TextContent(text="a")),
        ],
        False,
    ),
    # the shapes below are clean only where no stage touches thinking (``THINKING_SHAPES``)
    (
        "unsigned thinking, then a call",
        [
            _user(),
            AssistantMessage(
                content=[ThinkingContent(thinking="plan"), _call("c1")],
                stop_reason="toolUse",
                timestamp=2,
            ),
            *_group(_call("c1"))[1:],
            _answer(ThinkingContent(thinking="so"), TextContent(text="done")),
        ],
        False,
    ),
    ("thinking and nothing else", [_user(), _answer(ThinkingContent(thinking="t"))], False),
    ("a failed turn", [_user(), _answer(stop="error"), _user()], False),
    ("an aborted turn", [_user(), _answer(stop="aborted"), _user()], False),
    ("an empty answer", [_user(), _answer(TextContent(text=""))], False),
    (
        "a blank block in the answer",
        [_user(), _answer(TextContent(text="a"), TextContent(text=" "))],
        False,
    ),
    ("a result missing", [_user(), *_group(_call("c1"), _call("c2"))[:-1]], False),
    ("results out of order", [_user(), *_group(_call("c1"), _call("c2"), order=[1, 0])], False),
    # a provider numbering its calls afresh in every turn (``loop_tail``, "Ids named again")
    ("an id again in a later turn", [_user(), *_group(_call("c1")), *_group(_call("c1"))], True),
    ("an id twice in one turn", [_user(), *_group(_call("c1"), _call("c1"))], False),
    ("sessions_spawn", [_user(), *_group(_call("c1", "sessions_spawn"))], False),
    ("a name with spaces", [_user(), *_group(_call("c1", " read"))], False),
    (
        "the flag among other details",
        [
            _user(),
            *_group(_call("c1"), details={SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY: True, "x": 1}),
        ],
        False,
    ),
    ("a custom message", [_user(), CustomMessage(custom_type="n", content="x"), _answer()], False),
    (
        "a summary",
        [_user(), CompactionSummaryMessage(summary="s", tokens_before=1, timestamp=1), _user()],
        False,
    ),
    ("an orphan result", [_user(), *_group(_call("c1"))[1:]], False),
    ("empty", [], False),
]


THINKING_SHAPES = {"thinking", "unsigned thinking, then a call"}


@pytest.mark.parametrize(("label", "region", "clean"), SHAPES, ids=[s[0] for s in SHAPES])
@pytest.mark.parametrize("form", ["model", "dict"])
def test_a_clean_region_is_what_every_builtin_leaves(
    label: str, region: list[Any], clean: bool, form: str
) -> None:
    messages = _wire(region) if form == "dict" else list(region)
    calls_read = any(isinstance(m, AssistantMessage) and m.tool_calls() for m in region)
    for policy, stages in itertools.product(POLICIES, STAGE_SETS):
        got = clean_region_outputs(messages, policy, build_stage_specs(stages).strips_details)
        allowed = normalize_allowed_names(policy.allowed_tool_names)
        # where no stage touches thinking blocks, a turn that thinks is clean (not alone)
        here = clean or (label in THINKING_SHAPES and thinking_untouched(policy))
        if not here or (calls_read and allowed is not None and "read" not in allowed):
            assert got is None, (label, policy)  # unsure: the pipeline runs, as before
            continue
        assert got is not None, (label, policy)
        full = run_transcript_sanitizers(list(messages), policy, stages)
        assert _dumped(got) == _dumped(full), (label, policy, stages)
        # unchanged messages are the very objects the pipeline would hand back
        assert [a is b for a, b in zip(got, messages, strict=True)] == [
            a is b for a, b in zip(full, messages, strict=True)
        ], label


def test_a_region_calling_a_tool_the_run_may_not_call_is_not_clean() -> None:
    region = [_user(), *_group(_call("c1", "exec"))]
    allowing_read = next(p for p in POLICIES if p.allowed_tool_names == frozenset({"read"}))
    assert clean_region_outputs(region, allowing_read, True) is None
    assert clean_region_outputs([_user(), *_group(_call("c1"))], allowing_read, True) is not None


def test_an_ill_typed_policy_takes_the_pipeline() -> None:
    region = [_user(), _answer(), _user()]
    policy = POLICIES[0]
    assert clean_region_outputs(region, policy, True) is not None
    for change in ({"image_max_bytes": "big"}, {"api": None}, {"enabled": None}):
        assert clean_region_outputs(region, dataclasses.replace(policy, **change), True) is None


def test_clean_text_answers_typed_and_wire_agree() -> None:
    answers = [
        _answer(),
        _answer(TextContent(text="a"), TextContent(text="b")),
        _answer(TextContent(text="a", text_signature="sig")),
        _answer(TextContent(text=" ")),
        _answer(stop="error"),
        _answer(stop="length"),
        _answer(ThinkingContent(thinking="t"), TextContent(text="a")),
        _answer(_call("c1"), stop="toolUse"),
        AssistantMessage(content=[], timestamp=1),
    ]
    for answer in answers:
        assert is_clean_text_answer(answer) == is_clean_text_answer(answer.to_dict()), answer
    assert [is_clean_text_answer(a) for a in answers] == [
        True,
        True,
        True,
        False,
        False,
        True,
        False,
        False,
        False,
    ]


def _random_region(rng: random.Random, calls: list[int]) -> list[Any]:
    """A region drawn mostly from clean parts, with now and then one that is not."""

    def fresh_id() -> str:
        calls[0] += 1
        return f"call_{calls[0]}"

    out: list[Any] = [_user(rng.choice(["go", "read it", [TextContent(text="a")]]))]
    for _ in range(rng.randint(0, 4)):
        kind = rng.random()
        if kind < 0.45:
            ids = [fresh_id() for _ in range(rng.choice([1, 1, 2]))]
            details = rng.choice([None, None, {"raw": 1}])
            out += _group(
                *(_call(i, rng.choice(["read", "read", "exec"])) for i in ids), details=details
            )
        elif kind < 0.75:
            out.append(_answer(TextContent(text="answer")))
        elif kind < 0.9:
            out.append(_user("next"))
        else:
            out.append(
                rng.choice(
                    [
                        _answer(TextContent(text=" ")),
                        _answer(stop="error"),
                        _user("  "),
                        _answer(
                            ThinkingContent(thinking="t", thinking_signature="s"),
                            TextContent(text="a"),
                        ),
                        ToolResultMessage(tool_call_id="call_x", tool_name="read"),
                    ]
                )
            )
    return out


@pytest.mark.parametrize("seed", range(25))
def test_random_regions_equal_the_pipeline_where_clean(seed: int) -> None:
    rng = random.Random(seed)
    calls = [0]
    hits = 0
    for _ in range(40):
        region = _random_region(rng, calls)
        if rng.random() < 0.3:
            region = _wire(region)
        policy = rng.choice(POLICIES)
        stages = rng.choice(STAGE_SETS)
        got = clean_region_outputs(region, policy, build_stage_specs(stages).strips_details)
        if got is None:
            continue
        hits += 1
        assert _dumped(got) == _dumped(run_transcript_sanitizers(list(region), policy, stages))
    assert hits > 5


def _session_turn(rng: random.Random, history: list[Any], calls: list[int]) -> list[list[Any]]:
    """Append one turn to ``history``; return the history before each of its requests."""
    stamp = len(history) + 10
    history.append(_user(rng.choice(["q"] * 4 + ["  ", [TextContent(text="q")]]), stamp))
    requests = [list(history)]
    for _ in range(rng.randint(0, 4)):
        calls[0] += 1
        call = _call(f"call_{calls[0]}", rng.choice(["read", "read", "exec"]))
        blocks: list[Any] = [call]
        if rng.random() < 0.1:
            blocks.insert(0, ThinkingContent(thinking="plan", thinking_signature="s"))
        history += [_answer(*blocks, stop="toolUse", stamp=stamp)]
        details = rng.choice([None, {"raw": 2}])
        if rng.random() < 0.99:  # now and then a result that never came
            history += [
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(text="out")],
                    **({} if details is None else {"details": details}),
                )
            ]
        requests.append(list(history))
    ending = rng.random()
    if ending < 0.1:
        history.append(_answer(stop="error", stamp=stamp))
    elif ending < 0.2:
        history.append(
            _answer(ThinkingContent(thinking="why", thinking_signature="s"), TextContent(text="a"))
        )
    else:
        history.append(_answer(TextContent(text="answer"), stamp=stamp))
    return requests


@pytest.mark.parametrize("policy_index", range(0, len(POLICIES), 4))
@pytest.mark.parametrize("seed", range(4))
def test_multi_turn_sessions_equal_the_pipeline_at_every_request(
    policy_index: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's turns, each sanitized before every model request by one incremental
    sanitizer, as the runner does: every answer equals the full pipeline's, and clean
    regions were taken."""
    policy = POLICIES[policy_index]
    rng = random.Random(seed * 1_000 + policy_index)
    taken: list[int] = []

    def counting(messages: Any, *args: Any) -> list[Any] | None:
        out = clean_region_outputs(messages, *args)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(incremental_module, "clean_region_outputs", counting)
    calls = [0]
    history: list[Any] = []
    incremental = IncrementalSanitizer()
    for _ in range(30):
        for messages in _session_turn(rng, history, calls):
            expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
            got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
            assert _dumped(got) == _dumped(expected), len(messages)
    called = {c.id for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls()}
    answered = {m.tool_call_id for m in history if isinstance(m, ToolResultMessage)}
    if called == answered:  # (a call never answered keeps every later boundary from moving)
        assert sum(taken) > 0, taken
