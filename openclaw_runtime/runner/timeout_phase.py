"""Where an attempt's timeout struck, and what that means for failover and the run outcome.

The attempt timer (``attempt_timer``) aborts the attempt's controller when the attempt runs out
of time; it notes whether a tool was running then. OpenClaw keeps the two cases apart
(spec §2.1 stage ``assistant``, §11.5):

* a timeout while the model was answering is phase ``prompt``: the model (or its profile) was
  slow, so the failover policy rotates the auth profile / falls back, and the run outcome is a
  hard timeout attributed to the provider (``timeoutPhase: provider``, ``providerStarted``);
* a timeout while a tool ran is phase ``tool_execution``, source ``runtime``, and the timer
  aborted the run (``aborted: true``): no other profile or model would make the tool faster,
  so the policy answers ``continue_normal`` (never rotate, never fall back), and the run
  outcome carries ``stopReason: timeout`` without a provider phase — a ``timed_out`` run, not a
  ``hard_timeout`` (the run-outcome phases are queue/preflight/provider/post_turn/
  gateway_draining; ``tool_execution`` is not one of them).

An idle timeout (the stream went silent) is model silence whatever ran: source ``idle``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from ..failover import AttemptTerminal

__all__ = [
    "AttemptTimeoutPhase",
    "RunTimeoutFields",
    "attempt_timeout_phase",
    "run_timeout_fields",
    "timed_out_attempt_terminal",
]

AttemptTimeoutPhase: TypeAlias = Literal["prompt", "tool_execution"]


def attempt_timeout_phase(*, timed_out_during_tool_execution: bool) -> AttemptTimeoutPhase:
    """``tool_execution`` when a tool was running as the attempt timed out, else ``prompt``."""
    return "tool_execution" if timed_out_during_tool_execution else "prompt"


def timed_out_attempt_terminal(
    *, timed_out_during_tool_execution: bool, idle_timed_out: bool
) -> AttemptTerminal:
    """The failover terminal of a timed-out attempt.

    An idle timeout is source ``idle`` (model silence). Otherwise the attempt's own timer fired
    (source ``runtime``) and aborted the attempt's controller, so the terminal is
    ``aborted``: a runtime timeout rotates only in the ``prompt`` phase.
    """
    phase = attempt_timeout_phase(timed_out_during_tool_execution=timed_out_during_tool_execution)
    if idle_timed_out:
        return AttemptTerminal(kind="timeout", phase=phase, source="idle")
    return AttemptTerminal(kind="timeout", phase=phase, source="runtime", aborted=True)


@dataclass(frozen=True, slots=True)
class RunTimeoutFields:
    """The run-outcome fields of a timed-out run (``build_agent_run_terminal_outcome``)."""

    stop_reason: str | None
    timeout_phase: str | None
    provider_started: bool | None
    #: whether the run's liveness state (``blocked`` for a run with nothing to show) goes into
    #: the outcome: a blocked liveness outranks a soft timeout, and a slow tool did not block
    #: the model, so a ``tool_execution`` timeout stays a ``timed_out`` run
    liveness_applies: bool = True


def run_timeout_fields(phase: AttemptTimeoutPhase | None, *, timed_out: bool) -> RunTimeoutFields:
    """Outcome fields for a run that ended with status ``timeout``; ``phase`` is where the
    attempt's timeout struck, ``timed_out`` whether the attempt itself timed out.

    ``tool_execution``: ``stopReason: timeout`` only — a ``timed_out`` run. Anything else (the
    ``prompt`` phase, or no phase recorded): attributed to the provider, which started when
    the attempt timed out — a hard timeout.
    """
    if phase == "tool_execution":
        return RunTimeoutFields(
            stop_reason="timeout", timeout_phase=None, provider_started=None, liveness_applies=False
        )
    return RunTimeoutFields(
        stop_reason=None, timeout_phase="provider", provider_started=True if timed_out else None
    )
