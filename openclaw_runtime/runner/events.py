"""Events of the orchestrator: what the run decided and why.

They share the stream with the agent events (``message_update`` ...) and the model-fallback
events (``fallback_*``), so a UI can show a timeline: queued, attempt 1 failed with a rate
limit, rotated to the next key, compacted the context, answered. Every error text is redacted.
A run emits exactly one ``run_start`` and, whatever happens, exactly one ``run_end``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..events import Event

__all__ = [
    "AttemptDecision",
    "AttemptEnd",
    "AttemptStart",
    "CompactionEnd",
    "CompactionStart",
    "ContextWindowWarning",
    "LaneAcquired",
    "LaneWait",
    "ModelForwardCompat",
    "PluginFaultRaised",
    "PluginQuarantined",
    "ProfileRotated",
    "RetryScheduled",
    "RunEnd",
    "RunStart",
    "ToolResultsTruncated",
]


@dataclass(slots=True)
class RunStart(Event):
    """The run was accepted: its identity and the model it starts with."""

    type: ClassVar[str] = "run_start"
    run_id: str
    session_id: str
    session_key: str | None
    provider: str
    model: str
    trigger: str
    thinking_level: str


@dataclass(slots=True)
class ContextWindowWarning(Event):
    """The model's context window is below the warning threshold (the run goes on)."""

    type: ClassVar[str] = "context_window_warning"
    provider: str
    model: str
    tokens: int
    source: str


@dataclass(slots=True)
class ModelForwardCompat(Event):
    """The model is not in the catalog; the run uses the definition of ``template`` (a known
    model of the same family) for it (forward-compatible resolution)."""

    type: ClassVar[str] = "model_forward_compat"
    provider: str
    model: str
    template: str


@dataclass(slots=True)
class LaneWait(Event):
    """The run is queueing for a lane (``kind`` session or global)."""

    type: ClassVar[str] = "lane_wait"
    lane: str
    kind: str
    priority: str


@dataclass(slots=True)
class LaneAcquired(Event):
    """The run holds the lane after ``waited_ms``."""

    type: ClassVar[str] = "lane_acquired"
    lane: str
    kind: str
    waited_ms: float


@dataclass(slots=True)
class AttemptStart(Event):
    """Attempt ``attempt`` (1-based, across models) begins; ``additions`` names the retry
    instructions appended to the prompt, ``mode`` is ``prompt`` or ``continue``."""

    type: ClassVar[str] = "attempt_start"
    attempt: int
    provider: str
    model: str
    auth_profile_id: str | None
    thinking_level: str
    mode: str
    additions: list[str]


@dataclass(slots=True)
class AttemptEnd(Event):
    """An attempt finished: how (``stop_reason``), the redacted error and its classification."""

    type: ClassVar[str] = "attempt_end"
    attempt: int
    provider: str
    model: str
    auth_profile_id: str | None
    stop_reason: str | None
    duration_ms: float
    error: str | None = None
    failover_reason: str | None = None
    status: int | None = None
    timed_out: bool = False
    idle_timed_out: bool = False
    compactions: int = 0
    #: where a timeout struck: ``prompt`` (the model) or ``tool_execution`` (a tool ran)
    timeout_phase: str | None = None


@dataclass(slots=True)
class AttemptDecision(Event):
    """What the loop does after an attempt: ``action`` (rotate_profile, fallback_model,
    retry, compact, truncate, surface_error, return_error_payload, continue_normal, done)
    and a sentence saying why."""

    type: ClassVar[str] = "attempt_decision"
    attempt: int
    action: str
    reason: str | None
    explanation: str


@dataclass(slots=True)
class ProfileRotated(Event):
    """The run moved to the next auth profile; the failed one was recorded on the ledger
    (``recorded_reason`` None when the failure policy exempts it)."""

    type: ClassVar[str] = "profile_rotated"
    provider: str
    from_profile: str | None
    to_profile: str
    reason: str | None
    recorded_reason: str | None


@dataclass(slots=True)
class RetryScheduled(Event):
    """The same model is tried again (``kind``: rate_limit, empty_response, reasoning_only,
    missing_assistant, silent_error, overflow_retry, compaction_continuation, idle_timeout,
    before_agent_finalize, steered_before_finalize: a live message waited when the run would
    end; ``count`` messages, ``limit`` 0 = unbounded), after ``delay_ms``."""

    type: ClassVar[str] = "retry_scheduled"
    attempt: int
    kind: str
    count: int
    limit: int
    delay_ms: float = 0.0


@dataclass(slots=True)
class CompactionStart(Event):
    """A compaction begins (``trigger``: overflow, timeout, preemptive, manual)."""

    type: ClassVar[str] = "compaction_start"
    trigger: str
    count: int
    tokens_before: int | None


@dataclass(slots=True)
class CompactionEnd(Event):
    """A compaction ended: ``compacted`` or why not."""

    type: ClassVar[str] = "compaction_end"
    trigger: str
    ok: bool
    compacted: bool
    reason: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None


@dataclass(slots=True)
class ToolResultsTruncated(Event):
    """Oversized tool results in the transcript were cut (head/tail kept) to fit."""

    type: ClassVar[str] = "tool_results_truncated"
    truncated: int
    rewritten_entries: int
    reason: str | None = None


@dataclass(slots=True)
class PluginFaultRaised(Event):
    """A plugin raised during the run and was skipped for that call (``unit``: the hook, or
    ``<slot>:<name>`` of a registered component); the error text is redacted."""

    type: ClassVar[str] = "plugin_fault"
    plugin: str | None
    hook: str
    unit: str
    error: str


@dataclass(slots=True)
class PluginQuarantined(Event):
    """A plugin unit failed too often and is no longer called in this process until its
    cool-off ends (``[plugins] quarantine_seconds``); then one trial call decides."""

    type: ClassVar[str] = "plugin_quarantined"
    plugin: str | None
    hook: str
    unit: str
    error: str


@dataclass(slots=True)
class RunEnd(Event):
    """The run's single terminal outcome."""

    type: ClassVar[str] = "run_end"
    run_id: str
    outcome: dict[str, Any]
    attempts: int
    provider: str | None = None
    model: str | None = None
    error: dict[str, Any] | None = None
