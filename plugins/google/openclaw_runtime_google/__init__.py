"""openclaw-runtime-google: Google Gemini provider, Gemini failure dialect and turn rules for
openclaw-runtime."""

from __future__ import annotations

from ._provider import GeminiProvider
from ._request import (
    DEFAULT_GOOGLE_BASE_URL,
    GOOGLE_GENERATIVE_AI_API,
    build_request_body,
    convert_messages,
    convert_tools,
    resolve_thinking_config,
    stream_url,
)
from ._schema import GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS, clean_schema_for_gemini
from ._stream import GeminiStreamDecoder, map_finish_reason
from ._turns import sanitize_google_turn_ordering, validate_gemini_turns

__version__ = "0.1.0"
__all__ = [
    "DEFAULT_GOOGLE_BASE_URL",
    "GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS",
    "GOOGLE_GENERATIVE_AI_API",
    "GeminiProvider",
    "GeminiStreamDecoder",
    "__version__",
    "build_request_body",
    "clean_schema_for_gemini",
    "convert_messages",
    "convert_tools",
    "map_finish_reason",
    "resolve_thinking_config",
    "sanitize_google_turn_ordering",
    "stream_url",
    "validate_gemini_turns",
]
