"""``delegate_compaction_to_runtime``: the easy path for engines that do not compact themselves.

A third-party engine that only wants to change assembly calls this from its ``compact()`` and
gets the runtime's summarization compaction (the one ``legacy`` uses), including its model
fallback and safety rules. ``compaction_target`` is ignored, as in OpenClaw.
"""

from __future__ import annotations

from .engine import CompactParams, CompactResult

__all__ = ["delegate_compaction_to_runtime"]


async def delegate_compaction_to_runtime(params: CompactParams) -> CompactResult:
    """Forward ``params`` to the runtime's direct compaction of the session."""
    runtime = params.runtime_context
    if runtime is None or runtime.compact_session is None:
        return CompactResult(
            ok=False,
            compacted=False,
            reason="runtime compaction is not available to this context engine call",
        )
    current = params.current_token_count
    if current is None and runtime.current_token_count and runtime.current_token_count > 0:
        current = runtime.current_token_count
    return await runtime.compact_session(
        session_id=params.session_id,
        session_file=params.session_file,
        session_key=params.session_key,
        token_budget=params.token_budget
        if params.token_budget is not None
        else runtime.token_budget,
        force=params.force,
        current_token_count=current,
        custom_instructions=params.custom_instructions,
        abort_signal=params.abort_signal,
    )
