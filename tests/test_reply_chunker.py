"""``EmbeddedBlockChunker`` (OpenClaw's block chunker): tables of buffers and the chunks they give."""

from __future__ import annotations

import re

import pytest

from openclaw_runtime.reply import (
    BlockChunking,
    EmbeddedBlockChunker,
    FenceSpan,
    parse_fence_spans,
)


def chunks(text: str, *, pieces: int = 1, force: bool = True, **chunking: object) -> list[str]:
    """Feed ``text`` in ``pieces`` parts, draining after each; then a forced drain."""
    chunker = EmbeddedBlockChunker(BlockChunking(**chunking))  # type: ignore[arg-type]
    out: list[str] = []
    step = max(1, -(-len(text) // pieces))
    for start in range(0, len(text), step):
        chunker.append(text[start : start + step])
        out += chunker.drain()
    if force:
        out += chunker.drain(force=True)
    return out


PARAS = "Para one is here.\n\nPara two is here.\n\nThree"

TABLE = [
    # (text, options, pieces, force, expected)
    (PARAS, {"min_chars": 5, "max_chars": 100, "flush_on_paragraph": True}, 45, True,
     ["Para one is here.", "Para two is here.", "Three"]),
    # flush_on_paragraph ignores min_chars for complete paragraphs; the tail waits
    (PARAS, {"min_chars": 500, "max_chars": 1000, "flush_on_paragraph": True}, 1, False,
     ["Para one is here.", "Para two is here."]),
    # below min_chars nothing goes out until forced
    ("short", {"min_chars": 50, "max_chars": 100}, 1, False, []),
    ("short", {"min_chars": 50, "max_chars": 100}, 1, True, ["short"]),
    ("   \n ", {"min_chars": 1, "max_chars": 100}, 1, True, []),
    # the latest paragraph break inside the window wins
    ("aaaa\n\nbbbb\n\ncccc dddd", {"min_chars": 3, "max_chars": 14}, 1, False,
     ["aaaa\n\nbbbb", "cccc"]),
    # then newline, sentence end, whitespace, hard cut
    ("line1\nline2\nline3\nline4", {"min_chars": 3, "max_chars": 13}, 1, True,
     ["line1\nline2", "line3", "line4"]),
    ("One. Two. Three. Four.", {"min_chars": 3, "max_chars": 10}, 1, True,
     ["One. Two.", "Three.", "Four."]),
    ("aaaa bbbb cccc dddd eeee ffff", {"min_chars": 5, "max_chars": 12}, 1, True,
     ["aaaa bbbb", "cccc dddd", "eeee ffff"]),
    ("abcdefghijklmnopqrstuvwxyz", {"min_chars": 5, "max_chars": 10}, 1, True,
     ["abcdefghij", "klmnopqrst", "uvwxyz"]),
    # "sentence" skips paragraph and newline breaks
    ("Aa.\n\nBb. Cc dd", {"min_chars": 3, "max_chars": 11, "break_preference": "sentence"}, 1,
     True, ["Aa.\n\nBb.", "Cc dd"]),
    # "newline" never cuts at whitespace below max_chars: it waits
    ("aaaa bbbb cccc", {"min_chars": 3, "max_chars": 100, "break_preference": "newline"}, 1,
     False, []),
    # never inside a fence: the paragraph break in the code stays
    ("text\n\n```\ncode\n\nmore code\n```\n\nafter",
     {"min_chars": 1, "max_chars": 100, "flush_on_paragraph": True}, 40, True,
     ["text", "```\ncode\n\nmore code\n```", "after"]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "options", "pieces", "force", "expected"), TABLE)
def test_chunks(text, options, pieces, force, expected) -> None:
    assert chunks(text, pieces=pieces, force=force, **options) == expected


def test_a_hard_cut_inside_a_fence_closes_and_reopens_it() -> None:
    text = "```py\n" + "x = 1\n" * 6 + "```\nafter"
    out = chunks(text, min_chars=5, max_chars=20)
    assert out[-1] == "after"
    for chunk in out[:-1]:
        assert chunk.startswith("```py\n") and chunk.endswith("\n```")
        assert len(parse_fence_spans(chunk)) == 1  # each chunk is valid, closed Markdown
    body = "".join(chunk[len("```py\n") : -len("```")] for chunk in out[:-1])
    assert re.sub(r"\s", "", body) == "x=1" * 6


def test_no_break_lands_inside_a_fence_when_a_safe_one_exists() -> None:
    code = "```\n" + "a b c d e f\n" * 4 + "```"
    out = chunks(f"Intro text here.\n{code}\nOutro text here.", min_chars=10, max_chars=200)
    assert out == [f"Intro text here.\n{code}", "Outro text here."]


@pytest.mark.parametrize("pieces", [1, 3, 7, 50])
def test_no_visible_text_is_lost_or_duplicated(pieces: int) -> None:
    text = "First para, a few words long.\n\nSecond one. It has two sentences!\nThird line"
    out = chunks(text, pieces=pieces, min_chars=8, max_chars=25)
    assert re.sub(r"\s", "", "".join(out)) == re.sub(r"\s", "", text)
    assert all(len(chunk) <= 25 for chunk in out)


FENCES = [
    ("no fences", []),
    ("a\n```py\nx\n```\nb", [FenceSpan(2, 13, "```py", "", "```")]),
    ("~~~~\nx\n~~~\n~~~~~\nafter", [FenceSpan(0, 16, "~~~~", "", "~~~~")]),
    ("  ```\nopen", [FenceSpan(0, 10, "  ```", "  ", "```")]),
    ("```a`b\nnot a fence", []),  # a backtick info string: inline code, not a fence
]


@pytest.mark.parametrize(("text", "spans"), FENCES)
def test_parse_fence_spans(text: str, spans: list[FenceSpan]) -> None:
    assert parse_fence_spans(text) == spans


def test_chunking_sizes_are_clamped_and_bad_values_named() -> None:
    assert BlockChunking(min_chars=0, max_chars=0) == BlockChunking(min_chars=1, max_chars=1)
    assert BlockChunking(min_chars=50, max_chars=10).max_chars == 50
    with pytest.raises(ValueError, match="break_preference"):
        BlockChunking(break_preference="word")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="min_chars"):
        BlockChunking(min_chars="5")  # type: ignore[arg-type]
