"""The context-engine contract: how context is assembled, ingested and compacted.

An engine is any object with ``info`` and the three required coroutines ``ingest``,
``assemble`` and ``compact``; ``bootstrap``, ``maintain``, ``ingest_batch``, ``after_turn``,
``prepare_subagent_spawn``, ``on_subagent_ended`` and ``dispose`` are optional. Each method
takes one params object, so the host can add fields without breaking engines (OpenClaw passes
one params record for the same reason). ``abort_signal`` on the params is the caller's intent:
an engine should stop when it fires.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..abort import AbortSignal

__all__ = [
    "AfterTurnParams",
    "AssembleParams",
    "AssembleResult",
    "BootstrapParams",
    "BootstrapResult",
    "CompactParams",
    "CompactResult",
    "CompactionDetails",
    "ContextEngine",
    "ContextEngineInfo",
    "ContextEngineRuntimeContext",
    "IngestBatchParams",
    "IngestBatchResult",
    "IngestParams",
    "IngestResult",
    "MaintainParams",
    "MaintenanceResult",
    "PrepareSubagentSpawnParams",
    "SubagentEndedParams",
    "SubagentSpawnPreparation",
    "describe_context_engine_contract_error",
]


@dataclass(frozen=True, slots=True)
class ContextEngineInfo:
    """Who the engine is and what it takes responsibility for."""

    id: str
    name: str
    version: str | None = None
    owns_compaction: bool = False
    turn_maintenance_mode: Literal["foreground", "background"] = "foreground"


# --------------------------------------------------------------------------- results


@dataclass(slots=True)
class AssembleResult:
    """Messages to send (in order), their estimated tokens, optional system-prompt addition."""

    messages: list[Any]
    estimated_tokens: int = 0
    system_prompt_addition: str | None = None


@dataclass(slots=True)
class CompactionDetails:
    """What a compaction produced."""

    tokens_before: int
    summary: str | None = None
    first_kept_entry_id: str | None = None
    tokens_after: int | None = None
    details: Any = None


@dataclass(slots=True)
class CompactResult:
    """``ok`` is False when compaction failed; ``compacted`` False when nothing was done."""

    ok: bool
    compacted: bool
    reason: str | None = None
    result: CompactionDetails | None = None
    successor: Any = None


@dataclass(slots=True)
class IngestResult:
    """Whether the message was taken (False for duplicates and no-ops)."""

    ingested: bool


@dataclass(slots=True)
class IngestBatchResult:
    """How many messages of a batch were taken."""

    ingested_count: int


@dataclass(slots=True)
class BootstrapResult:
    """Whether the engine initialised its store for the session."""

    bootstrapped: bool
    imported_messages: int | None = None
    reason: str | None = None


@dataclass(slots=True)
class MaintenanceResult:
    """What a maintenance pass rewrote."""

    changed: bool
    bytes_freed: int = 0
    rewritten_entries: int = 0
    reason: str | None = None


@dataclass(slots=True)
class SubagentSpawnPreparation:
    """Undo pre-spawn setup when the child run fails to start."""

    rollback: Callable[[], Awaitable[None] | None]


# --------------------------------------------------------------------------- params


@dataclass(slots=True)
class ContextEngineRuntimeContext:
    """What the runtime lends an engine for one call (budgets, helpers it may call back)."""

    token_budget: int | None = None
    current_token_count: int | None = None
    allow_deferred_compaction_execution: bool = False
    compact_session: Callable[..., Awaitable[CompactResult]] | None = None
    rewrite_transcript_entries: Callable[..., Awaitable[MaintenanceResult]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class BootstrapParams:
    """Initialise engine state for a session."""

    session_id: str
    session_file: str
    session_key: str | None = None
    abort_signal: AbortSignal | None = None


@dataclass(slots=True)
class MaintainParams:
    """Transcript maintenance after bootstrap, successful turns or compaction."""

    session_id: str
    session_file: str
    session_key: str | None = None
    runtime_context: ContextEngineRuntimeContext | None = None
    abort_signal: AbortSignal | None = None


@dataclass(slots=True)
class IngestParams:
    """One message into the engine's store."""

    session_id: str
    message: Any
    session_key: str | None = None
    is_heartbeat: bool = False
    abort_signal: AbortSignal | None = None


