"""What the CLI's spinner says while a turn runs, event by event (a pure state machine).

The spinner used to be hidden on every ``compaction_end``. A compaction often runs *inside* an
attempt — the preemptive check before the prompt is sent, a budget compaction deferred to the
background — and then the attempt goes on waiting for the model without a new
``attempt_start``: after a no-op (or any) compaction the spinner vanished while the user was
still waiting. Now a compaction remembers the label it covered and ``compaction_end`` puts it
back; only the answer's first text, ``run_end`` and nothing else hide it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["WAITING_FOR_MODEL", "Status", "next_status"]

WAITING_FOR_MODEL = "waiting for the model…"
COMPACTING = "compacting the session…"


@dataclass(frozen=True)
class Status:
    """The spinner's label (None: hidden) and, during a compaction, the label it covers."""

    label: str | None = None
    covered: str | None = None


def next_status(status: Status, event_type: str, event: Any = None) -> Status:
    """The status after ``event_type`` (``event`` gives its fields: provider, model,
    tool_name, delay_ms). Event types that change nothing return ``status`` itself."""
    if event_type == "attempt_start":
        target = f"{getattr(event, 'provider', '')}/{getattr(event, 'model', '')}"
        return Status(f"waiting for {target}…")
    if event_type == "tool_execution_start":
        return Status(f"running {getattr(event, 'tool_name', None) or 'a tool'}…")
    if event_type == "tool_execution_end":
        return Status(WAITING_FOR_MODEL)
    if event_type == "retry_scheduled":
        delay = getattr(event, "delay_ms", 0) or 0
        return Status(f"retrying in {delay / 1000:.1f} s…")
    if event_type == "compaction_start":
        covered = status.covered if status.label == COMPACTING else status.label
        return Status(COMPACTING, covered)
    if event_type == "compaction_end":
        # the turn goes on: back to what the compaction interrupted (an attempt that
        # failed and compacts gets its own attempt_start next, which relabels it anyway)
        return Status(status.covered or WAITING_FOR_MODEL)
    if event_type in ("text_delta", "run_end"):
        return Status()
    return status
