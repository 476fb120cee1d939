"""The idle-timeout cost-runaway breaker (spec §11.1, OpenClaw issue #76293).

A wedged provider can idle-time-out on every attempt; without a cap the attempt loop rotates
through every auth profile and fallback and fans out paid calls (the original report: one
heartbeat produced hundreds of billed calls in a minute). The breaker counts consecutive
attempts that ended in an idle timeout *without completed model progress* and trips at
``MAX_CONSECUTIVE_IDLE_TIMEOUTS_BEFORE_OUTPUT``. Its state lives outside the attempt loop's
retry branches on purpose: profile rotation or a same-model retry must not reset it.

Decision table (``step_idle_timeout_breaker``):

=============  ========================  ==============================================
idle timeout   completed model progress  counter
=============  ========================  ==============================================
yes            no                        +1 (wedged provider candidate)
any            yes                       reset to 0 (the model is alive)
no             no                        unchanged (a non-timeout error neither proves
                                         health nor is an idle timeout)
=============  ========================  ==============================================

Billed output tokens are deliberately *not* progress: some transports bill partial tool-call
argument deltas before the model stalls; that is cost, not completed work.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "MAX_CONSECUTIVE_IDLE_TIMEOUTS_BEFORE_OUTPUT",
    "IdleTimeoutBreakerState",
    "IdleTimeoutBreakerStep",
    "format_idle_timeout_breaker_message",
    "has_completed_model_progress_for_idle_breaker",
    "step_idle_timeout_breaker",
]

#: Consecutive progress-free idle timeouts after which no further attempt may start.
MAX_CONSECUTIVE_IDLE_TIMEOUTS_BEFORE_OUTPUT: Final = 5


@dataclass(frozen=True, slots=True)
class IdleTimeoutBreakerState:
    """The breaker's only state: OpenClaw's ``consecutiveIdleTimeoutsBeforeOutput``."""

    consecutive_idle_timeouts_before_output: int = 0


@dataclass(frozen=True, slots=True)
class IdleTimeoutBreakerStep:
    """One step's result: the state to keep, the current count, and whether to halt."""

    state: IdleTimeoutBreakerState
    consecutive: int
    tripped: bool


def _require_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def step_idle_timeout_breaker(
    state: IdleTimeoutBreakerState,
    *,
    idle_timed_out: bool,
    completed_model_progress: bool,
    output_tokens: int | None = None,
    cap: int = MAX_CONSECUTIVE_IDLE_TIMEOUTS_BEFORE_OUTPUT,
) -> IdleTimeoutBreakerStep:
    """Advance the breaker after one attempt; ``tripped`` means "start no further attempt".

    ``output_tokens`` is accepted (OpenClaw passes the attempt's billed output) but never
    resets the counter: partial billed output is cost, not progress. ``cap`` 0 disables the
    breaker (it never trips, the count still moves).
    """
    _require_bool("idle_timed_out", idle_timed_out)
    _require_bool("completed_model_progress", completed_model_progress)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise ValueError(f"cap must be a non-negative int, got {cap!r}")
    if output_tokens is not None and (
        isinstance(output_tokens, bool) or not isinstance(output_tokens, int)
    ):
        raise TypeError(f"output_tokens must be an int or None, got {output_tokens!r}")
    count = state.consecutive_idle_timeouts_before_output
    if completed_model_progress:
        count = 0
    elif idle_timed_out:
        count += 1
    new_state = (
        state
        if count == state.consecutive_idle_timeouts_before_output
        else IdleTimeoutBreakerState(count)
    )
    return IdleTimeoutBreakerStep(
        state=new_state, consecutive=count, tripped=cap > 0 and count >= cap
    )


def has_completed_model_progress_for_idle_breaker(
    *,
    assistant_texts: Iterable[str] = (),
    tool_meta_count: int = 0,
    client_tool_call_count: int = 0,
    outbound_delivery_evidence: bool = False,
    completed_item_count: int = 0,
) -> bool:
    """Did the attempt complete real work (OpenClaw's ``hasCompletedModelProgressForIdleBreaker``)?

    Any non-blank assistant text, any recorded tool call, any client tool call, outbound
    delivery evidence (a messaging tool sent something) or a completed lifecycle item counts.
    Billed output tokens do not.
    """
    return (
        any(text.strip() for text in assistant_texts)
        or tool_meta_count > 0
        or client_tool_call_count > 0
        or outbound_delivery_evidence
        or completed_item_count > 0
    )


def format_idle_timeout_breaker_message(
    consecutive: int, cap: int = MAX_CONSECUTIVE_IDLE_TIMEOUTS_BEFORE_OUTPUT
) -> str:
    """The exact message OpenClaw hands to the retry-limit exit when the breaker trips."""
    return (
        "Idle-timeout cost-runaway breaker tripped: "
        f"{consecutive} consecutive idle timeouts "
        "without completed model progress "
        f"(cap={cap}). "
        "Halting further attempts to bound paid model calls. "
        "See issue #76293."
    )
