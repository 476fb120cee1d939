"""Anthropic turn validation (spec §12.4, newest implementation) and tail guards."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from openclaw_runtime_anthropic._turns import (
    drop_all_trailing_non_user_turns,
    drop_trailing_empty_assistant_turns,
    handles_policy,
    messages_end_with_user_turn,
    should_short_circuit_for_missing_user_tail,
    validate_anthropic_replay_turns,
    validate_anthropic_turns,
)

from openclaw_runtime import hookimpl
from openclaw_runtime.messages import AssistantMessage, TextContent, ThinkingContent
from openclaw_runtime.transcript import resolve_transcript_policy


def call(call_id="c1", name="read", kind="toolUse"):
    return {"type": kind, "id": call_id, "name": name, "input": {}}


def text(value):
    return {"type": "text", "text": value}


def assistant(*blocks, stop="stop", **extra):
    return {"role": "assistant", "content": list(blocks), "stopReason": stop, **extra}


def user(content="q", **extra):
    return {"role": "user", "content": content, **extra}


def result(call_id="c1", name="read"):
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": []}


SIGNED = {"type": "thinking", "thinking": "t", "thinkingSignature": "s"}
REDACTED = {"type": "redacted_thinking", "data": "opaque"}
OMITTED = text("[tool calls omitted]")


VALIDATION_CASES = [
    pytest.param(
        [
            user(),
            assistant(text("a"), usage={"output": 1}),
            assistant(text("b"), stop="length", errorMessage="e"),
        ],
        [
            user(),
            assistant(text("a"), text("b"), stop="length", usage={"output": 1}, errorMessage="e"),
        ],
        id="consecutive-assistants-merge-later-fields-win",
    ),
    pytest.param(
        [user(), assistant(call(), text("x")), user("next")],
        [user(), assistant(text("x")), user("next")],
        id="dangling-call-stripped",
    ),
    pytest.param(
        [user(), assistant(call()), user("next")],
        [user(), assistant(OMITTED), user("next")],
        id="only-dangling-call-becomes-omitted-text",
    ),
    pytest.param(
        [user(), assistant(call(), stop="aborted"), user("next")],
        [user(), assistant(stop="aborted"), user("next")],
        id="aborted-turn-emptied",
    ),
    pytest.param(
        [user(), assistant(SIGNED, call()), result()],
        [user(), assistant(SIGNED, call()), result()],
        id="signed-call-resolved-by-id-and-name",
    ),
    pytest.param(
        [user(), assistant(REDACTED, call()), result(name="write")],
        [user(), assistant(OMITTED), result(name="write")],
        id="redacted-thinking-name-mismatch",
    ),
    pytest.param(
        [user(), assistant(SIGNED, call("a"), call("b")), result("a")],
        [user(), assistant(OMITTED), result("a")],
        id="signed-turn-all-or-nothing",
    ),
    pytest.param(
        [user(), assistant(SIGNED, call()), user([{"type": "toolResult", "toolUseId": "c1"}])],
        [user(), assistant(OMITTED), user([{"type": "toolResult", "toolUseId": "c1"}])],
        id="signed-turn-needs-real-result-turn",
    ),
    pytest.param(
        [user("a", timestamp=1), user("b", timestamp=2)],
        [user([text("a"), text("b")], timestamp=2)],
        id="consecutive-users-merge",
    ),
    pytest.param(
        [user(), assistant(call(kind="toolCall")), assistant(text("x")), result()],
        [user(), assistant(call(kind="toolCall"), text("x")), result()],
        id="merge-before-strip-keeps-the-pair",
    ),
]


@pytest.mark.parametrize(("messages", "expected"), VALIDATION_CASES)
def test_validate_anthropic_turns(messages, expected):
    before = copy.deepcopy(messages)
    out = validate_anthropic_turns(messages)
    assert out == expected
    assert messages == before
    assert validate_anthropic_turns(out) == out


def test_trailing_empty_assistants_are_not_dropped_by_validation():
    # Drift: the older test dropped them here; the newest code leaves the tail to the guards.
    messages = [user(), assistant(stop="aborted")]
    assert validate_anthropic_turns(messages) == messages


def test_user_merge_opt_out():
    messages = [user("a"), user("b")]
    assert validate_anthropic_turns(messages, merge_consecutive_user_turns=False) == messages


@pytest.mark.parametrize(
    ("tail", "dropped"),
    [
        (assistant(), True),
        (assistant(text("   ")), True),
        (assistant(SIGNED), True),
        (assistant(REDACTED, text("")), True),
        ({"role": "assistant", "content": None}, True),
        ({"role": "assistant", "content": " "}, True),
        (assistant(text("real output")), False),
        (assistant(call()), False),
        (assistant(text("API provider returned a billing error"), stop="error"), False),
        (result(), False),
    ],
)
def test_drop_trailing_empty_assistant_turns(tail, dropped):
    messages = [user(), tail]
    out = drop_trailing_empty_assistant_turns(messages)
    assert (out == [user()]) is dropped
    if not dropped:
        assert out is messages


def test_drop_trailing_empty_drops_a_run_but_nothing_before_real_output():
    messages = [user(), assistant(text("kept")), assistant(SIGNED), assistant()]
    assert drop_trailing_empty_assistant_turns(messages) == [user(), assistant(text("kept"))]


@pytest.mark.parametrize(
    ("messages", "expected_len", "ends_with_user"),
    [
        ([user(), assistant(text("x"))], 1, False),
        ([user(), result()], 2, True),
        ([user(), {"role": "tool", "content": "x"}], 2, True),
        ([assistant(text("x"))], 0, False),
        ([user(), {"role": "custom", "content": "c"}], 1, False),
    ],
)
def test_drop_all_trailing_non_user_turns(messages, expected_len, ends_with_user):
    assert len(drop_all_trailing_non_user_turns(messages)) == expected_len
    assert messages_end_with_user_turn(messages) is ends_with_user


@pytest.mark.parametrize(
    ("messages", "prompt", "images", "expected"),
    [
        ([user(), assistant(text("x"))], "", False, True),
        ([user(), assistant(text("x"))], "more", False, False),
        ([user(), assistant(text("x"))], "", True, False),
        ([user(), assistant()], "", False, False),
        ([user()], "", False, False),
    ],
)
def test_short_circuit_for_missing_user_tail(messages, prompt, images, expected):
    assert (
        should_short_circuit_for_missing_user_tail(
            messages, validate_anthropic_turns=True, prompt_text=prompt, has_images=images
        )
        is expected
    )


def test_models_are_supported():
    messages = [
        AssistantMessage(
            content=[ThinkingContent(thinking="t")], stop_reason="aborted", timestamp=1
        ),
        AssistantMessage(content=[TextContent(text="a")], timestamp=2),
    ]
    out = validate_anthropic_turns(messages)
    assert len(out) == 1 and isinstance(out[0], AssistantMessage)
    assert out[0].stop_reason == "stop"
    assert drop_trailing_empty_assistant_turns([messages[0]]) == []


@pytest.mark.parametrize(
    ("api", "provider", "handled"),
    [
        ("anthropic-messages", "anthropic", True),
        ("bedrock-converse-stream", "amazon-bedrock", True),
        ("openai-completions", "anthropic-vertex", True),
        ("openai-completions", "openrouter", False),
    ],
)
def test_handles_policy(api, provider, handled):
    assert handles_policy(resolve_transcript_policy(api, provider, "m")) is handled


class AnthropicTurns:
    """The hookimpl the plugin registers (same code as in the plugin module)."""

    @hookimpl
    def validate_replay_turns(self, messages, policy):
        return validate_anthropic_replay_turns(messages, policy)


def test_hook_validate_replay_turns_answers_for_anthropic_only(runtime_factory):
    runtime = runtime_factory(plugins=[("anthropic", AnthropicTurns())])
    anthropic = resolve_transcript_policy("anthropic-messages", "anthropic", "claude-sonnet-4-6")
    messages = [user("a"), user("b"), assistant(SIGNED)]
    answer, plugin = runtime.hooks.validate_replay_turns(messages, anthropic)
    assert plugin == "anthropic"
    assert answer == [user([text("a"), text("b")])]
    other = resolve_transcript_policy("openai-responses", "openai", "gpt-5")
    assert runtime.hooks.validate_replay_turns(messages, other) == (None, None)


def test_append_only_runtime_context_keeps_user_turns_on_messages_api():
    policy = replace(
        resolve_transcript_policy("anthropic-messages", "anthropic", "claude-opus-4-6"),
        append_only_runtime_context=True,
    )
    messages = [user("a"), user("b")]
    assert validate_anthropic_replay_turns(messages, policy) == messages
    bedrock = replace(policy, api="bedrock-converse-stream")
    assert len(validate_anthropic_replay_turns(messages, bedrock)) == 1