@dataclass(slots=True)
class IngestBatchParams:
    """A completed turn's messages as one unit."""

    session_id: str
    messages: list[Any]
    session_key: str | None = None
    is_heartbeat: bool = False
    abort_signal: AbortSignal | None = None


@dataclass(slots=True)
class AfterTurnParams:
    """Post-turn lifecycle work after an attempt completed."""

    session_id: str
    session_file: str
    messages: list[Any]
    pre_prompt_message_count: int
    session_key: str | None = None
    auto_compaction_summary: str | None = None
    is_heartbeat: bool = False
    token_budget: int | None = None
    runtime_context: ContextEngineRuntimeContext | None = None
    abort_signal: AbortSignal | None = None


@dataclass(slots=True)
class AssembleParams:
    """Build model context under a token budget."""

    session_id: str
    messages: list[Any]
    session_key: str | None = None
    token_budget: int | None = None
    available_tools: frozenset[str] = frozenset()
    model: str | None = None
    prompt: str | None = None
    abort_signal: AbortSignal | None = None


@dataclass(slots=True)
class CompactParams:
    """Reduce context; ``force`` compacts even below the trigger threshold."""

    session_id: str
    session_file: str
    session_key: str | None = None
    token_budget: int | None = None
    force: bool = False
    current_token_count: int | None = None
    compaction_target: Literal["budget", "threshold"] = "budget"
    custom_instructions: str | None = None
    runtime_context: ContextEngineRuntimeContext | None = None
    abort_signal: AbortSignal | None = None


@dataclass(slots=True)
class PrepareSubagentSpawnParams:
    """Prepare engine-managed state before a child run starts."""

    parent_session_key: str
    child_session_key: str
    context_mode: Literal["isolated", "fork"] | None = None
    parent_session_id: str | None = None
    parent_session_file: str | None = None
    child_session_id: str | None = None
    child_session_file: str | None = None
    ttl_ms: int | None = None
    abort_signal: AbortSignal | None = None


@dataclass(slots=True)
class SubagentEndedParams:
    """A child run's lifecycle ended."""

    child_session_key: str
    reason: Literal["deleted", "completed", "swept", "released"]
    abort_signal: AbortSignal | None = None


# --------------------------------------------------------------------------- contract


@runtime_checkable
class ContextEngine(Protocol):
    """The required part of an engine; optional methods are looked up by name."""

    @property
    def info(self) -> ContextEngineInfo: ...

    async def ingest(self, params: IngestParams) -> IngestResult: ...

    async def assemble(self, params: AssembleParams) -> AssembleResult: ...

    async def compact(self, params: CompactParams) -> CompactResult: ...


def describe_context_engine_contract_error(engine_id: str, engine: object) -> str | None:
    """Why ``engine`` is not a usable context engine, or None when it is (OpenClaw's check)."""
    if engine is None or isinstance(engine, str | int | float | bool | list | dict):
        return (
            f'Context engine "{engine_id}" factory returned {engine!r} instead of a '
            "ContextEngine object."
        )
    issues = []
    info = getattr(engine, "info", None)
    if info is None:
        issues.append("missing info")
    else:
        info_id = getattr(info, "id", None)
        if not isinstance(info_id, str) or not info_id.strip():
            issues.append("missing info.id")
        info_name = getattr(info, "name", None)
        if not isinstance(info_name, str) or not info_name.strip():
            issues.append("missing info.name")
    for method in ("ingest", "assemble", "compact"):
        if not callable(getattr(engine, method, None)):
            issues.append(f"missing {method}()")
    if not issues:
        return None
    listing = ", ".join(issues)
    return f'Context engine "{engine_id}" factory returned an invalid ContextEngine: {listing}.'
