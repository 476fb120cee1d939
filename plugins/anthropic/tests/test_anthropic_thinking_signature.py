"""A thinking signature Anthropic rejects no longer sticks a session (issue 15 §3).

End to end: ``Runtime.run`` → the Anthropic plugin → a real local server speaking the
Messages API (``AnthropicMessagesServer``) that signs its thinking and rejects a signature it
was told to refuse, as the real API refuses an expired or foreign one, on every request that
replays it. The run strips the thinking from the session and retries once; later turns never
resend the rejected block. On asyncio and trio.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from openclaw_runtime_anthropic import plugin as anthropic_plugin

from openclaw_runtime import Runtime
from openclaw_runtime.events import Event
from openclaw_runtime.runner.thinking_recovery import (
    has_thinking_blocks,
    is_thinking_signature_rejection,
    strip_thinking_from_messages,
)
from openclaw_runtime.testing.anthropic_server import AnthropicMessagesServer
from openclaw_runtime.transcript.update_events import subscribe_session_transcript_updates

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
                "contextWindow": 200_000,
                "maxTokens": 4096,
            }
        ],
        "agent": {
            "model": "anthropic/claude-local",
            "thinking_level": "low",
            "timeout_seconds": 30,
        },
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

    def decisions(self) -> list[str]:
        return [e.action for e in self.events if e.type == "attempt_decision"]


def _signatures(server: AnthropicMessagesServer, start: int = 0) -> list[list[str]]:
    return [
        [sig for _m, _b, sig in server.replayed_signatures(request)]
        for request in server.requests[start:]
    ]


def _branch_signatures(session_file: str) -> set[str]:
    """Every thinking signature on the session's active branch (from the file itself)."""
    lines = [orjson.loads(line) for line in Path(session_file).read_bytes().splitlines()]
    by_id = {entry.get("id"): entry for entry in lines[1:]}
    leaf = lines[-1]["id"]
    found: set[str] = set()
    while leaf is not None:
        entry = by_id[leaf]
        message = entry.get("message") or {}
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "thinking":
                found.add(str(block.get("thinkingSignature") or block.get("signature")))
        leaf = entry.get("parentId")
    return found


async def test_a_rejected_signature_is_stripped_retried_once_and_never_resent(
    server: AnthropicMessagesServer, runtime: Runtime
) -> None:
    first = await runtime.run("first question", session_key="chat")
    assert first.ok, first.error
    assert first.text == "answer 1"
    assert server.answers == 1 and server.rejections == 0

    # the signature of turn 1 stops being accepted (another key, expired...)
    server.reject_signature("sig-1")
    updates: list[Any] = []
    remove = subscribe_session_transcript_updates(updates.append)
    recorder = Recorder()
    try:
        second = await runtime.run("second question", session_key="chat", on_event=recorder)
    finally:
        remove()
    assert second.ok, second.error
    assert second.text == "answer 2"
    # the run's own messages survive the branch rewrite (and turn 1's are not among them)
    assert [m.role for m in second.messages] == ["user", "assistant"]
    assert second.messages[0].content == "second question"
    # one rejected request, then one retry without the rejected block
    assert server.rejections == 1
    assert _signatures(server, 1) == [["sig-1"], []]
    assert "strip_thinking" in recorder.decisions()
    assert [u.reason for u in updates] == ["thinking_signature_recovery"]
    # the session itself no longer holds the rejected block on its active branch
    assert second.session_file is not None
    assert "sig-1" not in _branch_signatures(second.session_file)

    # the next turn goes straight through: sig-1 is never sent again, sig-2 is replayed
    third = await runtime.run("third question", session_key="chat")
    assert third.ok, third.error
    assert server.rejections == 1
    assert _signatures(server, 3) == [["sig-2"]]
    assert third.text == "answer 3"


