"""The sanitizer's cheaper reads give the same answers, on models and on wire dicts.

``wget`` reads a model through one look-up per class, the tool-call input repair pairs results
only when a call's name is off the allowlist, the pairing reads each turn's calls once, and the
incremental sanitizer works its stages out once per sanitizer list. Equivalence with the full
pipeline is checked on random tool loops under allowlist policies (so calls to tools that are
no longer offered, answered and unanswered, are in play) in both representations.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from openclaw_runtime.messages import (
    AssistantMessage,
    OpaqueMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.transcript import resolve_transcript_policy, run_transcript_sanitizers
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from openclaw_runtime.transcript.policy import should_allow_provider_owned_thinking_replay
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS, SanitizerSpec
from openclaw_runtime.transcript.wire import wget
from tests.test_transcript_incremental import ToolLoopHistory, dumped

ALLOWLIST_POLICIES = {
    "responses, read only": resolve_transcript_policy(
        "openai-responses", "openai", "gpt-5", allowed_tool_names=["read"]
    ),
    "anthropic, read only": resolve_transcript_policy(
        "anthropic-messages",
        "anthropic",
        "claude-sonnet-4",
        model_reasoning=True,
        allowed_tool_names=["read"],
    ),
    "completions, exec only": resolve_transcript_policy(
        "openai-completions", "openai", "gpt-4o", allowed_tool_names=["exec"]
    ),
}

RESULT = ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="x")])


@pytest.mark.parametrize(
    ("obj", "key", "expected"),
    [
        ({"toolCallId": "c1"}, "toolCallId", "c1"),
        ({"toolCallId": None}, "toolCallId", None),  # a dict gives what it holds
        ({}, "toolCallId", "fallback"),
        (RESULT, "toolCallId", "c1"),  # the wire alias
        (RESULT, "tool_call_id", "c1"),  # the attribute name
        (RESULT, "details", "fallback"),  # unset and None: the default
        (
            ToolResultMessage(tool_call_id="c", tool_name="t", details=None),
            "details",
            None,  # set to None explicitly: None, as a dict holding None
        ),
        (RESULT, "isError", False),  # a default that is not None
        (RESULT, "toolUseId", "fallback"),  # not a field, no extras
        (OpaqueMessage.model_validate({"role": "x", "toolUseId": "u"}), "toolUseId", "u"),
        (OpaqueMessage.model_validate({"role": "x"}), "toolUseId", "fallback"),
        ("a string", "type", "fallback"),
        (None, "type", "fallback"),
        (["a list"], "type", "fallback"),
    ],
)
def test_wget_reads_models_and_dicts_alike(obj: Any, key: str, expected: Any) -> None:
    assert wget(obj, key, "fallback") == expected


class AsDicts:
    """The wire dicts of a history's models, one dict per model for as long as it lives (the
    incremental sanitizer recognises a history it saw by its message objects)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Any, dict[str, Any]]] = {}

    def __call__(self, messages: list[Any]) -> list[Any]:
        out = []
        for message in messages:
            hit = self._seen.get(id(message))
            if hit is None or hit[0] is not message:
                hit = self._seen[id(message)] = (message, message.to_dict())
            out.append(hit[1])
        return out


def tool_calls(messages: list[Any]) -> int:
    return sum(
        wget(block, "type") == "toolCall"
        for message in messages
        for block in (
            wget(message, "content") if isinstance(wget(message, "content"), list) else []
        )
    )


@pytest.mark.parametrize("representation", ["models", "dicts"])
@pytest.mark.parametrize("policy_name", sorted(ALLOWLIST_POLICIES))
@pytest.mark.parametrize("seed", range(6))
def test_incremental_equals_full_pipeline_under_an_allowlist(
    representation: str, policy_name: str, seed: int
) -> None:
    policy = ALLOWLIST_POLICIES[policy_name]
    history = ToolLoopHistory(seed)
    incremental = IncrementalSanitizer()
    convert = AsDicts() if representation == "dicts" else list
    loop_hits = 0
    dropped = 0
    for turn in range(6):
        if turn == 4:
            history.compact()
        history.user() if history.rng.random() < 0.85 else history.turn()
        for _ in range(history.rng.randint(2, 12)):
            history.step()
            messages = convert(history.messages)
            expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
            got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
            assert dumped(got) == dumped(expected), f"seed {seed}, turn {turn}"
            loop_hits += incremental._loop is not None
            dropped += tool_calls(expected) < tool_calls(messages)
    # the last loop ends on an interrupted turn: calls to both tools, no result came back
    calls = [ToolCall(id=f"cut_{name}", name=name) for name in ("read", "exec")]
    history.messages.append(history.assistant(list(calls), stop="toolUse"))
    messages = convert(history.messages)
    expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
    assert dumped(incremental.run(messages, policy, BUILTIN_SANITIZERS)) == dumped(expected)
    dropped += tool_calls(expected) < tool_calls(messages)
    assert loop_hits > 0  # the tool-loop cache was used
    assert dropped > 0  # and the allowlist did drop calls along the way


def test_an_unanswered_call_off_the_allowlist_is_dropped_an_answered_one_kept() -> None:
    policy = ALLOWLIST_POLICIES["completions, exec only"]
    answered = ToolCall(id="a", name="read")
    unanswered = ToolCall(id="b", name="read")
    allowed = ToolCall(id="c", name="exec")
    messages = [
        UserMessage(content="go", timestamp=1),
        AssistantMessage(content=[answered, unanswered, allowed], stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="a", tool_name="read", timestamp=3),
        ToolResultMessage(tool_call_id="c", tool_name="exec", timestamp=4),
    ]
    out = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
    calls = [block.id for block in out[1].content]
    assert calls == ["a", "c"]
    assert [m.tool_call_id for m in out[2:]] == ["a", "c"]


