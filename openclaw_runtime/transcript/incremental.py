"""Sanitizing a growing history without re-reading all of it before every request.

The built-in pipeline is a function of the whole history, but the part of a history before a
*stable boundary* sanitizes the same way no matter what is appended after it. A boundary is a
user message that

* is preceded by no tool call still waiting for its result (pairing is closed),
* is followed by at least one assistant turn that is replayed (not failed, not empty), so
  "the latest assistant turn", which some stages treat specially, lies after it, and
* comes after every message the latest compaction kept (their usage is zeroed by the
  stale-usage stage because they predate the compaction).

``IncrementalSanitizer`` keeps the sanitized output of the history up to the last boundary it
saw; the next call whose history starts with the very same message objects only sanitizes the
messages after that boundary. Anything else (another policy, other sanitizers, a compaction
that replaced the start of the history, a message edited in place) falls back to the full
pipeline. Only the built-in stages are known to be boundary-stable, so a pipeline with any
plugin sanitizer always runs in full.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .entries import parse_timestamp_ms
from .policy import TranscriptPolicy
from .sanitize import BUILTIN_SANITIZERS, OnError, _as_spec, run_transcript_sanitizers
from .tool_calls import extract_tool_calls_from_assistant, extract_tool_result_id
from .wire import role_of, wget

__all__ = ["IncrementalSanitizer", "find_stable_boundary"]

_BUILTIN_FNS = frozenset(spec.fn for spec in BUILTIN_SANITIZERS)


def find_stable_boundary(messages: Sequence[Any], start: int = 0) -> int:
    """The largest stable boundary at or after ``start`` (module docstring), or ``start``.

    ``start`` must itself be a boundary (or 0): the scan only reads the messages after it.
    """
    compaction_stamp: float | None = None
    # a compaction's summary opens the context it applies to
    if messages and role_of(messages[0]) == "compactionSummary":
        stamp = parse_timestamp_ms(wget(messages[0], "timestamp"))
        compaction_stamp = float(stamp) if stamp is not None else None
    open_calls: set[str] = set()
    best = start
    candidate: int | None = None
    for index in range(start, len(messages)):
        message = messages[index]
        role = role_of(message)
        if role == "assistant":
            if candidate is not None and _is_replayed_turn(message):
                best = candidate
                candidate = None
            for call in extract_tool_calls_from_assistant(message):
                open_calls.add(call.id)
            continue
        if role == "toolResult":
            call_id = extract_tool_result_id(message)
            if call_id is not None:
                open_calls.discard(call_id)
            continue
        if compaction_stamp is not None:
            stamp = parse_timestamp_ms(wget(message, "timestamp"))
            if stamp is None or stamp <= compaction_stamp:
                candidate = None
                continue
        if role == "user" and index > 0 and not open_calls:
            candidate = index
    return best


def _is_replayed_turn(message: Any) -> bool:
    """An assistant turn that stays in the replayed history (failed and empty turns are
    dropped, so they cannot be "the latest assistant turn")."""
    if wget(message, "stopReason") in ("error", "aborted"):
        return False
    content = wget(message, "content")
    if not isinstance(content, list):
        return False
    for block in content:
        if wget(block, "type") != "text":
            return True
        text = wget(block, "text")
        if isinstance(text, str) and text.strip():
            return True
    return False


class IncrementalSanitizer:
    """The pipeline's output for one session's history, reused as the history grows."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._inputs: list[Any] = []
        self._outputs: list[Any] = []

    def run(
        self,
        messages: Sequence[Any],
        policy: TranscriptPolicy,
        sanitizers: Sequence[Any],
        *,
        on_error: OnError | None = None,
        full: Callable[..., list[Any]] = run_transcript_sanitizers,
    ) -> list[Any]:
        """Same result as ``run_transcript_sanitizers(messages, policy, sanitizers)``."""
        specs = [_as_spec(item) for item in sanitizers]
        if any(spec.fn not in _BUILTIN_FNS for spec in specs):
            return full(messages, policy, sanitizers, on_error=on_error)
        key = (policy, tuple((spec.name, spec.order) for spec in specs))
        start = 0
        head: list[Any] = []
        cached = self._inputs
        if (
            key == self._key
            and cached
            and len(messages) > len(cached)
            and all(a is b for a, b in zip(cached, messages, strict=False))
        ):
            start = len(cached)
            head = self._outputs
        tail = full(list(messages[start:]), policy, sanitizers, on_error=on_error)
        out = [*head, *tail]
        boundary = find_stable_boundary(messages, start)
        if boundary > start:
            anchor = messages[boundary]
            position = next((i for i, m in enumerate(tail) if m is anchor), None)
            if position is not None:
                self._key = key
                self._inputs = list(messages[:boundary])
                self._outputs = [*head, *tail[:position]]
        elif start == 0:
            self._key, self._inputs, self._outputs = None, [], []
        return out
