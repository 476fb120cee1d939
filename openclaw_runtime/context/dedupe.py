"""Drop retried user messages before compaction (``dedupeDuplicateUserMessagesForCompaction``).

A prompt sent twice within a minute (a client retry, a double tap) would otherwise be
summarized twice and inflate the compaction input. The rule is deliberately narrow:

* only text-only user messages of at least 24 characters (after collapsing whitespace) with a
  finite numeric timestamp are candidates; any non-text block or meaningful persisted media
  rules a message out, because attachments cannot be compared by text;
* the key is the sender identity plus the NFC-normalized text, case-sensitive — two people
  saying the same thing are both kept, and "Token=ABC" vs "token=abc" are different;
* the first occurrence is always kept; it anchors the summarized branch.

Duplicates are found per key in fixed time buckets of ``window_ms``: a message is a repeat when
its own bucket already saw an earlier-or-equal timestamp, or when the latest timestamp of the
previous bucket lies 0..window_ms before it (inclusive). Backdated streams therefore do not
swallow later, independent ones.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "DEFAULT_DUPLICATE_USER_MESSAGE_WINDOW_MS",
    "MIN_DUPLICATE_USER_MESSAGE_CHARS",
    "dedupe_duplicate_user_messages_for_compaction",
]

DEFAULT_DUPLICATE_USER_MESSAGE_WINDOW_MS = 60_000
MIN_DUPLICATE_USER_MESSAGE_CHARS = 24

#: Where OpenClaw persists per-turn metadata (sender identity, media) on a user message.
_METADATA_KEY = "__openclaw"
# JavaScript's \s, exactly (Python's \s also matches U+001C..U+001F and U+0085).
_WHITESPACE_RE = re.compile(
    "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+"
)

T = TypeVar("T")


@dataclass(slots=True)
class _Bucket:
    earliest: float
    latest: float


def dedupe_duplicate_user_messages_for_compaction(
    messages: Sequence[T],
    options: Mapping[str, Any] | None = None,
    *,
    window_ms: float | None = None,
) -> list[T]:
    """A new list without later repeats of the same user message inside ``window_ms``.

    ``options`` may carry OpenClaw's ``windowMs``. A negative or NaN window returns a copy
    unchanged; ``0`` only matches identical timestamps; ``inf`` matches any later repeat.
    Messages are pydantic models or wire-format dicts and are never modified.
    """
    if window_ms is None:
        window_ms = (options or {}).get("windowMs", DEFAULT_DUPLICATE_USER_MESSAGE_WINDOW_MS)
    if isinstance(window_ms, bool) or not isinstance(window_ms, int | float):
        raise TypeError(f"window_ms must be a number, got {type(window_ms).__name__}")
    if math.isnan(window_ms) or window_ms < 0:
        return list(messages)

    seen: dict[str, dict[float, _Bucket]] = {}
    result: list[T] = []
    for message in messages:
        signature = _duplicate_signature(message)
        if signature is None:
            result.append(message)
            continue
        key, timestamp = signature
        buckets = seen.setdefault(key, {})
        bucket_id = timestamp if window_ms == 0 else math.floor(timestamp / window_ms)
        current = buckets.get(bucket_id)
        previous = buckets.get(bucket_id - 1) if window_ms > 0 else None
        elapsed = timestamp - previous.latest if previous is not None else None
        duplicate = (current is not None and current.earliest <= timestamp) or (
            elapsed is not None and 0 <= elapsed <= window_ms
        )
        if current is None:
            buckets[bucket_id] = _Bucket(timestamp, timestamp)
        else:
            current.earliest = min(current.earliest, timestamp)
            current.latest = max(current.latest, timestamp)
        if not duplicate:
            result.append(message)
    return result


def _duplicate_signature(message: Any) -> tuple[str, float] | None:
    """``(key, timestamp)`` for a candidate message, None for everything else."""
    if _field(message, "role") != "user":
        return None
    timestamp = _field(message, "timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        return None
    if not math.isfinite(timestamp):
        return None
    text = _normalized_text(_field(message, "content"))
    if not text or _utf16_length(text) < MIN_DUPLICATE_USER_MESSAGE_CHARS:
        return None
    metadata = _field(message, _METADATA_KEY)
    metadata = metadata if isinstance(metadata, Mapping) else {}
    if _has_persisted_media(metadata):
        return None
    sender_id = _optional_string(metadata.get("senderId"))
    sender_username = _optional_string(metadata.get("senderUsername"))
    sender_name = _optional_string(metadata.get("senderName"))
    if sender_id:
        source, identity = "id", sender_id
    elif sender_username:
        source, identity = "username", sender_username
    elif sender_name:
        source, identity = "name", sender_name
    else:
        source, identity = "", ""
    key = [source, identity, unicodedata.normalize("NFC", text)]
    return json.dumps(key, ensure_ascii=False, separators=(",", ":")), timestamp


def _normalized_text(content: Any) -> str | None:
    """Whitespace-collapsed text of text-only content; None when any block is not text."""
    if isinstance(content, str):
        return _collapse(content)
    if not isinstance(content, list):
        return None
    parts = []
    for block in content:
        if _field(block, "type") != "text":
            return None
        text = _field(block, "text")
        if not isinstance(text, str):
            return None
        parts.append(text)
    return _collapse("\n".join(parts))


def _utf16_length(text: str) -> int:
    """JavaScript's ``String.length``, which the 24-character minimum is measured in."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def _collapse(text: str) -> str:
    return _WHITESPACE_RE.sub(" ", text).strip(" ")


def _has_persisted_media(metadata: Mapping[str, Any]) -> bool:
    """True when ``__openclaw.media`` holds an entry that names a real attachment.

    Empty entries only keep legacy positional alignment and are not attachments.
    """
    media = metadata.get("media")
    if not isinstance(media, list):
        return False
    return any(_is_meaningful_media(entry) for entry in media)


def _is_meaningful_media(entry: Any) -> bool:
    if not isinstance(entry, Mapping):
        return False
    if _optional_string(entry.get("path")) or _optional_string(entry.get("url")):
        return True
    if _optional_string(entry.get("contentType")) or _optional_string(entry.get("mimeType")):
        return True
    kind = _optional_string(entry.get("kind"))
    return kind is not None and kind != "unknown"


def _optional_string(value: Any) -> str | None:
    """Trimmed string, or None when missing, not a string, or blank."""
    if not isinstance(value, str):
        return None
    trimmed = value.strip()
    return trimmed or None


def _field(record: Any, name: str) -> Any:
    """A wire-format field of a dict, or of a pydantic message (attribute or kept extra)."""
    if isinstance(record, Mapping):
        return record.get(name)
    if name.startswith("__"):
        extra = getattr(record, "model_extra", None) or {}
        return extra.get(name)
    return getattr(record, name, None)
