"""``transcript.session_context.load_entry_message`` (the per-role validators a session load
uses) gives what ``messages.load_message`` gives, on every message shape: the same model
(``==``, the same fields set, the same serialized bytes) or the same validation failure."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from pydantic import ValidationError

from openclaw_runtime.messages import OpaqueMessage, load_message
from openclaw_runtime.transcript.session_context import entry_message, load_entry_message

USAGE = {
    "input": 1200,
    "output": 80,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 1280,
    "cost": {"input": 0.1, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.1},
}
BLOCKS: list[Any] = [
    {"type": "text", "text": "hello"},
    {"type": "text", "text": "signed", "textSignature": "sig"},
    {"type": "thinking", "thinking": "hmm", "thinkingSignature": "s", "redacted": False},
    {"type": "image", "data": "aGk=", "mimeType": "image/png"},
    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.py"}},
    {"type": "toolCall", "id": "c2", "name": "read", "arguments": {}, "thoughtSignature": "t"},
    {"type": "toolCall", "id": "c3", "name": "read"},
    {"type": "future_block", "payload": [1, 2]},
    {"type": "text", "text": "extra", "cache": {"ttl": 5}},
]
BAD_BLOCKS: list[Any] = [
    {"type": "text"},
    {"type": "text", "text": 5},
    {"type": "toolCall", "id": "c", "name": "n", "arguments": "not a dict"},
    {"type": "image", "data": "x"},
    {"type": 3},
    "just a string",
    None,
]

MESSAGES: list[Any] = [
    {"role": "user", "content": "hi", "timestamp": 1},
    {"role": "user", "content": "hi", "timestamp": 1.5},
    {"role": "user", "content": "", "timestamp": 1},
    {"role": "user", "content": [BLOCKS[0], BLOCKS[3]], "timestamp": 2},
    {"role": "user", "content": "hi", "timestamp": "17"},  # coerced
    {"role": "user", "content": "hi", "timestamp": 1, "senderId": "u1"},  # an extra
    {"role": "user", "content": "hi", "timestamp": True},
    {"role": "user", "content": 5, "timestamp": 1},
    {"role": "user", "timestamp": 1},
    {"role": "user", "content": [{"type": "text", "text": "t"}], "timestamp": None},
    {
        "role": "assistant",
        "content": BLOCKS,
        "api": "openai-completions",
        "provider": "p",
        "model": "m",
        "usage": USAGE,
        "stopReason": "toolUse",
        "timestamp": 3,
    },
    {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "boom"},
    {"role": "assistant", "content": [BLOCKS[0]], "stop_reason": "stop", "timestamp": 4},
    {"role": "assistant", "content": [BLOCKS[0]], "stopReason": "bogus", "timestamp": 4},
    {"role": "assistant", "content": [BLOCKS[0]], "usage": {"input": "12"}, "timestamp": 4},
    {"role": "assistant", "content": [BLOCKS[0]], "usage": {"input": 1.5}, "timestamp": 4},
    {"role": "assistant", "content": [BLOCKS[0]], "usage": {}, "timestamp": 4},
    {"role": "assistant", "content": "text, not blocks", "timestamp": 4},
    {
        "role": "assistant",
        "content": [BLOCKS[0]],
        "errorStatus": 429,
        "errorRetryAfterMs": 1500.5,
        "errorOutputStarted": True,
        "responseId": "r",
        "responseModel": None,
        "timestamp": 4,
    },
    {"role": "assistant", "content": [BLOCKS[0]], "errorStatus": "429", "timestamp": 4},
    {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [BLOCKS[0]],
        "isError": False,
        "timestamp": 5,
    },
    {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "details": {"x": [1]}},
    {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": "yes"},
    {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": 1},
    {"role": "toolResult", "toolName": "read", "content": []},
    {"role": "toolResult", "tool_call_id": "c1", "tool_name": "read", "timestamp": 6},
    {"role": "custom", "customType": "note", "content": "x", "timestamp": 7},
    {"role": "branchSummary", "summary": "s", "fromId": "e1", "timestamp": 8},
    {"role": "compactionSummary", "summary": "s", "tokensBefore": 10, "timestamp": "t"},
    {"role": "bashExecution", "command": "ls", "output": "a\nb"},
    {"role": "", "content": "x"},
    {"role": ["user"], "content": "x"},
]
MESSAGES += [
    {"role": "assistant", "content": [block], "timestamp": 9} for block in BLOCKS + BAD_BLOCKS
]
MESSAGES += [
    {"role": "toolResult", "toolCallId": "c", "toolName": "t", "content": [b], "timestamp": 9}
    for b in BLOCKS + BAD_BLOCKS
]


def _reference(message: dict[str, Any]) -> Any:
    """What ``entry_message`` did before: the union of every model, else opaque."""
    try:
        return load_message(message)
    except ValidationError:
        return OpaqueMessage.model_validate(message)


def _outcome(build: Any, message: dict[str, Any]) -> Any:
    try:
        return build(message)
    except ValidationError as exc:  # a role that is not a string: not even opaque
        return ("raised", [(e["type"], e["msg"]) for e in exc.errors()])


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: repr(m)[:60])
def test_the_same_message_model(message: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # a message without a timestamp gets "now": one clock for both sides, or a millisecond
    # boundary between the two builds makes them differ
    monkeypatch.setattr(time, "time_ns", lambda: 1_767_225_600_000_000_000)
    original = copy.deepcopy(message)
    expected = _outcome(_reference, message)
    got = _outcome(
        lambda m: entry_message({"type": "message", "id": "e", "parentId": None, "message": m}),
        message,
    )
    if isinstance(expected, tuple):
        assert got == expected
        return
    assert type(got) is type(expected)
    assert got == expected
    assert got.__pydantic_fields_set__ == expected.__pydantic_fields_set__
    assert got.to_json() == expected.to_json()
    assert message == original  # the entry is left as it was


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: repr(m)[:60])
def test_the_same_failures(message: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # one clock for both builds, as in test_the_same_message_model: a message without a
    # timestamp gets "now", and a millisecond boundary between the builds made them differ
    monkeypatch.setattr(time, "time_ns", lambda: 1_767_225_600_000_000_000)
    try:
        expected = load_message(message)
    except ValidationError as exc:
        with pytest.raises(ValidationError) as caught:
            load_entry_message(message)
        ours = [(e["type"], e["msg"], e["loc"]) for e in caught.value.errors()]
        # for the roles validated by their model, the union's tag in front of each location
        # is all that differs; other roles go through the union itself
        tagged = message.get("role") in ("user", "assistant", "toolResult")
        theirs = [(e["type"], e["msg"], e["loc"][1:] if tagged else e["loc"]) for e in exc.errors()]
        assert ours == theirs
    else:
        assert load_entry_message(message) == expected
