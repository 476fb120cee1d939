"""Per-run work a plain answer does not need, held against the work it replaces.

* ``parse_reply_directives`` returns at once when the text (``MEDIA:`` lines out) has no
  ``[[``: every tag pattern starts with it, so no tag is found and the text is kept as it
  is. Checked against the full parser (the body before the shortcut, kept here) over a table
  and random texts built from tag pieces, media lines, silent tokens and whitespace.
* ``MemorySessionStore.open_or_create`` creates a new session from the id it validated
  instead of validating it again in ``create``: ``validate_session_id`` returns a valid id
  unchanged, and the session's bytes equal ``create``'s.
* ``normalize_text_for_comparison`` substitutes the emoji class only when a cheap superset
  class finds a character (checked over every code point), and ``has_comparable_text``
  answers "is anything left after normalizing" from an ASCII letter or digit: both against
  the old normalization over a table and random texts.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from openclaw_runtime.failover.result_classifier import (
    SILENT_REPLY_TOKEN,
    is_silent_reply_payload_text,
)
from openclaw_runtime.runner import messaging_dedupe as md
from openclaw_runtime.runner import reply_directives as rd
from openclaw_runtime.runner.messaging_dedupe import (
    has_comparable_text,
    normalize_text_for_comparison,
)
from openclaw_runtime.runner.reply_directives import ReplyDirectives, parse_reply_directives
from openclaw_runtime.transcript.memory import MemorySessionStore
from openclaw_runtime.transcript.session_ids import InvalidSessionIdError, validate_session_id

_BACKENDS = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])


def _full_parse(
    raw: str, *, current_message_id: str | None = None, silent_token: str = SILENT_REPLY_TOKEN
) -> ReplyDirectives:
    """``parse_reply_directives`` as it was before the plain-text shortcut."""
    text, media = rd._split_media_lines(raw.rstrip())
    audio_as_voice = bool(rd._AUDIO_TAG_RE.search(text))
    silent_tag = bool(rd._SILENT_TAG_RE.search(text))
    if audio_as_voice or silent_tag:
        text = rd._normalize_directive_whitespace(
            rd._SILENT_TAG_RE.sub(" ", rd._AUDIO_TAG_RE.sub(" ", text))
        )
    inline = rd.parse_inline_directives(
        text, strip_audio_tag=False, current_message_id=current_message_id
    )
    if inline.has_reply_tag:
        text = inline.text
    is_silent = silent_tag or is_silent_reply_payload_text(text, silent_token)
    return ReplyDirectives(
        text="" if is_silent else text,
        media_urls=tuple(media),
        reply_to_id=inline.reply_to_id,
        reply_to_current=inline.reply_to_current,
        reply_to_tag=inline.has_reply_tag,
        audio_as_voice=audio_as_voice,
        is_silent=is_silent,
    )


_TABLE = [
    "",
    " ",
    "Hello.",
    "Hello,   world.\n\n  Two  lines\t here.  ",
    "  padded both sides  \n",
    "NO_REPLY",
    "  NO_REPLY  \n",
    '{"action": "NO_REPLY"}',
    '{"action": "NO_REPLY", "x": 1}',
    "HEARTBEAT_OK",
    "[[silent]]",
    "ok [[silent]] then",
    "[[ SILENT ]]",
    "[[audio_as_voice]] speak",
    "say [[Audio_As_Voice]]",
    "[[reply_to_current]] hi",
    "hi [[reply_to: 42]] there",
    "mid[[reply_to_current]]word",
    "[ [silent] ]",
    "[[not a tag]]",
    "[[",
    "]]",
    "a [[reply_to:\n1]] b",
    "MEDIA: https://example.com/a.png",
    "text\nMEDIA: ./img.png\nmore",
    "media: ./lower.png",
    "MEDIA: [[silent]]",
    "```\nMEDIA: ./in-fence.png\n[[silent]]\n```",
    "text\nMEDIA: ../escape.png",
    "MEDIA: ./a.png\nNO_REPLY",
    "MEDIA: ./a.png\n[[audio_as_voice]]",
]

_PIECES = [
    "word",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n",
    "[",
    "]",
    "[[",
    "]]",
    "[[silent]]",
    "[[audio_as_voice]]",
    "[[reply_to_current]]",
    "[[reply_to: abc ]]",
    "[[ reply_to : x1 ]]",
    "NO_REPLY",
    '{"action": "NO_REPLY"}',
    "MEDIA: ./pic.png",
    "MEDIA: https://cdn.example.com/x.jpg",
    "MEDIA: /etc/passwd",
    "MEDIA: ../up.png",
    "media:",
    "```",
    "~~~",
    "é",
]


def _random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        pieces = [rng.choice(_PIECES) for _ in range(rng.randint(0, 8))]
        if rng.random() < 0.5:  # plain texts are the shortcut's case: keep many of them
            pieces = [p for p in pieces if "[[" not in p]
        out.append("".join(pieces))
    return out


@pytest.mark.parametrize("current", [None, "msg-7", "  "])
@pytest.mark.parametrize("token", [SILENT_REPLY_TOKEN, "HEARTBEAT_OK"])
def test_reply_directives_equal_the_full_parser(current: str | None, token: str) -> None:
    texts = _TABLE + _random_texts(600, seed=len(token) + len(current or ""))
    plain = 0
    for raw in texts:
        got = parse_reply_directives(raw, current_message_id=current, silent_token=token)
        assert got == _full_parse(raw, current_message_id=current, silent_token=token), raw
        plain += "[[" not in raw
    assert plain > 300  # the shortcut's case was exercised, as was the other


def test_plain_text_does_not_reach_the_tag_parsers(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> object:
        raise AssertionError("parsed a text without tags")

    monkeypatch.setattr(rd, "parse_inline_directives", boom)
    monkeypatch.setattr(rd, "_normalize_directive_whitespace", boom)
    got = parse_reply_directives("Hello,  world.\nMEDIA: ./a.png\nNO_REPLY? no.")
    assert got == ReplyDirectives("Hello,  world.\nNO_REPLY? no.", media_urls=("./a.png",))
    assert parse_reply_directives(" NO_REPLY ") == ReplyDirectives("", is_silent=True)


_GOOD_IDS = ["a", "abc", "  padded  ", "A1.b_c-d", "9" * 64, "x\t", "sess-2026.12.04"]
_BAD_IDS = ["", "   ", "a/b", "a\\b", "a\x00", ".hidden", "-x", "é", "a b", "x" * 1000]


@pytest.mark.parametrize("session_id", _GOOD_IDS)
def test_a_valid_id_validates_to_itself(session_id: str) -> None:
    safe = validate_session_id(session_id)
    assert validate_session_id(safe) == safe


def _clock() -> datetime:
    return datetime(2026, 12, 4, 14, 0, 0, 123000, tzinfo=UTC)


@pytest.mark.anyio
@_BACKENDS
@pytest.mark.parametrize("session_id", _GOOD_IDS)
async def test_open_or_create_equals_create(anyio_backend: str, session_id: str) -> None:
    made, opened = MemorySessionStore(now=_clock), MemorySessionStore(now=_clock)
    a = await made.create(session_id, cwd="/w")
    b = await opened.open_or_create(session_id, cwd="/w")
    safe = validate_session_id(session_id)
    assert made.export_jsonl(safe) == opened.export_jsonl(safe)
    assert str(a.path) == str(b.path) and a.get_leaf_id() == b.get_leaf_id()
    assert await opened.list_ids() == [safe]
    again = await opened.open_or_create(session_id, cwd="/other")  # exists: opened, not made
    assert opened.export_jsonl(safe) == made.export_jsonl(safe)
    assert again.get_leaf_id() == b.get_leaf_id()


@pytest.mark.anyio
@_BACKENDS
@pytest.mark.parametrize("session_id", _BAD_IDS)
async def test_open_or_create_still_refuses_a_bad_id(anyio_backend: str, session_id: str) -> None:
    store = MemorySessionStore()
    with pytest.raises(InvalidSessionIdError):
        await store.open_or_create(session_id, cwd="/w")
    with pytest.raises(InvalidSessionIdError):
        await store.create(session_id, cwd="/w")
    assert await store.list_ids() == []


def _old_normalize(text: str) -> str:
    """``normalize_text_for_comparison`` before the emoji prefilter."""
    return md._WHITESPACE_RE.sub(" ", md._EMOJI_RE.sub("", text.strip().lower())).strip()


def test_the_prefilter_holds_every_emoji_code_point() -> None:
    everything = "".join(chr(cp) for cp in range(0x110000))
    emoji = set(md._EMOJI_RE.findall(everything))
    assert len(emoji) == sum(hi - lo + 1 for lo, hi in md._EMOJI_RANGES)
    assert emoji <= set(md._MAYBE_EMOJI_RE.findall(everything))
    for ch in "aZ09 \t\n.,!?°éßÄ€–—‘’“”…\u00a0\u2009":  # common: no emoji class pass
        assert md._MAYBE_EMOJI_RE.search(ch) is None, ascii(ch)
    for ch in "©®‼⁉™👍":
        assert md._MAYBE_EMOJI_RE.search(ch) is not None, ascii(ch)


_COMPARE_TABLE = [
    "",
    " ",
    "\n\t \u3000\u2003",
    "a",
    "7",
    "It is sunny in Paris, 21 °C.",
    "👍",
    " 👍 \n ✅ ",
    "©®",
    "© 2026",
    "Ⓜ",
    "ⓜ",
    "İ",
    "ÉCOLE  ÉTÉ",
    "—“”…",
    "日本語のテキスト",
    "\u200b",
    "\u200b👍\u200b",
    "⚠️ read failed",
    "Straße\u00a0café",
    "\x1c\x1d\x1e\x1f",
    "🙂" * 50 + "x",
]
_COMPARE_ALPHABET = [
    "a", "Q", "5", " ", "\t", "\n", "\u3000", "\u00a0", "\u2028", "é", "Σ", "ß", "İ", "°",
    "©", "®", "™", "Ⓜ", "ⓜ", "👍", "✅", "⚠", "\ufe0f", "\u200d", "🇫", "日", ".", "-", "_",
    "\U0001fc00", "\U0001fffd", "\U0001fffe", "\u2000", "\u1fff", "—", "“", "‼", "⁉", "€",
]  # fmt: skip


def _random_compare_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        alphabet = rng.sample(_COMPARE_ALPHABET, rng.randint(1, 6))
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_normalization_equals_the_old_one(seed: int) -> None:
    texts = _COMPARE_TABLE + _random_compare_texts(1500, seed)
    empty = 0
    for text in texts:
        old = _old_normalize(text)
        assert normalize_text_for_comparison(text) == old, ascii(text)
        assert has_comparable_text(text) == bool(old), ascii(text)
        empty += not old
    assert 100 < empty < len(texts) - 100  # both answers were asked for


def test_an_ascii_letter_or_digit_answers_without_normalizing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def boom(text: str) -> str:
        raise AssertionError("normalized")

    monkeypatch.setattr(md, "normalize_text_for_comparison", boom)
    assert has_comparable_text("👍 It is sunny in Paris, 21 °C.")
    assert has_comparable_text("日本 7")
    with pytest.raises(AssertionError):
        has_comparable_text("👍 日本")


@pytest.mark.parametrize("seed", range(3))
def test_media_lines_split_as_by_the_full_loop(seed: int) -> None:
    rng = random.Random(seed)
    pieces = [
        "MEDIA: ./a.png",
        "media: ./b.png",
        "Media: ./c.png",
        "MEDIA:",
        " MEDIA: `./d.png` ",
        "```",
        "~~~",
        "text",
        "",
        "  ",
        "MEDIA: https://x.example.com/i.jpg",
        "xMEDIA: ./e",
    ]
    for _ in range(400):
        raw = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        assert rd._split_media_lines(raw) == _full_split_media_lines(raw), raw


def _full_split_media_lines(raw: str) -> tuple[str, list[str]]:
    """``_split_media_lines`` without its first test: every line through the loop."""
    kept: list[str] = []
    media: list[str] = []
    in_fence = False
    for line in raw.split("\n"):
        if rd._FENCE_RE.match(line):
            in_fence = not in_fence
            kept.append(line)
            continue
        match = None if in_fence else rd._MEDIA_LINE_RE.match(line)
        if match:
            candidate = match.group(1).strip().strip("`\"'")
            if candidate.startswith("file://"):
                candidate = candidate[len("file://") :]
            if rd._is_allowed_media_candidate(candidate):
                media.append(candidate)
                continue
        kept.append(line)
    return "\n".join(kept), media