async def test_every_turn_recovers_when_no_signature_is_accepted(
    server: AnthropicMessagesServer, runtime: Runtime
) -> None:
    first = await runtime.run("first question", session_key="chat")
    assert first.ok, first.error
    # a provider that accepts no replayed signature at all: each turn pays one rejection
    # and one retry (no loop), and every turn still answers
    server.reject_all_signatures = True
    second = await runtime.run("second question", session_key="chat")
    third = await runtime.run("third question", session_key="chat")
    assert (second.ok, third.ok) == (True, True)
    assert server.rejections == 2
    assert [len(s) for s in _signatures(server)] == [0, 1, 0, 1, 0]


async def test_a_failed_retry_still_leaves_a_session_that_continues(
    server: AnthropicMessagesServer, runtime: Runtime
) -> None:
    from openclaw_runtime.testing import ScriptedReply
    from openclaw_runtime.testing.anthropic_server import invalid_signature_error

    first = await runtime.run("first question", session_key="chat")
    assert first.ok, first.error
    # the rejection comes back even for the retry: one retry only, then the run fails
    server.enqueue(*[ScriptedReply.json(400, invalid_signature_error(1, 0))] * 2)
    recorder = Recorder()
    second = await runtime.run("second question", session_key="chat", on_event=recorder)
    assert not second.ok
    assert second.error is not None and second.error.reason == "format"
    assert len(server.requests) == 3  # turn 1, the rejected request, the one retry
    assert recorder.decisions().count("strip_thinking") == 1
    # the stripped session is what the next turn replays: it goes through
    third = await runtime.run("third question", session_key="chat")
    assert third.ok, third.error
    assert _signatures(server, 3) == [[]]


async def test_a_session_without_thinking_surfaces_the_error(
    server: AnthropicMessagesServer, runtime: Runtime
) -> None:
    """Nothing to strip (the rejection is not about this session's blocks): no retry loop,
    the run ends on the provider's error."""
    from openclaw_runtime.testing import ScriptedReply
    from openclaw_runtime.testing.anthropic_server import invalid_signature_error

    server.enqueue(ScriptedReply.json(400, invalid_signature_error(1, 0)))
    result = await runtime.run("hello")
    assert not result.ok
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- the pure parts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("messages.1.content.0: Invalid `signature` in `thinking` block", True),
        (
            "400 invalid_request_error: messages.3.content.0: Invalid `signature` in `thinking` block",
            True,
        ),
        (
            "messages.5.content.1: `thinking` or `redacted_thinking` blocks in the latest "
            "assistant message cannot be modified. These blocks must remain as they were in "
            "the original response.",
            True,
        ),
        ("Thought signature is not valid.", True),
        ("thinking block has an expired signature", True),
        ("Invalid signature for the webhook", False),  # no reasoning block involved
        ("thinking budget_tokens must be less than max_tokens", False),  # a level problem
        ("messages.1: roles must alternate", False),
        ("", False),
        (None, False),
    ],
)
def test_is_thinking_signature_rejection(text: str | None, expected: bool) -> None:
    assert is_thinking_signature_rejection(text) is expected


def test_strip_thinking_from_messages() -> None:
    signed = {"type": "thinking", "thinking": "t", "thinkingSignature": "s"}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    text = {"type": "text", "text": "answer"}
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}
    user = {"role": "user", "content": "q"}
    plain = {"role": "assistant", "content": [text]}
    messages = [
        user,
        {"role": "assistant", "content": [signed, text]},
        {"role": "assistant", "content": [redacted, signed]},
        {"role": "assistant", "content": [signed, call]},
        plain,
    ]
    assert has_thinking_blocks(messages)
    out = strip_thinking_from_messages(messages)
    assert out[0] is user and out[4] is plain
    assert out[1]["content"] == [text]
    assert out[2]["content"] == [{"type": "text", "text": "[assistant reasoning omitted]"}]
    assert out[3]["content"] == [call]
    assert not has_thinking_blocks(out)
    assert strip_thinking_from_messages(out) == out
