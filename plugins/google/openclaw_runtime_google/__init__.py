"""openclaw-runtime-google: Google Gemini provider, Gemini failure dialect and turn rules for
openclaw-runtime."""

import typing as _typing

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from ._provider import GeminiProvider  # noqa: I001 (packed: a face has at most 100 lines)
    from ._request import (
        DEFAULT_GOOGLE_BASE_URL, GOOGLE_GENERATIVE_AI_API, build_request_body, convert_messages,
        convert_tools, resolve_thinking_config, stream_url,
    )
    from ._schema import GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS, clean_schema_for_gemini
    from ._stream import GeminiStreamDecoder, map_finish_reason
    from ._turns import sanitize_google_turn_ordering, validate_gemini_turns
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "_provider": "GeminiProvider",
    "_request": (
        "DEFAULT_GOOGLE_BASE_URL GOOGLE_GENERATIVE_AI_API build_request_body convert_messages "
        "convert_tools resolve_thinking_config stream_url"
    ),
    "_schema": "GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS clean_schema_for_gemini",
    "_stream": "GeminiStreamDecoder map_finish_reason",
    "_turns": "sanitize_google_turn_ordering validate_gemini_turns",
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
]  # fmt: skip
