"""How the server reads and answers one request: the ``ChatRequest`` it parsed, a ``Plan``
(decided under the lock, carried out by the handler outside it), the ``Completion`` it may
carry, and the routing of request paths."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import orjson

from .scripts import estimate_prompt_tokens

__all__ = ["ChatRequest", "Completion", "Plan", "route"]


@dataclass(slots=True)
class Completion:
    """An answer to stream (or return whole): what it says and how it is delivered."""

    model: str
    text: str = ""
    reasoning: str = ""
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)  # id, name, json args
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    cut_after: int | None = None  # send this many SSE events, then drop the connection
    error_event: Any = None  # sent as the last event before a cut
    hold_after: int | None = None  # send this many SSE events, then wait for release_holds()


@dataclass(slots=True)
class Plan:
    """How to answer one request, decided under the lock and carried out outside it."""

    kind: Literal["error", "completion", "hang", "json", "empty_stream", "headers_only"]
    index: int  # the request's sequence number (see ``_record``)
    status: int = 200
    payload: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    completion: Completion | None = None
    stream: bool = True
    include_usage: bool = False
    delay_s: float = 0.0
    before_headers: bool = False


def route(path: str) -> str | None:
    """``chat`` / ``models`` for the endpoints served, with or without the ``/v1`` prefix."""
    clean = urlsplit(path).path.rstrip("/")
    if clean.startswith("/v1/"):
        clean = clean[3:]
    if clean == "/chat/completions":
        return "chat"
    if clean == "/models":
        return "models"
    return None


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A chat-completions body as the server reads it. Fields keep what was sent (``model``
    and ``raw_messages`` may be missing or malformed) so the pipeline can refuse it."""

    body: Any
    model: Any
    raw_messages: Any
    tools: list[Any]
    stream: bool
    include_usage: bool
    estimated_tokens: int

    @property
    def parsed(self) -> bool:
        """Whether the body was a JSON object."""
        return isinstance(self.body, dict)

    @property
    def messages(self) -> list[Any]:
        """The messages if they were a list, else none."""
        return self.raw_messages if isinstance(self.raw_messages, list) else []

    @classmethod
    def parse(cls, raw: bytes) -> ChatRequest:
        """Read a request body; malformed JSON reads as no body."""
        body: Any = None
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        parsed = isinstance(body, dict)
        model = body.get("model") if parsed else None
        messages = body.get("messages") if parsed else None
        tools_raw = body.get("tools") if parsed else None
        tools = tools_raw if isinstance(tools_raw, list) else []
        stream = bool(body.get("stream")) if parsed else False
        options = body.get("stream_options") if parsed else None
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        message_list = messages if isinstance(messages, list) else []
        estimated = estimate_prompt_tokens(message_list, tools) if message_list else 0
        return cls(body, model, messages, tools, stream, include_usage, estimated)
