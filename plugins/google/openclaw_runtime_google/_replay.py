"""Gemini replays history through the shared transform (``openclaw_runtime.providers.replay``)."""

from __future__ import annotations

from openclaw_runtime.providers.replay import (
    FAILED_ASSISTANT_REPLAY_TEXT,
    MISSING_TOOL_RESULT_TEXT,
    STREAM_ERROR_FALLBACK_TEXT,
    TOOL_IMAGE_OMITTED_TEXT,
    USER_IMAGE_OMITTED_TEXT,
    prepare_replay_messages,
)

__all__ = [
    "FAILED_ASSISTANT_REPLAY_TEXT",
    "MISSING_TOOL_RESULT_TEXT",
    "STREAM_ERROR_FALLBACK_TEXT",
    "TOOL_IMAGE_OMITTED_TEXT",
    "USER_IMAGE_OMITTED_TEXT",
    "prepare_replay_messages",
]
