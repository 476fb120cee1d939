"""The plugin circuit breaker: when a plugin that keeps raising stops being called.

A plugin that raises is skipped for that one call. If it raises ``threshold`` times within
``window_s`` seconds it is *quarantined*: the breaker opens and the host stops calling it. After
``cooloff_s`` one trial call is let through (half-open): success closes the breaker, a fault
re-opens it for another cool-off. Nothing here does I/O or reads a clock; the caller passes
``now`` (monotonic seconds), so every transition is a row in a table test.

Transitions (``breaker_admit`` / ``breaker_fault`` / ``breaker_success``):

===========  ===================================  =============================================
phase        event                                result
===========  ===================================  =============================================
closed       admit                                call
closed       fault, < threshold in window         closed (fault remembered)
closed       fault, >= threshold in window        open (tripped)
closed       success                              closed (faults in the window are kept)
open         admit, cool-off not over             skip
open         admit, cool-off over                 half-open, call (the trial)
half_open    admit, trial in flight               skip (until another cool-off passes)
half_open    success                              closed, fault history cleared
half_open    fault                                open again (tripped), new cool-off
===========  ===================================  =============================================
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

__all__ = [
    "BreakerPolicy",
    "BreakerState",
    "BreakerStep",
    "breaker_admit",
    "breaker_fault",
    "breaker_success",
]

Phase = Literal["closed", "open", "half_open"]


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """``threshold`` faults within ``window_s`` open the breaker for ``cooloff_s``."""

    threshold: int = 3
    window_s: float = 300.0
    cooloff_s: float = 600.0

    def __post_init__(self) -> None:
        if self.threshold < 1:
            raise ValueError(f"breaker threshold must be >= 1, got {self.threshold!r}")
        if not self.window_s > 0:
            raise ValueError(f"breaker window must be > 0 seconds, got {self.window_s!r}")
        if not self.cooloff_s >= 0:
            raise ValueError(f"breaker cool-off must be >= 0 seconds, got {self.cooloff_s!r}")


@dataclass(frozen=True, slots=True)
class BreakerState:
    """One unit's breaker: its phase, the recent fault times, when it opened and how often."""

    phase: Phase = "closed"
    faults: tuple[float, ...] = ()
    opened_at: float | None = None
    trial_at: float | None = None
    trips: int = 0

    @property
    def quarantined(self) -> bool:
        """Whether calls are being skipped (open, or half-open with a trial in flight)."""
        return self.phase != "closed"


@dataclass(frozen=True, slots=True)
class BreakerStep:
    """The state after a fault and whether this fault opened the breaker."""

    state: BreakerState
    tripped: bool


def breaker_admit(
    state: BreakerState, now: float, policy: BreakerPolicy
) -> tuple[bool, BreakerState]:
    """Whether to call the plugin now, and the state to keep."""
    if state.phase == "closed":
        return True, state
    if state.phase == "open":
        assert state.opened_at is not None
        if now - state.opened_at >= policy.cooloff_s:
            return True, replace(state, phase="half_open", trial_at=now)
        return False, state
    # half-open: one trial is in flight; if its outcome never came back, allow another
    # trial once a further cool-off has passed (a lost outcome must not quarantine forever)
    assert state.trial_at is not None
    if now - state.trial_at >= policy.cooloff_s:
        return True, replace(state, trial_at=now)
    return False, state


def breaker_fault(state: BreakerState, now: float, policy: BreakerPolicy) -> BreakerStep:
    """Record a fault at ``now``."""
    if state.phase == "half_open":
        return BreakerStep(
            BreakerState("open", (now,), opened_at=now, trips=state.trips + 1), tripped=True
        )
    if state.phase == "open":
        # a call admitted before the breaker opened finished late: nothing new to decide
        return BreakerStep(state, tripped=False)
    recent = (*(t for t in state.faults if now - t < policy.window_s), now)
    if len(recent) >= policy.threshold:
        return BreakerStep(
            BreakerState("open", recent, opened_at=now, trips=state.trips + 1), tripped=True
        )
    return BreakerStep(replace(state, faults=recent), tripped=False)


def breaker_success(state: BreakerState) -> BreakerState:
    """Record a call that returned normally."""
    if state.phase == "half_open":
        return BreakerState(trips=state.trips)
    return state
