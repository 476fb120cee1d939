"""Image limits and empty-block cleanup for replayed history (OpenClaw
``sanitizeSessionMessagesImages``).

Providers reject a whole request over one bad image in old history. For user and tool-result
messages, and for assistant turns:

* an image block without string ``data``/``mimeType`` becomes the text
  ``[<label>] omitted image payload: missing data or mimeType``;
* empty data becomes ``[<label>] omitted empty image payload``;
* data that is not base64 becomes ``[<label>] omitted image payload: invalid base64``;
* an image larger than ``max_bytes`` (default 5 MiB) becomes ``[<label>] omitted image
  payload: Error: Image could not be reduced below <N>MB (got <M>MB)``. OpenClaw first tries
  to shrink the image; this runtime ships no image codec, so it omits it (and leaves images
  that are only over the pixel limit alone, which providers downscale themselves);
* blank text blocks are removed; a user/tool result left empty gets
  ``[empty content omitted]``, an assistant turn left empty is dropped.

The label defaults to ``session:history`` as in OpenClaw.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Sequence
from typing import Any

from .wire import content_list, role_of, text_block, wget, wset

__all__ = [
    "DEFAULT_IMAGE_MAX_BYTES",
    "EMPTY_CONTENT_PLACEHOLDER",
    "sanitize_content_blocks_images",
    "sanitize_session_messages_images",
]

DEFAULT_IMAGE_MAX_BYTES = 5 * 1024 * 1024
EMPTY_CONTENT_PLACEHOLDER = "[empty content omitted]"
_MIB = 1024 * 1024
_BASE64_RE = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
_DATA_URL_RE = re.compile(r"^data:[^;,]*;base64,", re.IGNORECASE)
_WHITESPACE_RE = re.compile(r"\s+")


def _canonical_base64(data: str) -> str | None:
    cleaned = _WHITESPACE_RE.sub("", _DATA_URL_RE.sub("", data))
    if not cleaned or len(cleaned) % 4 or not _BASE64_RE.match(cleaned):
        return None
    return cleaned


def _decoded_size(data: str) -> int:
    try:
        return len(binascii.a2b_base64(data))
    except binascii.Error:
        return -1


def sanitize_content_blocks_images(
    message: Any, blocks: list[Any], label: str, *, max_bytes: int
) -> list[Any]:
    """The blocks with unusable images replaced by explanatory text blocks."""
    out = []
    for block in blocks:
        if wget(block, "type") != "image":
            out.append(block)
            continue
        data = wget(block, "data")
        mime = wget(block, "mimeType")
        if not isinstance(data, str) or not isinstance(mime, str):
            reason = f"[{label}] omitted image payload: missing data or mimeType"
            out.append(text_block(message, reason))
            continue
        if not data.strip():
            out.append(text_block(message, f"[{label}] omitted empty image payload"))
            continue
        canonical = _canonical_base64(data)
        size = -1 if canonical is None else _decoded_size(canonical)
        if canonical is None or size < 0:
            out.append(text_block(message, f"[{label}] omitted image payload: invalid base64"))
            continue
        if size > max_bytes:
            limit_mb = f"{max_bytes / _MIB:.0f}"
            got_mb = f"{size / _MIB:.2f}"
            reason = (
                f"[{label}] omitted image payload: Error: Image could not be reduced below "
                f"{limit_mb}MB (got {got_mb}MB)"
            )
            out.append(text_block(message, reason))
            continue
        out.append(block if canonical == data else wset(block, data=canonical))
    return out


def _is_blank_text(block: Any) -> bool:
    if wget(block, "type") != "text":
        return False
    text = wget(block, "text")
    return isinstance(text, str) and not text.strip()


def sanitize_session_messages_images(
    messages: Sequence[Any],
    *,
    label: str = "session:history",
    max_bytes: int | None = None,
) -> list[Any]:
    """Apply the image limits and blank-block cleanup to every message (pure)."""
    limit = max(1, int(max_bytes)) if max_bytes is not None else DEFAULT_IMAGE_MAX_BYTES
    out = []
    touched = False
    for message in messages:
        role = role_of(message)
        content = content_list(message)
        if content is None or role not in ("user", "toolResult", "assistant"):
            out.append(message)
            continue
        if role == "assistant":
            kept = [block for block in content if not _is_blank_text(block)]
            cleaned = sanitize_content_blocks_images(message, kept, label, max_bytes=limit)
            if not cleaned and not wget(message, "providerReplay"):
                touched = True
                continue
        else:
            sized = sanitize_content_blocks_images(message, content, label, max_bytes=limit)
            cleaned = [block for block in sized if not _is_blank_text(block)]
            if not cleaned:
                cleaned = [text_block(message, EMPTY_CONTENT_PLACEHOLDER)]
        if len(cleaned) == len(content) and all(
            a is b for a, b in zip(cleaned, content, strict=True)
        ):
            out.append(message)
            continue
        touched = True
        out.append(wset(message, content=cleaned))
    return out if touched else messages if isinstance(messages, list) else list(messages)
