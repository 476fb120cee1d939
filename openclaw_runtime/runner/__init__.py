"""The runner's public API: one agent turn that saves itself, and what it takes and gives back.

``Runtime.run(...)`` is the usual door; ``run_embedded_agent(host, request)`` is the same
thing with an explicit ``RunRequest``, and ``compact_session_queued`` compacts a session
outside a run; a running turn is reached through ``LiveRunRegistry`` (``Runtime.steer`` &
co.). A host hands a run its backends as ``RunServices`` and answers the
``RunHost``/``RunHooks`` protocols; a run returns a ``RunResult`` and emits the events below.
The built-in lane, steering-store and session-index backends are here too (their protocols
and errors are ``openclaw_runtime.backends``'s).

Re-exports only. The pure policy functions (OpenClaw's names in snake_case) are imported from
their own modules: ``breaker``, ``retry_limit``, ``retry_instructions``, ``recovery``,
``lane_policy``, ``entry``, ``outcome``, ``attempt_terminal``, ``failure_signal``,
``payloads`` and ``steering``.
"""

from __future__ import annotations

from .compact import compact_session_queued
from .entry import BUILTIN_DEFAULT_MODEL
from .events import (
    AttemptDecision,
    AttemptEnd,
    AttemptStart,
    CompactionEnd,
    CompactionStart,
    ContextWindowWarning,
    LaneAcquired,
    LaneWait,
    PluginFaultRaised,
    PluginQuarantined,
    ProfileRotated,
    RetryScheduled,
    RunEnd,
    RunStart,
    ToolResultsTruncated,
)
from .file_lanes import FileLanes
from .lanes import InProcessLanes
from .live import LiveMessageResult, LiveRunHandle, LiveRunRegistry
from .live_inbox import FileLiveInbox
from .outcome import AgentRunTerminalOutcome
from .reply_payload import ReplyPayload
from .request import RunErrorInfo, RunRequest, RunResult
from .run import run_embedded_agent
from .run_state import RunEventCallback
from .services import RunHooks, RunHost, RunServices
from .session_index import JsonFileSessionIndex
from .steering_store import InMemorySteeringStore, JsonFileSteeringStore, RecordsSteeringStore

__all__ = [
    "BUILTIN_DEFAULT_MODEL",
    "AgentRunTerminalOutcome",
    "AttemptDecision",
    "AttemptEnd",
    "AttemptStart",
    "CompactionEnd",
    "CompactionStart",
    "ContextWindowWarning",
    "FileLanes",
    "FileLiveInbox",
    "InMemorySteeringStore",
    "InProcessLanes",
    "JsonFileSessionIndex",
    "JsonFileSteeringStore",
    "LaneAcquired",
    "LaneWait",
    "LiveMessageResult",
    "LiveRunHandle",
    "LiveRunRegistry",
    "PluginFaultRaised",
    "PluginQuarantined",
    "ProfileRotated",
    "RecordsSteeringStore",
    "ReplyPayload",
    "RetryScheduled",
    "RunEnd",
    "RunErrorInfo",
    "RunEventCallback",
    "RunHooks",
    "RunHost",
    "RunRequest",
    "RunResult",
    "RunServices",
    "RunStart",
    "ToolResultsTruncated",
    "compact_session_queued",
    "run_embedded_agent",
]
