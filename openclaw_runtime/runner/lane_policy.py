"""Lane naming, lane timeouts and queue priority (spec §11.3, seed 000 §4.2).

A run queues twice: first in its **session lane** (``session:<key>``, so one session never runs
two turns at once), then in a **global lane** (``main`` by default) that caps concurrent model
work. These pure functions decide the names, how long a lease may hold a lane, and at what
priority a run waits; ``runner/lanes.py`` enforces them.

The lane timeout is the run timeout plus a 30 s grace, so the lane watchdog can never take the
shutdown path away from the run's own, more informative timeout.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

__all__ = [
    "BACKGROUND_TRIGGERS",
    "DEFAULT_AGENT_TIMEOUT_MS",
    "EMBEDDED_RUN_LANE_HEARTBEAT_MS",
    "EMBEDDED_RUN_LANE_TIMEOUT_GRACE_MS",
    "FOREGROUND_TRIGGERS",
    "MAIN_SESSION_RESTART_RECOVERY_SOURCE_TOOL",
    "MAX_TIMER_TIMEOUT_MS",
    "CommandLane",
    "EmbeddedRunSessionLanePolicy",
    "LanePriority",
    "add_timer_timeout_grace_ms",
    "is_main_session_restart_recovery_input_provenance",
    "resolve_embedded_run_global_lane",
    "resolve_embedded_run_lane_timeout_ms",
    "resolve_embedded_run_session_lane_policy",
    "resolve_embedded_run_session_queue_priority",
    "resolve_embedded_session_lane",
    "resolve_global_lane",
    "resolve_run_lane_timeout_s",
    "resolve_session_lane",
]

LanePriority: TypeAlias = Literal["foreground", "normal", "background"]

#: Grace added to the run timeout before the lane watchdog may act.
EMBEDDED_RUN_LANE_TIMEOUT_GRACE_MS: Final = 30_000
#: How often a running attempt tells its lane it is alive: twice per grace window.
EMBEDDED_RUN_LANE_HEARTBEAT_MS: Final = EMBEDDED_RUN_LANE_TIMEOUT_GRACE_MS // 2
#: The default agent deadline: 48 hours.
DEFAULT_AGENT_TIMEOUT_MS: Final = 48 * 60 * 60 * 1000
#: The largest timer OpenClaw arms (Node's setTimeout limit, rounded down); also the
#: "no timeout" sentinel that ``timeoutSeconds: 0`` resolves to.
MAX_TIMER_TIMEOUT_MS: Final = 2_147_000_000

FOREGROUND_TRIGGERS: Final = frozenset({"user", "manual"})
BACKGROUND_TRIGGERS: Final = frozenset({"cron", "heartbeat", "memory", "overflow"})
MAIN_SESSION_RESTART_RECOVERY_SOURCE_TOOL: Final = "main_session_restart_recovery"


class CommandLane:
    """OpenClaw's named global lanes."""

    MAIN: Final = "main"
    CRON: Final = "cron"
    CRON_NESTED: Final = "cron-nested"
    SUBAGENT: Final = "subagent"
    NESTED: Final = "nested"


def resolve_session_lane(session_key_or_id: str) -> str:
    """``session:<key>``; a key that already has the prefix is kept, a blank key is ``main``."""
    if not isinstance(session_key_or_id, str):
        raise TypeError(f"session key must be a string, got {type(session_key_or_id).__name__}")
    cleaned = session_key_or_id.strip() or CommandLane.MAIN
    return cleaned if cleaned.startswith("session:") else f"session:{cleaned}"


#: OpenClaw's alias of ``resolve_session_lane``.
resolve_embedded_session_lane = resolve_session_lane


def resolve_global_lane(lane: str | None = None) -> str:
    """The requested global lane, ``main`` when blank.

    A run requested on the ``cron`` lane goes to ``cron-nested``: the cron job itself holds
    the cron lane's only slot, so its inner run waiting there would deadlock.
    """
    cleaned = lane.strip() if isinstance(lane, str) else ""
    if cleaned == CommandLane.CRON:
        return CommandLane.CRON_NESTED
    return cleaned or CommandLane.MAIN


def resolve_embedded_run_global_lane(*, is_heartbeat: bool) -> str:
    """Heartbeat runs use ``cron-nested`` so they never occupy the inbound ``main`` lane."""
    return CommandLane.CRON_NESTED if is_heartbeat else CommandLane.MAIN


def add_timer_timeout_grace_ms(timeout_ms: float, grace_ms: float = 5_000) -> int | None:
    """``timeout + grace`` floored and clamped to [1, ``MAX_TIMER_TIMEOUT_MS``]; None when
    either input is not a finite number."""
    if not _is_finite_number(timeout_ms) or not _is_finite_number(grace_ms):
        return None
    total = timeout_ms + grace_ms
    if not math.isfinite(total):
        return MAX_TIMER_TIMEOUT_MS
    return min(max(math.floor(total), 1), MAX_TIMER_TIMEOUT_MS)


