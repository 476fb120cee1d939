"""``SessionWriter.append_message`` takes a runtime message model straight to its dump: no
generic ``wire_message`` dispatch, and the loader's repair check only for a role it can
repair. Table and random messages (every model, repairable shapes, subclasses, a serializer
that returns no dict, wire dicts, other models) through it and through its previous body,
on memory sessions and session files (durability ``flush`` and ``none``): the same return values, bytes,
entries and errors."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, model_serializer

from openclaw_runtime.messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    OpaqueMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from openclaw_runtime.transcript.append import (
    _WIRE_TO_DICT,
    SessionWriter,
    _loadable_message,
    wire_message,
)
from openclaw_runtime.transcript.memory import MemorySessionStore
from openclaw_runtime.transcript.repair import (
    BLANK_USER_FALLBACK_TEXT,
    STREAM_ERROR_FALLBACK_TEXT,
)
from openclaw_runtime.transcript.store import JsonlSessionStore
from tests.append_support import Clock
from tests.append_support import fixed_entry_ids as _ids


async def _old_append_message(self: Any, message: Any, *, append_mode: str | None = None) -> str:
    """``append_message`` before this change, verbatim."""
    wire = _loadable_message(wire_message(message))
    json_values = getattr(type(message), "to_dict", None) is _WIRE_TO_DICT
    return str(
        await self._append("message", {"message": wire}, append_mode, json_values=json_values)
    )


class _Tagged(UserMessage):
    """A subclass that keeps ``WireModel.to_dict``."""


class _AsText(AssistantMessage):
    """A subclass whose serializer returns no dict (its ``to_dict`` is still the base one)."""

    @model_serializer(mode="plain")
    def _plain(self) -> Any:
        return ["assistant", len(self.content)]


class _Other(BaseModel):
    role: str = "user"
    content: str = " "


def _table(n: int) -> list[Any]:
    call = ToolCall(id=f"c{n}", name="read", arguments={"path": f"/f{n}", "x": 1.5})
    return [
        UserMessage(content=f"hello {n}", timestamp=n),
        UserMessage(content="   ", timestamp=n),  # blank: repaired to the fallback text
        UserMessage(content=[TextContent(text=" "), TextContent(text="keep")], timestamp=n),
        UserMessage(content=[TextContent(text=" ")], timestamp=n),
        UserMessage(content=[ImageContent(data="AAAA", mime_type="image/png")], timestamp=n),
        AssistantMessage(
            content=[TextContent(text="t"), call],
            api="a",
            provider="p",
            model="m",
            usage=Usage(input=3, output=1),
            stop_reason="toolUse",
            timestamp=n,
        ),
        AssistantMessage(content=[], stop_reason="error", error_message="boom", timestamp=n),
        AssistantMessage(content=[], stop_reason="stop", timestamp=n),
        AssistantMessage(content=[ThinkingContent(thinking="p", thinking_signature="s")]),
        ToolResultMessage(
            tool_call_id=f"c{n}", tool_name="read", content=[TextContent(text="out")], timestamp=n
        ),
        ToolResultMessage(tool_call_id=f"c{n}", tool_name="read", content=[], details={"a": 1}),
        CustomMessage(custom_type="note", content="x", display=True),
        BranchSummaryMessage(summary="s", from_id="root"),
        CompactionSummaryMessage(summary="s", tokens_before=10),
        OpaqueMessage(role="somethingElse"),
        OpaqueMessage(role="user"),
        _Tagged(content=" ", timestamp=n),
        _AsText(content=[], stop_reason="error"),
        _Other(),
        {"role": "user", "content": " "},
        {"role": "assistant", "content": [], "stopReason": "error"},
        {"role": "toolResult", "toolCallId": "c", "toolName": "read", "content": []},
        {"role": 3},
    ]


def _messages(seed: int) -> list[Any]:
    rng = random.Random(seed)
    out: list[Any] = []
    for n in range(40):
        out.append(rng.choice(_table(n)))
    return out


async def _run(make: Any, messages: list[Any], old: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    _ids(monkeypatch)
    with monkeypatch.context() as patch:
        if old:
            patch.setattr(SessionWriter, "append_message", _old_append_message)
        session, read = await make()
        returned: list[Any] = []
        for index, message in enumerate(messages):
            side = "side" if index % 7 == 3 else None
            try:
                returned.append(await session.append_message(message, append_mode=side))
            except Exception as exc:  # the same error either way
                returned.append((type(exc), str(exc)))
        await session.flush()
        return returned, await read(session), session.get_entries(), session._tree


def _makers(tmp_path: Path) -> dict[str, Any]:
    def memory() -> Any:
        async def make() -> Any:
            store = MemorySessionStore(now=Clock())
            session = await store.create("s", cwd="/w")

            async def read(_: Any) -> bytes:
                return bytes(store.export_jsonl("s"))

            return session, read

        return make

    counter = iter(range(1_000))

    def files(durability: str) -> Any:
        async def make() -> Any:
            folder = tmp_path / f"{durability}{next(counter)}"
            store = JsonlSessionStore(folder, durability=durability, now=Clock())  # type: ignore[arg-type]
            session = await store.create("s", cwd="/w")

            async def read(handle: Any) -> bytes:
                data = handle.path.read_bytes()
                return data.split(b"\n", 1)[1]  # the header's timestamp is the clock's

            return session, read

        return make

    return {
        "memory": memory(),
        "file, flush": files("flush"),
        "file, none": files("none"),
    }


@pytest.mark.anyio
@pytest.mark.parametrize("store", ["memory", "file, flush", "file, none"])
async def test_append_message_writes_what_the_old_body_wrote(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make = _makers(tmp_path)[store]
    for seed in [-1, *range(6)]:
        messages = _table(0) if seed < 0 else _messages(seed)
        new = await _run(make, messages, False, monkeypatch)
        old = await _run(make, messages, True, monkeypatch)
        assert new[0] == old[0]
        assert new[1] == old[1]
        assert new[2] == old[2]
        assert new[3] == old[3]
        if seed < 0:  # the table: its repairable shapes were written repaired
            assert STREAM_ERROR_FALLBACK_TEXT.encode() in new[1]
            assert BLANK_USER_FALLBACK_TEXT.encode() in new[1]
            assert b'"message":["assistant",0]' in new[1]
