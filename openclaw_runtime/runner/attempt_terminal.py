"""Attempt terminals: how one attempt ended, merged from every source that reports it
(spec §11.5, seed 000 §4.4).

``AgentRunAttemptTerminal`` has the kinds ``ok`` < ``failed`` < ``aborted`` < ``timeout``;
``merge_agent_run_attempt_terminal`` keeps the stronger kind, refines a timeout's phase
(prompt < tool_execution < compaction) and source (observation < runtime < idle < run_budget
< external), keeps the stronger abort source (yield_cleanup < runtime < external) and never
loses a recorded failure. Observation-only timeouts (a compaction or a tool ran long) are
remembered without interrupting anything. ``project_agent_run_attempt_terminal`` reads the
flags a run needs off a terminal, and ``build_agent_run_terminal_outcome_from_attempt`` maps
it to the run's outcome (``outcome``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias

from .outcome import (
    AGENT_RUN_ABORTED_STOP_REASON,
    AGENT_RUN_RESTART_ABORT_STOP_REASON,
    AgentRunTerminalOutcome,
    AgentRunWaitStatus,
    build_agent_run_terminal_outcome,
)

__all__ = [
    "ATTEMPT_ABORT_SOURCE_RANK",
    "ATTEMPT_TERMINAL_KIND_RANK",
    "ATTEMPT_TIMEOUT_PHASE_RANK",
    "ATTEMPT_TIMEOUT_SOURCE_RANK",
    "AgentRunAttemptFailure",
    "AgentRunAttemptTerminal",
    "AgentRunAttemptTerminalProjection",
    "build_agent_run_terminal_outcome_from_attempt",
    "merge_agent_run_attempt_terminal",
    "normalize_agent_run_attempt_terminal",
    "project_agent_run_attempt_terminal",
    "set_agent_run_attempt_terminal_failure",
]


AttemptKind: TypeAlias = Literal["ok", "failed", "aborted", "timeout"]
AttemptTimeoutPhase: TypeAlias = Literal["prompt", "tool_execution", "compaction"]
AttemptTimeoutSource: TypeAlias = Literal[
    "observation", "runtime", "idle", "run_budget", "external"
]
AttemptAbortSource: TypeAlias = Literal["yield_cleanup", "runtime", "external"]
AttemptFailureSource: TypeAlias = Literal[
    "prompt", "compaction", "precheck", "hook:before_agent_run"
]
TimeoutObservation: TypeAlias = Literal["compaction", "tool_execution"]

ATTEMPT_TERMINAL_KIND_RANK: Final[dict[str, int]] = {
    "ok": 0,
    "failed": 1,
    "aborted": 2,
    "timeout": 3,
}
ATTEMPT_TIMEOUT_PHASE_RANK: Final[dict[str, int]] = {
    "prompt": 0,
    "tool_execution": 1,
    "compaction": 2,
}
ATTEMPT_TIMEOUT_SOURCE_RANK: Final[dict[str, int]] = {
    "observation": 0,
    "runtime": 1,
    "idle": 2,
    "run_budget": 3,
    "external": 4,
}
ATTEMPT_ABORT_SOURCE_RANK: Final[dict[str, int]] = {"yield_cleanup": 0, "runtime": 1, "external": 2}


@dataclass(frozen=True, slots=True)
class AgentRunAttemptFailure:
    """Why an attempt failed: where, and the error object (kept as is)."""

    source: AttemptFailureSource
    error: Any


@dataclass(frozen=True, slots=True)
class AgentRunAttemptTerminal:
    """How one attempt ended (OpenClaw's closed ``AgentRunAttemptTerminal`` union).

    * ``ok`` — optionally with a ``settlement_warning`` (a degraded completion);
    * ``failed`` — ``failure`` set, optional ``timeout_observation``;
    * ``aborted`` — ``source`` an abort source, optional failure / observation;
    * ``timeout`` — ``phase`` and ``source``; source ``observation`` means "a compaction or a
      tool ran long" and interrupts nothing; ``aborted`` means the timeout also aborted the
      live run.
    """

    kind: AttemptKind
    phase: AttemptTimeoutPhase | None = None
    source: str | None = None
    aborted: bool = False
    failure: AgentRunAttemptFailure | None = None
    timeout_observation: TimeoutObservation | None = None
    settlement_warning: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ATTEMPT_TERMINAL_KIND_RANK:
            raise ValueError(
                f"attempt terminal kind must be ok, failed, aborted or timeout, not {self.kind!r}"
            )
        if self.kind == "timeout":
            if self.phase not in ATTEMPT_TIMEOUT_PHASE_RANK:
                raise ValueError(
                    f"a timeout needs a phase (prompt, tool_execution, compaction), "
                    f"not {self.phase!r}"
                )
            if self.source not in ATTEMPT_TIMEOUT_SOURCE_RANK:
                raise ValueError(f"unknown timeout source {self.source!r}")
            if self.source == "observation" and self.phase == "prompt":
                raise ValueError("an observation-only timeout is tool_execution or compaction")
        elif self.kind == "aborted":
            if self.source not in ATTEMPT_ABORT_SOURCE_RANK:
                raise ValueError(f"unknown abort source {self.source!r}")
        elif self.kind == "failed" and self.failure is None:
            raise ValueError("a failed attempt terminal needs a failure")

    @classmethod
    def ok(cls, settlement_warning: Mapping[str, Any] | None = None) -> AgentRunAttemptTerminal:
        """A completed attempt."""
        return cls("ok", settlement_warning=settlement_warning)

    @classmethod
    def timeout(
        cls, phase: AttemptTimeoutPhase, source: AttemptTimeoutSource, *, aborted: bool = False
    ) -> AgentRunAttemptTerminal:
        """A timeout (``source="observation"`` for an observation only)."""
        return cls("timeout", phase=phase, source=source, aborted=aborted)

    @classmethod
    def abort(cls, source: AttemptAbortSource) -> AgentRunAttemptTerminal:
        """An abort from ``source``."""
        return cls("aborted", source=source)

    @classmethod
    def failed(cls, source: AttemptFailureSource, error: Any) -> AgentRunAttemptTerminal:
        """A failure in ``source``."""
        return cls("failed", failure=AgentRunAttemptFailure(source, error))


def _with_failure(
    terminal: AgentRunAttemptTerminal, failure: AgentRunAttemptFailure | None
) -> AgentRunAttemptTerminal:
    if failure is None or terminal.kind == "ok":
        return terminal
    return replace(terminal, failure=failure)


def _with_observation(
    terminal: AgentRunAttemptTerminal, phase: TimeoutObservation
) -> AgentRunAttemptTerminal:
    observation: TimeoutObservation = (
        "compaction"
        if terminal.timeout_observation == "compaction" or phase == "compaction"
        else "tool_execution"
    )
    return replace(terminal, timeout_observation=observation)


def _merge_phase(
    phase: AttemptTimeoutPhase, observation: TimeoutObservation | None
) -> AttemptTimeoutPhase:
    if observation and ATTEMPT_TIMEOUT_PHASE_RANK[observation] > ATTEMPT_TIMEOUT_PHASE_RANK[phase]:
        return observation
    return phase


def _timeout_aborts(terminal: AgentRunAttemptTerminal) -> bool:
    return terminal.kind == "timeout" and terminal.source != "observation" and terminal.aborted


def set_agent_run_attempt_terminal_failure(
    terminal: AgentRunAttemptTerminal, failure: AgentRunAttemptFailure | None
) -> AgentRunAttemptTerminal:
    """Replace the failure detail without weakening a stronger interruption; None removes it
    (a failed terminal falls back to its observation, or ``ok``)."""
    if failure is None:
        if terminal.kind == "failed":
            return (
                AgentRunAttemptTerminal.timeout(terminal.timeout_observation, "observation")
                if terminal.timeout_observation
                else AgentRunAttemptTerminal.ok()
            )
        return replace(terminal, failure=None) if terminal.kind != "ok" else terminal
    if terminal.kind == "timeout" and terminal.source == "observation":
        assert terminal.phase in ("compaction", "tool_execution")
        return AgentRunAttemptTerminal(
            "failed", failure=failure, timeout_observation=terminal.phase
        )
    if terminal.kind in ("failed", "ok"):
        return AgentRunAttemptTerminal(
            "failed",
            failure=failure,
            timeout_observation=terminal.timeout_observation if terminal.kind == "failed" else None,
        )
    return replace(terminal, failure=failure)


def merge_agent_run_attempt_terminal(
    current: AgentRunAttemptTerminal, incoming: AgentRunAttemptTerminal
) -> AgentRunAttemptTerminal:
    """Merge two observations of one attempt; the result is independent of their order.

    Timeout beats abort beats failure beats ok; within a timeout the stronger phase and
    source win; an external abort makes a timeout's source ``external``; a runtime/external
    abort marks the timeout ``aborted``; the first settlement warning of an ``ok`` is kept.
    """
    if incoming.kind == "ok":
        return incoming if current.kind == "ok" and not current.settlement_warning else current
    failure = incoming.failure or current.failure
    if current.kind == "timeout" and incoming.kind == "timeout":
        assert current.phase is not None and incoming.phase is not None
        phase = (
            incoming.phase
            if ATTEMPT_TIMEOUT_PHASE_RANK[incoming.phase]
            > ATTEMPT_TIMEOUT_PHASE_RANK[current.phase]
            else current.phase
        )
        selected = (
            incoming
            if ATTEMPT_TIMEOUT_SOURCE_RANK[str(incoming.source)]
            > ATTEMPT_TIMEOUT_SOURCE_RANK[str(current.source)]
            else current
        )
        if selected.source == "observation":
            observed: AttemptTimeoutPhase = (
                "compaction"
                if "compaction" in (current.phase, incoming.phase)
                else "tool_execution"
            )
            return _with_failure(AgentRunAttemptTerminal.timeout(observed, "observation"), failure)
        return _with_failure(
            AgentRunAttemptTerminal(
                "timeout",
                phase=phase,
                source=selected.source,
                aborted=_timeout_aborts(current) or _timeout_aborts(incoming),
            ),
            failure,
        )
    if current.kind in ("aborted", "failed") and incoming.kind == "timeout":
        return _merge_interruption(current, incoming, failure)
    if current.kind == "timeout" and incoming.kind in ("aborted", "failed"):
        return _merge_interruption(incoming, current, failure)
    if current.kind in ("aborted", "failed") and incoming.kind in ("aborted", "failed"):
        selected_terminal: AgentRunAttemptTerminal
        if current.kind == "aborted" and incoming.kind == "aborted":
            source = (
                incoming.source
                if ATTEMPT_ABORT_SOURCE_RANK[str(incoming.source)]
                > ATTEMPT_ABORT_SOURCE_RANK[str(current.source)]
                else current.source
            )
            selected_terminal = AgentRunAttemptTerminal("aborted", source=source)
        else:
            selected_terminal = (
                incoming
                if ATTEMPT_TERMINAL_KIND_RANK[incoming.kind]
                >= ATTEMPT_TERMINAL_KIND_RANK[current.kind]
                else current
            )
        for observation in (current.timeout_observation, incoming.timeout_observation):
            if observation:
                selected_terminal = _with_observation(selected_terminal, observation)
        return _with_failure(selected_terminal, failure)
    return _with_failure(incoming, failure)


def _merge_interruption(
    other: AgentRunAttemptTerminal,
    timeout: AgentRunAttemptTerminal,
    failure: AgentRunAttemptFailure | None,
) -> AgentRunAttemptTerminal:
    """``other`` is aborted/failed, ``timeout`` a timeout (order already resolved)."""
    assert timeout.phase is not None
    if timeout.source == "observation":
        assert timeout.phase in ("compaction", "tool_execution")
        return _with_failure(_with_observation(other, timeout.phase), failure)
    external = other.kind == "aborted" and other.source == "external"
    return _with_failure(
        AgentRunAttemptTerminal(
            "timeout",
            phase=_merge_phase(timeout.phase, other.timeout_observation),
            source="external" if external else timeout.source,
            aborted=(other.kind == "aborted" and other.source != "yield_cleanup")
            or timeout.aborted,
        ),
        failure,
    )


def normalize_agent_run_attempt_terminal(
    *,
    aborted: bool = False,
    external_abort: bool = False,
    idle_timed_out: bool = False,
    prompt_error: Any = None,
    prompt_error_source: AttemptFailureSource | None = None,
    timed_out: bool = False,
    timed_out_by_run_budget: bool = False,
    timed_out_during_compaction: bool = False,
    timed_out_during_tool_execution: bool = False,
    settlement_warning: Mapping[str, Any] | None = None,
) -> AgentRunAttemptTerminal:
    """Fold the harness's legacy flags into one terminal through the same precedence."""
    terminal = AgentRunAttemptTerminal.ok(settlement_warning)
    if aborted or external_abort:
        terminal = merge_agent_run_attempt_terminal(
            terminal, AgentRunAttemptTerminal.abort("external" if external_abort else "runtime")
        )
    if timed_out or idle_timed_out or timed_out_by_run_budget:
        phase: AttemptTimeoutPhase = (
            "compaction"
            if timed_out_during_compaction
            else "tool_execution"
            if timed_out_during_tool_execution
            else "prompt"
        )
        source: AttemptTimeoutSource = (
            "external"
            if external_abort
            else "run_budget"
            if timed_out_by_run_budget
            else "idle"
            if idle_timed_out
            else "runtime"
        )
        terminal = merge_agent_run_attempt_terminal(
            terminal,
            AgentRunAttemptTerminal.timeout(phase, source, aborted=aborted or external_abort),
        )
    elif timed_out_during_compaction or timed_out_during_tool_execution:
        terminal = merge_agent_run_attempt_terminal(
            terminal,
            AgentRunAttemptTerminal.timeout(
                "compaction" if timed_out_during_compaction else "tool_execution", "observation"
            ),
        )
    if prompt_error is not None:
        terminal = set_agent_run_attempt_terminal_failure(
            terminal, AgentRunAttemptFailure(prompt_error_source or "prompt", prompt_error)
        )
    return terminal


@dataclass(frozen=True, slots=True)
class AgentRunAttemptTerminalProjection:
    """The legacy event/meta flags of a terminal (OpenClaw's projection)."""

    aborted: bool
    cleanup_yield_aborted: bool
    external_abort: bool
    failed: bool
    idle_timed_out: bool
    interrupted: bool
    prompt_error: Any
    prompt_error_source: str | None
    timed_out: bool
    timed_out_by_run_budget: bool
    timed_out_during_compaction: bool
    timed_out_during_tool_execution: bool
    settlement_warning: Mapping[str, Any] | None = None


def project_agent_run_attempt_terminal(
    terminal: AgentRunAttemptTerminal,
) -> AgentRunAttemptTerminalProjection:
    """Flags for events: ``timed_out`` excludes observation-only timeouts, ``interrupted`` is
    an external abort or a real timeout, a yield-cleanup abort is not ``aborted``."""
    failure = terminal.failure
    external = terminal.kind in ("aborted", "timeout") and terminal.source == "external"
    timed_out = terminal.kind == "timeout" and terminal.source != "observation"
    observation = terminal.timeout_observation if terminal.kind in ("aborted", "failed") else None
    return AgentRunAttemptTerminalProjection(
        aborted=(terminal.kind == "aborted" and terminal.source != "yield_cleanup")
        or _timeout_aborts(terminal),
        cleanup_yield_aborted=terminal.kind == "aborted" and terminal.source == "yield_cleanup",
        external_abort=external,
        failed=failure is not None,
        idle_timed_out=terminal.kind == "timeout" and terminal.source == "idle",
        interrupted=external or timed_out,
        prompt_error=failure.error if failure else None,
        prompt_error_source=failure.source if failure else None,
        timed_out=timed_out,
        timed_out_by_run_budget=terminal.kind == "timeout" and terminal.source == "run_budget",
        timed_out_during_compaction=(terminal.kind == "timeout" and terminal.phase == "compaction")
        or observation == "compaction",
        timed_out_during_tool_execution=(
            terminal.kind == "timeout" and terminal.phase == "tool_execution"
        )
        or observation == "tool_execution",
        settlement_warning=terminal.settlement_warning if terminal.kind == "ok" else None,
    )


def build_agent_run_terminal_outcome_from_attempt(
    terminal: AgentRunAttemptTerminal,
    *,
    assistant_stop_reason: str | None = None,
    assistant_error_message: str | None = None,
    timeout_phase: str | None = None,
    provider_started: bool | None = None,
    liveness_state: str | None = None,
    abort_stop_reason: str | None = None,
    restart_aborted: bool = False,
) -> AgentRunTerminalOutcome:
    """Map one attempt's terminal to the run outcome.

    A real prompt-phase timeout is attributed to the provider (``provider_started``); an
    unattributed timeout carries no stop reason. ``abort_stop_reason`` is the stop reason
    recorded on the run's abort signal (``timeout``, ``restart``, ``superseded``...), if any;
    ``restart_aborted`` says the prompt error was a gateway-restart abort (sticky
    cancellation).
    """
    projected = project_agent_run_attempt_terminal(terminal)
    timed_out = projected.timed_out or abort_stop_reason == "timeout"
    prompt_timeout = (
        projected.timed_out and terminal.kind == "timeout" and (terminal.phase == "prompt")
    )
    phase = timeout_phase if timeout_phase is not None else ("provider" if prompt_timeout else None)
    started = (
        provider_started if provider_started is not None else (True if prompt_timeout else None)
    )
    stop_from_assistant = (
        None if projected.prompt_error_source is not None else assistant_stop_reason
    )
    unattributed = projected.timed_out and phase is None and started is not True
    stop_reason: str | None
    if unattributed:
        stop_reason = None
    else:
        stop_reason = (
            abort_stop_reason
            or (AGENT_RUN_RESTART_ABORT_STOP_REASON if restart_aborted else None)
            or (AGENT_RUN_ABORTED_STOP_REASON if not timed_out and projected.aborted else None)
            or (stop_from_assistant if not timed_out else None)
        )
    status: AgentRunWaitStatus = (
        "timeout"
        if timed_out
        else "error"
        if abort_stop_reason is not None
        or projected.aborted
        or projected.prompt_error_source is not None
        or stop_from_assistant == "error"
        else "ok"
    )
    error = (
        projected.prompt_error
        if projected.prompt_error_source is not None
        else assistant_error_message
    )
    return build_agent_run_terminal_outcome(
        status,
        error=str(error) if isinstance(error, BaseException) else error,
        stop_reason=stop_reason,
        liveness_state=liveness_state,
        timeout_phase=phase,
        provider_started=started,
    )