def _is_finite_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def resolve_embedded_run_lane_timeout_ms(timeout_ms: float | None) -> int:
    """How long a run may hold its lanes without progress: ``floor(timeout) + 30 s``.

    Unusable input (None, NaN, ±inf, ≤ 0) and the "no timeout" sentinel
    (≥ ``MAX_TIMER_TIMEOUT_MS``, what ``timeoutSeconds: 0`` resolves to) fall back to the
    default agent deadline: 48 h + 30 s. The result never exceeds ``MAX_TIMER_TIMEOUT_MS``.
    """
    default = DEFAULT_AGENT_TIMEOUT_MS + EMBEDDED_RUN_LANE_TIMEOUT_GRACE_MS
    if timeout_ms is None or not _is_finite_number(timeout_ms):
        return default
    if timeout_ms <= 0 or timeout_ms >= MAX_TIMER_TIMEOUT_MS:
        return default
    resolved = add_timer_timeout_grace_ms(
        math.floor(timeout_ms), EMBEDDED_RUN_LANE_TIMEOUT_GRACE_MS
    )
    return default if resolved is None else resolved


@functools.lru_cache(maxsize=64, typed=True)
def resolve_run_lane_timeout_s(timeout_s: float | None) -> float:
    """``resolve_embedded_run_lane_timeout_ms`` of a run timeout in seconds (None: none), in
    seconds: what ``hold`` takes. Remembered per value (a process runs with a handful of
    timeouts, and every run asks)."""
    timeout_ms = 0 if timeout_s is None else timeout_s * 1000
    return resolve_embedded_run_lane_timeout_ms(timeout_ms) / 1000


def _provenance_field(provenance: Any, *names: str) -> Any:
    if provenance is None:
        return None
    if isinstance(provenance, Mapping):
        for name in names:
            if name in provenance:
                return provenance[name]
        return None
    for name in names:
        value = getattr(provenance, name, None)
        if value is not None:
            return value
    return None


def is_main_session_restart_recovery_input_provenance(provenance: Any) -> bool:
    """An ``internal_system`` input whose source tool is ``main_session_restart_recovery``
    (case-insensitive): the gateway re-running a turn interrupted by a restart."""
    kind = _provenance_field(provenance, "kind")
    tool = _provenance_field(provenance, "sourceTool", "source_tool")
    return (
        kind == "internal_system"
        and isinstance(tool, str)
        and tool.strip().lower() == MAIN_SESSION_RESTART_RECOVERY_SOURCE_TOOL
    )


@dataclass(frozen=True, slots=True)
class EmbeddedRunSessionLanePolicy:
    """How a run waits in its session lane."""

    priority: LanePriority
    can_resume_across_rotation: bool


def resolve_embedded_run_session_lane_policy(
    trigger: str | None, input_provenance: Mapping[str, Any] | Any = None
) -> EmbeddedRunSessionLanePolicy:
    """Priority from the trigger, demoted to ``background`` for restart-recovery runs and
    inter-session input (``provenance.kind == "inter_session"``): humans go first.

    * ``user`` / ``manual`` → ``foreground``;
    * ``cron`` / ``heartbeat`` / ``memory`` / ``overflow`` → ``background``;
    * anything else (including no trigger) → ``normal``.

    ``can_resume_across_rotation``: a foreground-triggered run that is not a restart
    recovery may keep its admitted place when the gateway lifecycle rotates while it waits.
    ``input_provenance`` is OpenClaw's ``inputProvenance`` (a mapping with ``kind`` and
    ``sourceTool``, or an object with those attributes).
    """
    if trigger is not None and not isinstance(trigger, str):
        raise TypeError(f"trigger must be a string or None, got {type(trigger).__name__}")
    trigger_priority: LanePriority
    if trigger in FOREGROUND_TRIGGERS:
        trigger_priority = "foreground"
    elif trigger in BACKGROUND_TRIGGERS:
        trigger_priority = "background"
    else:
        trigger_priority = "normal"
    restart_recovery = is_main_session_restart_recovery_input_provenance(input_provenance)
    inter_session = _provenance_field(input_provenance, "kind") == "inter_session"
    return EmbeddedRunSessionLanePolicy(
        priority="background" if restart_recovery or inter_session else trigger_priority,
        can_resume_across_rotation=not restart_recovery and trigger_priority == "foreground",
    )


def resolve_embedded_run_session_queue_priority(
    trigger: str | None, input_provenance: Mapping[str, Any] | Any = None
) -> LanePriority:
    """Just the priority of ``resolve_embedded_run_session_lane_policy``."""
    return resolve_embedded_run_session_lane_policy(trigger, input_provenance).priority
