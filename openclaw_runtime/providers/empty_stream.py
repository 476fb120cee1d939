"""When a streamed answer comes back empty, ask once, without streaming, what went wrong.

llama.cpp's server (and llama-cpp-python's) answers an oversized prompt in streaming mode with
a 200 and an empty body, or closes the connection right after the headers; the reason ("Requested
tokens (N) exceed context window of M") only reaches its log. The same request without
streaming gets a 400 that says "maximum context length is M tokens", which the runner's
context-overflow recovery understands (learn the limit, compact, retry). So when a stream ends
before its first event and the prompt is large enough to have overflowed something, the
provider makes one cheap non-streaming request (``max_tokens: 1``) and reports its error.

A small prompt against a known window never overflowed: its empty stream stays an ordinary
empty response (retried by the runner like any other), and no extra request is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

__all__ = [
    "DIAGNOSTIC_NOTE",
    "LARGE_PROMPT_TOKENS",
    "EmptyStreamKind",
    "diagnostic_request_body",
    "estimate_payload_tokens",
    "should_diagnose_empty_stream",
]

EmptyStreamKind: TypeAlias = Literal["empty", "cut"]

#: A prompt this large (estimated) may overflow a local server's context, whatever the
#: catalog says: llama-cpp-python's default ``n_ctx`` is 512 tokens.
LARGE_PROMPT_TOKENS = 512
#: ... and so may any prompt above this share of the model's known window.
LARGE_PROMPT_WINDOW_SHARE = 0.5
#: Rough bytes of request JSON per token (the provider layer has no tokenizer).
_PAYLOAD_BYTES_PER_TOKEN = 4

#: Appended to an error the diagnostic request found, so the timeline says where it came from.
DIAGNOSTIC_NOTE = " (reported by a non-streaming diagnostic request after an empty stream)"


def estimate_payload_tokens(payload: bytes | str) -> int:
    """Tokens of a request body, estimated from its size."""
    return len(payload) // _PAYLOAD_BYTES_PER_TOKEN


def should_diagnose_empty_stream(
    kind: EmptyStreamKind | None,
    *,
    estimated_prompt_tokens: int,
    context_window: int | None,
    already_diagnosed: bool = False,
) -> bool:
    """Make the diagnostic request? Only for a stream that ended before any event (``kind``:
    ``empty`` body or ``cut`` after the headers), once, and only when the prompt is large: at
    least ``LARGE_PROMPT_TOKENS``, or half of the window, or the window is unknown."""
    if kind is None or already_diagnosed:
        return False
    if not context_window or context_window <= 0:
        return True
    if estimated_prompt_tokens >= LARGE_PROMPT_TOKENS:
        return True
    return estimated_prompt_tokens >= context_window * LARGE_PROMPT_WINDOW_SHARE


def diagnostic_request_body(body: Mapping[str, Any], max_tokens_field: str) -> dict[str, Any]:
    """The streamed request's body as a non-streaming one that asks for one token."""
    out = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    out.pop("max_tokens", None)
    out.pop("max_completion_tokens", None)
    out["stream"] = False
    out[max_tokens_field] = 1
    return out
