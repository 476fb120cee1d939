"""The session's history is its own copy of every recorded message.

A subscriber that edits the messages its events carry once they are recorded (every
``message_end`` of the last turn, all of ``agent_end``), or a caller that edits the messages
of a ``RunResult``, changes neither the next run's requests nor the transcript nor the
session's own context. Real runs over HTTP against the fault-injecting OpenAI server, a tool
loop of three calls, file-backed and memory sessions, asyncio and trio.

(Within a run the kernel's context holds the very messages the events carry, as OpenClaw's
does: a subscriber that edits an assistant turn before its tools ran changes what they run
and what the rest of the run sends. Not covered here: not a guarantee this runtime makes.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from tests.run_support import mock_openai_config, mock_openai_server, read

MARK = "EDITED-BY-SOMEONE-ELSE"
CALLS = 3


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with mock_openai_server() as running:
        yield running


def _edit(message: Any) -> None:
    """Change everything a caller could reach in a message, in place."""
    if isinstance(message, AssistantMessage | ToolResultMessage):
        for block in message.content:
            if isinstance(block, TextContent):
                block.text = MARK
            elif isinstance(block, ToolCall):
                block.arguments["path"] = MARK
                block.arguments[MARK] = MARK
        message.content.append(TextContent(text=MARK))
    if isinstance(message, AssistantMessage):
        message.usage.input = 123_456_789
        message.model = MARK
    if isinstance(message, ToolResultMessage):
        message.tool_name = MARK


def _has_mark(value: Any) -> bool:
    return MARK in json.dumps(value, default=str) or "123456789" in json.dumps(value, default=str)


async def _session_records(runtime: Runtime, session_id: str, tmp_path: Path) -> Any:
    session = await runtime.checkout_session(session_id, cwd=str(tmp_path))
    try:
        entries = session.get_entries()
        context = [m.to_dict() for m in session.build_session_context().messages]
    finally:
        await runtime.checkin_session(session)
    return entries, context


@pytest.mark.anyio
@pytest.mark.parametrize("memory", [False, True], ids=["file", "memory"])
async def test_edits_to_events_and_results_reach_no_request_and_no_transcript(
    tmp_path: Path, server: FaultInjectingOpenAIServer, memory: bool
) -> None:
    config = mock_openai_config(tmp_path / "state", server)
    runtime = Runtime(config, load_entrypoints=False, memory=memory)
    edited: list[str] = []

    def subscriber(event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_end" and event.message.role == "assistant":
            if event.message.stop_reason == "stop":  # the last turn: nothing is sent after it
                _edit(event.message)
                edited.append("last turn")
        elif kind == "agent_end":
            for message in event.messages:
                _edit(message)
                edited.append(message.role)

    for n in range(CALLS):
        server.enqueue(Reply(tool_calls=[("read", {"path": f"f{n}.txt"})]))
    server.enqueue(Reply(text="all read"))
    server.enqueue(Reply(text="second run"))
    try:
        first = await runtime.run("read them", session_id="s1", tools=[read], on_event=subscriber)
        assert first.ok
        assert first.messages[-1].text() == "all read"
        assert edited.count("toolResult") == CALLS  # the subscriber saw (and edited) them all
        assert edited.count("assistant") == CALLS + 1
        assert edited.count("last turn") == 1
        # the caller edits what the run handed back
        for message in first.messages:
            _edit(message)
        second = await runtime.run("and now?", session_id="s1", tools=[read])
        assert second.ok
        entries, context = await _session_records(runtime, "s1", tmp_path)
    finally:
        await runtime.aclose()
    bodies = [request.body for request in server.requests if request.path.endswith("/completions")]
    assert len(bodies) == CALLS + 2
    for body in bodies:
        assert not _has_mark(body["messages"]), body["messages"]
    # the requests still carry what the model and the tool really said
    last = json.dumps(bodies[-1]["messages"])
    assert all(f"contents of f{n}.txt" in last for n in range(CALLS))
    assert all(f"f{n}.txt" in last for n in range(CALLS))
    assert not _has_mark(entries)
    assert not _has_mark(context)
    assert [m["role"] for m in context].count("toolResult") == CALLS
    if not memory:
        files = list((tmp_path / "state").rglob("s1*.jsonl"))
        assert files, "the transcript file"
        for file in files:
            data = file.read_text(encoding="utf-8")
            assert MARK not in data and "123456789" not in data
            assert "contents of f0.txt" in data


@pytest.mark.anyio
async def test_a_result_holds_models_of_its_own_equal_to_the_session_ones(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    config = mock_openai_config(tmp_path / "state", server)
    runtime = Runtime(config, load_entrypoints=False, memory=True)
    server.enqueue(Reply(tool_calls=[("read", {"path": "a.txt"})]))
    server.enqueue(Reply(text="done"))
    try:
        result = await runtime.run("read it", session_id="s2", tools=[read])
        session = await runtime.checkout_session("s2", cwd=str(tmp_path))
        try:
            history = session.build_session_context().messages
        finally:
            await runtime.checkin_session(session)
    finally:
        await runtime.aclose()
    assert [m.role for m in result.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert len(history) == len(result.messages)
    for mine, kept in zip(result.messages, history, strict=True):
        assert mine is not kept
        assert type(mine) is type(kept) and mine == kept
        assert mine.to_dict() == kept.to_dict()
        assert mine.model_fields_set == kept.model_fields_set
        if isinstance(mine, AssistantMessage | ToolResultMessage):
            assert mine.content[0] is not kept.content[0]
