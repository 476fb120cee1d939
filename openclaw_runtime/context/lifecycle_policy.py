"""When the host calls an engine's lifecycle methods: the pure decisions (seed 003 §8, 000 §6.2).

The run wires these; keeping them here lets a table test pin each rule:

* ``should_bootstrap_context_engine`` — an engine gets one cold start for a session that
  already existed when it entered this process (OpenClaw: ``hadSessionFile`` before
  ``bootstrap``; the seed: "an old session re-entering the runtime gets one cold start");
* ``resolve_maintenance_mode`` — ``maintain`` runs in the foreground after bootstrap and
  compaction, and after a turn unless the engine declares ``turn_maintenance_mode ==
  "background"`` (OpenClaw ``runContextEngineMaintenance``);
* ``should_defer_budget_compaction`` — budget (pre-prompt) compaction of an engine that owns
  compaction *and* maintains in the background is not run on the reply's path: it is handed to
  background maintenance and reported as ``compacted: False`` with
  ``DEFERRED_BACKGROUND_COMPACTION_REASON`` (OpenClaw
  ``shouldDeferOwningContextEngineBudgetCompaction``).
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = [
    "DEFERRED_BACKGROUND_COMPACTION_REASON",
    "DEFERRED_COMPACTION_NOT_SCHEDULED_REASON",
    "MaintenanceMode",
    "MaintenanceReason",
    "has_engine_method",
    "resolve_maintenance_mode",
    "should_bootstrap_context_engine",
    "should_defer_budget_compaction",
]

#: ``CompactResult.reason`` of a budget compaction handed to background maintenance.
DEFERRED_BACKGROUND_COMPACTION_REASON = "deferred to background context-engine maintenance"
#: ``CompactResult.reason`` when that hand-over could not be scheduled.
DEFERRED_COMPACTION_NOT_SCHEDULED_REASON = (
    "failed to schedule background context-engine maintenance"
)

MaintenanceReason = Literal["bootstrap", "compaction", "turn"]
MaintenanceMode = Literal["skip", "foreground", "background"]


def has_engine_method(engine: Any, name: str) -> bool:
    """Whether ``engine`` (or the engine behind a quarantine proxy) implements ``name``."""
    target = getattr(engine, "wrapped", engine)
    return callable(getattr(target, name, None))


def should_bootstrap_context_engine(
    *, had_session_file: bool, has_bootstrap: bool, has_maintain: bool, already_bootstrapped: bool
) -> bool:
    """A session that existed before it entered this process, an engine with ``bootstrap``
    or ``maintain``, and no bootstrap of that session by this engine yet."""
    if not had_session_file or already_bootstrapped:
        return False
    return has_bootstrap or has_maintain


def resolve_maintenance_mode(
    reason: MaintenanceReason, *, has_maintain: bool, turn_maintenance_mode: str
) -> MaintenanceMode:
    """How ``maintain`` runs for ``reason``: only turn maintenance can go to the background."""
    if not has_maintain:
        return "skip"
    if reason == "turn" and turn_maintenance_mode == "background":
        return "background"
    return "foreground"


def should_defer_budget_compaction(
    trigger: str, *, owns_compaction: bool, turn_maintenance_mode: str, has_maintain: bool
) -> bool:
    """Budget compaction (our ``preemptive`` trigger) of a compaction-owning engine that
    maintains in the background; every other trigger compacts at once."""
    return (
        trigger in ("budget", "preemptive")
        and owns_compaction
        and turn_maintenance_mode == "background"
        and has_maintain
    )
