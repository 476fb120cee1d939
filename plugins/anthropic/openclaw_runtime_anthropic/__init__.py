"""openclaw-runtime-anthropic: Anthropic Messages API provider, Anthropic failure dialect and
turn validation for openclaw-runtime."""

from __future__ import annotations

from ._provider import AnthropicProvider, messages_url
from ._request import (
    ANTHROPIC_MESSAGES_API,
    DEFAULT_ANTHROPIC_BASE_URL,
    build_request_body,
    convert_messages,
    convert_tools,
)
from ._stream import AnthropicStreamDecoder, map_anthropic_stop_reason
from ._thinking import resolve_thinking_plan
from ._turns import (
    drop_all_trailing_non_user_turns,
    drop_trailing_empty_assistant_turns,
    validate_anthropic_turns,
)

__version__ = "0.1.0"
__all__ = [
    "ANTHROPIC_MESSAGES_API",
    "DEFAULT_ANTHROPIC_BASE_URL",
    "AnthropicProvider",
    "AnthropicStreamDecoder",
    "__version__",
    "build_request_body",
    "convert_messages",
    "convert_tools",
    "drop_all_trailing_non_user_turns",
    "drop_trailing_empty_assistant_turns",
    "map_anthropic_stop_reason",
    "messages_url",
    "resolve_thinking_plan",
    "validate_anthropic_turns",
]
