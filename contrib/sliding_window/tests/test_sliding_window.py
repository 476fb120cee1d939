"""The sliding-window engine: the contract, the window rule, and the installed plugin."""

from __future__ import annotations

import pytest
from openclaw_runtime_sliding_window import SlidingWindowEngine, window_start

from openclaw_runtime import Runtime
from openclaw_runtime.context.engine import AssembleParams
from openclaw_runtime.context.registry import QuarantineProxy
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.testing import ContextEngineContract


class TestSlidingWindowContract(ContextEngineContract):
    @pytest.fixture
    def context_engine(self):
        return SlidingWindowEngine(max_messages=3)


def turn(n):
    return [
        UserMessage(content=f"q{n}", timestamp=n),
        AssistantMessage(
            content=[ToolCall(id=f"c{n}", name="t")], stop_reason="toolUse", timestamp=n
        ),
        ToolResultMessage(
            tool_call_id=f"c{n}", tool_name="t", content=[TextContent(text="r")], timestamp=n
        ),
        AssistantMessage(content=[TextContent(text=f"a{n}")], timestamp=n),
    ]


@pytest.mark.parametrize(
    ("size", "expected_start"),
    [(100, 0), (12, 0), (11, 4), (8, 4), (5, 8), (4, 8), (3, 8), (1, 8)],
)
def test_window_starts_at_a_user_turn(size, expected_start):
    messages = turn(1) + turn(2) + turn(3)
    assert window_start(messages, size) == expected_start


def test_invalid_size():
    with pytest.raises(ValueError, match="at least 1"):
        SlidingWindowEngine(max_messages=0)


@pytest.mark.anyio
async def test_installed_engine_is_selected_by_config():
    runtime = Runtime(
        {"context_engine": "sliding_window"}, allow=["sliding_window"], on_load_failure="raise"
    )
    record = {r.name: r for r in runtime.plugin_records()}["sliding_window"]
    assert record.distribution == "openclaw-runtime-sliding-window"
    assert record.hooks == ["register_context_engines"]
    engine = await runtime.resolve_context_engine()
    assert isinstance(engine, QuarantineProxy)
    assert engine.info.id == "sliding_window"
    messages = turn(1) + turn(2) * 10
    result = await engine.assemble(AssembleParams(session_id="s", messages=messages))
    assert len(result.messages) <= 40
    assert isinstance(result.messages[0], UserMessage)
    assert runtime.context_engines.list_quarantines() == []
