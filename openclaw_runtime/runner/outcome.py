"""Terminal outcomes: one sticky answer to "how did this run end?" (spec §11.5, seed 000 §4.4).

Several sources report a run's end — the wait result, liveness probes, timeout attribution,
late cleanup callbacks — in any order. Two normalizations turn them into one answer:

* ``AgentRunAttemptTerminal`` (one attempt): kinds ``ok`` < ``failed`` < ``aborted`` <
  ``timeout``; ``merge_agent_run_attempt_terminal`` keeps the stronger kind, refines a
  timeout's phase (prompt < tool_execution < compaction) and source (observation < runtime <
  idle < run_budget < external), keeps the stronger abort source (yield_cleanup < runtime <
  external) and never loses a recorded failure. Observation-only timeouts (a compaction or a
  tool ran long) are remembered without interrupting anything.
* ``AgentRunTerminalOutcome`` (the run): reasons ``completed``, ``hard_timeout``,
  ``timed_out``, ``superseded``, ``cancelled``, ``aborted``, ``blocked``, ``abandoned``,
  ``failed``. Rule one: only a timeout attributed to ``preflight``/``provider``/``post_turn``,
  or a ``timeout`` status after the provider was reached, is a *hard* timeout — queue and
  gateway-draining timeouts are wait-layer uncertainty, not the model's fault. Rule two:
  ``cancelled``/``superseded`` and hard timeouts are sticky; a hard timeout only yields to a
  completion proven to have ended at or before it (``merge_agent_run_terminal_outcome``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias

__all__ = [
    "AGENT_RUN_ABORTED_ERROR",
    "AGENT_RUN_ABORTED_STOP_REASON",
    "AGENT_RUN_RESTART_ABORT_STOP_REASON",
    "AGENT_RUN_SUPERSEDED_STOP_REASON",
    "AGENT_RUN_TERMINAL_RETRY_GRACE_MS",
    "AGENT_RUN_TIMEOUT_PHASES",
    "ATTEMPT_ABORT_SOURCE_RANK",
    "ATTEMPT_TERMINAL_KIND_RANK",
    "ATTEMPT_TIMEOUT_PHASE_RANK",
    "ATTEMPT_TIMEOUT_SOURCE_RANK",
    "HARD_TIMEOUT_PHASES",
    "LIVENESS_STATES",
    "AgentRunAttemptFailure",
    "AgentRunAttemptTerminal",
    "AgentRunAttemptTerminalProjection",
    "AgentRunTerminalOutcome",
    "AgentRunTerminalReason",
    "EmbeddedRunLivenessState",
    "build_agent_run_terminal_outcome",
    "build_agent_run_terminal_outcome_from_attempt",
    "build_agent_run_terminal_outcome_from_lifecycle_event",
    "build_agent_run_terminal_outcome_from_wait_result",
    "classify_agent_run_terminal_outcome",
    "is_definitive_run_lifecycle",
    "is_sticky_agent_run_terminal_outcome",
    "merge_agent_run_attempt_terminal",
    "merge_agent_run_terminal_outcome",
    "normalize_agent_run_attempt_terminal",
    "project_agent_run_attempt_terminal",
    "resolve_replay_invalid_flag",
    "resolve_run_liveness_state",
    "set_agent_run_attempt_terminal_failure",
]

#: How long a terminal observation may still be followed by a retry.
AGENT_RUN_TERMINAL_RETRY_GRACE_MS: Final = 15_000
AGENT_RUN_ABORTED_STOP_REASON: Final = "aborted"
AGENT_RUN_RESTART_ABORT_STOP_REASON: Final = "restart"
AGENT_RUN_SUPERSEDED_STOP_REASON: Final = "superseded"
AGENT_RUN_ABORTED_ERROR: Final = "agent run aborted"
BLOCKED_LIVENESS_ERROR: Final = "Agent run blocked before producing a usable result."
ABANDONED_LIVENESS_ERROR: Final = "Agent run ended before producing a complete result."

AGENT_RUN_TIMEOUT_PHASES: Final = (
    "queue",
    "preflight",
    "provider",
    "post_turn",
    "gateway_draining",
)
HARD_TIMEOUT_PHASES: Final = frozenset({"preflight", "provider", "post_turn"})

EmbeddedRunLivenessState: TypeAlias = Literal["working", "blocked", "paused", "abandoned"]
LIVENESS_STATES: Final = ("working", "blocked", "paused", "abandoned")

AgentRunWaitStatus: TypeAlias = Literal["ok", "error", "timeout"]
AgentRunTerminalReason: TypeAlias = Literal[
    "completed",
    "hard_timeout",
    "timed_out",
    "superseded",
    "cancelled",
    "aborted",
    "blocked",
    "abandoned",
    "failed",
]
_CLASSIFICATION: Final[dict[str, str]] = {
    "completed": "success",
    "hard_timeout": "timeout",
    "timed_out": "timeout",
    "superseded": "cancellation",
    "cancelled": "cancellation",
    "aborted": "cancellation",
    "blocked": "failure",
    "abandoned": "failure",
    "failed": "failure",
}

# --------------------------------------------------------------------------- run outcome

#: (reason, status, stopReason, livenessState, timeoutPhase, providerStarted)
_Facts: TypeAlias = tuple[
    AgentRunTerminalReason, AgentRunWaitStatus, str | None, str | None, str | None, bool | None
]


@dataclass(frozen=True, slots=True)
class AgentRunTerminalOutcome:
    """The normalized end of a run (OpenClaw's ``AgentRunTerminalOutcome``)."""

    reason: AgentRunTerminalReason
    status: AgentRunWaitStatus
    error: str | None = None
    stop_reason: str | None = None
    liveness_state: str | None = None
    timeout_phase: str | None = None
    provider_started: bool | None = None
    started_at: float | None = None
    ended_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's camelCase shape; absent fields omitted."""
        out: dict[str, Any] = {"reason": self.reason, "status": self.status}
        for key, value in (
            ("error", self.error),
            ("stopReason", self.stop_reason),
            ("livenessState", self.liveness_state),
            ("timeoutPhase", self.timeout_phase),
            ("providerStarted", self.provider_started),
            ("startedAt", self.started_at),
            ("endedAt", self.ended_at),
        ):
            if value is not None:
                out[key] = value
        return out


def _non_blank(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _timeout_phase(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    normalized = value.strip()
    return normalized if normalized in AGENT_RUN_TIMEOUT_PHASES else None


def _facts(
    status: str,
    stop_reason: object,
    liveness_state: object,
    timeout_phase: object,
    provider_started: object,
) -> _Facts:
    stop = _non_blank(stop_reason)
    liveness = _non_blank(liveness_state)
    phase = _timeout_phase(timeout_phase)
    started = provider_started if isinstance(provider_started, bool) else None
    restart_cancelled = stop == AGENT_RUN_RESTART_ABORT_STOP_REASON
    hard_timeout = (phase is not None and phase in HARD_TIMEOUT_PHASES) or (
        not restart_cancelled and status == "timeout" and started is True
    )
    # A model/ACP "stop" is a normal finish; only a non-success status makes it cancellation.
    cancelled = restart_cancelled or (status != "ok" and stop in ("rpc", "stop"))
    normalized_liveness = liveness.strip().lower() if liveness else None
    reason: AgentRunTerminalReason
    if hard_timeout:
        reason = "hard_timeout"
    elif stop == AGENT_RUN_SUPERSEDED_STOP_REASON:
        reason = "superseded"
    elif normalized_liveness == "blocked":
        reason = "blocked"
    elif stop in (AGENT_RUN_ABORTED_STOP_REASON, AGENT_RUN_RESTART_ABORT_STOP_REASON) and not (
        restart_cancelled
    ):
        reason = "aborted"
    elif cancelled:
        reason = "cancelled"
    elif normalized_liveness == "abandoned":
        reason = "abandoned"
    elif status == "timeout":
        reason = "timed_out"
    elif status == "error":
        reason = "failed"
    else:
        reason = "completed"
    wait_status: AgentRunWaitStatus = (
        "ok"
        if reason == "completed"
        else "timeout"
        if reason in ("hard_timeout", "timed_out")
        else "error"
    )
    return reason, wait_status, stop, liveness, phase, started


def _format_error(reason: str, liveness: str | None, raw_error: object) -> str | None:
    raw = _non_blank(raw_error)
    normalized = liveness.strip().lower() if liveness else None
    if reason == "hard_timeout":
        return raw
    if normalized == "blocked":
        return raw.strip() if raw else BLOCKED_LIVENESS_ERROR
    if reason == "aborted" and not raw:
        return AGENT_RUN_ABORTED_ERROR
    if reason in ("superseded", "aborted", "cancelled"):
        return raw
    if normalized == "abandoned":
        return raw.strip() if raw else ABANDONED_LIVENESS_ERROR
    return raw


def _outcome(
    facts: _Facts,
    *,
    error: object,
    started_at: object,
    ended_at: object,
) -> AgentRunTerminalOutcome:
    reason, status, stop, liveness, phase, started = facts
    return AgentRunTerminalOutcome(
        reason=reason,
        status=status,
        error=_format_error(reason, liveness, error),
        stop_reason=stop,
        liveness_state=liveness,
        timeout_phase=phase,
        provider_started=started,
        started_at=_finite(started_at),
        ended_at=_finite(ended_at),
    )


def build_agent_run_terminal_outcome(
    status: AgentRunWaitStatus,
    *,
    error: object = None,
    stop_reason: object = None,
    liveness_state: object = None,
    timeout_phase: object = None,
    provider_started: object = None,
    started_at: object = None,
    ended_at: object = None,
) -> AgentRunTerminalOutcome:
    """Normalize one terminal observation (``status`` is ``ok``, ``error`` or ``timeout``).

    Precedence: hard timeout > superseded > blocked liveness > aborted (stop reason
    ``aborted``) > cancelled (stop reason ``restart``, or ``rpc``/``stop`` with a non-ok
    status) > abandoned liveness > timed out > failed > completed.
    """
    if status not in ("ok", "error", "timeout"):
        raise ValueError(f"terminal status must be ok, error or timeout, not {status!r}")
    return _outcome(
        _facts(status, stop_reason, liveness_state, timeout_phase, provider_started),
        error=error,
        started_at=started_at,
        ended_at=ended_at,
    )


def _pick(data: Mapping[str, Any] | None, *names: str) -> Any:
    if not data:
        return None
    for name in names:
        if name in data:
            return data[name]
    return None


def build_agent_run_terminal_outcome_from_wait_result(
    wait: Mapping[str, Any] | None,
) -> AgentRunTerminalOutcome | None:
    """From a wait snapshot (OpenClaw keys); None while its status is pending or unknown.

    An ``auth-revoked`` stop on a failed / timed-out / abandoned wait stays ``aborted`` (a
    logout is not a sticky cancellation).
    """
    status = _pick(wait, "status")
    if status not in ("ok", "error", "timeout"):
        return None
    facts = _facts(
        status,
        _pick(wait, "stopReason", "stop_reason"),
        _pick(wait, "livenessState", "liveness_state"),
        _pick(wait, "timeoutPhase", "timeout_phase"),
        _pick(wait, "providerStarted", "provider_started"),
    )
    if (
        status != "ok"
        and facts[2] == "auth-revoked"
        and facts[0] in ("failed", "timed_out", "abandoned")
    ):
        facts = ("aborted", "error", *facts[2:])
    return _outcome(
        facts,
        error=_pick(wait, "error"),
        started_at=_pick(wait, "startedAt", "started_at"),
        ended_at=_pick(wait, "endedAt", "ended_at"),
    )


def _lifecycle_facts(phase: str, data: Mapping[str, Any] | None) -> _Facts:
    stop = _non_blank(_pick(data, "stopReason", "stop_reason"))
    timeout_phase = _timeout_phase(_pick(data, "timeoutPhase", "timeout_phase"))
    raw_status = _non_blank(_pick(data, "status"))
    lifecycle_status = raw_status.lower() if raw_status else None
    timed_out = (
        stop == "timeout"
        or timeout_phase is not None
        or lifecycle_status in ("timeout", "timed_out")
    )
    aborted = _pick(data, "aborted") is True or lifecycle_status == "aborted"
    cancellation_status = lifecycle_status in ("cancelled", "canceled", "aborted", "superseded")
    cancelled = cancellation_status or aborted
    failed = phase == "error" or lifecycle_status in ("error", "failed") or stop == "error"
    normalized_stop = stop
    if (
        not timed_out
        and cancelled
        and stop not in (AGENT_RUN_ABORTED_STOP_REASON, AGENT_RUN_RESTART_ABORT_STOP_REASON)
        and stop not in ("rpc", "stop", AGENT_RUN_SUPERSEDED_STOP_REASON)
        and (stop is None or cancellation_status)
    ):
        normalized_stop = AGENT_RUN_ABORTED_STOP_REASON if aborted else "stop"
    status = "timeout" if timed_out else "error" if cancelled or failed else "ok"
    facts = _facts(
        status,
        normalized_stop,
        _pick(data, "livenessState", "liveness_state"),
        timeout_phase,
        _pick(data, "providerStarted", "provider_started"),
    )
    if stop and facts[2] != stop:
        facts = (*facts[:2], stop, *facts[3:])
    return facts


def build_agent_run_terminal_outcome_from_lifecycle_event(
    phase: Literal["end", "error"],
    data: Mapping[str, Any] | None = None,
    *,
    started_at: object = None,
    ended_at: object = None,
) -> AgentRunTerminalOutcome:
    """From a lifecycle ``end``/``error`` event's data (``aborted``, ``status``,
    ``stopReason``, ``timeoutPhase``...): a mechanical abort is a cancellation unless the
    producer recorded a timeout."""
    if phase not in ("end", "error"):
        raise ValueError(f"lifecycle phase must be end or error, not {phase!r}")
    return _outcome(
        _lifecycle_facts(phase, data),
        error=_pick(data, "error"),
        started_at=started_at if started_at is not None else _pick(data, "startedAt"),
        ended_at=ended_at if ended_at is not None else _pick(data, "endedAt"),
    )


def is_definitive_run_lifecycle(phase: object, data: Mapping[str, Any] | None = None) -> bool:
    """An ``end`` is final; an ``error`` is final only when settled, fallback-exhausted or not
    a plain failure (a plain failure may still be followed by a retry)."""
    if phase == "end":
        return True
    if phase != "error":
        return False
    facts = _lifecycle_facts("error", data)
    return (
        _pick(data, "executionSettled") is True
        or _pick(data, "fallbackExhaustedFailure") is True
        or facts[0] != "failed"
    )


def classify_agent_run_terminal_outcome(
    outcome: AgentRunTerminalOutcome | str,
) -> Literal["success", "timeout", "cancellation", "failure"]:
    """``success`` / ``timeout`` / ``cancellation`` / ``failure`` for a reason."""
    reason = outcome.reason if isinstance(outcome, AgentRunTerminalOutcome) else outcome
    result = _CLASSIFICATION.get(reason)
    if result is None:
        raise ValueError(f"unknown terminal reason {reason!r}")
    return result  # type: ignore[return-value]


def is_sticky_agent_run_terminal_outcome(outcome: AgentRunTerminalOutcome | None) -> bool:
    """Hard timeouts, supersession and cancellation are not overwritten by ordinary status."""
    return outcome is not None and outcome.reason in ("hard_timeout", "superseded", "cancelled")


def _completed_at_or_before(
    completed: AgentRunTerminalOutcome, timeout: AgentRunTerminalOutcome
) -> bool:
    return (
        completed.reason == "completed"
        and completed.ended_at is not None
        and timeout.ended_at is not None
        and completed.ended_at <= timeout.ended_at
    )


def merge_agent_run_terminal_outcome(
    current: AgentRunTerminalOutcome | None, incoming: AgentRunTerminalOutcome
) -> AgentRunTerminalOutcome:
    """Fold a later observation into the current outcome without losing sticky facts.

    * cancelled/superseded stays, unless a hard timeout proven to have ended at or before it
      arrives; superseded wins over a generic cancellation in either order;
    * a hard timeout stays, unless the other side is a completion that ended at or before it,
      or a cancellation/supersession that ended strictly before it;
    * a soft (queue / gateway-draining) timeout never overwrites an execution failure
      (``failed``, ``blocked``, ``abandoned``), in either order;
    * otherwise the newer observation wins.
    """
    if current is None:
        return incoming
    if current.reason in ("superseded", "cancelled"):
        if (
            incoming.reason == "hard_timeout"
            and incoming.ended_at is not None
            and current.ended_at is not None
            and incoming.ended_at <= current.ended_at
        ):
            return incoming
        if current.reason == "superseded" or incoming.reason != "superseded":
            return current
        return incoming
    if current.reason == "hard_timeout":
        if (
            incoming.reason in ("superseded", "cancelled")
            and incoming.ended_at is not None
            and current.ended_at is not None
            and incoming.ended_at < current.ended_at
        ):
            return incoming
        return incoming if _completed_at_or_before(incoming, current) else current
    if incoming.reason in ("superseded", "cancelled"):
        return incoming
    if incoming.reason == "hard_timeout":
        return current if _completed_at_or_before(current, incoming) else incoming
    failures = ("failed", "blocked", "abandoned")
    if current.reason == "timed_out" and incoming.reason in failures:
        return incoming
    if incoming.reason == "timed_out" and current.reason in failures:
        return current
    return incoming


# --------------------------------------------------------------------------- attempt terminal

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


# --------------------------------------------------------------------------- liveness


def resolve_run_liveness_state(
    *,
    payload_count: int,
    aborted: bool,
    timed_out: bool,
    incomplete_turn_text: str | None = None,
    prompt_error_source: str | None = None,
    timed_out_during_compaction: bool = False,
    last_assistant_stop_reason: str | None = None,
) -> EmbeddedRunLivenessState:
    """``abandoned`` (incomplete turn) > ``paused`` (compaction failed/timed out) >
    ``blocked`` (interrupted with nothing to show, or an error stop) > ``working``."""
    if incomplete_turn_text:
        return "abandoned"
    if prompt_error_source == "compaction" or timed_out_during_compaction:
        return "paused"
    if (aborted or timed_out) and payload_count == 0:
        return "blocked"
    if last_assistant_stop_reason == "error":
        return "blocked"
    return "working"


def resolve_replay_invalid_flag(
    *,
    replay_safe: bool,
    prompt_error_source: str | None = None,
    timed_out_during_compaction: bool = False,
    incomplete_turn_text: str | None = None,
) -> bool:
    """The next turn needs a fresh prompt boundary: the attempt was not replay-safe, a
    compaction failed or timed out, or the turn ended incomplete."""
    return (
        not replay_safe
        or prompt_error_source == "compaction"
        or timed_out_during_compaction
        or bool(incomplete_turn_text)
    )
