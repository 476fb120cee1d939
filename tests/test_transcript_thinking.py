"""Thinking signatures on replay: invalid, stale (compaction), dropped reasoning, assessment."""

from __future__ import annotations

import copy

import pytest

from openclaw_runtime.messages import AssistantMessage, ThinkingContent, load_message
from openclaw_runtime.transcript.thinking import (
    OMITTED_ASSISTANT_REASONING_TEXT,
    assess_last_assistant_message,
    drop_reasoning_from_history,
    drop_thinking_blocks,
    should_preserve_latest_assistant_thinking,
    strip_invalid_thinking_signatures,
    strip_stale_thinking_signatures_for_compaction_replay,
)


def thinking(text="t", **signature):
    return {"type": "thinking", "thinking": text, **signature}


def text(value="answer"):
    return {"type": "text", "text": value}


def assistant(*blocks, ts=None, **extra):
    message = {"role": "assistant", "content": list(blocks), "stopReason": "stop", **extra}
    if ts is not None:
        message["timestamp"] = ts
    return message


def user(value="q", ts=None):
    message = {"role": "user", "content": value}
    if ts is not None:
        message["timestamp"] = ts
    return message


def summary(ts):
    return {"role": "compactionSummary", "summary": "s", "tokensBefore": 10, "timestamp": ts}


# --------------------------------------------------------------------------- invalid signatures


@pytest.mark.parametrize(
    ("block", "kept"),
    [
        (thinking(thinkingSignature="sig"), True),
        (thinking(signature="sig"), True),
        (thinking(thought_signature="sig"), True),
        (thinking(), False),
        (thinking(thinkingSignature=""), False),
        (thinking(thinkingSignature="   "), False),
        (thinking(thinkingSignature=None), False),
        (thinking(thinkingSignature=123), False),
        ({"type": "redacted_thinking", "data": "opaque"}, True),
        ({"type": "redacted_thinking", "data": " "}, False),
        ({"type": "redacted_thinking"}, False),
    ],
)
def test_invalid_signature_table(block, kept):
    history = [assistant(block, text()), user()]
    (first, _) = strip_invalid_thinking_signatures([*history, assistant(text())])[:2]
    assert (block in first["content"]) is kept


def test_latest_assistant_is_exempt_by_default():
    history = [user(), assistant(thinking(), text())]
    assert strip_invalid_thinking_signatures(history) is history
    stripped = strip_invalid_thinking_signatures(history, preserve_latest_assistant=False)
    assert stripped[1]["content"] == [text()]


def test_turn_left_empty_gets_omitted_reasoning_text():
    history = [assistant(thinking()), user(), assistant(text())]
    out = strip_invalid_thinking_signatures(history)
    assert out[0]["content"] == [{"type": "text", "text": "[assistant reasoning omitted]"}]
    assert OMITTED_ASSISTANT_REASONING_TEXT == "[assistant reasoning omitted]"


# --------------------------------------------------------------------------- stale signatures


@pytest.mark.parametrize(
    ("assistant_ts", "compaction_ts", "stripped"),
    [
        (100, 200, True),
        (199, 200, True),
        (200, 200, False),  # same instant: may be the new context
        (300, 200, False),
        (None, 200, False),  # no timestamp: left alone
        ("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z", True),
        ("not a date", 200, False),
    ],
)
def test_stale_signature_table(assistant_ts, compaction_ts, stripped):
    message = assistant(thinking(thinkingSignature="sig"), text(), ts=assistant_ts)
    out = strip_stale_thinking_signatures_for_compaction_replay([summary(compaction_ts), message])
    block = out[1]["content"][0]
    assert ("thinkingSignature" not in block) is stripped
    assert block["thinking"] == "t"  # the text always stays


def test_only_signatures_before_the_latest_compaction_are_stripped():
    old = assistant(thinking(thinkingSignature="a"), ts=50)
    middle = assistant(thinking(thinkingSignature="b"), ts=150)
    new = assistant(thinking(thinkingSignature="c"), ts=250)
    out = strip_stale_thinking_signatures_for_compaction_replay(
        [summary(100), old, summary(200), middle, new]
    )
    signatures = [m["content"][0].get("thinkingSignature") for m in out if m["role"] == "assistant"]
    assert signatures == [None, None, "c"]


