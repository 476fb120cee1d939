"""The token estimator's record access (``_get``) reads models without pydantic's slow
``__getattr__``, and still returns exactly what plain ``getattr`` semantics return."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from openclaw_runtime.context import tokens
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def reference_get(record: Any, name: str, wire_name: str | None = None) -> Any:
    """The semantics the fast path must keep (the estimator's record access before it)."""
    if isinstance(record, Mapping):
        if wire_name is not None and wire_name in record:
            return record[wire_name]
        return record.get(name)
    value = getattr(record, name, None)
    if value is None and wire_name is not None:
        extra = getattr(record, "model_extra", None)
        if extra:
            value = extra.get(wire_name)
    return value


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = "custom"
    content: Any = None

    @property
    def kind(self) -> str:
        return "computed"


class ModelMapping(BaseModel, Mapping[str, Any]):  # type: ignore[misc]
    """A model that is also a mapping: the mapping view wins, as before."""

    role: str = "user"

    def __getitem__(self, key: str) -> Any:
        return {"role": "from-mapping", "toolName": "t"}[key]

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]
        return iter(["role", "toolName"])

    def __len__(self) -> int:
        return 2


class Plain:
    role = "assistant"
    model_extra: ClassVar[dict[str, Any]] = {"toolCalls": [1]}


RECORDS: list[Any] = [
    UserMessage(content="hi"),
    AssistantMessage(content=[TextContent(text="a"), ToolCall(id="c", name="read")]),
    ToolResultMessage(tool_call_id="c", tool_name="read", content=[TextContent(text="r")]),
    TextContent(text="t"),
    ToolCall(id="c", name="read", arguments={"p": 1}),
    Loose(toolName="extra-wire", tool_name=None, type="toolResult", exitCode=3),
    Loose(role="bashExecution", exit_code=0, exitCode=2),
    ModelMapping(),
    {"role": "toolResult", "toolName": "x", "tool_name": "y"},
    {"type": "text", "text": "x"},
    Plain(),
]
NAMES = [
    ("role", None),
    ("type", None),
    ("content", None),
    ("kind", None),
    ("text", None),
    ("arguments", None),
    ("tool_name", "toolName"),
    ("tool_calls", "toolCalls"),
    ("exit_code", "exitCode"),
    ("exclude_from_context", "excludeFromContext"),
    ("model_extra", None),
]


def test_record_access_matches_getattr_semantics() -> None:
    for record in RECORDS:
        for name, wire in NAMES:
            for _ in range(2):  # the second read comes from the per-class caches
                got = tokens._get(record, name, wire)
                assert got == reference_get(record, name, wire), (type(record), name, wire)
        assert tokens._is_record(record) is isinstance(record, Mapping | BaseModel)
    assert tokens._is_record("text") is False and tokens._is_record(3) is False
