"""The public types of the plugin contract and of ``Runtime``'s API, in one import.

Plugin authors annotate their hook implementations with these (``register:
RegisterComponent``, ``engine -> ContextEngine``...) and hosts annotate what ``Runtime``
takes and gives back (``RunOptions``, ``RunResult``, ``CompactResult``). Everything here is
defined elsewhere and re-exported, except the callable shapes of the components a plugin
registers (``StreamRepairer``, ``TranscriptSanitizer``, ``ContextEngineFactory``,
``BackendFactory``, ``PromptSectionRender``), which no other module needs to name. First-party
plugins import from here, never from a private module (``tests/test_public_types.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from ._types import (
    RegisterBackend,
    RegisterComponent,
    RegisterModel,
    RegisterOrdered,
    RegisterPromptSection,
    RegisterSettings,
    RunBlock,
    RuntimeView,
)
from .agent.options import AgentOptions
from .backends import AuthStore, LaneBackend, SessionIndex, SessionStore, SteeringStore
from .containment import PluginFault
from .context.engine import (
    AfterTurnParams,
    AssembleParams,
    AssembleResult,
    BootstrapParams,
    BootstrapResult,
    CompactionDetails,
    CompactParams,
    CompactResult,
    ContextEngine,
    ContextEngineInfo,
    ContextEngineRuntimeContext,
    IngestBatchParams,
    IngestBatchResult,
    IngestParams,
    IngestResult,
    MaintainParams,
    MaintenanceResult,
    PrepareSubagentSpawnParams,
    SubagentEndedParams,
    SubagentSpawnPreparation,
)
from .events import AssistantMessageEvent, AssistantMessageEventStream, Event
from .failover.reasons import FailoverClassification, FailoverReason, FailoverSignal
from .llm import Context, Model, StreamFn, StreamOptions
from .prompt import PromptContext
from .repair import FormatScan, ToolCallFormat
from .runner.cron_reply import ReplyClaim
from .runner.finalize import FinalizeDecision
from .runner.live import LiveMessageResult
from .runner.outcome import AgentRunTerminalOutcome
from .runner.reply_payload import ReplyPayload
from .runner.request import RunErrorInfo, RunRequest, RunResult
from .runner.run_options import RunOptions
from .transcript.policy import TranscriptPolicy

__all__ = [
    "AfterTurnParams",
    "AgentOptions",
    "AgentRunTerminalOutcome",
    "AssembleParams",
    "AssembleResult",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "AuthStore",
    "BackendFactory",
    "BootstrapParams",
    "BootstrapResult",
    "CompactParams",
    "CompactResult",
    "CompactionDetails",
    "Context",
    "ContextEngine",
    "ContextEngineFactory",
    "ContextEngineInfo",
    "ContextEngineRuntimeContext",
    "Event",
    "FailoverClassification",
    "FailoverReason",
    "FailoverSignal",
    "FinalizeDecision",
    "FormatScan",
    "IngestBatchParams",
    "IngestBatchResult",
    "IngestParams",
    "IngestResult",
    "LaneBackend",
    "LiveMessageResult",
    "MaintainParams",
    "MaintenanceResult",
    "Model",
    "PluginFault",
    "PrepareSubagentSpawnParams",
    "PromptContext",
    "PromptSectionRender",
    "RegisterBackend",
    "RegisterComponent",
    "RegisterModel",
    "RegisterOrdered",
    "RegisterPromptSection",
    "RegisterSettings",
    "ReplyClaim",
    "ReplyPayload",
    "RunBlock",
    "RunErrorInfo",
    "RunOptions",
    "RunRequest",
    "RunResult",
    "RuntimeView",
    "SessionIndex",
    "SessionStore",
    "SteeringStore",
    "StreamFn",
    "StreamOptions",
    "StreamRepairer",
    "SubagentEndedParams",
    "SubagentSpawnPreparation",
    "ToolCallFormat",
    "TranscriptPolicy",
    "TranscriptSanitizer",
]

#: ``register_stream_repairers``: ``repairer(events, context)`` yields the repaired events;
#: its final ``done`` message must carry the repaired text and tool calls (docs/plugin-hooks.md).
StreamRepairer: TypeAlias = Callable[
    [AsyncIterator[AssistantMessageEvent], Context], AsyncIterator[AssistantMessageEvent]
]
#: ``register_transcript_sanitizers``: ``fn(messages, policy)`` returns new messages;
#: deterministic and idempotent.
TranscriptSanitizer: TypeAlias = Callable[[list[Any], TranscriptPolicy], list[Any]]
#: ``register_context_engines``: ``factory()`` (or ``factory(context)``) returns an engine
#: (or an awaitable of one).
ContextEngineFactory: TypeAlias = Callable[..., ContextEngine | Awaitable[ContextEngine]]
#: ``register_backends``: ``factory(runtime)`` returns an object meeting its kind's protocol.
BackendFactory: TypeAlias = Callable[[RuntimeView], Any]
#: ``register_prompt_sections``: ``render(context)`` returns the text, its lines, or None.
PromptSectionRender: TypeAlias = Callable[[PromptContext], str | Sequence[str] | None]
