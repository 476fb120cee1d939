"""Payload building asks whether an answer acknowledges a failed mutating tool call only
when there is a tool error to warn about (the answer's only reader), and hands the warning
policy the same answer as before: whether any answer acknowledges it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from openclaw_runtime.runner import payloads as payloads_module
from openclaw_runtime.runner.failure_signal import ToolErrorSummary
from openclaw_runtime.runner.payloads import build_embedded_run_payloads
from openclaw_runtime.runner.reply_directives import parse_reply_directives

_ACK = payloads_module._acknowledges_mutating_failure
TEXTS = [
    "Done.",
    "I couldn't write the file.",
    "The write failed, sorry.",
    "WRITE_FAIL",
    "Nothing failed here; the edit did not fail.",
    "no errors",
    "failed to update the config",
    "I hit an error while trying to delete it",
    "   ",
    "[[reply_to_current]] the write failed",
    "MEDIA:https://example.com/a.png",
    "NO_REPLY",
    "all good",
]
ERRORS: list[ToolErrorSummary | None] = [
    None,
    ToolErrorSummary("write", meta="/tmp/out.txt", error="EACCES"),
    ToolErrorSummary("read", error="ENOENT"),
    ToolErrorSummary("custom", error="boom", mutating_action=True),
    ToolErrorSummary("custom", error="boom", mutating_action=False),
    ToolErrorSummary("exec", error="timed out", timed_out=True),
    ToolErrorSummary("edit", error="conflict", middleware_error=True),
]


def _expected_ack(texts: list[str]) -> bool:
    found = False
    for text in texts:
        if not text.strip():
            continue
        parsed = parse_reply_directives(text)
        if not parsed.text and not parsed.media_urls and not parsed.audio_as_voice:
            continue
        if parsed.text and _ACK(parsed.text):
            found = True
    return found


CASES = [
    (random.Random(seed).sample(TEXTS, random.Random(seed + 1).randint(0, 4)), error)
    for seed in range(60)
    for error in ERRORS
]


@pytest.mark.parametrize(("texts", "error"), CASES)
def test_acknowledgement_asked_only_for_a_tool_error(
    monkeypatch: pytest.MonkeyPatch, texts: list[str], error: ToolErrorSummary | None
) -> None:
    asked: list[str] = []
    seen: list[bool] = []
    policy = payloads_module._tool_warning_policy

    def ack(text: str) -> bool:
        asked.append(text)
        return _ACK(text)

    def warning_policy(*args: Any, **kwargs: Any) -> tuple[bool, bool]:
        seen.append(kwargs["acknowledged"])
        return policy(*args, **kwargs)

    monkeypatch.setattr(payloads_module, "_acknowledges_mutating_failure", ack)
    monkeypatch.setattr(payloads_module, "_tool_warning_policy", warning_policy)
    got = build_embedded_run_payloads(assistant_texts=texts, last_tool_error=error)
    if error is None:
        assert asked == [] and seen == []
    else:
        assert seen == [_expected_ack(texts)]
    monkeypatch.undo()
    # and the payloads are those the unpatched function gives
    assert got == build_embedded_run_payloads(assistant_texts=texts, last_tool_error=error)
