"""Transcript data model: messages, content blocks and usage.

This is the transcript format, so it has to read and write OpenClaw's session files exactly:

* on the wire and on disk fields use OpenClaw's camelCase names (``stopReason``, ``toolCallId``);
  Python attributes are snake_case and both spellings are accepted on input;
* fields the model does not know are kept (``extra="allow"``) and written back;
* an optional field that was absent stays absent, an explicit ``null`` stays ``null``, and
  fields with real defaults are always written (OpenClaw readers expect ``usage``, ``isError``).

Models are mutable on purpose: a provider streams into one partial ``AssistantMessage`` and
appends to its blocks in place, so a streamed delta costs an attribute write, not a validation.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "AgentMessage",
    "AssistantMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "ContentBlock",
    "Cost",
    "CustomMessage",
    "ImageContent",
    "Message",
    "OpaqueContent",
    "OpaqueMessage",
    "StopReason",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "dump_message",
    "dump_messages",
    "load_message",
    "load_messages",
    "now_ms",
]

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]
Number: TypeAlias = int | float


def now_ms() -> int:
    """Wall-clock milliseconds, the timestamp unit of OpenClaw transcripts."""
    return time.time_ns() // 1_000_000


class WireModel(BaseModel):
    """Base of every transcript model: camelCase on the wire, lossless round trips."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
    )

    #: Fields written even when never set: every field whose default is not ``None``.
    _always_written: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._always_written = frozenset(
            name
            for name, field in cls.model_fields.items()
            if field.is_required() or field.default is not None or field.default_factory
        )

    def model_post_init(self, context: Any, /) -> None:
        # Defaults of non-optional fields count as set so exclude_unset writes them.
        self.__pydantic_fields_set__.update(self._always_written)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict in OpenClaw's wire format."""
        # model_dump's own arguments, straight to its serializer (every recorded message
        # is dumped once: the wrapper's keyword forwarding was a fifth of the cost)
        return self.__pydantic_serializer__.to_python(
            self, mode="json", by_alias=True, exclude_unset=True
        )

    def to_json(self) -> str:
        """Compact JSON in OpenClaw's wire format."""
        return self.model_dump_json(by_alias=True, exclude_unset=True)


_W = TypeVar("_W", bound=WireModel)
_set_slot = object.__setattr__


def built_unvalidated(cls: type[_W], values: dict[str, Any], fields_set: set[str]) -> _W:
    """What ``cls(**given)`` makes, from values the runtime made itself, without validating.
    Internal (not in ``__all__``): a caller's values must go through validation.

    Only for values already of the fields' exact types, where validation would return them
    unchanged: ``values`` holds every field in declaration order, ``fields_set`` the given
    names and ``cls._always_written``. Pydantic's ``model_construct`` is Python code, slower
    than validation; this is the four slot writes it ends with.
    """
    model = object.__new__(cls)
    _set_slot(model, "__dict__", values)
    _set_slot(model, "__pydantic_fields_set__", fields_set)
    _set_slot(model, "__pydantic_extra__", {})
    _set_slot(model, "__pydantic_private__", None)
    return model


# --------------------------------------------------------------------------- content blocks


class TextContent(WireModel):
    """Plain text written by the user, the assistant or a tool."""

    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None


class ThinkingContent(WireModel):
    """Reasoning text; ``thinking_signature`` is the provider's opaque replay token."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None


class ImageContent(WireModel):
    """A base64 image."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ToolCall(WireModel):
    """A structured tool call made by the assistant."""

    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought_signature: str | None = None


class OpaqueContent(WireModel):
    """A block of a type this runtime does not know; kept so nothing is lost."""

    type: str


_BLOCK_TAGS = frozenset({"text", "thinking", "image", "toolCall"})


def _block_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    # a list or an object as "type" is not hashable: it must fail validation, not raise
    return kind if isinstance(kind, str) and kind in _BLOCK_TAGS else "opaque"


ContentBlock: TypeAlias = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ThinkingContent, Tag("thinking")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[ToolCall, Tag("toolCall")]
    | Annotated[OpaqueContent, Tag("opaque")],
    Discriminator(_block_tag),
]


# --------------------------------------------------------------------------- usage


class Cost(WireModel):
    """Money spent on one response, by token kind."""

    input: Number = 0
    output: Number = 0
    cache_read: Number = 0
    cache_write: Number = 0
    total: Number = 0


