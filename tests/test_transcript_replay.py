"""Generic replay turn validation (the ``trylast`` answer of ``validate_replay_turns``)."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from openclaw_runtime import hookimpl
from openclaw_runtime.messages import AssistantMessage, TextContent, UserMessage
from openclaw_runtime.transcript import (
    TranscriptPolicy,
    resolve_transcript_policy,
    sanitize_google_turn_ordering,
    validate_gemini_turns,
    validate_replay_turns,
    validate_strict_turns,
)
from openclaw_runtime.transcript.replay import (
    GOOGLE_TURN_ORDER_BOOTSTRAP_TEXT,
    TOOL_CALLS_OMITTED_TEXT,
    strip_dangling_tool_uses,
)


def call(call_id="c1", name="read", kind="toolCall"):
    return {"type": kind, "id": call_id, "name": name, "arguments": {}}


def assistant(*blocks, stop="stop", **extra):
    return {"role": "assistant", "content": list(blocks), "stopReason": stop, **extra}


def text(value):
    return {"type": "text", "text": value}


def user(content="q", **extra):
    return {"role": "user", "content": content, **extra}


def result(call_id="c1", name="read", **extra):
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": [], **extra}


SIGNED = {"type": "thinking", "thinking": "t", "thinkingSignature": "s"}


@pytest.mark.parametrize(
    ("messages", "expected_content"),
    [
        pytest.param(
            [assistant(call(), text("keep")), user()], [text("keep")], id="unresolved-call-stripped"
        ),
        pytest.param(
            [assistant(call()), user()],
            [text(TOOL_CALLS_OMITTED_TEXT)],
            id="only-call-becomes-omitted-text",
        ),
        pytest.param(
            [assistant(call(), stop="aborted"), user()], [], id="aborted-only-call-becomes-empty"
        ),
        pytest.param(
            [assistant(call(), stop="error"), user()], [], id="error-only-call-becomes-empty"
        ),
        pytest.param([assistant(call()), result()], [call()], id="resolved-call-kept"),
        pytest.param(
            [assistant(call()), user([{"type": "toolResult", "toolUseId": "c1"}])],
            [call()],
            id="result-block-in-user-content-resolves-plain-turn",
        ),
        pytest.param(
            [assistant(SIGNED, call()), user([{"type": "toolResult", "toolUseId": "c1"}])],
            [text(TOOL_CALLS_OMITTED_TEXT)],
            id="user-content-result-does-not-resolve-signed-turn",
        ),
        pytest.param(
            [assistant(SIGNED, call()), result()],
            [SIGNED, call()],
            id="signed-resolved-by-id-and-name",
        ),
        pytest.param(
            [assistant(SIGNED, call()), result(name="write")],
            [text(TOOL_CALLS_OMITTED_TEXT)],
            id="signed-name-mismatch-omits-everything",
        ),
        pytest.param(
            [assistant(SIGNED, call()), {"role": "toolResult", "toolCallId": "c1", "content": []}],
            [SIGNED, call()],
            id="signed-result-without-name-accepted",
        ),
        pytest.param(
            [assistant(SIGNED, call()), {"role": "tool", "tool_call_id": "c1", "name": "read"}],
            [SIGNED, call()],
            id="tool-role-result-counts",
        ),
        pytest.param(
            [assistant(call()), assistant(text("next")), result()],
            [text(TOOL_CALLS_OMITTED_TEXT)],
            id="result-after-next-assistant-does-not-count",
        ),
        pytest.param(
            [assistant(call(kind="functionCall")), result()],
            [call(kind="functionCall")],
            id="function-call-blocks",
        ),
    ],
)
def test_strip_dangling_tool_uses(messages, expected_content):
    out = strip_dangling_tool_uses(messages)
    assert out[0]["content"] == expected_content


@pytest.mark.parametrize(
    "key", ["toolUseId", "toolCallId", "tool_use_id", "tool_call_id", "callId", "call_id"]
)
def test_every_result_id_field_resolves(key):
    messages = [assistant(SIGNED, call()), {"role": "toolResult", key: "c1", "toolName": "read"}]
    assert strip_dangling_tool_uses(messages)[0]["content"] == [SIGNED, call()]


def test_consecutive_assistants_merge_with_later_fields():
    first = assistant(text("a"), stop="toolUse", usage={"input": 1}, errorMessage="x")
    second = assistant(text("b"), stop="stop", usage={"input": 2})
    (merged,) = validate_gemini_turns([first, second])
    assert merged["content"] == [text("a"), text("b")]
    assert merged["usage"] == {"input": 2}
    assert merged["stopReason"] == "stop"
    assert merged["errorMessage"] == "x"  # the later one had none


def test_consecutive_users_merge_strings_into_blocks_and_take_later_fields():
    merged = validate_strict_turns(
        [user("a", timestamp=1), user([text("b")], timestamp=2, extra="x")]
    )
    assert merged == [
        {"role": "user", "content": [text("a"), text("b")], "timestamp": 2, "extra": "x"}
    ]
    (kept_earlier,) = validate_strict_turns([user("a", timestamp=1), user("b")])
    assert kept_earlier["timestamp"] == 1


def test_user_merge_can_be_disabled():
    messages = [user("a"), user("b")]
    assert validate_strict_turns(messages, merge_consecutive_user_turns=False) == messages


def test_tool_results_break_runs():
    messages = [assistant(call()), result(), assistant(text("done"))]
    assert validate_gemini_turns(messages) is messages


def test_merge_then_strip_order_keeps_signed_call_resolved():
    # An injected assistant between a signed call and its result: merging first keeps the pair.
    messages = [assistant(SIGNED, call()), assistant(text("injected")), result()]
    out = validate_strict_turns(messages)
    assert out[0]["content"] == [SIGNED, call(), text("injected")]


def test_strict_validation_on_models():
    out = validate_strict_turns(
        [
            UserMessage(content="a", timestamp=1),
            UserMessage(content=[TextContent(text="b")], timestamp=2),
            AssistantMessage(content=[TextContent(text="x")], timestamp=3),
            AssistantMessage(content=[TextContent(text="y")], timestamp=4),
        ]
    )
    assert [m.to_dict()["content"] for m in out] == [
        [text("a"), text("b")],
        [text("x"), text("y")],
    ]


@pytest.mark.parametrize(
    ("messages", "bootstrapped"),
    [
        ([assistant(text("hi"), timestamp=5)], True),
        ([user("hi")], False),
        ([user(GOOGLE_TURN_ORDER_BOOTSTRAP_TEXT), assistant(text("hi"))], False),
        ([], False),
    ],
)
def test_google_turn_ordering(messages, bootstrapped):
    out = sanitize_google_turn_ordering(messages)
    assert (len(out) == len(messages) + 1) is bootstrapped
    if bootstrapped:
        assert out[0] == {"role": "user", "content": "(session bootstrap)", "timestamp": 5}
        assert sanitize_google_turn_ordering(out) is out


@pytest.mark.parametrize(
    ("api", "provider", "model", "merged"),
    [
        ("openai-completions", "vllm", "qwen", True),
        ("anthropic-messages", "anthropic", "claude-sonnet-4-6", True),
        ("openai-responses", "openai", "gpt-5", False),
        ("google-generative-ai", "google", "gemini-2.5-pro", True),
    ],
)
def test_validate_replay_turns_follows_policy(api, provider, model, merged):
    messages = [user("a"), assistant(text("x")), assistant(text("y"))]
    before = copy.deepcopy(messages)
    out = validate_replay_turns(messages, resolve_transcript_policy(api, provider, model))
    assert (len(out) == 2) is merged
    assert messages == before


def test_append_only_runtime_context_keeps_user_turns_separate_on_messages_api():
    policy = replace(
        resolve_transcript_policy("anthropic-messages", "anthropic", "claude-opus-4-6"),
        append_only_runtime_context=True,
    )
    messages = [user("a"), user("b")]
    assert validate_replay_turns(messages, policy) == messages


def test_hook_validate_replay_turns_generic_fallback(runtime_factory):
    runtime = runtime_factory()
    strict = resolve_transcript_policy("openai-completions", "vllm", "qwen")
    messages = [user("a"), user("b")]
    answer, plugin = runtime.hooks.validate_replay_turns(messages, strict)
    assert plugin == "builtin.transcript"
    assert answer == [user([text("a"), text("b")])]
    lax = TranscriptPolicy(api="openai-responses", provider="openai", model_id="gpt")
    assert runtime.hooks.validate_replay_turns(messages, lax) == (None, None)


def test_hook_provider_plugin_answers_before_generic(runtime_factory):
    class Acme:
        @hookimpl
        def validate_replay_turns(self, messages, policy):
            return ["acme"] if policy.provider == "acme" else None

    runtime = runtime_factory(plugins=[("acme", Acme())])
    acme = resolve_transcript_policy("openai-completions", "acme", "m")
    assert runtime.hooks.validate_replay_turns([user()], acme) == (["acme"], "acme")
