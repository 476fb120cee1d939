"""openclaw-runtime-hello: the example plugin of the plugin-writing tutorial."""

from __future__ import annotations

from ._provider import FORBIDDEN_WORD, HELLO_MODEL, hello_stream_fn

__version__ = "0.1.0"
__all__ = ["FORBIDDEN_WORD", "HELLO_MODEL", "__version__", "hello_stream_fn"]
