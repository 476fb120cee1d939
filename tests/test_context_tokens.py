"""Token estimation at the LLM boundary (openclaw-spec §6, preemptive-compaction.ts)."""

from __future__ import annotations

import math

import pytest

from openclaw_runtime.context import (
    estimate_llm_boundary_token_pressure,
    estimate_rendered_llm_boundary_token_pressure,
)
from openclaw_runtime.context.tokens import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    SAFETY_MARGIN,
    TokenEstimator,
    estimate_message_token_pressure,
    estimate_string_chars,
    estimate_tokens_from_chars,
    resolve_token_estimator,
)
from openclaw_runtime.messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    load_message,
)


@pytest.mark.parametrize(
    ("text", "chars"),
    [
        ("", 0),
        ("abc", 3),
        ("hello world", 11),
        ("é", 1),  # Latin with diacritics is not weighted
        ("漢字", 8),  # CJK ideographs count four each
        ("ひらがな", 16),  # kana
        ("가나", 8),  # Hangul syllables
        ("Ａ", 4),  # fullwidth forms (U+FF01..U+FF60)
        ("ｱ", 1),  # halfwidth katakana (U+FF71) is outside the weighted ranges
        ("😀", 2),  # astral, not CJK: two UTF-16 units like JavaScript's length
        ("a😀", 3),
        ("\U00020000", 4),  # CJK Extension B: one code point, weighted ×4
        ("漢a😀", 7),
        ("\u2e80", 4),  # start of the weighted range
        ("\u2e7f", 1),  # just before it
    ],
)
def test_estimate_string_chars_weights_non_latin_characters(text, chars):
    assert estimate_string_chars(text) == chars


@pytest.mark.parametrize(
    ("chars", "tokens"), [(0, 0), (1, 1), (4, 1), (5, 2), (-10, 0), (4000, 1000)]
)
def test_estimate_tokens_from_chars(chars, tokens):
    assert estimate_tokens_from_chars(chars) == tokens


def _tool_result(*content, tool_name="read"):
    return ToolResultMessage(tool_call_id="c1", tool_name=tool_name, content=list(content))


@pytest.mark.parametrize(
    ("message", "tokens"),
    [
        # 12 per message; plain string content has no block overhead
        (UserMessage(content="hello"), 12 + 2),
        # +6 per block, chars/4 rounded up
        (UserMessage(content=[TextContent(text="hello")]), 12 + 6 + 2),
        (UserMessage(content=[TextContent(text="a"), TextContent(text="b")]), 12 + 7 + 7),
        # an image is a flat 2000 (no block overhead)
        (UserMessage(content=[ImageContent(data="AAAA", mime_type="image/png")]), 12 + 2000),
        # CJK text is weighted ×4 before dividing by four
        (UserMessage(content="漢字漢字"), 12 + 4),
        (AssistantMessage(content=[TextContent(text="x" * 9)]), 12 + 6 + 3),
        (AssistantMessage(content=[ThinkingContent(thinking="y" * 8)]), 12 + 6 + 2),
        # tool calls: +6, name at chars/3, compact JSON arguments at chars/3
        (
            AssistantMessage(content=[ToolCall(id="c", name="read", arguments={"path": "a"})]),
            12 + 6 + 2 + 4,  # '{"path":"a"}' is 12 chars
        ),
        (AssistantMessage(content=[ToolCall(id="c", name="ls")]), 12 + 6 + 1 + 1),  # '{}'
        # tool results: text at chars/2, tool name at chars/3
        (_tool_result(TextContent(text="x" * 10)), 12 + (6 + 5) + 2),
        (_tool_result(TextContent(text="x" * 11), tool_name="shell"), 12 + (6 + 6) + 2),
        (_tool_result(ImageContent(data="AAAA", mime_type="image/png")), 12 + 2000 + 2),
        (_tool_result(), 12 + 2),
        # custom messages replay as user content
        (CustomMessage(custom_type="note", content="abcd"), 12 + 1),
        (
            CompactionSummaryMessage(summary="s", tokens_before=10),
            12 + math.ceil(len(COMPACTION_SUMMARY_PREFIX + "s" + COMPACTION_SUMMARY_SUFFIX) / 4),
        ),
        (
            BranchSummaryMessage(summary="s", from_id="e1"),
            12 + math.ceil(len(BRANCH_SUMMARY_PREFIX + "s" + BRANCH_SUMMARY_SUFFIX) / 4),
        ),
    ],
)
def test_message_token_pressure(message, tokens):
    assert estimate_message_token_pressure(message) == tokens


