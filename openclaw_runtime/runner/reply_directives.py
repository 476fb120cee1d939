"""Reply directives: the in-band markup a model uses to steer how its reply is delivered.

``parse_reply_directives`` strips them from the text and says what they asked for, as
OpenClaw's reply-directive parser does: ``[[reply_to_current]]`` and ``[[reply_to:<id>]]``
(reply threading), ``[[audio_as_voice]]``, ``[[silent]]``, and ``MEDIA:`` lines (media
attachments, each checked to be a URL or a safe relative/absolute path — never a traversal).
Fenced code blocks are left alone.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Final

from ..failover.result_classifier import SILENT_REPLY_TOKEN, is_silent_reply_payload_text

__all__ = [
    "InlineDirectives",
    "ReplyDirectives",
    "parse_inline_directives",
    "parse_reply_directives",
]

_AUDIO_TAG_RE: Final = re.compile(r"\[\[\s*audio_as_voice\s*\]\]", re.IGNORECASE)
# ``[[`` only at the start, at a line start or after whitespace, never mid-word.
_REPLY_TAG_RE: Final = re.compile(
    r"(?:^|(?<=\s))\[\[\s*(?:reply_to_current|reply_to\s*:\s*([^\]\n]+))\s*\]\]", re.IGNORECASE
)
_SILENT_TAG_RE: Final = re.compile(r"\[\[\s*silent\s*\]\]", re.IGNORECASE)
_MEDIA_LINE_RE: Final = re.compile(r"^\s*MEDIA:\s*`?([^\n]+?)`?\s*$")
_FENCE_RE: Final = re.compile(r"^\s*(```|~~~)")
_SCHEME_RE: Final = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_WINDOWS_DRIVE_RE: Final = re.compile(r"^[a-zA-Z]:[\\/]")
_TRAVERSAL_RE: Final = re.compile(r"(?:^|[/\\])\.\.(?:[/\\]|$)")


@dataclass(frozen=True, slots=True)
class ReplyDirectives:
    """Reply text with its directives parsed out (OpenClaw's ``parseReplyDirectives``)."""

    text: str
    media_urls: tuple[str, ...] = ()
    reply_to_id: str | None = None
    reply_to_current: bool = False
    reply_to_tag: bool = False
    audio_as_voice: bool = False
    is_silent: bool = False


def _normalize_directive_whitespace(text: str) -> str:
    text = re.sub(r"[ \t]+", " ", text)
    return re.sub(r"[ \t]*\n[ \t]*", "\n", text).strip()


def _is_allowed_media_candidate(candidate: str) -> bool:
    if not candidate or len(candidate) > 4096 or re.search(r"\s", candidate):
        return False
    if re.match(r"^https?://", candidate, re.IGNORECASE):
        parsed = urllib.parse.urlsplit(candidate)
        host = (parsed.hostname or "").rstrip(".")
        return (
            parsed.scheme.lower() == "https"
            and not parsed.username
            and not parsed.password
            and "." in host
            and host != "localhost"
            and not host.endswith((".localhost", ".local", ".internal"))
            and not re.fullmatch(r"[\d.]+|\[?[0-9a-f:]+\]?", host)
        )
    if _TRAVERSAL_RE.search(candidate) or (
        candidate.startswith("~") and not candidate.startswith(("~/", "~\\"))
    ):
        return False
    return (
        candidate.startswith(("/", "./", "~/", "~\\", "\\\\"))
        or bool(_WINDOWS_DRIVE_RE.match(candidate))
        or (not _SCHEME_RE.match(candidate) and ("/" in candidate or "\\" in candidate))
    )


def _split_media_lines(raw: str) -> tuple[str, list[str]]:
    """Pull ``MEDIA: <url-or-path>`` lines out (never inside code fences)."""
    if "MEDIA:" not in raw:  # the line pattern is case-sensitive: no line can match
        return raw, []
    kept: list[str] = []
    media: list[str] = []
    in_fence = False
    for line in raw.split("\n"):
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            kept.append(line)
            continue
        match = None if in_fence else _MEDIA_LINE_RE.match(line)
        if match:
            candidate = match.group(1).strip().strip("`\"'")
            if candidate.startswith("file://"):
                candidate = candidate[len("file://") :]
            if _is_allowed_media_candidate(candidate):
                media.append(candidate)
                continue
        kept.append(line)
    return "\n".join(kept), media


@dataclass(frozen=True, slots=True)
class InlineDirectives:
    """The tags found in one text (no ``MEDIA:`` lines), and the text without them."""

    text: str
    audio_as_voice: bool
    reply_to_id: str | None
    reply_to_current: bool
    has_reply_tag: bool


def parse_inline_directives(
    text: str, *, strip_audio_tag: bool, current_message_id: str | None = None
) -> InlineDirectives:
    """OpenClaw's ``parseInlineDirectives``: audio and reply tags out, whitespace tidied."""
    if "[[" not in text:
        return InlineDirectives(_normalize_directive_whitespace(text), False, None, False, False)
    audio = bool(_AUDIO_TAG_RE.search(text))
    if strip_audio_tag:
        text = _AUDIO_TAG_RE.sub(" ", text)
    has_reply_tag = False
    saw_current = False
    explicit_id: str | None = None

    def replace(match: re.Match[str]) -> str:
        nonlocal has_reply_tag, saw_current, explicit_id
        has_reply_tag = True
        if match.group(1) is None:
            saw_current = True
        elif match.group(1).strip():
            explicit_id = match.group(1).strip()
        return " "

    text = _normalize_directive_whitespace(_REPLY_TAG_RE.sub(replace, text))
    reply_to_id = explicit_id
    if reply_to_id is None and saw_current:
        reply_to_id = (current_message_id or "").strip() or None
    return InlineDirectives(text, audio, reply_to_id, saw_current, has_reply_tag)


def parse_reply_directives(
    raw: str, *, current_message_id: str | None = None, silent_token: str = SILENT_REPLY_TOKEN
) -> ReplyDirectives:
    """Parse and strip a reply's directives.

    * ``MEDIA: <https-url-or-local-path>`` lines (outside code fences) become ``media_urls``;
    * ``[[audio_as_voice]]`` sets ``audio_as_voice`` and is removed;
    * ``[[reply_to_current]]`` / ``[[reply_to:<id>]]`` (case-insensitive, only at a line start
      or after whitespace) are removed: the last explicit id wins, else
      ``current_message_id`` when ``reply_to_current``;
    * ``[[silent]]`` anywhere, or a text that is exactly the silent token (or its JSON
      envelope), makes the reply silent and empties its text.
    """
    text, media = _split_media_lines(raw.rstrip())
    if "[[" not in text:  # no tag can match (each starts with it): a plain answer
        is_silent = is_silent_reply_payload_text(text, silent_token)
        return ReplyDirectives(
            text="" if is_silent else text, media_urls=tuple(media), is_silent=is_silent
        )
    audio_as_voice = bool(_AUDIO_TAG_RE.search(text))
    silent_tag = bool(_SILENT_TAG_RE.search(text))
    if audio_as_voice or silent_tag:
        text = _normalize_directive_whitespace(
            _SILENT_TAG_RE.sub(" ", _AUDIO_TAG_RE.sub(" ", text))
        )
    inline = parse_inline_directives(
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
