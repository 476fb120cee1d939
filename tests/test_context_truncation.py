"""Tool-result truncation (openclaw-spec §4, tool-result-truncation.ts, seed 000 §6.5, 003 §6)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_runtime.context import (
    session_likely_has_oversized_tool_results,
    truncate_oversized_tool_results_in_messages,
)
from openclaw_runtime.context.truncation import (
    MIDDLE_OMISSION_MARKER,
    compact_recovery_suffix,
    estimate_tool_result_reduction_potential,
    format_context_limit_truncation_notice,
    get_tool_result_text_length,
    has_important_tail,
    message_has_truncation_marker,
    text_has_truncation_marker,
    truncate_tool_result_message,
    truncate_tool_result_text,
)
from openclaw_runtime.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    UserMessage,
)

MARKER = MIDDLE_OMISSION_MARKER
MEDIUM = "alpha beta gamma delta epsilon "


def tool_result(text: str, call_id: str = "call_1", **fields) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id,
        tool_name="read",
        content=[TextContent(text=text)],
        timestamp=1,
        **fields,
    )


def text_of(message) -> str:
    return message.content[0].text


# --------------------------------------------------------------------------- texts and markers


@pytest.mark.parametrize(
    ("count", "notice"),
    [
        (1, "[... 1 more characters truncated; rerun with narrower args if needed]"),
        (0, "[... 1 more characters truncated; rerun with narrower args if needed]"),
        (-7, "[... 1 more characters truncated; rerun with narrower args if needed]"),
        (12.9, "[... 12 more characters truncated; rerun with narrower args if needed]"),
        (50_000, "[... 50000 more characters truncated; rerun with narrower args if needed]"),
    ],
)
def test_default_notice(count, notice):
    assert format_context_limit_truncation_notice(count) == notice


@pytest.mark.parametrize(
    ("count", "notice"),
    [
        (1, "[... 1 chars truncated; narrow args]"),
        (0, "[... 1 chars truncated; narrow args]"),
        (964.5, "[... 964 chars truncated; narrow args]"),
    ],
)
def test_compact_recovery_notice(count, notice):
    assert compact_recovery_suffix(count) == notice


def test_middle_omission_marker_text():
    assert MARKER == "\n\n⚠️ [... middle content omitted — showing head and tail ...]\n\n"


@pytest.mark.parametrize(
    ("text", "important"),
    [
        ("all good", False),
        ("Traceback (most recent call last)", True),
        ("build FAILED", True),
        ("panic: runtime error", True),
        ("Stack Trace follows", True),
        ("process exit code 1", True),
        ("errno 2", True),
        ("fatal: not a git repository", True),
        ("an exception occurred", True),
        ("errors everywhere", False),  # whole words only
        ("preexisting conditions", False),
        ("éerror", True),  # \b is ASCII-only, as in JavaScript
        ('{"ok": true}', True),  # JSON closing brace
        ('{"ok": true}\n   \n', True),
        ("{ not closed", False),
        ("Total: 3 files", True),
        ("summary below", True),
        ("result", True),
        ("task complete", True),
        ("finished in 3s", True),
        ("Done.", True),
        ("error " + "x" * 2_000, False),  # only the last 2000 characters count
        ("x" * 5_000 + " error", True),
    ],
)
def test_has_important_tail(text, important):
    assert has_important_tail(text) is important


@pytest.mark.parametrize(
    ("text", "marked"),
    [
        ("plain output", False),
        ("head[... 50000 more characters truncated; rerun with narrower args if needed]", True),
        ("head[... 12 chars truncated; narrow args]", True),
        ("a" + MARKER + "b", True),
        ("[... 12 characters truncated;", True),
        ("[... N chars truncated;", False),  # needs digits
        ("[... 12 more characters truncated", False),  # needs the semicolon
        ("[... 12 more\ncharacters truncated;", False),  # `.` does not cross lines
        ("⚠️ [... middle content omitted — showing head and tail ...]", False),  # needs newlines
    ],
)
def test_truncation_markers(text, marked):
    assert text_has_truncation_marker(text) is marked


def test_message_marker_looks_at_text_blocks_only():
    marked = tool_result("x[... 3 chars truncated; narrow args]")
    assert message_has_truncation_marker(marked)
    assert not message_has_truncation_marker(tool_result("fresh"))
    assert not message_has_truncation_marker(UserMessage(content="[... 3 chars truncated; x"))


# --------------------------------------------------------------------------- one text: exact rows


def _head_tail(head: str, tail: str, suffix: str) -> str:
    return head + MARKER + tail + suffix


@pytest.mark.parametrize(
    ("text", "max_chars", "options", "expected"),
    [
        pytest.param("hello world", 1_000, {}, "hello world", id="fits"),
        pytest.param("x" * 300, 300, {}, "x" * 300, id="exact-fit"),
        pytest.param("", 0, {}, "", id="empty"),
        # min_keep (2000) is capped at max - len(suffix(1)) = 81; the loop then trims 2 chars
        # because the real suffix has three digits where the estimate had two
        pytest.param(
            "a" * 200,
            150,
            {},
            "a" * 79 + "[... 121 more characters truncated; rerun with narrower args if needed]",
            id="head-only-bounded-loop",
        ),
        # newline at 90 keeps only 55 % of the 163-char head: no snapping
        pytest.param(
            "x" * 90 + "\n" + "y" * 200,
            200,
            {"compact": True},
            ("x" * 90 + "\n" + "y" * 200)[:162] + "[... 129 chars truncated; narrow args]",
            id="head-no-snap",
        ),
        # newline at 150 keeps > 80 % of the 162-char head: cut there, newline dropped
        pytest.param(
            "x" * 150 + "\n" + "y" * 200,
            200,
            {"compact": True},
            "x" * 150 + "[... 201 chars truncated; narrow args]",
            id="head-snaps-to-newline",
        ),
        # important tail: tail = min(floor(462·0.3), 4000) = 138, head = 462-138-63 = 261
        pytest.param(
            "H" * 1_000 + "\nTAIL error happened",
            500,
            {"compact": True},
            _head_tail(
                "H" * 261,
                "H" * 118 + "\nTAIL error happened",
                "[... 558 chars truncated; narrow args]",
            ),
            id="head-and-tail",
        ),
        # the tail start snaps forward past a newline inside its first 20 %
        pytest.param(
            "H" * 885 + "\n" + "z" * 128 + " total",
            500,
            {"compact": True},
            _head_tail("H" * 261, "z" * 128 + " total", "[... 562 chars truncated; narrow args]"),
            id="tail-snaps-forward",
        ),
        # odd corner kept from OpenClaw: when the suffix grows a digit, the bounded loop trims
        # the kept text from its end — i.e. the last character of the tail
        pytest.param(
            "H" * 230 + " error!!!",
            150,
            {"compact": True},
            _head_tail("H" * 17, "H" * 24 + " error!!", "[... 127 chars truncated; narrow args]"),
            id="loop-trims-tail-end",
        ),
        pytest.param(
            "H" * 1_000 + "\nTAIL error happened",
            500,
            {"compact": True, "preserve_important_tail": False},
            "H" * 462 + "[... 558 chars truncated; narrow args]",
            id="tail-preservation-off",
        ),
        # a constant suffix string
        pytest.param(
            "x" * 5_000,
            300,
            {"suffix": "\n\n[custom-truncated]", "min_keep_chars": 250},
            "x" * 280 + "\n\n[custom-truncated]",
            id="custom-suffix",
        ),
        # budget smaller than any suffix: the suffix itself is cut
        pytest.param("x" * 500, 10, {}, "[... 500 m", id="tiny-budget"),
        pytest.param("x" * 500, 0, {}, "", id="zero-budget"),
    ],
)
def test_truncate_tool_result_text_rows(text, max_chars, options, expected):
    result = truncate_tool_result_text(text, max_chars, **options)
    assert result == expected
    assert len(result) <= max_chars


def test_important_tail_needs_room_for_two_minimum_heads():
    text = "progress\n" * 2_000 + "Error: boom"
    result = truncate_tool_result_text(text, 3_000)  # budget ≈ 2930 < 2 · 2000
    assert MARKER not in result
    assert text.startswith(result[: result.index("[...")])
    assert len(result) <= 3_000


def test_large_error_output_keeps_its_error_line():
    text = "progress output\n" * 4_000 + "Error: missing import; Inspect src/fixture.ts"
    result = truncate_tool_result_text(text, 20_000)
    assert MARKER in result
    assert "Inspect src/fixture.ts" in result
    assert len(result) <= 20_000
    assert len(result) > 2_000


def test_tail_is_capped_at_4000_chars():
    text = "h" * 100_000 + " done"
    result = truncate_tool_result_text(text, 60_000)
    tail = result.split(MARKER)[1]
    assert len(tail[: tail.index("[...")]) == 4_000


def test_callable_suffix_gets_the_truncated_count():
    seen = []

    def suffix(count: int) -> str:
        seen.append(count)
        return f"<cut {count}>"

    result = truncate_tool_result_text("x" * 1_000, 100, suffix=suffix, min_keep_chars=0)
    assert result == "x" * 91 + "<cut 909>"
    assert seen[-1] == 909


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_chars": -1}, ValueError, "max_chars"),
        ({"max_chars": float("nan")}, ValueError, "max_chars"),
        ({"max_chars": "10"}, TypeError, "max_chars"),
        ({"max_chars": 10, "min_keep_chars": -1}, ValueError, "min_keep_chars"),
        ({"max_chars": 10, "suffix": 5}, TypeError, "suffix"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        truncate_tool_result_text("x" * 100, **kwargs)


def test_infinite_budget_keeps_everything():
    assert truncate_tool_result_text("x" * 100, float("inf")) == "x" * 100


# --------------------------------------------------------------------------- properties

_PIECES = st.sampled_from(
    ["line", "\n", " ", "data", "error", "done", "}", "{", "x" * 40, "ok\n", "é", "漢", "😀"]
)
_TEXTS = st.lists(_PIECES, max_size=400).map("".join)
_SUFFIX_RE = re.compile(
    r"\[\.\.\. \d+ (more characters truncated; rerun with narrower args if needed|"
    r"chars truncated; narrow args)\]$"
)


@settings(max_examples=300, deadline=None)
@given(
    text=_TEXTS,
    max_chars=st.integers(min_value=0, max_value=6_000),
    compact=st.booleans(),
    min_keep=st.none() | st.integers(min_value=0, max_value=3_000),
    preserve=st.booleans(),
)
def test_output_never_exceeds_budget_and_keeps_true_head_and_tail(
    text, max_chars, compact, min_keep, preserve
):
    result = truncate_tool_result_text(
        text, max_chars, compact=compact, min_keep_chars=min_keep, preserve_important_tail=preserve
    )
    assert len(result) <= max_chars
    if result == text:
        return
    match = _SUFFIX_RE.search(result)
    if match is None:  # not even the suffix fit: it was cut to the budget
        assert len(result) == max_chars
        return
    kept = result[: match.start()]
    if MARKER in kept:
        head, tail = kept.split(MARKER)
        assert preserve
        assert text.startswith(head)
        assert text.find(tail, len(head)) != -1
        if len(result) < max_chars:  # the bounded loop never trimmed: a true suffix
            assert text.endswith(tail)
    else:
        assert text.startswith(kept)
    assert text_has_truncation_marker(result)


@settings(max_examples=200, deadline=None)
@given(text=_TEXTS, max_chars=st.integers(min_value=0, max_value=6_000), compact=st.booleans())
def test_truncating_truncated_text_is_a_no_op(text, max_chars, compact):
    once = truncate_tool_result_text(text, max_chars, compact=compact)
    assert truncate_tool_result_text(once, max_chars, compact=compact) == once


# --------------------------------------------------------------------------- one message


def test_text_length_sums_text_blocks_only():
    message = ToolResultMessage(
        tool_call_id="c",
        tool_name="read",
        content=[
            TextContent(text="abc"),
            ImageContent(data="x", mime_type="image/png"),
            TextContent(text="12345"),
        ],
    )
    assert get_tool_result_text_length(message) == 8
    assert get_tool_result_text_length(AssistantMessage(content=[TextContent(text="hello")])) == 0


def test_message_truncation_copies_and_never_mutates():
    original = tool_result("x" * 50_000, details={"path": "/tmp/out"})
    before = original.to_dict()
    result = truncate_tool_result_message(
        original, 10_000, suffix="\n\n[persist-truncated]", min_keep_chars=2_000
    )
    assert result is not original
    assert original.to_dict() == before
    assert text_of(result).endswith("[persist-truncated]")
    assert len(text_of(result)) <= 10_000
    assert result.details == {"path": "/tmp/out"}
    assert result.tool_call_id == original.tool_call_id


@pytest.mark.parametrize(
    "message",
    [tool_result("short"), UserMessage(content="x" * 50_000), AssistantMessage(content=[])],
)
def test_messages_that_fit_or_are_not_tool_results_come_back_as_is(message):
    assert truncate_tool_result_message(message, 100) is message


def test_budget_is_shared_in_proportion_and_images_are_kept():
    image = ImageContent(data="AAAA", mime_type="image/png")
    message = ToolResultMessage(
        tool_call_id="c",
        tool_name="read",
        content=[TextContent(text="a" * 30_000), image, TextContent(text="b" * 10_000)],
    )
    result = truncate_tool_result_message(message, 8_000)
    first, kept_image, second = result.content
    assert kept_image is image
    assert len(first.text) <= 6_000  # 75 % of the budget
    # 25 % is 2000, but a block keeps at least min-keep (2000) + its suffix (72)
    assert len(second.text) == 2_072
    assert first.text.startswith("a" * 1_000) and second.text.startswith("b" * 1_000)
    assert get_tool_result_text_length(message) == 40_000


# --------------------------------------------------------------------------- many messages


def test_reduction_potential_is_zero_for_small_results():
    estimate = estimate_tool_result_reduction_potential(
        [tool_result("small result")], context_window_tokens=128_000
    )
    assert estimate.tool_result_count == 1
    assert estimate.max_reducible_chars == 0


def test_reduction_potential_for_aggregate_medium_tails():
    messages = [tool_result(MEDIUM * 400, f"call_{i}") for i in range(3)]
    estimate = estimate_tool_result_reduction_potential(messages, context_window_tokens=128_000)
    assert estimate.tool_result_count == 3
    assert estimate.oversized_count == 0
    assert estimate.max_chars == estimate.aggregate_budget_chars == 32_000
    assert estimate.aggregate_reducible_chars == 3 * 12_400 - 32_000
    assert estimate.max_reducible_chars == estimate.aggregate_reducible_chars


def test_reduction_potential_adds_aggregate_on_top_of_oversized():
    messages = [
        tool_result("x" * 500_000, "call_1"),
        tool_result(MEDIUM * 800, "call_2"),
        tool_result(MEDIUM * 800, "call_3"),
    ]
    estimate = estimate_tool_result_reduction_potential(
        {"messages": messages, "contextWindowTokens": 128_000}
    )
    assert estimate.oversized_count == 1
    assert estimate.oversized_reducible_chars > 0
    assert estimate.aggregate_reducible_chars > 0
    assert estimate.max_reducible_chars == (
        estimate.oversized_reducible_chars + estimate.aggregate_reducible_chars
    )
    assert estimate.total_tool_result_chars == 500_000 + 2 * 24_800


def test_tiny_caps_drive_recovery_estimates():
    messages = [tool_result(MEDIUM * 600, f"call_{i}") for i in range(3)]
    estimate = estimate_tool_result_reduction_potential(
        messages, context_window_tokens=128_000, max_chars_override=120
    )
    assert estimate.max_chars == estimate.aggregate_budget_chars == 120
    assert estimate.oversized_count == 3
    assert estimate.aggregate_reducible_chars > 0


def test_session_likely_has_oversized_tool_results():
    assert session_likely_has_oversized_tool_results(
        [tool_result("x" * 500_000)], context_window_tokens=128_000
    )
    medium = [tool_result(MEDIUM * 600, f"c{i}") for i in range(3)]
    assert session_likely_has_oversized_tool_results(medium, context_window_tokens=128_000)
    assert not session_likely_has_oversized_tool_results(
        [tool_result("tiny")], context_window_tokens=128_000
    )


def _history(*tool_results):
    return [
        UserMessage(content="hello"),
        AssistantMessage(content=[TextContent(text="tools")]),
        *tool_results,
    ]


def test_nothing_oversized_returns_the_same_messages_in_a_new_list():
    messages = _history(tool_result("small result"))
    result, stats = truncate_oversized_tool_results_in_messages(messages, 200_000)
    assert stats.truncated_count == 0 and not stats.truncated
    assert stats.reason == "no oversized or aggregate tool results"
    assert result is not messages
    assert all(a is b for a, b in zip(result, messages, strict=True))


def test_empty_session_reason():
    result, stats = truncate_oversized_tool_results_in_messages([], 200_000)
    assert result == [] and stats.reason == "empty session"


def test_oversized_results_are_truncated_and_others_kept_by_identity():
    big = "x" * 500_000
    messages = _history(tool_result(big, "call_1"), tool_result("y" * 500_000, "call_2"))
    result, stats = truncate_oversized_tool_results_in_messages(messages, 128_000)
    assert stats.truncated_count == 2 and stats.oversized_count == 2
    assert result[0] is messages[0] and result[1] is messages[1]
    for message in result[2:]:
        assert len(text_of(message)) <= 32_000
        assert "truncated" in text_of(message)
    assert text_of(messages[2]) == big  # the input is untouched


def test_aggregate_budget_bounds_prompt_history_without_rewriting_callers():
    medium = MEDIUM * 800
    messages = _history(*(tool_result(medium, f"call_{i}") for i in range(3)))
    result, stats = truncate_oversized_tool_results_in_messages(
        messages, 128_000, max_chars_override=12_000, aggregate_max_chars_override=12_000
    )
    assert stats.truncated_count > 0
    assert sum(get_tool_result_text_length(m) for m in result) <= 12_000
    assert sum(get_tool_result_text_length(m) for m in messages) == 3 * len(medium)


def test_already_truncated_results_stay_byte_identical():
    suffix = "[... 50000 more characters truncated; rerun with narrower args if needed]"
    medium = MEDIUM * 800
    messages = _history(
        tool_result("brief head " + suffix, "call_1"),
        tool_result(medium, "call_2"),
        tool_result(medium, "call_3"),
    )
    result, _ = truncate_oversized_tool_results_in_messages(
        messages, 128_000, max_chars_override=12_000, aggregate_max_chars_override=12_000
    )
    assert text_of(result[2]) == "brief head " + suffix
    assert len(text_of(result[3])) < len(medium) and len(text_of(result[4])) < len(medium)
    total = sum(get_tool_result_text_length(m) for m in result)
    assert 12_000 < total < 12_500  # stability wins over a strict aggregate budget


def test_head_and_tail_marked_results_stay_byte_identical():
    marked = "some head content" + MARKER + "some tail content with Error: something failed"
    messages = _history(tool_result(marked, "call_1"), tool_result(MEDIUM * 600, "call_2"))
    result, _ = truncate_oversized_tool_results_in_messages(
        messages, 128_000, max_chars_override=10_000, aggregate_max_chars_override=10_000
    )
    assert text_of(result[2]) == marked
    assert len(text_of(result[3])) < len(MEDIUM * 600)


def test_aggregate_reduction_spends_older_results_first():
    older, newer = "older-large " * 1_000, "newer-enough " * 500
    messages = _history(tool_result(older, "call_1"), tool_result(newer, "call_2"))
    result, stats = truncate_oversized_tool_results_in_messages(
        messages, 128_000, max_chars_override=16_000
    )
    assert stats.truncated_count == 1 and stats.aggregate_count == 1
    assert "truncated" in text_of(result[2])
    assert result[3] is messages[3]


def test_recovery_truncation_goes_below_the_2000_char_floor():
    result, stats = truncate_oversized_tool_results_in_messages(
        _history(tool_result("x" * 500_000)), 100
    )
    assert stats.max_chars == 120
    assert len(text_of(result[2])) < 2_000
    assert "truncated" in text_of(result[2])


def test_oversized_and_aggregate_combine_in_one_pass():
    medium = MEDIUM * 800
    messages = _history(
        tool_result("x" * 500_000, "call_1"),
        tool_result(medium, "call_2"),
        tool_result(medium, "call_3"),
    )
    result, stats = truncate_oversized_tool_results_in_messages(messages, 100)
    assert stats.truncated_count == 3
    assert "truncated" in text_of(result[2])
    assert all(len(text_of(m)) > 0 for m in result[3:])


def test_when_stubs_are_not_enough_the_oldest_result_is_emptied():
    messages = [tool_result("x" * 1_000, f"call_{i}") for i in range(3)]
    result, stats = truncate_oversized_tool_results_in_messages(
        messages, max_chars_override=2_000, aggregate_max_chars_override=10
    )
    # the compact suffix is chosen because 10 < 3 · 69; each result shrinks to a 36-char stub,
    # which still leaves 98 over budget, so the oldest one is emptied
    stub = "[... 1000 chars truncated; narrow ar"
    assert [text_of(m) for m in result] == ["", stub, stub]
    assert stats.truncated_count == 3


def test_budget_needs_a_window_or_an_override():
    with pytest.raises(ValueError, match="context_window_tokens"):
        truncate_oversized_tool_results_in_messages([tool_result("x")])