def test_redacted_thinking_loses_its_data_when_stale():
    message = assistant({"type": "redacted_thinking", "data": "opaque", "signature": "s"}, ts=1)
    (_, out) = strip_stale_thinking_signatures_for_compaction_replay([summary(2), message])
    assert out["content"][0] == {"type": "redacted_thinking"}


def test_no_compaction_means_no_change():
    history = [assistant(thinking(thinkingSignature="sig"), ts=1)]
    assert strip_stale_thinking_signatures_for_compaction_replay(history) is history


def test_stale_strip_on_models_removes_the_field_not_nulls_it():
    message = AssistantMessage(
        content=[ThinkingContent(thinking="x", thinking_signature="sig")], timestamp=1
    )
    comp = load_message(summary(5))
    out = strip_stale_thinking_signatures_for_compaction_replay([comp, message])
    assert out[1].to_dict()["content"] == [{"type": "thinking", "thinking": "x"}]
    assert message.content[0].thinking_signature == "sig"


# --------------------------------------------------------------------------- dropping reasoning


def tool_call(call_id="c1"):
    return {"type": "toolCall", "id": call_id, "name": "read", "arguments": {}}


def test_drop_thinking_blocks_keeps_latest_assistant():
    history = [assistant(thinking(), text("a")), user(), assistant(thinking(), text("b"))]
    out = drop_thinking_blocks(history)
    assert out[0]["content"] == [text("a")]
    assert out[2] is history[2]


def test_drop_reasoning_keeps_current_tool_turn():
    in_progress = assistant(thinking(), tool_call())
    history = [
        assistant(thinking(), text("old")),
        user("latest"),
        in_progress,
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": []},
    ]
    out = drop_reasoning_from_history(history)
    assert out[0]["content"] == [text("old")]
    assert out[2] is in_progress


def test_drop_reasoning_strips_completed_tool_turn_once_a_user_follows():
    history = [
        assistant(thinking(), tool_call()),
        {"role": "toolResult", "toolCallId": "c1", "content": []},
        user(),
    ]
    out = drop_reasoning_from_history(history)
    assert out[0]["content"] == [tool_call()]


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([user(), assistant(thinking(), text())], True),
        ([assistant(thinking(), text()), user()], False),
        ([user(), assistant(tool_call()), {"role": "toolResult", "toolCallId": "c1"}], True),
        ([user()], False),
    ],
)
def test_should_preserve_latest_assistant_thinking(history, expected):
    assert should_preserve_latest_assistant_thinking(history) is expected


# --------------------------------------------------------------------------- assessment


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (user(), "valid"),
        (assistant(), "incomplete-thinking"),
        (assistant(text()), "valid"),
        (assistant(thinking()), "incomplete-thinking"),
        (assistant(thinking(thinkingSignature="s")), "incomplete-text"),
        (assistant(thinking(thinkingSignature="s"), text("  ")), "incomplete-text"),
        (assistant(thinking(thinkingSignature="s"), text()), "valid"),
        (assistant({"type": "redacted_thinking", "data": "d"}), "incomplete-text"),
        (assistant(thinking(thinkingSignature="s"), tool_call()), "valid"),
        (assistant(thinking(thinkingSignature="s"), thinking()), "incomplete-thinking"),
        (assistant(None), "incomplete-thinking"),
    ],
)
def test_assess_last_assistant_message(message, expected):
    assert assess_last_assistant_message(message) == expected


@pytest.mark.parametrize(
    "fn",
    [
        strip_invalid_thinking_signatures,
        strip_stale_thinking_signatures_for_compaction_replay,
        drop_thinking_blocks,
        drop_reasoning_from_history,
    ],
)
def test_thinking_functions_are_pure_and_idempotent(fn):
    history = [
        summary(100),
        assistant(thinking(thinkingSignature="s"), thinking(), text(), ts=50),
        user(ts=60),
        assistant(thinking(), tool_call(), ts=150),
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": []},
        user(ts=170),
        assistant(thinking(), ts=180),
    ]
    before = copy.deepcopy(history)
    once = fn(history)
    assert history == before
    assert fn(once) == once
