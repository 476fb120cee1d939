"""The token estimate's typed path (``context.tokens._TYPED``: the runtime's assistant turns and
tool results read through their ``__dict__``) gives what the record path (``_get`` field by
field) gives, on every shape — including models changed after they were built, which the
typed path must hand to the record path — and the reused JSON encoder and the system-prompt
slot give what the plain computations give."""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

import pytest

from openclaw_runtime.context import preemptive, tokens
from openclaw_runtime.context.guard import _HistoryTokens
from openclaw_runtime.context.tokens import (
    estimate_llm_boundary_token_pressure,
    estimate_message_token_pressure,
)
from openclaw_runtime.messages import (
    AssistantMessage,
    ImageContent,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    load_message,
)

NESTED_ARGS = {
    "path": "src/ü/文件.py",
    "options": {"depth": 3, "follow": True, "skip": None, "ratio": 0.25, "big": 10**30},
    "list": [1, "two", [3.5, {"four": "😀"}], False],
    "escape": 'quote " backslash \\ newline \n tab \t ctrl \x01 del \x7f',
}


def _assistant(*blocks: Any, **fields: Any) -> AssistantMessage:
    return AssistantMessage(
        content=list(blocks), api="bench", provider="fake", model="m1", **fields
    )


def _result(*blocks: Any, name: str = "read", **fields: Any) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id="call_1", tool_name=name, content=list(blocks), **fields)


