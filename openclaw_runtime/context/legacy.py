"""The built-in ``legacy`` engine: the runtime's own behaviour behind the engine contract.

Messages persist through the session store, not the engine, so ``ingest`` is a no-op and
``assemble`` passes the transcript through (the sanitize → validate → limit pipeline does the
rest). ``compact`` hands the work to the runtime's summarization compaction.
"""

from __future__ import annotations

from .delegate import delegate_compaction_to_runtime
from .engine import (
    AfterTurnParams,
    AssembleParams,
    AssembleResult,
    CompactParams,
    CompactResult,
    ContextEngineInfo,
    IngestParams,
    IngestResult,
)

__all__ = ["LegacyContextEngine"]


class LegacyContextEngine:
    """OpenClaw's default engine."""

    info = ContextEngineInfo(id="legacy", name="Legacy Context Engine", version="1.0.0")

    async def ingest(self, params: IngestParams) -> IngestResult:
        """No-op: the session store persists messages."""
        return IngestResult(ingested=False)

    async def assemble(self, params: AssembleParams) -> AssembleResult:
        """Pass-through; the caller estimates tokens."""
        return AssembleResult(messages=params.messages, estimated_tokens=0)

    async def after_turn(self, params: AfterTurnParams) -> None:
        """No-op: the session store already holds the turn."""

    async def compact(self, params: CompactParams) -> CompactResult:
        """The runtime's own summarization compaction."""
        return await delegate_compaction_to_runtime(params)

    async def dispose(self) -> None:
        """Nothing to release."""
