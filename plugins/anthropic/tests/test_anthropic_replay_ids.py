"""Issue 15 §5: a session OpenClaw wrote (OpenAI Responses ``call_…|fc_…`` ids of ~90
characters) replayed to Anthropic carries ids OpenClaw's Anthropic rule accepts — Anthropic's
own ``toolu_…`` ids unchanged, any other at most 40 alphanumerics — unique, with every
``tool_result`` answering the ``tool_use`` it answered before."""

from __future__ import annotations

import re
from pathlib import Path

from openclaw_runtime_anthropic import ANTHROPIC_MESSAGES_API
from openclaw_runtime_anthropic._request import convert_messages

from openclaw_runtime.llm import Model
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.transcript.store import SessionManager

FIXTURE = (
    Path(__file__).resolve().parents[3]
    / "tests"
    / "fixtures"
    / "openclaw"
    / "0199a8c2-7f1e-7b3a-9c4d-2e5f6a7b8c9d.jsonl"
)
ANTHROPIC_ID = re.compile(r"^(?:toolu_[A-Za-z0-9_]+|[A-Za-z0-9]{1,40})$")
CLAUDE = Model(
    id="claude-sonnet-4-5", api=ANTHROPIC_MESSAGES_API, provider="anthropic", reasoning=True
)


def _uses_and_results(params: list[dict]) -> tuple[list[str], list[str]]:
    uses = [
        b["id"]
        for p in params
        if p["role"] == "assistant"
        for b in p["content"]
        if b["type"] == "tool_use"
    ]
    results = [
        b["tool_use_id"]
        for p in params
        if p["role"] == "user" and isinstance(p["content"], list)
        for b in p["content"]
        if b["type"] == "tool_result"
    ]
    return uses, results


def test_an_openclaw_session_replays_to_anthropic_with_valid_paired_ids() -> None:
    before = FIXTURE.read_bytes()
    manager = SessionManager.open_sync(FIXTURE, repair=False)
    messages = manager.build_session_context().messages
    raw_ids = [b.id for m in messages if isinstance(m, AssistantMessage) for b in m.tool_calls()]
    assert raw_ids and all("|fc_" in i and len(i) > 90 for i in raw_ids)
    params = convert_messages(messages, CLAUDE)
    uses, results = _uses_and_results(params)
    assert len(uses) == 3 and uses == results  # each result still answers its own call
    assert len(set(uses)) == 3
    assert all(ANTHROPIC_ID.match(i) for i in uses), uses
    texts = [
        b.get("content")
        for p in params
        if p["role"] == "user" and isinstance(p["content"], list)
        for b in p["content"]
        if b["type"] == "tool_result"
    ]
    assert texts[:2] == ["main.py\nutil.py", "[server]\nport = 8080"]
    assert FIXTURE.read_bytes() == before  # reading it changed nothing


def test_native_ids_stay_and_foreign_ones_are_rewritten_consistently() -> None:
    history = [
        UserMessage(content="q"),
        AssistantMessage(
            content=[
                ToolCall(id="toolu_01AbC", name="f"),
                ToolCall(id="call_x|fc_y", name="g"),
            ],
            stop_reason="toolUse",
            provider="anthropic",
            api=ANTHROPIC_MESSAGES_API,
            model="claude-sonnet-4-5",
        ),
        ToolResultMessage(
            tool_call_id="call_x|fc_y", tool_name="g", content=[TextContent(text="2")]
        ),
        ToolResultMessage(
            tool_call_id="toolu_01AbC", tool_name="f", content=[TextContent(text="1")]
        ),
    ]
    uses, results = _uses_and_results(convert_messages(history, CLAUDE))
    assert uses == ["toolu_01AbC", "callxfcy"]
    assert sorted(results) == sorted(uses)
