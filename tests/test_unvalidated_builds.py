"""The runtime's own models built without validating again, each against the validated build
it replaces: a tool's ``str`` as a text block (``coerce_tool_result``), a tool result message
(``tool_execution._own_result_message``) and a run's summed ``Cost`` (``run_usage``).

Equal means: the same ``model_dump()`` and JSON dump (key order and ``int``/``float`` types
included), the same ``model_fields_set``, extras, private state and wire dict, and the same
block objects inside; where the values are not the runtime's own the validated path runs and
its errors stand."""

from __future__ import annotations

import json
import math
import random
import time
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from openclaw_runtime.agent import tool_execution
from openclaw_runtime.agent.tool_execution import (
    _Finalized,
    _own_result_message,
    _validated_result_message,
)
from openclaw_runtime.agent.tools import AgentToolResult, coerce_tool_result
from openclaw_runtime.messages import (
    Cost,
    ImageContent,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    built_unvalidated,
    now_ms,
)
from openclaw_runtime.runner import run_usage
from openclaw_runtime.runner.run_usage import UsageAccumulator, _number

_NOW_NS = 1_767_225_600_123_000_000


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: _NOW_NS)


def _types(value: Any) -> Any:
    """``value`` with every leaf replaced by its exact type (``1 == 1.0`` hides a change)."""
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value)


def _dumped(model: BaseModel, how: str) -> Any:
    """A dump of ``model`` with its exact leaf types, or the error it raises."""
    try:
        if how == "python":
            dump = model.model_dump()
            return list(dump), dump, _types(dump)
        if how == "json":
            return model.model_dump(mode="json")
        if how == "unset":
            return model.model_dump(exclude_unset=True)
        if how == "wire":
            return model.to_dict()  # type: ignore[attr-defined]
        return model.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception as exc:  # unserializable details fail both builds alike
        return f"{type(exc).__name__}: {exc}"


def assert_same_model(fast: BaseModel, slow: BaseModel) -> None:
    assert type(fast) is type(slow)
    assert fast == slow
    assert list(fast.__dict__) == list(slow.__dict__)
    assert _types(fast.__dict__) == _types(slow.__dict__)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.__pydantic_extra__ == slow.__pydantic_extra__
    assert fast.__pydantic_private__ == slow.__pydantic_private__
    for how in ("python", "json", "unset", "wire", "text"):
        assert _dumped(fast, how) == _dumped(slow, how), how
    assert fast.model_copy() == slow


def test_built_unvalidated_matches_init_for_each_model() -> None:
    assert_same_model(
        built_unvalidated(
            TextContent, {"type": "text", "text": "x", "text_signature": None}, {"type", "text"}
        ),
        TextContent(text="x"),
    )
    values = {"input": 1, "output": 2.5, "cache_read": 0, "cache_write": 3, "total": 6.5}
    assert_same_model(
        built_unvalidated(Cost, dict(values), set(Cost._always_written)), Cost(**values)
    )
    # what ``result_message`` relies on: the default it fills in is the field's own factory
    assert ToolResultMessage.model_fields["timestamp"].default_factory is now_ms


# --------------------------------------------------------------------------- coerce_tool_result


def _old_coerce(value: Any) -> AgentToolResult:
    """``coerce_tool_result`` before the exact-``str`` shortcut."""
    if isinstance(value, AgentToolResult):
        return value
    if value is None:
        return AgentToolResult(content=[], details=None)
    if isinstance(value, str):
        return AgentToolResult(content=[TextContent(text=value)])
    if isinstance(value, TextContent | ImageContent):
        return AgentToolResult(content=[value])
    if isinstance(value, list) and all(isinstance(v, TextContent | ImageContent) for v in value):
        return AgentToolResult(content=list(value))
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return AgentToolResult(content=[TextContent(text=text)], details=value)


class _Str(str):
    pass


class _Text(TextContent):
    pass


