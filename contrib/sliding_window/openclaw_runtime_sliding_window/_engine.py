"""A context engine that sends only the most recent messages.

Cutting history anywhere would orphan tool results from the calls that produced them (and
providers reject that), so the window always starts at a user message: the latest one at or
before the naive cut point, or the first one after it.
"""

from __future__ import annotations

from typing import Any

from openclaw_runtime.abort import AbortError
from openclaw_runtime.context.delegate import delegate_compaction_to_runtime
from openclaw_runtime.context.engine import (
    AssembleParams,
    AssembleResult,
    CompactParams,
    CompactResult,
    ContextEngineInfo,
    IngestParams,
    IngestResult,
)
from openclaw_runtime.messages import UserMessage

DEFAULT_MAX_MESSAGES = 40


def window_start(messages: list[Any], max_messages: int) -> int:
    """Index of the first message to keep: at most ``max_messages``, starting at a user turn."""
    if len(messages) <= max_messages:
        return 0
    cut = len(messages) - max_messages
    for index in range(cut, len(messages)):
        if isinstance(messages[index], UserMessage):
            return index
    for index in range(cut - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            return index
    return 0


class SlidingWindowEngine:
    """Assemble the last ``max_messages`` messages; compaction is the runtime's."""

    info = ContextEngineInfo(id="sliding_window", name="Sliding Window", version="0.1.0")

    def __init__(self, max_messages: int = DEFAULT_MAX_MESSAGES) -> None:
        if max_messages < 1:
            raise ValueError(f"max_messages must be at least 1, got {max_messages}")
        self.max_messages = max_messages

    async def ingest(self, params: IngestParams) -> IngestResult:
        """Nothing to store: the session transcript is the source of truth."""
        return IngestResult(ingested=False)

    async def assemble(self, params: AssembleParams) -> AssembleResult:
        """The window, as a new list (the caller's list is never touched)."""
        if params.abort_signal is not None and params.abort_signal.aborted:
            raise AbortError("assemble aborted")
        start = window_start(params.messages, self.max_messages)
        return AssembleResult(messages=list(params.messages[start:]), estimated_tokens=0)

    async def compact(self, params: CompactParams) -> CompactResult:
        """The runtime's summarization compaction."""
        return await delegate_compaction_to_runtime(params)
