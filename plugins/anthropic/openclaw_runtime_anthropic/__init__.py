"""openclaw-runtime-anthropic: Anthropic Messages API provider, Anthropic failure dialect and
turn validation for openclaw-runtime."""

import typing as _typing

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from ._provider import (  # noqa: I001 (packed: a face has at most 100 lines)
        AnthropicProvider, messages_url,
    )
    from ._request import (
        ANTHROPIC_MESSAGES_API, DEFAULT_ANTHROPIC_BASE_URL, build_request_body, convert_messages,
        convert_tools,
    )
    from ._stream import AnthropicStreamDecoder, map_anthropic_stop_reason
    from ._thinking import resolve_thinking_plan
    from ._turns import (
        drop_all_trailing_non_user_turns, drop_trailing_empty_assistant_turns,
        validate_anthropic_turns,
    )
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "_provider": "AnthropicProvider messages_url",
    "_request": (
        "ANTHROPIC_MESSAGES_API DEFAULT_ANTHROPIC_BASE_URL build_request_body convert_messages "
        "convert_tools"
    ),
    "_stream": "AnthropicStreamDecoder map_anthropic_stop_reason",
    "_thinking": "resolve_thinking_plan",
    "_turns": (
        "drop_all_trailing_non_user_turns drop_trailing_empty_assistant_turns "
        "validate_anthropic_turns"
    ),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names.split()}


def __getattr__(name: str) -> _typing.Any:
    """Import the module behind a public name on first use, then keep the name here."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module  # lazy: start-up time

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


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
]  # fmt: skip