class _BadStr:
    def __str__(self) -> str:
        raise RuntimeError("no text")


_TEXT_BLOCK = TextContent(text="t")


def _tool_returns() -> list[Any]:
    text = TextContent(text="t")
    image = ImageContent(data="aGk=", mime_type="image/png")
    rng = random.Random(13)
    alphabet = 'ab \n\t"\\é😀\u0000\ud800{}[]'
    randoms = [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))) for _ in range(200)
    ]
    return [
        "",
        "contents of f3.txt",
        "x" * 100_000,
        "\ud800 lone surrogate",
        _Str("a str subclass"),
        None,
        text,
        image,
        _Text(text="sub"),
        [text, image],
        [],
        [text, "not a block"],
        (text,),
        {"a": 1, "b": [1, 2.5, None]},
        {1: "int key"},
        [1, 2, 3],
        42,
        4.5,
        float("nan"),
        True,
        object(),
        AgentToolResult(content=[text], details={"k": 1}, terminate=True),
        *randoms,
    ]


@pytest.mark.parametrize("value", _tool_returns(), ids=lambda v: type(v).__name__)
def test_coerce_tool_result_matches_the_validated_build(value: Any) -> None:
    expected = _old_coerce(value)  # every shape here is accepted (errors: the test below)
    got = coerce_tool_result(value)
    assert type(got) is type(expected)
    assert got.terminate == expected.terminate
    assert got.details is expected.details or (got.details == expected.details)
    assert len(got.content) == len(expected.content)
    for mine, theirs in zip(got.content, expected.content, strict=True):
        if mine is theirs:
            continue
        assert_same_model(mine, theirs)


@pytest.mark.parametrize("bad", [_BadStr(), {"bad": _BadStr()}, [_TEXT_BLOCK, _BadStr()]])
def test_a_bad_tool_result_fails_as_before(bad: Any) -> None:
    with pytest.raises(RuntimeError, match="no text"):
        _old_coerce(bad)
    with pytest.raises(RuntimeError, match="no text"):
        coerce_tool_result(bad)


# --------------------------------------------------------------------------- result messages


def _call(**over: Any) -> ToolCall:
    fields = {"id": "call-1", "name": "read", "arguments": {"path": "f"}}
    fields.update(over)
    return ToolCall.model_construct(**fields)


def _done(content: Any, details: Any = None, is_error: Any = False, **call: Any) -> _Finalized:
    result = AgentToolResult(content=content, details=details)
    return _Finalized(_call(**call), result, is_error, True)


def _mutated_tag(block: BaseModel, tag: Any) -> BaseModel:
    copied = block.model_copy()
    copied.__dict__["type"] = tag
    return copied


def _untagged() -> TextContent:
    block = TextContent(text="no type")
    del block.__dict__["type"]
    return block


_TEXT = TextContent(text="t")
_IMAGE = ImageContent(data="aGk=", mime_type="image/png")
_THINK = ThinkingContent(thinking="hm")
_CALL = ToolCall(id="c", name="n")
_OPAQUE = OpaqueContent(type="video", url="u")
_EXTRA = TextContent.model_validate({"type": "text", "text": "x", "futureField": 1})

