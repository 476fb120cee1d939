"""Run outcomes: one sticky answer to "how did this run end?" (spec §11.5, seed 000 §4.4).

Several sources report a run's end — the wait result, liveness probes, timeout attribution,
late cleanup callbacks — in any order. ``AgentRunTerminalOutcome`` is the one answer they are
normalized to: reasons ``completed``, ``hard_timeout``, ``timed_out``, ``superseded``,
``cancelled``, ``aborted``, ``blocked``, ``abandoned``, ``failed``. This module builds it (from
a status, a wait result or a lifecycle event), classifies it, merges two of them, and resolves
the run's liveness state. Rule one: only a timeout attributed to
``preflight``/``provider``/``post_turn``, or a ``timeout`` status after the provider was
reached, is a *hard* timeout — queue and gateway-draining timeouts are wait-layer uncertainty,
not the model's fault. Rule two: ``cancelled``/``superseded`` and hard timeouts are sticky; a
hard timeout only yields to a completion proven to have ended at or before it
(``merge_agent_run_terminal_outcome``).

The other normalization — how one *attempt* ended, and its mapping to this outcome — is
``attempt_terminal``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

__all__ = [
    "AGENT_RUN_ABORTED_ERROR",
    "AGENT_RUN_ABORTED_STOP_REASON",
    "AGENT_RUN_RESTART_ABORT_STOP_REASON",
    "AGENT_RUN_SUPERSEDED_STOP_REASON",
    "AGENT_RUN_TERMINAL_RETRY_GRACE_MS",
    "AGENT_RUN_TIMEOUT_PHASES",
    "HARD_TIMEOUT_PHASES",
    "LIVENESS_STATES",
    "AgentRunTerminalOutcome",
    "AgentRunTerminalReason",
    "EmbeddedRunLivenessState",
    "build_agent_run_terminal_outcome",
    "build_agent_run_terminal_outcome_from_lifecycle_event",
    "build_agent_run_terminal_outcome_from_wait_result",
    "classify_agent_run_terminal_outcome",
    "is_definitive_run_lifecycle",
    "is_sticky_agent_run_terminal_outcome",
    "merge_agent_run_terminal_outcome",
    "merge_run_cleanup_outcome",
    "resolve_replay_invalid_flag",
    "resolve_run_liveness_state",
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


def merge_run_cleanup_outcome(
    reached: AgentRunTerminalOutcome | None, cleanup: AgentRunTerminalOutcome
) -> AgentRunTerminalOutcome:
    """The run's outcome once a post-run cleanup step (lane release, steering ack, session
    check-in) has failed with ``cleanup`` after the run ``reached`` its own outcome.

    A late cleanup failure never downgrades a completion — the answer was produced and
    streamed; the failure is reported, not made the outcome. Anything else goes through
    ``merge_agent_run_terminal_outcome``, so cancelled, superseded and hard-timeout outcomes
    hold. With no outcome reached (the failure came before the answer) the cleanup failure
    is the outcome.
    """
    if (
        reached is not None
        and reached.reason == "completed"
        and classify_agent_run_terminal_outcome(cleanup) == "failure"
    ):
        return reached
    return merge_agent_run_terminal_outcome(reached, cleanup)


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