class Usage(WireModel):
    """Token accounting of one response."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)
    context_usage: dict[str, Any] | None = None


# --------------------------------------------------------------------------- messages


class UserMessage(WireModel):
    """What the user (or the runtime on the user's behalf) said."""

    role: Literal["user"] = "user"
    content: str | list[ContentBlock]
    timestamp: Number = Field(default_factory=now_ms)

    def text(self) -> str:
        """All text of the message joined by newlines."""
        return _joined_text(self.content)


class AssistantMessage(WireModel):
    """A model response; failures are encoded here, never raised (stop_reason error/aborted)."""

    role: Literal["assistant"] = "assistant"
    content: list[ContentBlock] = Field(default_factory=list)
    api: str = ""
    provider: str = ""
    model: str = ""
    response_model: str | None = None
    response_id: str | None = None
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    error_code: str | None = None
    error_type: str | None = None
    error_body: str | None = None
    error_status: int | None = None
    error_retry_after_ms: Number | None = None
    error_output_started: bool | None = None
    timestamp: Number = Field(default_factory=now_ms)

    def text(self) -> str:
        """Visible text of the response joined by newlines (thinking excluded)."""
        return _joined_text(self.content)

    def tool_calls(self) -> list[ToolCall]:
        """The structured tool calls of the response, in order."""
        return [block for block in self.content if isinstance(block, ToolCall)]


class ToolResultMessage(WireModel):
    """The answer to one tool call."""

    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ContentBlock] = Field(default_factory=list)
    details: Any = None
    is_error: bool = False
    timestamp: Number = Field(default_factory=now_ms)

    def text(self) -> str:
        """All text of the result joined by newlines."""
        return _joined_text(self.content)


class CustomMessage(WireModel):
    """Application-defined transcript content; replayed to the model as a user message."""

    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | list[ContentBlock]
    display: bool = True
    details: Any = None
    timestamp: Number = Field(default_factory=now_ms)


class BranchSummaryMessage(WireModel):
    """Summary of a branch the session returned from."""

    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str
    timestamp: Number = Field(default_factory=now_ms)


class CompactionSummaryMessage(WireModel):
    """Summary that stands in for compacted history."""

    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int
    tokens_after: int | None = None
    first_kept_entry_id: str | None = None
    details: Any = None
    timestamp: Number | str = Field(default_factory=now_ms)


class OpaqueMessage(WireModel):
    """A message of a role this runtime does not know; kept verbatim, never sent to a model."""

    role: str


_ROLE_TAGS = frozenset(
    {"user", "assistant", "toolResult", "custom", "branchSummary", "compactionSummary"}
)


def _role_tag(value: Any) -> str:
    role = value.get("role") if isinstance(value, dict) else getattr(value, "role", None)
    return role if isinstance(role, str) and role in _ROLE_TAGS else "opaque"


#: What a provider understands.
Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage

#: Anything a transcript can hold.
AgentMessage: TypeAlias = Annotated[
    Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolResultMessage, Tag("toolResult")]
    | Annotated[CustomMessage, Tag("custom")]
    | Annotated[BranchSummaryMessage, Tag("branchSummary")]
    | Annotated[CompactionSummaryMessage, Tag("compactionSummary")]
    | Annotated[OpaqueMessage, Tag("opaque")],
    Discriminator(_role_tag),
]

_MESSAGE_ADAPTER: TypeAdapter[Any] = TypeAdapter(AgentMessage)
_MESSAGES_ADAPTER: TypeAdapter[list[Any]] = TypeAdapter(list[AgentMessage])


def load_message(data: dict[str, Any] | str | bytes) -> Any:
    """Parse one message from a dict or JSON text (OpenClaw's wire format)."""
    if isinstance(data, str | bytes):
        return _MESSAGE_ADAPTER.validate_json(data)
    return _MESSAGE_ADAPTER.validate_python(data)


def load_messages(data: list[dict[str, Any]] | str | bytes) -> list[Any]:
    """Parse a list of messages from dicts or a JSON array."""
    if isinstance(data, str | bytes):
        return _MESSAGES_ADAPTER.validate_json(data)
    return _MESSAGES_ADAPTER.validate_python(data)


def dump_message(message: WireModel) -> dict[str, Any]:
    """The JSON-ready dict of a message, exactly as OpenClaw writes it."""
    return message.to_dict()


def dump_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """JSON-ready dicts of several messages."""
    return [message.to_dict() for message in messages]


def _joined_text(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    # a list, not a generator: ``join`` makes one from a generator anyway
    return "\n".join([block.text for block in content if isinstance(block, TextContent)])