#: (name, done, whether the unvalidated build applies)
_RESULTS: list[tuple[str, _Finalized, bool]] = [
    ("text", _done([_TEXT]), True),
    ("text-details", _done([_TEXT], details={"path": "f", "n": 1}), True),
    ("text-error", _done([_TEXT], is_error=True), True),
    ("image-and-text", _done([_IMAGE, _TEXT, _TEXT]), True),
    ("empty", _done([]), True),
    ("extra-field-block", _done([_EXTRA]), True),
    ("details-falsy", _done([_TEXT], details={}), True),
    ("details-zero", _done([_TEXT], details=0), True),
    ("details-object", _done([_TEXT], details=object()), True),
    ("thinking-block", _done([_THINK]), False),
    ("tool-call-block", _done([_CALL]), False),
    ("opaque-block", _done([_OPAQUE]), False),
    ("dict-block", _done([{"type": "text", "text": "d"}]), False),
    ("subclass-block", _done([_Text(text="s")]), False),
    ("tuple-content", _done((_TEXT,)), False),
    ("str-id", _done([_TEXT], id=_Str("call-1")), False),
    ("str-name", _done([_TEXT], name=_Str("read")), False),
    ("int-flag", _done([_TEXT], is_error=1), False),
    ("text-tagged-image", _done([_mutated_tag(_TEXT, "image")]), False),
    ("text-tagged-opaque", _done([_mutated_tag(_TEXT, "video")]), False),
    ("text-tag-str-subclass", _done([_mutated_tag(_TEXT, _Str("text"))]), False),
    ("image-tagged-text", _done([_mutated_tag(_IMAGE, "text")]), False),
    ("untagged-text", _done([_untagged()]), False),
]


def _outcome(build: Any, done: _Finalized) -> Any:
    try:
        return build(done)
    except ValidationError as exc:
        return ("error", exc.error_count(), [e["type"] for e in exc.errors()])


@pytest.mark.parametrize(("name", "done", "own"), _RESULTS, ids=[r[0] for r in _RESULTS])
def test_result_message_matches_the_validated_build(name: str, done: _Finalized, own: bool) -> None:
    fast = _own_result_message(done)
    assert (fast is not None) is own
    expected = _outcome(_validated_result_message, done)
    got = _outcome(lambda d: _own_result_message(d) or _validated_result_message(d), done)
    if isinstance(expected, tuple):
        assert got == expected
        return
    assert_same_model(got, expected)
    if not own:
        return
    for block, mine, theirs in zip(done.result.content, got.content, expected.content, strict=True):
        assert mine is theirs is block  # validation keeps the block objects; so does the fast build
    assert got.content is not done.result.content  # a new list, as validation makes
    assert got.details is expected.details


def test_result_message_random_contents() -> None:
    rng = random.Random(11)
    pool: list[Any] = [
        _TEXT,
        _IMAGE,
        _EXTRA,
        _THINK,
        _OPAQUE,
        _Text(text="s"),
        {"type": "text", "text": "d"},
    ]
    taken = 0
    for _ in range(500):
        content = [rng.choice(pool) for _ in range(rng.randrange(0, 5))]
        details = rng.choice([None, {"a": 1}, [1], "s", 0.5])
        done = _done(content, details=details, is_error=rng.choice([True, False, 0, 1]))
        fast = _own_result_message(done)
        expected = _outcome(_validated_result_message, done)
        if fast is None:
            continue
        taken += 1
        assert_same_model(fast, expected)
    assert taken > 50


def test_result_message_path_is_used_by_the_batch() -> None:
    # the batch's method builds through the fast helper first (a rename would bypass it)
    source = tool_execution._Batch.result_message.__code__.co_names
    assert "_own_result_message" in source and "_validated_result_message" in source


# --------------------------------------------------------------------------- summed cost


def _old_summed(total: Cost, cost: Cost) -> Cost:
    """``UsageAccumulator.add``'s cost sum before the unvalidated build."""
    return Cost(
        input=total.input + _number(cost.input),
        output=total.output + _number(cost.output),
        cache_read=total.cache_read + _number(cost.cache_read),
        cache_write=total.cache_write + _number(cost.cache_write),
        total=total.total + _number(cost.total),
    )


class _Float(float):
    pass


class _Int(int):
    pass


class _Sticky(float):
    """A float whose sums stay of its type (plain subclasses add up to exact floats)."""

    def __add__(self, other: object) -> _Sticky:
        return _Sticky(float(self) + other)  # type: ignore[arg-type]

    __radd__ = __add__


