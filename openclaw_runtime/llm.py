"""What a provider is given: the model, the request context and the stream options.

The kernel only ever talks to a ``StreamFn``; everything a provider needs to make one request
travels in these three values.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from typing import Any, Literal, Protocol, TypeAlias

from pydantic import Field, model_validator

from .abort import AbortSignal
from .events import AssistantMessageEventStream
from .messages import Message, WireModel

__all__ = [
    "Context",
    "Model",
    "ModelCost",
    "StreamFn",
    "StreamOptions",
    "ThinkingLevel",
    "Tool",
]

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]


def _text_only() -> list[Literal["text", "image"]]:
    return ["text"]


class ModelCost(WireModel):
    """Price per million tokens."""

    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0


class Model(WireModel):
    """One model at one provider, described the way OpenClaw's catalog describes it."""

    id: str
    name: str = ""
    api: str
    provider: str
    base_url: str = ""
    reasoning: bool = False
    input: list[Literal["text", "image"]] = Field(default_factory=_text_only)
    cost: ModelCost = Field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 8_192
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    #: Provider spelling of each thinking level; ``None`` marks a level the model lacks.
    thinking_level_map: dict[str, str | None] | None = None

    @model_validator(mode="after")
    def _default_name(self) -> Model:
        if not self.name:
            self.name = self.id
        return self

    @property
    def ref(self) -> str:
        """``provider/id``, the canonical way to name this model in config and on the CLI."""
        return f"{self.provider}/{self.id}"


@dataclass(slots=True)
class Tool:
    """A tool as the model sees it: a name, a description and a JSON schema of arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(slots=True)
class Context:
    """One request: system prompt, provider-facing messages and tools."""

    system_prompt: str = ""
    messages: list[Message] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)


@dataclass(slots=True)
class StreamOptions:
    """Per-request options. ``extra`` carries provider-specific settings by name."""

    signal: AbortSignal | None = None
    api_key: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    reasoning: ThinkingLevel | None = None
    thinking_budgets: dict[str, int] | None = None
    session_id: str | None = None
    headers: dict[str, str] | None = None
    connect_timeout: float | None = None
    read_timeout: float | None = None
    idle_timeout: float | None = None
    metadata: dict[str, Any] | None = None
    on_payload: Callable[[Any, Model], Any] | None = None
    on_response: Callable[[Any, Model], Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Text deltas of one block that arrive in one network read may be delivered as one
    #: event whose delta is their concatenation (they arrived at the same instant; the text,
    #: the partial message at each event and the final message are the same). ``False``: one
    #: event per server chunk, for consumers whose result depends on the delta boundaries
    #: (block replies cut while the text streams). Providers that read one event at a time
    #: ignore it.
    coalesce_deltas: bool = True

    def with_request(self, *, signal: AbortSignal | None, api_key: str | None) -> StreamOptions:
        """A copy for one request, bound to the run's signal and the key resolved for it.

        ``dataclasses.replace`` looked every field up by name on every model call; the
        options are read in one call (field order) and passed back by position instead —
        the same shallow copy. A subclass still goes through ``replace``."""
        if type(self) is not StreamOptions:
            return replace(self, signal=signal, api_key=api_key or self.api_key)
        values = _read_fields(self)
        return StreamOptions(signal, api_key or values[1], *values[2:])

    def __repr__(self) -> str:  # never print the key
        key = "set" if self.api_key else "unset"
        return f"StreamOptions(api_key={key}, reasoning={self.reasoning!r})"


#: Every field of ``StreamOptions`` in order (``signal`` and ``api_key`` first), read at once.
_read_fields = attrgetter(*(item.name for item in fields(StreamOptions)))


class StreamFn(Protocol):
    """A provider's request function.

    Contract: it never raises for request, model or transport failures. Every failure ends
    the returned stream with an ``error`` event whose message has ``stop_reason`` ``"error"``
    (or ``"aborted"`` when the options' signal fired) and carries the facts needed to
    classify it. It may return the stream directly or an awaitable of it.
    """

    def __call__(
        self, model: Model, context: Context, options: StreamOptions, /
    ) -> AssistantMessageEventStream | Awaitable[AssistantMessageEventStream]: ...
