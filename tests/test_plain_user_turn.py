"""A fresh session's first request (one plain user message) skips the built-in pipeline.

``is_plain_user_turn`` claims every built-in stage leaves such a history as it is, under any
well-typed policy; ``IncrementalSanitizer.run`` then copies the list instead of running the
stages. Held here against the full pipeline over a table of messages, policies and stage
sets, and the incremental sanitizer with the shortcut against the same object without it
(same outputs, same cache state, same answers on the turns that follow).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from openclaw_runtime.messages import (
    AssistantMessage,
    CompactionSummaryMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.transcript import incremental as incremental_module
from openclaw_runtime.transcript import resolve_transcript_policy, run_transcript_sanitizers
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from openclaw_runtime.transcript.sanitize import (
    BUILTIN_SANITIZERS,
    SanitizerSpec,
    is_plain_user_turn,
)

_NAMES = frozenset(spec.name for spec in BUILTIN_SANITIZERS)
_BASE = [
    resolve_transcript_policy("openai-completions", "openai", "gpt-4o"),
    resolve_transcript_policy("openai-completions", "moonshot", "kimi-k2.5"),
    resolve_transcript_policy("openai-responses", "openai", "gpt-5", allowed_tool_names=["read"]),
    resolve_transcript_policy("openai-responses", "openrouter", "anthropic/claude-opus-4"),
    resolve_transcript_policy("anthropic-messages", "anthropic", "claude-sonnet-4"),
    resolve_transcript_policy(
        "anthropic-messages", "anthropic", "claude-opus-4-6", allowed_tool_names=[]
    ),
    resolve_transcript_policy("bedrock-converse-stream", "amazon-bedrock", "anthropic.claude-3"),
    resolve_transcript_policy("google-generative-ai", "google", "gemini-2.5-pro"),
    resolve_transcript_policy("google-gemini-cli", "google", "gemini-3"),
    resolve_transcript_policy("fake", "fake", "m1", model_reasoning=True),
]
#: Every base policy as it is, with every built-in forced on, every one off, and odd limits.
POLICIES = [
    variant
    for policy in _BASE
    for variant in (
        policy,
        dataclasses.replace(policy, enabled=_NAMES),
        dataclasses.replace(policy, disabled=_NAMES),
        dataclasses.replace(policy, enabled=_NAMES, preserve_signatures=True, image_max_bytes=1),
        dataclasses.replace(policy, preserve_latest_assistant_thinking=False, image_max_bytes=0),
    )
]
#: The built-ins, a subset, and the same functions under other names and orders.
STAGE_SETS: list[tuple[Any, ...]] = [
    BUILTIN_SANITIZERS,
    BUILTIN_SANITIZERS[::3],
    tuple(SanitizerSpec(f"x{i}", spec.fn, 100 - i) for i, spec in enumerate(BUILTIN_SANITIZERS)),
]


def _user(content: Any, *, as_dict: bool) -> Any:
    message = UserMessage(content=content, timestamp=1_000)
    return message.to_dict() if as_dict else message


def _assistant(text: str = "hi") -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)],
        api="fake",
        provider="fake",
        model="m1",
        stop_reason="stop",
        timestamp=1_001,
    )


_CONTENTS: list[tuple[Any, bool]] = [
    ("hello", True),
    ("  hello\n", True),
    ("x", True),
    ("", False),
    ("   ", False),
    ("\n\t", False),
    ([TextContent(text="hi")], True),
    ([TextContent(text="hi"), TextContent(text="there")], True),
    ([TextContent(text="hi", text_signature="sig")], True),
    ([], False),
    ([TextContent(text="")], False),
    ([TextContent(text="hi"), TextContent(text="  ")], False),
    ([ImageContent(data="aGk=", mime_type="image/png")], False),
    ([TextContent(text="look"), ImageContent(data="aGk=", mime_type="image/png")], False),
    ([ImageContent(data="", mime_type="image/png")], False),
]


def _histories() -> list[tuple[str, list[Any], bool]]:
    """(label, messages, plain) — ``plain`` is what ``is_plain_user_turn`` must answer."""
    out: list[tuple[str, list[Any], bool]] = []
    for (content, plain), as_dict in itertools.product(_CONTENTS, (False, True)):
        label = f"{content!r}/{'dict' if as_dict else 'model'}"
        out.append((label, [_user(content, as_dict=as_dict)], plain))
    call = ToolCall(id="c1", name="read")
    out += [
        ("empty", [], False),
        ("assistant only", [_assistant()], False),
        ("two users", [_user("a", as_dict=False), _user("b", as_dict=False)], False),
        ("user then assistant", [_user("a", as_dict=False), _assistant()], False),
        (
            "summary",
            [CompactionSummaryMessage(summary="s", tokens_before=10, timestamp=5)],
            False,
        ),
        ("tool result", [ToolResultMessage(tool_call_id=call.id, tool_name="read")], False),
        ("wire user dict without role", [{"content": "hi"}], False),
        (
            "image block with a text key",
            [{"role": "user", "content": [{"type": "image", "text": "x", "data": ""}]}],
            False,
        ),
    ]
    return out


HISTORIES = _histories()


@pytest.mark.parametrize(("label", "messages", "plain"), HISTORIES, ids=[h[0] for h in HISTORIES])
def test_predicate_table(label: str, messages: list[Any], plain: bool) -> None:
    for policy in POLICIES:
        assert is_plain_user_turn(messages, policy) is plain, label


@pytest.mark.parametrize(("label", "messages", "plain"), HISTORIES, ids=[h[0] for h in HISTORIES])
def test_plain_turn_is_what_every_builtin_leaves(
    label: str, messages: list[Any], plain: bool
) -> None:
    """Where the predicate says plain, the full pipeline returns the very same objects and
    reports nothing, for every policy and stage set; the incremental run equals the full
    pipeline everywhere."""
    errors: list[str] = []

    def on_error(name: str, _plugin: str | None, _exc: BaseException) -> None:
        errors.append(name)

    for policy, stages in itertools.product(POLICIES, STAGE_SETS):
        errors.clear()
        full = run_transcript_sanitizers(messages, policy, stages, on_error=on_error)
        if plain:
            assert len(full) == len(messages), label
            assert all(a is b for a, b in zip(full, messages, strict=True)), (label, policy)
            assert errors == []
        got = IncrementalSanitizer().run(messages, policy, stages, on_error=on_error)
        assert got == full, (label, policy)
        if plain:
            assert all(a is b for a, b in zip(got, messages, strict=True))
        assert got is not messages  # a new list, as the pipeline returns


def test_an_ill_typed_policy_is_not_plain() -> None:
    """A policy field a stage reads before the messages, of another type, takes the full
    path (where the stage raises and is reported)."""
    messages = [UserMessage(content="hi")]
    policy = _BASE[0]
    assert is_plain_user_turn(messages, policy)
    for change in (
        {"image_max_bytes": "big"},
        {"image_max_bytes": 1.5},
        {"api": None},
        {"provider": 3},
        {"enabled": None},
        {"disabled": ["images"]},
        {"allowed_tool_names": ["read"]},
    ):
        odd = dataclasses.replace(policy, **change)
        assert not is_plain_user_turn(messages, odd), change

    class Custom(type(policy)):  # type: ignore[misc]
        __slots__ = ()

    custom = Custom(**{f.name: getattr(policy, f.name) for f in dataclasses.fields(policy)})
    assert not is_plain_user_turn(messages, custom)
    odd = dataclasses.replace(policy, image_max_bytes="big")
    errors: list[str] = []
    out = IncrementalSanitizer().run(
        messages, odd, BUILTIN_SANITIZERS, on_error=lambda name, _p, _e: errors.append(name)
    )
    assert errors == ["images"] and out == messages


def _state(sanitizer: IncrementalSanitizer) -> Any:
    loop = sanitizer._loop
    return (
        sanitizer._key,
        [id(m) for m in sanitizer._inputs],
        list(sanitizer._outputs),
        set(sanitizer._prefix_ids),
        None
        if loop is None
        else (loop.key, [id(m) for m in loop.inputs], list(loop.outputs), loop.boundary),
    )


@pytest.mark.parametrize("as_dict", [False, True])
@pytest.mark.parametrize("policy_index", range(0, len(POLICIES), 3))
def test_shortcut_against_the_same_sanitizer_without_it(
    monkeypatch: pytest.MonkeyPatch, as_dict: bool, policy_index: int
) -> None:
    """A fresh session's turns with and without the shortcut: the same outputs, the same
    cache state after every request, and the full pipeline's answers."""
    policy = POLICIES[policy_index]
    fast, slow = IncrementalSanitizer(), IncrementalSanitizer()
    calls: list[int] = []

    def counting(messages: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        calls.append(len(messages))
        return run_transcript_sanitizers(messages, *args, **kwargs)

    history: list[Any] = [_user("first question", as_dict=as_dict)]
    call = ToolCall(id="c1", name="read")
    steps: list[list[Any]] = [
        [],
        [AssistantMessage(content=[call], stop_reason="toolUse", api="x", provider="x", model="m")],
        [ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="r")])],
        [_assistant("done")],
        [_user("second", as_dict=as_dict)],
        [_assistant("again")],
    ]
    for number, step in enumerate(steps):
        history.extend(step)
        messages = list(history)
        got = fast.run(messages, policy, BUILTIN_SANITIZERS, full=counting)
        if number == 0:
            assert calls == []  # the plain first turn ran no stage
        with monkeypatch.context() as patch:
            patch.setattr(incremental_module, "is_plain_user_turn", lambda *_a: False)
            want = slow.run(messages, policy, BUILTIN_SANITIZERS)
        assert got == want, number
        assert _state(fast) == _state(slow), number
        assert got == run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS), number