def _random_number(rng: random.Random) -> Any:
    return rng.choice(
        [
            0,
            1,
            rng.randrange(-5, 10**6),
            rng.random(),
            rng.uniform(-1e6, 1e6),
            0.0,
            -0.0,
            math.inf,
            math.nan,
            2**70,
            True,
            None,
            "3",
            _Float(1.5),
            _Int(2),
            _Sticky(0.5),
            Fraction(1, 3),
            Decimal(2),
        ]
    )


def _cost(rng: random.Random) -> Cost:
    # a provider's ``Cost`` may be constructed without validation, so any value can be there
    names = ("input", "output", "cache_read", "cache_write", "total")
    return Cost.model_construct(**{n: _random_number(rng) for n in names})


def _same_or_both_nan(a: Any, b: Any) -> bool:
    return a == b or (
        isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    )


def _assert_same_cost(fast: Cost, slow: Cost) -> None:
    assert list(fast.__dict__) == list(slow.__dict__)
    assert _types(fast.__dict__) == _types(slow.__dict__)
    assert all(_same_or_both_nan(fast.__dict__[k], slow.__dict__[k]) for k in slow.__dict__)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.__pydantic_extra__ == slow.__pydantic_extra__
    assert fast.__pydantic_private__ == slow.__pydantic_private__
    assert json.dumps(fast.to_dict()) == json.dumps(slow.to_dict())


def test_summed_cost_matches_the_validated_build_on_random_costs() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        total = rng.choice([Cost(), Cost(input=1, output=0.5), _cost(rng)])
        cost = _cost(rng)
        try:
            expected = _old_summed(total, cost)
        except (TypeError, ValidationError) as exc:
            with pytest.raises(type(exc)):
                run_usage._summed_cost(total, cost)
            continue
        _assert_same_cost(run_usage._summed_cost(total, cost), expected)


def _old_add(acc: UsageAccumulator, usage: Any) -> None:
    if usage is None:
        return
    if not isinstance(usage, Usage):
        data = dict(usage)
        if "total" in data and "totalTokens" not in data:
            data["totalTokens"] = data.pop("total")
        usage = Usage.model_validate({k: v for k, v in data.items() if not isinstance(v, bool)})
    acc.input += usage.input
    acc.output += usage.output
    acc.cache_read += usage.cache_read
    acc.cache_write += usage.cache_write
    acc.total_tokens += usage.total_tokens or (
        usage.input + usage.output + usage.cache_read + usage.cache_write
    )
    acc.cost = _old_summed(acc.cost, usage.cost)
    acc.calls += 1
    acc.last_call = usage


def _random_usage(rng: random.Random) -> Any:
    kind = rng.randrange(4)
    if kind == 0:
        return None
    cost = {"input": rng.choice([0, 1, 0.25, 3]), "total": rng.choice([0, 2, 1.75, True])}
    if kind == 1:
        return Usage(input=rng.randrange(100), output=rng.randrange(100), cost=Cost(**cost))
    if kind == 2:
        return Usage.model_construct(input=rng.randrange(9), cost=_cost(rng))
    return {
        "input": rng.randrange(50),
        "total": rng.randrange(200),
        "cost": cost,
        "cacheRead": True,
    }


def test_usage_accumulator_matches_the_validated_sums() -> None:
    rng = random.Random(3)
    for _ in range(300):
        fast, slow = UsageAccumulator(), UsageAccumulator()
        for _ in range(rng.randrange(1, 8)):
            usage = _random_usage(rng)
            try:
                _old_add(slow, usage)
            except (TypeError, ValidationError) as exc:
                with pytest.raises(type(exc)):
                    fast.add(usage)
                break
            fast.add(usage)
            _assert_same_cost(fast.cost, slow.cost)
            assert fast.last_call is slow.last_call or fast.last_call == slow.last_call
        assert (fast.input, fast.output, fast.calls, fast.total_tokens) == (
            slow.input,
            slow.output,
            slow.calls,
            slow.total_tokens,
        )
        _assert_same_cost(fast.to_usage().cost, slow.to_usage().cost)
