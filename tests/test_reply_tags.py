"""``ReplyTagSplitter``: tables of tagged replies, then every cut point of a few of them.

The splitter's promise is that chunking never changes the result, so each tagged reply is fed
whole, at every single cut (two chunks), at every pair of cuts (three chunks) and one
character at a time, and all of them must give the one-shot reply and reasoning.
"""

from __future__ import annotations

import pytest

from openclaw_runtime.reply import ReplyTagSplitter, Segment, split_reply_tags

# (tagged text, reply, reasoning)
CASES = [
    ("plain answer", "plain answer", ""),
    ("<think>plan</think>\n\nThe answer is 4.", "The answer is 4.", "plan"),
    ("<thinking>a</thinking>b", "b", "a"),
    ("<thought>a</thought>b", "b", "a"),
    ("<antthinking>a</antthinking>b", "b", "a"),
    ("<THINK>a</Think>b", "b", "a"),
    ("< think >a< / think >b", "b", "a"),
    ("before <think>a</think> after", "before  after", "a"),
    ("x <think>one</think> y <think>two</think> z", "x  y  z", "onetwo"),
    # an unclosed thinking tag hides everything after it
    ("Answer <think>never closed, more text", "Answer ", "never closed, more text"),
    # a stray closing tag is removed
    ("a </think>b", "a b", ""),
    # final tags are removed, their content kept (enforce off)
    ("<final>Paris.</final>", "Paris.", ""),
    ("Thinking aloud. <final>Paris.</final>", "Thinking aloud. Paris.", ""),
    # a final tag inside reasoning is reasoning
    ("<think>draft <final>x</final></think>Done", "Done", "draft <final>x</final>"),
    # inline code protects tags
    ("Use `<think>` to start.", "Use `<think>` to start.", ""),
    ("``a <think>b</think>`` c", "``a <think>b</think>`` c", ""),
    ("`x` <think>r</think>y", "`x` y", "r"),
    # a blank line ends an unclosed code span (Markdown): the tag after it counts
    ("a ` b\n\n<think>r</think>c", "a ` b\n\nc", "r"),
    # fences protect tags, with their own closing rules
    ("```\n<think>code</think>\n```\nok", "```\n<think>code</think>\n```\nok", ""),
    ("~~~~\n</think>\n~~~\n~~~~\n<think>r</think>end", "~~~~\n</think>\n~~~\n~~~~\nend", "r"),
    (
        "-\n   ```py\n<think>x</think>\n   ```\n<think>y</think>z",
        "-\n   ```py\n<think>x</think>\n   ```\nz",
        "y",
    ),
    # four spaces: not a fence (the run opens inline code; the blank line ends it)
    ("-\n    ```\n\n<think>r</think>", "-\n    ```\n\n", "r"),
    # reasoning with code in it keeps its code
    ("<think>try `</think>` here</think>Yes", "Yes", "try `</think>` here"),
    # things that look like tags but are not
    ("I <3 you <b>bold</b> <thinker>", "I <3 you <b>bold</b> <thinker>", ""),
    ("ends with <thi", "ends with <thi", ""),
    ("ends with < / fin", "ends with < / fin", ""),
    ("<think" + " " * 17 + ">x", "<think" + " " * 17 + ">x", ""),  # too much whitespace
    # leading whitespace of the reply is dropped, inner whitespace kept
    ("\n\n  <think>r</think>\n\n  Hi\n\nthere", "Hi\n\nthere", "r"),
]


@pytest.mark.parametrize(("text", "reply", "reasoning"), CASES)
def test_one_shot_split(text: str, reply: str, reasoning: str) -> None:
    result = split_reply_tags(text)
    assert (result.text, result.thinking) == (reply, reasoning)


ENFORCED = [
    ("Thinking aloud. <final>Paris.</final>", "Paris."),
    ("no final tag at all", ""),
    ("<final>a</final> outside <final>b</final>", "ab"),
    ("pre <final>unclosed keeps going", "unclosed keeps going"),
    ("<think>r</think><final>x</final>", "x"),
]