@pytest.mark.parametrize(
    "message",
    [
        UserMessage(
            content=[TextContent(text="hello"), ImageContent(data="A", mime_type="image/png")]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="t" * 30),
                ToolCall(id="c", name="n", arguments={"a": [1, 2]}),
            ]
        ),
        _tool_result(TextContent(text="out " * 50)),
        CompactionSummaryMessage(summary="sum", tokens_before=1),
    ],
)
def test_wire_dicts_estimate_like_models(message):
    assert estimate_message_token_pressure(message.to_dict()) == estimate_message_token_pressure(
        message
    )


def test_unknown_blocks_cost_their_json():
    message = load_message(
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "j",
            "content": [{"type": "json", "payload": {"k": "v" * 20}}],
            "isError": False,
            "timestamp": 1,
        }
    )
    serialized = '{"type":"json","payload":{"k":"' + "v" * 20 + '"}}'
    assert estimate_message_token_pressure(message) == 12 + 6 + math.ceil(len(serialized) / 2) + 1


@pytest.mark.parametrize(
    ("extra", "tokens"),
    [
        ({"excludeFromContext": True}, 0),
        ({}, 12 + math.ceil(len("Ran `ls`\n```\nout\n```") / 4)),
        (
            {"exitCode": 2},
            12 + math.ceil(len("Ran `ls`\n```\nout\n```\n\nCommand exited with code 2") / 4),
        ),
    ],
)
def test_bash_execution_messages(extra, tokens):
    message = load_message(
        {"role": "bashExecution", "command": "ls", "output": "out", "timestamp": 1, **extra}
    )
    assert estimate_message_token_pressure(message) == tokens


@pytest.mark.parametrize(
    ("system_prompt", "prompt", "history", "expected"),
    [
        # nothing but the prompt boundary: ceil(12 · 1.2) = 15 (12·1.2 is 14.399… in doubles)
        (None, "", [], 15),
        ("sys", "", [], math.ceil((12 + 12 + 1) * SAFETY_MARGIN)),
        ("   ", "", [], 15),  # a blank system prompt costs nothing
        (None, "hello", [], math.ceil((12 + 2) * SAFETY_MARGIN)),
        (None, "", [UserMessage(content="hello")], math.ceil((14 + 12) * SAFETY_MARGIN)),
        (
            "sys",
            "hello",
            [UserMessage(content="hello"), AssistantMessage(content=[TextContent(text="hi")])],
            math.ceil((14 + 19 + 13 + 14) * SAFETY_MARGIN),
        ),
    ],
)
def test_boundary_pressure_adds_system_prompt_and_safety_margin(
    system_prompt, prompt, history, expected
):
    assert (
        estimate_llm_boundary_token_pressure(history, system_prompt=system_prompt, prompt=prompt)
        == expected
    )


def test_boundary_pressure_accepts_openclaw_parameter_object():
    history = [UserMessage(content="hello"), _tool_result(TextContent(text="z" * 99))]
    assert estimate_llm_boundary_token_pressure(
        {"messages": history, "systemPrompt": "be brief", "prompt": "go"}
    ) == estimate_llm_boundary_token_pressure(history, system_prompt="be brief", prompt="go")


def test_boundary_pressure_grows_with_prompt_side_content():
    history = [AssistantMessage(content=[TextContent(text="alpha beta gamma " * 40)])]
    smaller = estimate_llm_boundary_token_pressure(history, system_prompt="sys", prompt="hello")
    larger = estimate_llm_boundary_token_pressure(
        history, system_prompt="guidance " * 25, prompt="request " * 25
    )
    assert larger > smaller


def test_tool_result_text_weighs_double_prose():
    text = "word " * 400
    as_prose = estimate_llm_boundary_token_pressure([UserMessage(content=[TextContent(text=text)])])
    as_tool = estimate_llm_boundary_token_pressure([_tool_result(TextContent(text=text))])
    assert as_tool > as_prose * 1.8


def test_rendered_pressure_counts_only_system_and_prompt():
    assert estimate_rendered_llm_boundary_token_pressure(
        system_prompt="sys", prompt="x" * 400
    ) == math.ceil((12 + 1 + 12 + 100) * SAFETY_MARGIN)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: estimate_llm_boundary_token_pressure([], prompt=None), "prompt"),
        (lambda: estimate_llm_boundary_token_pressure({"messages": "not a list"}), "messages"),
    ],
)
def test_bad_input_is_named(call, name):
    with pytest.raises(TypeError, match=name):
        call()


def test_the_default_estimator_is_replaceable():
    def exact(messages, *, system_prompt=None, prompt=""):
        return 7 * len(messages)

    assert isinstance(exact, TokenEstimator)
    assert resolve_token_estimator(exact) is exact
    assert resolve_token_estimator(None) is estimate_llm_boundary_token_pressure
