"""Messaging-tool dedupe: text or media a messaging tool already sent this turn is not sent again.

A model that sent its answer through a messaging tool often repeats it as its final text.
``is_messaging_tool_duplicate`` compares normalized texts (``normalize_text_for_comparison``:
lowercase, emoji stripped, whitespace collapsed) with OpenClaw's rules for prefixes and
re-narrations; ``filter_messaging_tool_duplicates`` and ``filter_messaging_tool_media_duplicates``
drop what was already sent from a run's payloads.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Final

from .reply_payload import ReplyPayload

__all__ = [
    "MIN_DUPLICATE_TEXT_LENGTH",
    "MIN_SUBSTRING_DUPLICATE_RATIO",
    "filter_messaging_tool_duplicates",
    "filter_messaging_tool_media_duplicates",
    "has_comparable_text",
    "is_messaging_tool_duplicate",
    "normalize_text_for_comparison",
]

MIN_DUPLICATE_TEXT_LENGTH: Final = 10
MIN_SUBSTRING_DUPLICATE_RATIO: Final = 0.5

# Extended_Pictographic ∪ Emoji_Presentation (Unicode emoji-data), as code point ranges:
# Python's ``re`` has no \p{...}, so OpenClaw's emoji stripping is spelled out here.
_EMOJI_RANGES: Final = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x2388, 0x2388), (0x23CF, 0x23CF),
    (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
    (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712),
    (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721),
    (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744), (0x2747, 0x2747),
    (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757),
    (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D),
    (0x3297, 0x3297), (0x3299, 0x3299), (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F), (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1FF), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F53D),
    (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F), (0x1F7D5, 0x1F7FF),
    (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F),
    (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945), (0x1F947, 0x1FAFF),
    (0x1FC00, 0x1FFFD),
)  # fmt: skip
_EMOJI_RE: Final = re.compile(
    "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _EMOJI_RANGES) + "]"
)
#: Every code point an ``_EMOJI_RANGES`` range holds, and more: the four below U+2100 and
#: all from U+2100 up (punctuation such as dashes, curly quotes and ``…``, and ``€``, stay
#: out). A text without any has nothing ``_EMOJI_RE`` would strip, and this small class is
#: searched far faster than the emoji class is substituted (a class of ~100 ranges is tried
#: range by range at every character).
_MAYBE_EMOJI_RE: Final = re.compile(
    "["
    + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _EMOJI_RANGES if hi < 0x2100)
    + "\u2100-\U0010ffff]"
)
_WHITESPACE_RE: Final = re.compile(r"\s+")
_ASCII_ALNUM_RE: Final = re.compile(r"[A-Za-z0-9]")


def normalize_text_for_comparison(text: str) -> str:
    """Lowercase, emoji stripped, whitespace collapsed: what duplicate checks compare."""
    text = text.strip().lower()
    if _MAYBE_EMOJI_RE.search(text) is not None:
        text = _EMOJI_RE.sub("", text)
    return _WHITESPACE_RE.sub(" ", text).strip()


def has_comparable_text(text: str) -> bool:
    """``bool(normalize_text_for_comparison(text))``, most often without normalizing: an
    ASCII letter or digit is neither emoji nor whitespace, and lowercases to one."""
    return _ASCII_ALNUM_RE.search(text) is not None or bool(normalize_text_for_comparison(text))


def is_messaging_tool_duplicate(text: str, sent_texts: Iterable[str]) -> bool:
    """Did a messaging tool already send this text during the turn?

    Normalized comparison (``normalize_text_for_comparison``); texts shorter than 10
    characters never count. Equal texts are duplicates. A text that *starts with* a sent
    text is a duplicate only when the tail adds no letter or digit (``"done." == "done"``,
    but ``"<sent>. Actually it failed."`` is new). A text that contains a sent text later on
    (re-narration) is a duplicate when the sent text is at least half of it; a text contained
    in a sent text is a duplicate when it is at least half of the sent text.
    """
    normalized = normalize_text_for_comparison(text)
    if not normalized or len(normalized) < MIN_DUPLICATE_TEXT_LENGTH:
        return False
    for sent_text in sent_texts:
        sent = normalize_text_for_comparison(sent_text)
        if not sent or len(sent) < MIN_DUPLICATE_TEXT_LENGTH:
            continue
        if normalized == sent:
            return True
        if sent in normalized:
            if normalized.startswith(sent):
                if not any(ch.isalnum() for ch in normalized[len(sent) :]):
                    return True
                continue
            if len(sent) >= len(normalized) * MIN_SUBSTRING_DUPLICATE_RATIO:
                return True
            continue
        if normalized in sent and len(normalized) >= len(sent) * MIN_SUBSTRING_DUPLICATE_RATIO:
            return True
    return False


def filter_messaging_tool_duplicates(
    payloads: Sequence[ReplyPayload], sent_texts: Sequence[str]
) -> list[ReplyPayload]:
    """Drop text-only payloads whose text a messaging tool already sent (media is kept)."""
    if not sent_texts:
        return list(payloads)
    return [
        payload
        for payload in payloads
        if payload.media_urls or not is_messaging_tool_duplicate(payload.text or "", sent_texts)
    ]


def _normalize_media_for_dedupe(value: str) -> str:
    trimmed = value.strip()
    if not trimmed.lower().startswith("file://"):
        return trimmed
    return urllib.parse.unquote(urllib.parse.urlsplit(trimmed).path or "")


def filter_messaging_tool_media_duplicates(
    payloads: Sequence[ReplyPayload], sent_media_urls: Sequence[str]
) -> list[ReplyPayload]:
    """Remove media a messaging tool already sent; a payload left empty is dropped."""
    sent = {m for m in (_normalize_media_for_dedupe(u) for u in sent_media_urls) if m}
    if not sent:
        return list(payloads)
    out = []
    for payload in payloads:
        kept = tuple(u for u in payload.media_urls if _normalize_media_for_dedupe(u) not in sent)
        if kept == payload.media_urls:
            out.append(payload)
            continue
        trimmed = dataclasses.replace(payload, media_urls=kept)
        if trimmed.has_content():
            out.append(trimmed)
    return out