def _shapes() -> list[tuple[str, Any]]:
    call = ToolCall(id="call_1", name="read", arguments={"path": "f1.txt"})
    shapes: list[tuple[str, Any]] = [
        ("assistant tool call", _assistant(call, stop_reason="toolUse")),
        ("assistant nested args", _assistant(ToolCall(id="c", name="edit", arguments=NESTED_ARGS))),
        ("assistant empty args", _assistant(ToolCall(id="c", name="noop"))),
        ("assistant unicode name", _assistant(ToolCall(id="c", name="読む😀", arguments={}))),
        ("assistant two calls", _assistant(call, ToolCall(id="c2", name="ls", arguments={"a": 1}))),
        ("assistant text", _assistant(TextContent(text="Hello there, world."))),
        ("assistant text unicode", _assistant(TextContent(text="日本語のテキスト 😀 é"))),
        ("assistant blank text", _assistant(TextContent(text=""))),
        ("assistant signed text", _assistant(TextContent(text="hi", text_signature="sig"))),
        (
            "assistant thinking",
            _assistant(ThinkingContent(thinking="let me think", thinking_signature="s")),
        ),
        (
            "assistant redacted thinking",
            _assistant(ThinkingContent(thinking="", thinking_signature="opaque", redacted=True)),
        ),
        ("assistant image", _assistant(ImageContent(data="aGVsbG8=", mime_type="image/png"))),
        ("assistant opaque block", _assistant(OpaqueContent(type="server_tool", payload={"x": 1}))),
        ("assistant no content", _assistant()),
        (
            "assistant everything",
            _assistant(
                ThinkingContent(thinking="plan"),
                TextContent(text="I will read."),
                call,
                ImageContent(data="eA==", mime_type="image/jpeg"),
                usage=Usage(input=10, output=3, total_tokens=13, context_usage={"a": 1}),
                stop_reason="toolUse",
                response_id="r1",
            ),
        ),
        (
            "assistant error",
            _assistant(stop_reason="error", error_message="boom", error_status=500),
        ),
        ("assistant toolCalls extra", _assistant(call, toolCalls=[{"name": "x", "arguments": {}}])),
        ("assistant type extra", _assistant(TextContent(text="t"), type="toolResult")),
        ("assistant other type extra", _assistant(TextContent(text="t"), type="message")),
        ("assistant secret-looking text", _assistant(TextContent(text="sk-" + "a" * 40))),
        ("result text", _result(TextContent(text="contents of f1.txt"))),
        ("result unicode", _result(TextContent(text="中文内容 and ascii 😀"), name="読む")),
        ("result two texts", _result(TextContent(text="a"), TextContent(text="b" * 500))),
        (
            "result image",
            _result(TextContent(text="img"), ImageContent(data="eA==", mime_type="x")),
        ),
        ("result empty", _result()),
        ("result error", _result(TextContent(text="failed"), is_error=True)),
        ("result details", _result(TextContent(text="x"), details={"exit": 0, "out": "y"})),
        ("result thinking block", _result(ThinkingContent(thinking="odd"))),
        ("result opaque block", _result(OpaqueContent(type="file", uri="f://x"))),
        ("result extra type", _result(TextContent(text="x"), type="toolResult")),
        ("result numeric name", _result(TextContent(text="x"), name="123")),
    ]
    # models changed after they were built: the typed path must answer what ``_get`` answers

    class Str(str):
        pass

    block_edits: list[tuple[str, Any, dict[str, Any]]] = [
        (
            "args None, input extra",
            _assistant(ToolCall(id="c", name="r", input={"q": 2})),
            {"arguments": None},
        ),
        (
            "args None",
            _assistant(ToolCall(id="c", name="r", arguments={"p": 1})),
            {"arguments": None},
        ),
        ("call name None", _assistant(ToolCall(id="c", name="r")), {"name": None}),
        ("call name int", _assistant(ToolCall(id="c", name="r")), {"name": 42}),
        ("call name str subclass", _assistant(ToolCall(id="c", name="r")), {"name": Str("rr")}),
        ("call typed text", _assistant(ToolCall(id="c", name="r")), {"type": "text"}),
        ("call typed tool_use", _assistant(ToolCall(id="c", name="r")), {"type": "tool_use"}),
        ("text typed toolCall", _assistant(TextContent(text="x")), {"type": "toolCall"}),
        ("thinking typed text", _assistant(ThinkingContent(thinking="x")), {"type": "text"}),
        ("text typed thinking", _assistant(TextContent(text="x")), {"type": "thinking"}),
        ("text int", _assistant(TextContent(text="x")), {"text": 12345}),
        ("thinking None", _assistant(ThinkingContent(thinking="x")), {"thinking": None}),
        ("text int in result", _result(TextContent(text="x")), {"text": 12345}),
        ("text str subclass", _result(TextContent(text="x")), {"text": Str("subclass text")}),
        ("result text typed image", _result(TextContent(text="x")), {"type": "image"}),
    ]
    for label, message, values in block_edits:
        message.content[0].__dict__.update(values)
        shapes.append((label, message))
    shapes.append(
        ("dict blocks", AssistantMessage.model_construct(content=[{"type": "text", "text": "d"}]))
    )
    shapes.append(
        (
            "dict call block",
            AssistantMessage.model_construct(
                content=[{"type": "tool_use", "name": "x", "input": {"a": [1, 2]}}]
            ),
        )
    )
    shapes.append(("str blocks", AssistantMessage.model_construct(content=["plain", 3])))
    shapes.append(
        ("result dict blocks", ToolResultMessage.model_construct(content=[{"type": "text"}]))
    )
    edits: list[tuple[str, Any, str, Any]] = [
        ("assistant content str", _assistant(), "content", "text instead of blocks"),
        ("assistant content None", _assistant(), "content", None),
        ("assistant role user", _assistant(TextContent(text="x")), "role", "user"),
        ("assistant role toolResult", _assistant(TextContent(text="x")), "role", "toolResult"),
        ("result content str", _result(), "content", "text"),
        ("result content None", _result(), "content", None),
        (
            "result name None",
            _result(TextContent(text="x"), toolName="fromextra"),
            "tool_name",
            None,
        ),
        ("result name int", _result(TextContent(text="x")), "tool_name", 7),
        ("result role tool", _result(TextContent(text="x")), "role", "tool"),
        ("result role assistant", _result(TextContent(text="x")), "role", "assistant"),
        ("result role bashExecution", _result(TextContent(text="x")), "role", "bashExecution"),
    ]
    for label, message, name, value in edits:
        message.__dict__[name] = value
        shapes.append((label, message))
    shadowed = _assistant(TextContent(text="x"))
    shadowed.__dict__["tool_calls"] = [{"name": "shadow", "arguments": {"a": "b" * 40}}]
    shapes.append(("assistant tool_calls in __dict__", shadowed))
    deleted = _assistant(TextContent(text="x"))
    del deleted.__dict__["content"]
    shapes.append(("assistant content deleted", deleted))
    # and every valid shape again as the loader builds it from its wire dict
    for label, message in list(shapes[:31]):
        shapes.append((f"{label} (loaded)", load_message(message.to_dict())))
    shapes.append(("user message", UserMessage(content="hello")))
    return shapes


