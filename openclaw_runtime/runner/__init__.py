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

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .compact import compact_session_queued  # noqa: I001 (packed: a face has at most 100 lines)
    from .entry import BUILTIN_DEFAULT_MODEL
    from .events import (
        AttemptDecision, AttemptEnd, AttemptStart, CompactionEnd, CompactionStart,
        ContextWindowWarning, LaneAcquired, LaneWait, PluginFaultRaised, PluginQuarantined,
        ProfileRotated, RetryScheduled, RunEnd, RunStart, ToolResultsTruncated,
    )
    from .file_lanes import FileLanes
    from .lanes import InProcessLanes
    from .live import LiveMessageResult, LiveRunHandle, LiveRunRegistry
    from .live_inbox import FileLiveInbox
    from .outcome import AgentRunTerminalOutcome
    from .reply_payload import ReplyPayload
    from .request import RunErrorInfo, RunRequest, RunResult
    from .run import run_embedded_agent
    from .run_options import RunOptions
    from .run_state import RunEventCallback
    from .services import RunHooks, RunHost, RunServices
    from .session_index import JsonFileSessionIndex
    from .steering_store import InMemorySteeringStore, JsonFileSteeringStore, RecordsSteeringStore
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "compact": "compact_session_queued",
    "entry": "BUILTIN_DEFAULT_MODEL",
    "events": (
        "AttemptDecision AttemptEnd AttemptStart CompactionEnd CompactionStart "
        "ContextWindowWarning LaneAcquired LaneWait PluginFaultRaised PluginQuarantined "
        "ProfileRotated RetryScheduled RunEnd RunStart ToolResultsTruncated"
    ),
    "file_lanes": "FileLanes",
    "lanes": "InProcessLanes",
    "live": "LiveMessageResult LiveRunHandle LiveRunRegistry",
    "live_inbox": "FileLiveInbox",
    "outcome": "AgentRunTerminalOutcome",
    "reply_payload": "ReplyPayload",
    "request": "RunErrorInfo RunRequest RunResult",
    "run": "run_embedded_agent",
    "run_options": "RunOptions",
    "run_state": "RunEventCallback",
    "services": "RunHooks RunHost RunServices",
    "session_index": "JsonFileSessionIndex",
    "steering_store": "InMemorySteeringStore JsonFileSteeringStore RecordsSteeringStore",
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "BUILTIN_DEFAULT_MODEL", "AgentRunTerminalOutcome", "AttemptDecision", "AttemptEnd",
    "AttemptStart", "CompactionEnd", "CompactionStart", "ContextWindowWarning", "FileLanes",
    "FileLiveInbox", "InMemorySteeringStore", "InProcessLanes", "JsonFileSessionIndex",
    "JsonFileSteeringStore", "LaneAcquired", "LaneWait", "LiveMessageResult", "LiveRunHandle",
    "LiveRunRegistry", "PluginFaultRaised", "PluginQuarantined", "ProfileRotated",
    "RecordsSteeringStore", "ReplyPayload", "RetryScheduled", "RunEnd", "RunErrorInfo",
    "RunEventCallback", "RunHooks", "RunHost", "RunOptions", "RunRequest", "RunResult",
    "RunServices", "RunStart", "ToolResultsTruncated", "compact_session_queued",
    "run_embedded_agent",
]  # fmt: skip