@pytest.mark.parametrize(("text", "reply"), ENFORCED)
def test_enforce_final_tag_keeps_only_final_text(text: str, reply: str) -> None:
    assert split_reply_tags(text, enforce_final_tag=True).text == reply


def _fed(text: str, cuts: list[int], **options: bool) -> tuple[str, str]:
    splitter = ReplyTagSplitter(**options)
    segments: list[Segment] = []
    previous = 0
    for cut in [*cuts, len(text)]:
        segments += splitter.feed(text[previous:cut])
        previous = cut
    segments += splitter.finish()
    assert all(s.text for s in segments)
    return (
        "".join(s.text for s in segments if s.kind == "text"),
        "".join(s.text for s in segments if s.kind == "thinking"),
    )


SPLIT_REPLIES = [
    "<think>plan it</think>\n\nThe answer is 4.",
    "Use `<think>` like ```\n<think>x</think>\n``` ok <Thinking >secret</ thinking>done",
    "A\n```py\n<think>code</think>\n```\n<think>hidden</think>B <final>C</final>",
    "x\n~~~~\n</think>\n~~~\n~~~~\nafter<think>r</think> ``a`b`` <thi",
    "start <think>never closed ``` stuff",
]


@pytest.mark.parametrize("text", SPLIT_REPLIES)
@pytest.mark.parametrize("enforce", [False, True])
def test_every_two_and_three_chunk_split_gives_the_one_shot_result(
    text: str, enforce: bool
) -> None:
    one = split_reply_tags(text, enforce_final_tag=enforce)
    expected = (one.text, one.thinking)
    for a in range(len(text) + 1):
        assert _fed(text, [a], enforce_final_tag=enforce) == expected, a
        for b in range(a, len(text) + 1):
            assert _fed(text, [a, b], enforce_final_tag=enforce) == expected, (a, b)
    assert _fed(text, list(range(1, len(text))), enforce_final_tag=enforce) == expected


def test_decided_text_streams_at_once_and_only_a_possible_tag_is_held() -> None:
    splitter = ReplyTagSplitter()
    assert splitter.feed("Hello <thi") == [Segment("text", "Hello ")]
    assert splitter.feed("nk>plan") == [Segment("thinking", "plan")]
    assert splitter.feed(" more") == [Segment("thinking", " more")]
    assert splitter.feed("</think>Hi") == [Segment("text", "Hi")]
    assert splitter.feed(" <b") == [Segment("text", " <b")]  # not a tag prefix
    assert splitter.finish() == []


def test_a_held_partial_tag_is_released_as_text_at_the_end() -> None:
    splitter = ReplyTagSplitter()
    assert splitter.feed("5 <fin") == [Segment("text", "5 ")]
    assert splitter.finish() == [Segment("text", "<fin")]


def test_state_carries_across_text_blocks_but_held_text_is_flushed_per_block() -> None:
    splitter = ReplyTagSplitter()
    assert splitter.feed("<think>a") == [Segment("thinking", "a")]
    assert splitter.flush() == []
    assert splitter.feed("b</think>c <thi") == [Segment("thinking", "b"), Segment("text", "c ")]
    assert splitter.flush() == [Segment("text", "<thi")]


def test_a_long_code_line_streams_without_waiting_for_its_newline() -> None:
    splitter = ReplyTagSplitter()
    assert splitter.feed("```json\n") == [Segment("text", "```json\n")]
    assert splitter.feed('{"a": 1') == [Segment("text", '{"a": 1')]  # cannot close the fence
    assert splitter.feed("}\n``") == [Segment("text", "}\n")]  # "``" might close it
    assert splitter.feed("`\n<think>r</think>ok") == [
        Segment("text", "```\n"),
        Segment("thinking", "r"),
        Segment("text", "ok"),
    ]