SHAPES = _shapes()


@pytest.fixture(autouse=True)
def _changed_models_dump_with_a_warning() -> Any:
    """A model whose text was set to a number warns when dumped (on both paths alike)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
        yield


@pytest.mark.parametrize(("label", "message"), SHAPES, ids=[label for label, _ in SHAPES])
def test_the_typed_estimate_is_the_record_estimate(label: str, message: Any) -> None:
    assert tokens._estimate_message(message) == tokens._estimate_record(message), label


def test_the_valid_models_take_the_typed_path() -> None:
    taken = [label for label, message in SHAPES[:31] if _typed(message) is not None]
    # every unchanged assistant turn and tool result is answered without the record path
    # except the ones an extra ``type: "toolResult"`` makes a result on the record path
    assert set(taken) == {label for label, _ in SHAPES[:31]} - {"assistant type extra"}


def _typed(message: Any) -> int | None:
    typed = tokens._TYPED.get(type(message))
    return None if typed is None else typed(message)


def test_the_table_covers_what_the_typed_path_hands_on() -> None:
    handed_on = [label for label, message in SHAPES if _typed(message) is None]
    assert {"assistant content str", "result name None", "assistant type extra"} <= set(handed_on)


JSON_VALUES: list[Any] = [
    {},
    [],
    {"path": "f1.txt"},
    NESTED_ARGS,
    {"nan": math.nan, "inf": math.inf, "-inf": -math.inf},
    {"floats": [1e16, 1e-7, 0.1, -0.0, 1.5e300]},
    {1: "int key", 2.5: "float key", None: "none key"},
    {True: "bool key", False: "other bool key"},
    {"surrogate": "\ud800"},
    {"unicode": "é中😀\u2028\u2029"},
    "a plain string",
    12,
    None,
    True,
    [{"deep": [[[[{"x": 1}]]]]}],
]


@pytest.mark.parametrize("value", JSON_VALUES, ids=[str(i) for i in range(len(JSON_VALUES))])
def test_the_kept_encoder_writes_what_dumps_writes(value: Any) -> None:
    assert tokens._json_text(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_what_the_encoder_cannot_write_is_none() -> None:
    circular: list[Any] = []
    circular.append(circular)
    assert tokens._json_text({"a": {1, 2}}) is None
    assert tokens._json_text(circular) is None
    assert tokens._json_text({(1, 2): "tuple key"}) is None


SYSTEM_PROMPTS: list[Any] = [
    None,
    "",
    "   ",
    "You are a helpful assistant.",
    "你是一个乐于助人的助手。" * 50,
    "emoji 😀 and CJK 𠀀 astral",
    "You are a helpful assistant.",
]


def test_the_system_prompt_slot_gives_the_counted_tokens() -> None:
    for _ in range(3):
        for prompt in SYSTEM_PROMPTS:
            assert tokens._system_tokens(prompt) == tokens._system_tokens_slow(prompt), prompt
            # the same text in a new object, and the same object again
            copy = None if prompt is None else "".join(list(prompt))
            assert tokens._system_tokens(copy) == tokens._system_tokens_slow(prompt)
            assert tokens._system_tokens(prompt) == tokens._system_tokens_slow(prompt)


def test_a_growing_loop_estimate_equals_the_record_path_estimate() -> None:
    """The guard's running sum over a tool loop of typed messages (every shape above in
    turn, then a history that is not an extension) equals the whole history measured on the
    record path."""
    running = _HistoryTokens()
    history: list[Any] = [UserMessage(content="read them")]
    system = "你是助手 " * 20

    def whole(messages: list[Any]) -> int:
        total = sum(tokens._estimate_record(message) for message in messages)
        return tokens.boundary_token_pressure(total, system_prompt=system, prompt="")

    for _, message in SHAPES:
        history.append(message)
        assert running(history, system_prompt=system) == whole(history)
    shorter = history[: len(history) // 2]
    assert running(shorter, system_prompt=system) == whole(shorter)
    replaced = [*shorter[:-1], _result(TextContent(text="replaced"))]
    assert running(replaced, system_prompt=system) == whole(replaced)
    assert running(replaced, system_prompt=None) == estimate_llm_boundary_token_pressure(replaced)


def test_the_memo_answers_what_the_estimate_answers() -> None:
    for _, message in SHAPES:
        first = estimate_message_token_pressure(message)
        assert estimate_message_token_pressure(message) == first
        assert first == tokens._estimate_record(message)


def test_a_new_message_is_measured_without_being_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from openclaw_runtime.context.tokens import estimate_new_message_token_pressure

    measured: list[Any] = []
    original = tokens._estimate_message

    def counting(message: Any) -> int:
        measured.append(message)
        return original(message)

    monkeypatch.setattr(tokens, "_estimate_message", counting)
    fresh = _result(TextContent(text="new output"))
    assert estimate_new_message_token_pressure(fresh) == tokens._estimate_record(fresh)
    assert id(fresh) not in tokens._MEMO  # nothing kept for a message measured once
    kept = _assistant(ToolCall(id="c", name="read", arguments={"path": "x"}))
    first = estimate_message_token_pressure(kept)  # measured and kept
    measured.clear()
    assert estimate_new_message_token_pressure(kept) == first
    assert measured == []  # a kept message is answered from the memo
    wire = fresh.to_dict()
    assert estimate_new_message_token_pressure(wire) == tokens._estimate_record(wire)


BUDGETS: list[tuple[Any, Any]] = [
    (200_000, 16_384),
    (200_000, 16_384),
    (200_000.0, 16_384),
    (8_000, 20_000),
    (1, 0),
    (True, 0),
    (1, 0),
    (1, False),
    (0.5, 0.5),
    (math.nan, 0),
    (math.inf, 0),
    (10_000, math.inf),
    ("200000", 0),
    (None, 0),
    (200_000, 16_384),
    (-5, -5),
    (1e12, 3.5),
]


def _fits_plainly(estimated: int, budget: Any, reserve: Any) -> bool | str:
    try:
        return estimated <= preemptive.resolve_prompt_budget(budget, reserve)[0]
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _fits_kept(estimated: int, budget: Any, reserve: Any) -> bool | str:
    def estimator(messages: Any, *, system_prompt: Any = None, prompt: str = "") -> int:
        return estimated

    try:
        return preemptive.prompt_fits_budget(
            [], context_token_budget=budget, reserve_tokens=reserve, estimator=estimator
        )
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def test_the_kept_budget_answers_what_the_budget_answers() -> None:
    """``prompt_fits_budget`` keeps the last window/reserve's budget: the same answers and the
    same errors as working it out every time, in any order of windows and reserves."""
    for rounds in range(3):
        for budget, reserve in BUDGETS if rounds != 1 else reversed(BUDGETS):
            for estimated in (0, 7_999, 8_000, 150_000, 183_616, 183_617, 10**13):
                assert _fits_kept(estimated, budget, reserve) == _fits_plainly(
                    estimated, budget, reserve
                ), (budget, reserve, estimated)
