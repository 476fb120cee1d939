"""Pre-compaction snapshots (seed 003 §7): a stable history to fall back to after a timeout.

After a prompt finishes and before the attempt waits for a compaction retry, it captures the
current messages — but only trusts the capture when no compaction was running before *and*
after it was taken, because a history caught mid-compaction is half rewritten. If the run
later times out during compaction, :func:`select_compaction_timeout_snapshot` prefers that
snapshot, trimmed back to a tail the next attempt can continue from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .wire import role_of, wget

__all__ = [
    "SnapshotSelection",
    "capture_pre_compaction_snapshot",
    "select_compaction_timeout_snapshot",
    "should_flag_compaction_timeout",
]

_CONTINUABLE_ROLES = frozenset(
    {"user", "toolResult", "branchSummary", "compactionSummary", "custom"}
)


def capture_pre_compaction_snapshot(
    read_messages: Callable[[], Sequence[Any]], is_compaction_in_flight: Callable[[], bool]
) -> list[Any] | None:
    """A copy of the messages, or ``None`` when a compaction ran before or after the read."""
    if is_compaction_in_flight():
        return None
    snapshot = list(read_messages())
    if is_compaction_in_flight():
        return None
    return snapshot


def should_flag_compaction_timeout(
    *, is_timeout: bool, is_compaction_pending_or_retrying: bool, is_compaction_in_flight: bool
) -> bool:
    """A timeout counts as "during compaction" when a compaction was pending or running."""
    return is_timeout and (is_compaction_pending_or_retrying or is_compaction_in_flight)


@dataclass(frozen=True, slots=True)
class SnapshotSelection:
    """The history an attempt retries with after a timeout, and where it came from."""

    messages: list[Any]
    session_id_used: str
    source: Literal["pre-compaction", "current"]


def _can_continue_from(message: Any) -> bool:
    role = role_of(message)
    if role == "bashExecution":
        return wget(message, "excludeFromContext") is not True
    return role in _CONTINUABLE_ROLES


def _continuable_tail(messages: Sequence[Any]) -> list[Any] | None:
    end = len(messages)
    while end > 0 and not _can_continue_from(messages[end - 1]):
        end -= 1
    return list(messages[:end]) if end > 0 else None


def select_compaction_timeout_snapshot(
    *,
    timed_out_during_compaction: bool,
    pre_compaction_snapshot: Sequence[Any] | None,
    pre_compaction_session_id: str,
    current_snapshot: Sequence[Any],
    current_session_id: str,
) -> SnapshotSelection:
    """Pick the history for timeout recovery (OpenClaw ``selectCompactionTimeoutSnapshot``)."""
    if not timed_out_during_compaction:
        return SnapshotSelection(list(current_snapshot), current_session_id, "current")
    if pre_compaction_snapshot:
        tail = _continuable_tail(pre_compaction_snapshot)
        if tail:
            return SnapshotSelection(tail, pre_compaction_session_id, "pre-compaction")
    tail = _continuable_tail(current_snapshot)
    return SnapshotSelection(tail or [], current_session_id, "current")
