"""Host-side calls into an engine's lifecycle, with the documented optional-method fallbacks.

``after_turn`` is optional: an engine without it gets the turn's new messages through
``ingest_batch``, and one without that through ``ingest`` one by one. Compaction always runs
under a safety timeout: a hung or raising ``compact()`` becomes ``CompactResult(ok=False,
reason=...)`` for callers that only check ``ok`` (an abort still propagates).
"""

from __future__ import annotations

import inspect
from typing import Any

import anyio

from .engine import AfterTurnParams, CompactParams, CompactResult, IngestBatchParams, IngestParams

__all__ = [
    "COMPACTION_SAFETY_TIMEOUT_S",
    "compact_context_engine_with_safety_timeout",
    "finish_turn",
]

#: Default ceiling for one engine compaction (OpenClaw bounds it the same way).
COMPACTION_SAFETY_TIMEOUT_S = 300.0


async def finish_turn(engine: Any, params: AfterTurnParams) -> str:
    """Tell the engine a turn completed; returns which method was used."""
    new_messages = params.messages[params.pre_prompt_message_count :]
    after_turn = getattr(engine, "after_turn", None)
    if callable(after_turn):
        await _call(after_turn, params)
        return "after_turn"
    ingest_batch = getattr(engine, "ingest_batch", None)
    if callable(ingest_batch):
        batch = IngestBatchParams(
            session_id=params.session_id,
            messages=new_messages,
            session_key=params.session_key,
            is_heartbeat=params.is_heartbeat,
            abort_signal=params.abort_signal,
        )
        await _call(ingest_batch, batch)
        return "ingest_batch"
    for message in new_messages:
        single = IngestParams(
            session_id=params.session_id,
            message=message,
            session_key=params.session_key,
            is_heartbeat=params.is_heartbeat,
            abort_signal=params.abort_signal,
        )
        await _call(engine.ingest, single)
    return "ingest"


async def compact_context_engine_with_safety_timeout(
    engine: Any, params: CompactParams, *, timeout_s: float = COMPACTION_SAFETY_TIMEOUT_S
) -> CompactResult:
    """Run ``engine.compact`` bounded by ``timeout_s``; failures become ``ok=False`` results."""
    signal = params.abort_signal
    with anyio.move_on_after(timeout_s) as scope:
        try:
            result = await _call(engine.compact, params)
        except Exception as exc:
            if signal is not None and signal.aborted:
                raise
            return CompactResult(
                ok=False,
                compacted=False,
                reason=f"compaction failed: {str(exc) or type(exc).__name__}",
            )
    if scope.cancelled_caught:
        return CompactResult(
            ok=False, compacted=False, reason=f"compaction timed out after {timeout_s:g}s"
        )
    if not isinstance(result, CompactResult):
        return CompactResult(
            ok=False,
            compacted=False,
            reason=f"context engine compact() returned {type(result).__name__}, not CompactResult",
        )
    return result


async def _call(method: Any, params: Any) -> Any:
    result = method(params)
    if inspect.isawaitable(result):
        result = await result
    return result