def test_a_changed_sanitizer_list_is_noticed_even_as_the_same_list_object() -> None:
    policy = ALLOWLIST_POLICIES["anthropic, read only"]
    history = ToolLoopHistory(2)
    history.user()
    sanitizers: list[Any] = list(BUILTIN_SANITIZERS)
    incremental = IncrementalSanitizer()
    for _ in range(4):
        history.step()
        incremental.run(list(history.messages), policy, sanitizers)

    def shout(messages: list[Any], _policy: Any) -> list[Any]:
        return [
            m.model_copy(update={"content": "SHOUTED"}) if m.role == "user" else m for m in messages
        ]

    sanitizers.append(SanitizerSpec("shout", shout, 95, plugin="loud"))  # the plugin set changed
    history.step()
    got = incremental.run(list(history.messages), policy, sanitizers)
    assert [m.content for m in got if m.role == "user"] == ["SHOUTED"]
    sanitizers.pop()  # and back: the built-ins alone again
    history.step()
    got = incremental.run(list(history.messages), policy, sanitizers)
    assert [m.content for m in got if m.role == "user"] != ["SHOUTED"]
    expected = run_transcript_sanitizers(list(history.messages), policy, BUILTIN_SANITIZERS)
    assert dumped(got) == dumped(expected)


SIGNED_REPLAY = dataclasses.replace(
    resolve_transcript_policy(
        "anthropic-messages", "anthropic", "claude-sonnet-4", model_reasoning=True
    ),
    drop_thinking_blocks=False,  # signed thinking turns are replayed byte for byte
)


def signed(*blocks: Any, stop: str = "toolUse") -> AssistantMessage:
    thinking = ThinkingContent(thinking="plan", thinking_signature="sig")
    return AssistantMessage(
        content=[thinking, *blocks],
        stop_reason=stop,  # type: ignore[arg-type]
        api="anthropic-messages",
        provider="anthropic",
        model="claude-sonnet-4",
        timestamp=10,
    )


def result(call_id: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="read", content=[TextContent(text="ok")], timestamp=11
    )


def test_a_call_id_reused_from_the_cached_part_is_sanitized_as_in_full() -> None:
    """A signed turn reusing an earlier call's id with its result displaced is dropped by the
    full pipeline; the caches must not keep it because the earlier turn is out of their view."""
    assert should_allow_provider_owned_thinking_replay(SIGNED_REPLAY)
    calls = [ToolCall(id=f"c{n}", name="read", arguments={"n": n}) for n in range(5)]
    messages: list[Any] = [UserMessage(content="go", timestamp=1)]
    incremental = IncrementalSanitizer()
    for call in calls[1:4]:
        messages += [signed(call), result(call.id)]
        incremental.run(list(messages), SIGNED_REPLAY, BUILTIN_SANITIZERS)
    assert incremental._loop is not None  # the tool-loop cache is in use
    reused = ToolCall(id="c2", name="read", arguments={"n": 2})
    messages += [signed(reused), signed(TextContent(text="hm"), stop="stop"), result("c2")]
    expected = run_transcript_sanitizers(list(messages), SIGNED_REPLAY, BUILTIN_SANITIZERS)
    got = incremental.run(list(messages), SIGNED_REPLAY, BUILTIN_SANITIZERS)
    assert dumped(got) == dumped(expected)
    assert len(expected) < len(messages)  # the full pipeline did drop the reusing turn
    # the same across a user-message boundary (the stable cache), in a later turn
    messages += [UserMessage(content="again", timestamp=20), signed(calls[4]), result("c4")]
    incremental.run(list(messages), SIGNED_REPLAY, BUILTIN_SANITIZERS)
    messages += [UserMessage(content="more", timestamp=30), signed(TextContent(text="ok"))]
    incremental.run(list(messages), SIGNED_REPLAY, BUILTIN_SANITIZERS)
    assert incremental._inputs  # the stable cache is in use
    late = ToolCall(id="c1", name="read", arguments={"n": 1})
    messages += [
        UserMessage(content="last", timestamp=40),
        signed(late),
        signed(TextContent(text="hm"), stop="stop"),
        result("c1"),
    ]
    expected = run_transcript_sanitizers(list(messages), SIGNED_REPLAY, BUILTIN_SANITIZERS)
    got = incremental.run(list(messages), SIGNED_REPLAY, BUILTIN_SANITIZERS)
    assert dumped(got) == dumped(expected)


@pytest.mark.parametrize("seed", range(8))
def test_incremental_equals_full_pipeline_with_call_ids_reused_across_turns(seed: int) -> None:
    rng = random.Random(seed)
    messages: list[Any] = []
    incremental = IncrementalSanitizer()
    for turn in range(6):
        messages.append(UserMessage(content=f"turn {turn}", timestamp=turn + 1))
        for _ in range(rng.randint(1, 8)):
            call = ToolCall(id=f"c{rng.randint(0, 6)}", name="read")  # a small pool of ids
            messages.append(signed(call))
            if rng.random() < 0.25:  # the result is displaced by a plain turn
                messages.append(signed(TextContent(text="hm"), stop="stop"))
            messages.append(result(call.id))
            expected = run_transcript_sanitizers(list(messages), SIGNED_REPLAY, BUILTIN_SANITIZERS)
            got = incremental.run(list(messages), SIGNED_REPLAY, BUILTIN_SANITIZERS)
            assert dumped(got) == dumped(expected), f"seed {seed}, turn {turn}"
