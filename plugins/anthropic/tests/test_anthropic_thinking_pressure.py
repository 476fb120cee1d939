"""Thinking-level downgrade under context pressure (seed 004 §二 strategy 3, issue 15 §3).

End to end: ``Runtime.run`` → the Anthropic plugin → ``AnthropicMessagesServer`` with a
context window smaller than the catalog says. Anthropic reserves the thinking budget inside
``max_tokens`` and refuses input + ``max_tokens`` above the window; nothing is left to compact
or truncate, so the run steps the thinking level down (``high`` → ``low`` → ``off``) until
the request fits, and says so. On asyncio and trio; the rule itself is a table.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openclaw_runtime_anthropic import plugin as anthropic_plugin

from openclaw_runtime import Runtime
from openclaw_runtime.events import Event
from openclaw_runtime.runner.thinking_pressure import resolve_context_pressure_thinking_level
from openclaw_runtime.testing.anthropic_server import AnthropicMessagesServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[AnthropicMessagesServer]:
    with AnthropicMessagesServer() as running:
        yield running


@pytest.fixture
async def runtime(server: AnthropicMessagesServer, tmp_path: Path) -> Any:
    config = {
        "state_dir": str(tmp_path / "state"),
        "models": [
            {
                "id": "claude-local",
                "api": "anthropic-messages",
                "provider": "anthropic",
                "baseUrl": server.base_url,
                "reasoning": True,
                "contextWindow": 200_000,  # the catalog's number; the server allows less
                "maxTokens": 64_000,
            }
        ],
        "agent": {"model": "anthropic/claude-local", "timeout_seconds": 30},
        "auth": {
            "profiles": [
                {
                    "id": "anthropic:0",
                    "provider": "anthropic",
                    "mode": "api_key",
                    "credential": {"value": "sk-ant-local-test-key"},
                }
            ]
        },
    }
    built = Runtime(config, plugins=[anthropic_plugin], load_entrypoints=False)
    built.retry_backoff_scale = 0
    yield built
    await built.aclose()


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        if event.type != "message_update":
            self.events.append(event)

    def of(self, kind: str) -> list[Any]:
        return [event for event in self.events if event.type == kind]


def _thinking(server: AnthropicMessagesServer) -> list[Any]:
    """What each request asked for: its thinking budget (None: thinking disabled)."""
    out = []
    for request in server.requests:
        thinking = request.json().get("thinking") or {}
        out.append(thinking.get("budget_tokens") if thinking.get("type") == "enabled" else None)
    return out


async def test_an_overflow_nothing_else_fixes_steps_thinking_down_to_low(
    server: AnthropicMessagesServer, runtime: Runtime
) -> None:
    # 4000 visible + 16384 thinking (high) does not fit 12000; 4000 + 2048 (low) does
    server.context_window = 12_000
    recorder = Recorder()
    result = await runtime.run(
        "question", thinking_level="high", max_tokens=4000, on_event=recorder
    )
    assert result.ok, result.error
    assert result.text == "answer 1"
    assert server.overflows == 1
    assert _thinking(server) == [16384, 2048]
    downgrades = [d for d in recorder.of("attempt_decision") if d.action == "downgrade_thinking"]
    assert [(d.reason, "'high' -> 'low'" in d.explanation) for d in downgrades] == [
        ("context_overflow", True)
    ]
    levels = [e.thinking_level for e in recorder.of("attempt_start")]
    assert levels == ["high", "low"]


async def test_it_goes_down_to_off_then_surfaces_the_overflow(
    server: AnthropicMessagesServer, runtime: Runtime
) -> None:
    # even 4000 visible tokens alone do not fit: high -> low -> off, then the overflow stands
    server.context_window = 3_000
    recorder = Recorder()
    result = await runtime.run(
        "question", thinking_level="high", max_tokens=4000, on_event=recorder
    )
    assert not result.ok
    assert result.error is not None and result.error.kind == "context_overflow"
    assert _thinking(server) == [16384, 2048, None]
    assert server.overflows == 3
    actions = [d.action for d in recorder.of("attempt_decision")]
    assert actions.count("downgrade_thinking") == 2
    assert actions[-1] == "surface_error"


async def test_thinking_off_is_not_retried(
    server: AnthropicMessagesServer, runtime: Runtime
) -> None:
    server.context_window = 3_000
    result = await runtime.run("question", thinking_level="off", max_tokens=4000)
    assert not result.ok
    assert _thinking(server) == [None]


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ("max", "low"),
        ("xhigh", "low"),
        ("high", "low"),
        ("medium", "low"),
        ("low", "off"),
        ("minimal", "off"),
        ("off", None),
        ("HIGH", "low"),
        ("unknown", None),
    ],
)
def test_resolve_context_pressure_thinking_level(level: str, expected: str | None) -> None:
    assert resolve_context_pressure_thinking_level(level) == expected
