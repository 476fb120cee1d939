"""Gemini turn rules: merged model turns, user-first ordering."""

from __future__ import annotations

import copy

import pytest
from openclaw_runtime_google._turns import (
    handles_policy,
    sanitize_google_turn_ordering,
    validate_gemini_turns,
    validate_google_replay_turns,
)

from openclaw_runtime import hookimpl
from openclaw_runtime.messages import AssistantMessage, TextContent, UserMessage
from openclaw_runtime.transcript import resolve_transcript_policy


def text(value):
    return {"type": "text", "text": value}


def assistant(*blocks, **extra):
    return {"role": "assistant", "content": list(blocks), "stopReason": "stop", **extra}


def user(content="q", **extra):
    return {"role": "user", "content": content, **extra}


GEMINI = resolve_transcript_policy("google-generative-ai", "google", "gemini-2.5-pro")


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        pytest.param(
            [user(), assistant(text("a")), assistant(text("b"))],
            [user(), assistant(text("a"), text("b"))],
            id="model-turns-merge",
        ),
        pytest.param(
            [user(), assistant(text("a")), user("u"), assistant(text("b"))],
            None,
            id="alternating-unchanged",
        ),
        pytest.param([user("a"), user("b")], None, id="user-runs-untouched"),
        pytest.param(
            [assistant(text("a")), {"role": "toolResult", "toolCallId": "c"}, assistant(text("b"))],
            None,
            id="tool-result-separates",
        ),
    ],
)
def test_validate_gemini_turns(messages, expected):
    before = copy.deepcopy(messages)
    out = validate_gemini_turns(messages)
    assert out == (messages if expected is None else expected)
    if expected is None:
        assert out is messages
    assert messages == before


def test_assistant_first_gets_bootstrap_turn_once():
    messages = [assistant(text("hello"), timestamp=9)]
    out = sanitize_google_turn_ordering(messages)
    assert out == [{"role": "user", "content": "(session bootstrap)", "timestamp": 9}, *messages]
    assert sanitize_google_turn_ordering(out) is out


def test_model_messages_stay_models():
    out = validate_google_replay_turns(
        [
            AssistantMessage(content=[TextContent(text="a")], timestamp=3),
            AssistantMessage(content=[TextContent(text="b")], timestamp=4),
        ],
        GEMINI,
    )
    assert isinstance(out[0], UserMessage) and out[0].content == "(session bootstrap)"
    assert [b.text for b in out[1].content] == ["a", "b"]


@pytest.mark.parametrize(
    ("api", "provider", "handled"),
    [
        ("google-generative-ai", "google", True),
        ("google-gemini-cli", "google-gemini-cli", True),
        ("openai-completions", "google-vertex", True),
        ("openai-completions", "openrouter", False),
        ("anthropic-messages", "anthropic", False),
    ],
)
def test_handles_policy(api, provider, handled):
    assert handles_policy(resolve_transcript_policy(api, provider, "m")) is handled


class GoogleTurns:
    """The hookimpl the plugin registers (same code as in the plugin module)."""

    @hookimpl
    def validate_replay_turns(self, messages, policy):
        return validate_google_replay_turns(messages, policy)


def test_hook_validate_replay_turns_answers_for_gemini_only(runtime_factory):
    runtime = runtime_factory(plugins=[("google", GoogleTurns())])
    messages = [assistant(text("a")), assistant(text("b"))]
    answer, plugin = runtime.hooks.validate_replay_turns(messages, GEMINI)
    assert plugin == "google"
    assert [m["role"] for m in answer] == ["user", "assistant"]
    anthropic = resolve_transcript_policy("anthropic-messages", "anthropic", "claude-opus-4-6")
    assert runtime.hooks.validate_replay_turns(messages, anthropic)[1] != "google"


def test_a_tool_loop_validates_through_the_attempts_memo(monkeypatch):
    """Inside a run the history carries the session's memo: a tool loop's requests reuse
    the previous answer instead of a pass over the whole history each, with the same
    answers as without it."""
    from openclaw_runtime.messages import ToolCall, ToolResultMessage
    from openclaw_runtime.transcript import replay as replay_module
    from openclaw_runtime.transcript.turn_memo import MemoizedTurns, TurnValidationMemo

    policy = resolve_transcript_policy("google-generative-ai", "google", "gemini-2.5-pro")
    requests = [[UserMessage(content="go")]]
    for n in range(12):
        call = ToolCall(id=f"call_{n}", name="read", arguments={"path": f"{n}.txt"})
        result = ToolResultMessage(
            tool_call_id=call.id, tool_name="read", content=[TextContent(text=f"file {n}")]
        )
        requests.append([*requests[-1], AssistantMessage(content=[call]), result])
    expected = [validate_google_replay_turns(list(history), policy) for history in requests]

    passes = []  # every pass that merges model turns, by the memo or not
    real = replay_module.validate_turns_with_consecutive_merge

    def counting(messages, role, merge):
        passes.append(len(messages))
        return real(messages, role, merge)

    monkeypatch.setattr(replay_module, "validate_turns_with_consecutive_merge", counting)
    memo = TurnValidationMemo()
    got = [validate_google_replay_turns(MemoizedTurns(h, memo), policy) for h in requests]
    assert [[m.model_dump() for m in answer] for answer in got] == [
        [m.model_dump() for m in answer] for answer in expected
    ]
    assert passes == [1], passes  # the first request's only
