"""The incremental sanitizer gives exactly the full pipeline's output on growing histories."""

from __future__ import annotations

import random
from typing import Any

import pytest

from openclaw_runtime.messages import (
    AssistantMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from openclaw_runtime.transcript import resolve_transcript_policy, run_transcript_sanitizers
from openclaw_runtime.transcript.incremental import IncrementalSanitizer, find_stable_boundary
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS, SanitizerSpec

POLICIES = {
    "openai": resolve_transcript_policy("openai-completions", "openai", "gpt-4o"),
    "anthropic": resolve_transcript_policy(
        "anthropic-messages", "anthropic", "claude-sonnet-4", model_reasoning=True
    ),
    "google": resolve_transcript_policy("google-generative-ai", "google", "gemini-2.5-pro"),
}


class History:
    """A random but plausible growing transcript."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = 1_000
        self.calls = 0
        self.messages: list[Any] = []

    def stamp(self) -> int:
        self.clock += self.rng.randint(1, 50)
        return self.clock

    def assistant(self, blocks: list[Any], stop: str = "stop") -> AssistantMessage:
        usage = Usage(input=self.rng.randint(0, 900), output=self.rng.randint(0, 90))
        return AssistantMessage(
            content=blocks,
            stop_reason=stop,  # type: ignore[arg-type]
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4",
            usage=usage,
            timestamp=self.stamp(),
        )

    def turn(self) -> None:
        rng = self.rng
        user: Any = f"question {len(self.messages)}"
        if rng.random() < 0.1:
            user = [TextContent(text="look"), ImageContent(data="aGk=", mime_type="image/png")]
        if rng.random() < 0.05:
            user = "   "
        self.messages.append(UserMessage(content=user, timestamp=self.stamp()))
        for _ in range(rng.randint(0, 2)):
            thinking = (
                [ThinkingContent(thinking="hmm", thinking_signature=rng.choice([None, "sig"]))]
                if rng.random() < 0.4
                else []
            )
            self.calls += 1
            call = ToolCall(id=f"call_{self.calls}", name=rng.choice(["read", "exec", "gone"]))
            self.messages.append(self.assistant([*thinking, call], stop="toolUse"))
            if rng.random() < 0.9:
                self.messages.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=[TextContent(text="result " * rng.randint(1, 5))],
                        details={"raw": 1},
                        is_error=rng.random() < 0.2,
                        timestamp=self.stamp(),
                    )
                )
        ending = rng.random()
        if ending < 0.1:
            self.messages.append(self.assistant([], stop="error"))
        elif ending < 0.15:
            self.messages.append(self.assistant([TextContent(text="")], stop="aborted"))
            self.messages.append(CustomMessage(custom_type="interrupted", content="note"))
        else:
            blocks: list[Any] = [TextContent(text="answer")]
            if rng.random() < 0.3:
                blocks.insert(0, ThinkingContent(thinking="why", thinking_signature="s"))
            if rng.random() < 0.1:
                blocks.append(TextContent(text="  "))
            self.messages.append(self.assistant(blocks))

    def compact(self) -> None:
        keep = self.messages[-self.rng.randint(1, max(1, len(self.messages) // 2)) :]
        summary = CompactionSummaryMessage(
            summary="so far", tokens_before=100, timestamp=self.stamp()
        )
        self.messages = [summary, *keep]


def dumped(messages: list[Any]) -> list[Any]:
    return [m.model_dump(mode="json") if hasattr(m, "model_dump") else m for m in messages]


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(12))
def test_incremental_equals_full_pipeline(policy_name: str, seed: int) -> None:
    policy = POLICIES[policy_name]
    history = History(seed)
    incremental = IncrementalSanitizer()
    reused = 0
    for step in range(40):
        if step and step % 13 == 0:
            history.compact()
        history.turn()
        messages = list(history.messages)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(got) == dumped(expected), f"seed {seed}, step {step}"
        reused += bool(incremental._inputs)
    assert reused > 10  # the cache was actually used


def test_plugin_sanitizers_always_run_in_full() -> None:
    policy = POLICIES["openai"]
    seen: list[int] = []

    def count(messages: list[Any], _policy: Any) -> list[Any]:
        seen.append(len(messages))
        return messages

    specs = [*BUILTIN_SANITIZERS, SanitizerSpec("count", count, 95, plugin="someone")]
    history = History(1)
    incremental = IncrementalSanitizer()
    for _ in range(5):
        history.turn()
        incremental.run(list(history.messages), policy, specs)
    assert seen[-1] == len(history.messages) or seen[-1] >= len(history.messages) - 1


def test_boundary_waits_for_open_tool_calls_and_a_later_assistant() -> None:
    call = ToolCall(id="c1", name="read")
    messages = [
        UserMessage(content="a", timestamp=1),
        AssistantMessage(content=[call], stop_reason="toolUse", timestamp=2),
        UserMessage(content="b (the call is still open)", timestamp=3),
        ToolResultMessage(tool_call_id="c1", tool_name="read", timestamp=4),
        AssistantMessage(content=[TextContent(text="x")], timestamp=5),
        UserMessage(content="c", timestamp=6),
        AssistantMessage(content=[TextContent(text="y")], timestamp=7),
        UserMessage(content="d (no assistant after it yet)", timestamp=8),
    ]
    assert find_stable_boundary(messages) == 5
    assert find_stable_boundary(messages[:6]) == 0
