"""What a test scripts the fault-injecting server with, and what it records.

``Fault`` (an injected failure), ``Reply`` (a scripted completion), ``KeyBehavior`` (how one
API key is treated) and ``ServedRequest`` (one recorded request), with the constants that
bound them and the two estimates the server and its tests share (prompt tokens, key
fingerprints).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson

__all__ = [
    "DEFAULT_CHAOS_KINDS",
    "DEFAULT_CONTEXT_WINDOW",
    "FAULT_KINDS",
    "OVERFLOW_STYLES",
    "Fault",
    "KeyBehavior",
    "Reply",
    "ServedRequest",
    "api_key_fingerprint",
    "echo_key",
    "estimate_prompt_tokens",
]

#: The context window of every model when the server is built without ``models``.
DEFAULT_CONTEXT_WINDOW = 128_000

#: Every ``Fault.kind``.
FAULT_KINDS = frozenset(
    {
        "status",
        "rate_limit",
        "overloaded",
        "server_error",
        "context_overflow",
        "cut_stream",
        "hang",
        "hold",
        "delay",
        "empty",
        "reasoning_only",
    }
)

#: Every ``overflow_style`` (how a prompt above the window is answered).
OVERFLOW_STYLES = ("openai", "llamacpp", "llamacpp_cut")

#: What ``chaos()`` injects unless told otherwise: the transient failures a client must
#: survive by retrying, rotating keys or falling back (no ``hang``: it needs an idle timeout).
DEFAULT_CHAOS_KINDS: tuple[str, ...] = ("rate_limit", "overloaded", "server_error", "cut_stream")


class KeyBehavior(StrEnum):
    """How the server treats requests made with one API key."""

    OK = "ok"
    RATE_LIMITED = "rate_limited"  # 429 rate_limit_exceeded with retry-after
    INVALID = "invalid"  # 401 invalid_api_key
    BILLING = "billing"  # 429 insufficient_quota
    OVERLOADED = "overloaded"  # 503 overloaded


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected failure, applied to the next ``times`` requests that match it.

    ``kind`` is one of ``FAULT_KINDS``; the other fields tune it: ``status`` / ``body`` /
    ``headers`` (any HTTP error for ``"status"``; overrides for the other error kinds),
    ``retry_after_s`` (the ``retry-after`` header of ``"rate_limit"``; ``None`` sends none),
    ``after_chunks`` (SSE events sent before ``"cut_stream"`` closes the connection),
    ``before_headers`` (``"hang"`` before the status line instead of after the headers),
    ``seconds`` (``"delay"``). ``"hold"`` streams the brain's (or a queued ``Reply``'s)
    answer, but stops after ``after_chunks`` SSE events and holds the stream open until the
    test calls ``release_holds()`` (or the client goes away), then finishes it normally.
    Matchers: ``model`` and ``api_key`` (``None`` matches any).
    A ``"cut_stream"`` fault with a ``body`` sends it as one last SSE ``data:`` event (a
    provider's mid-stream error) before it closes the connection. ``echo_key``: every
    ``{api_key}`` in ``body`` becomes the request's full API key, as providers that repeat
    the key in their errors do (for redaction tests; the key is never recorded).
    """

    kind: str
    status: int | None = None
    body: Mapping[str, Any] | str | None = None
    headers: Mapping[str, str] | None = None
    retry_after_s: float | None = 1.0
    after_chunks: int = 2
    before_headers: bool = False
    seconds: float = 0.5
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never printed
    times: int = 1
    echo_key: bool = False

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {FAULT_KINDS}")
        if self.kind == "status" and (self.status is None or not 400 <= self.status < 600):
            raise ValueError("Fault('status') needs an HTTP error status (400-599)")
        if self.times < 1:
            raise ValueError("Fault.times must be at least 1")
        if self.after_chunks < 0 or self.seconds < 0:
            raise ValueError("Fault.after_chunks and Fault.seconds must not be negative")

    def matches(self, model: str | None, api_key: str | None) -> bool:
        """Does this fault apply to a request for ``model`` made with ``api_key``?"""
        return (self.model is None or self.model == model) and (
            self.api_key is None or self.api_key == api_key
        )


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted completion that replaces the brain for the next request that matches.

    ``tool_calls`` are ``(name, arguments)`` pairs; ``finish_reason`` defaults to
    ``"tool_calls"`` when there are tool calls and ``"stop"`` otherwise.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[tuple[str, Mapping[str, Any]]] = ()
    finish_reason: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """What one request asked for and what the server did with it.

    ``outcome`` is ``"ok"`` (a text answer), ``"tool_call"``, ``"summary"``, ``"reply"`` (a
    queued ``Reply``), ``"overflow"`` (the context-window check), a key behaviour
    (``"unauthorized"``, ``"rate_limited"``, ``"billing"``, ``"overloaded"``), a fault kind
    (``"rate_limit"``, ``"cut_stream"``, ``"hang"``, ...), ``"bad_request"``,
    ``"unknown_model"``, ``"models"`` (``GET /v1/models``) or ``"not_found"``. ``fault`` names
    the fault applied (also ``"delay"``, whose outcome is the answer that followed) and
    ``chaos`` says whether chaos picked it. ``disconnected``: the client went away before the
    response was complete.
    """

    method: str
    path: str
    model: str | None
    api_key_fingerprint: str | None
    message_count: int
    estimated_tokens: int
    stream: bool
    tools: tuple[str, ...]
    outcome: str
    status: int
    fault: str | None = None
    chaos: bool = False
    disconnected: bool = False
    body: Any = field(default=None, repr=False, compare=False)


def api_key_fingerprint(key: str | None) -> str | None:
    """A key's identity without the key: its first 4 characters (only for keys long enough
    that they reveal little) and the start of its SHA-256, e.g. ``sk-a...1f2e3d4c``."""
    if key is None:
        return None
    digest = hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:8]
    prefix = key[:4] if len(key) >= 12 else ""
    return f"{prefix}...{digest}"


def echo_key(body: Any, api_key: str) -> Any:
    """``body`` with every ``{api_key}`` replaced by ``api_key`` (strings inside mappings too)."""
    if isinstance(body, str):
        return body.replace("{api_key}", api_key)
    if isinstance(body, Mapping):
        return {k: echo_key(v, api_key) for k, v in body.items()}
    if isinstance(body, list):
        return [echo_key(v, api_key) for v in body]
    return body


def estimate_prompt_tokens(messages: Sequence[Any], tools: Sequence[Any] = ()) -> int:
    """The server's prompt-size estimate: ``ceil(len(json(messages + tools)) / 4)``."""
    return math.ceil(len(orjson.dumps([*messages, *tools])) / 4)
