"""What the run does around one engine compaction besides calling it (seed 000 §6.2–6.3, 003 §7).

* ``defer_budget_compaction`` — a budget compaction of an engine that owns compaction and
  maintains in the background is handed to background maintenance; the run goes on at once
  with ``compacted: False`` and ``DEFERRED_BACKGROUND_COMPACTION_REASON``;
* ``follow_compaction_successor`` — the engine reported a new session: validate it
  (``context.successor``), hand the old session back, open the new one and rebind the session
  key to it; a successor that breaks the binding turns the compaction into a failure;
* ``PreCompactionSnapshot`` — the branch captured before a compaction (only when no compaction
  is in flight before and after the read); when the run's timeout hits during the compaction,
  the session's leaf goes back to the stable pre-compaction history instead of whatever the
  engine left half written.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..context.compaction import SummaryModel
from ..context.engine import CompactResult
from ..context.lifecycle_policy import (
    DEFERRED_BACKGROUND_COMPACTION_REASON,
    DEFERRED_COMPACTION_NOT_SCHEDULED_REASON,
    has_engine_method,
    should_defer_budget_compaction,
)
from ..context.successor import SuccessorError, resolve_compaction_successor
from ..redaction import package_logger
from ..transcript.snapshot import (
    capture_pre_compaction_snapshot,
    select_compaction_timeout_snapshot,
)
from .checkin import CheckinRun, flush_session
from .engine_lifecycle import schedule_background_maintenance
from .session_ops import branch_messages_with_entries

if TYPE_CHECKING:
    from ..backends import Session
    from .services import RunServices

__all__ = [
    "PreCompactionSnapshot",
    "defer_budget_compaction",
    "follow_compaction_successor",
    "wants_deferred_budget_compaction",
]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))


def wants_deferred_budget_compaction(engine: Any, trigger: str) -> bool:
    """``should_defer_budget_compaction`` for this engine (through its proxy's ``info``)."""
    info = engine.info
    return should_defer_budget_compaction(
        trigger,
        owns_compaction=bool(getattr(info, "owns_compaction", False)),
        turn_maintenance_mode=str(getattr(info, "turn_maintenance_mode", "foreground")),
        has_maintain=has_engine_method(engine, "maintain"),
    )


def defer_budget_compaction(
    engine: Any,
    services: RunServices,
    *,
    session_id: str,
    session_key: str | None,
    token_budget: int | None,
    current_token_count: int | None,
    summary_models: Sequence[SummaryModel],
    keep_recent_tokens: int,
) -> CompactResult:
    """Schedule the budget compaction as background maintenance; the result the run sees."""
    try:
        schedule_background_maintenance(
            engine,
            services,
            session_id=session_id,
            session_key=session_key,
            token_budget=token_budget,
            current_token_count=current_token_count,
            summary_models=summary_models,
            keep_recent_tokens=keep_recent_tokens,
        )
    except Exception as exc:
        logger.warning("cannot defer budget compaction of %s: %s", session_id, exc)
        return CompactResult(
            ok=False, compacted=False, reason=DEFERRED_COMPACTION_NOT_SCHEDULED_REASON
        )
    return CompactResult(ok=True, compacted=False, reason=DEFERRED_BACKGROUND_COMPACTION_REASON)


async def follow_compaction_successor(
    services: RunServices, session: Session, result: CompactResult, *, session_key: str | None
) -> tuple[Session | None, CompactResult]:
    """The session to continue on (None: stay on ``session``) and the compaction's result."""
    try:
        new_id = resolve_compaction_successor(
            result.successor,
            current_session_id=session.session_id,
            current_session_file=str(session.path),
            current_session_key=session_key,
        )
    except SuccessorError as exc:
        return None, _rejected(result, str(exc))
    if new_id is None:
        return None, result
    if not await services.session_store.exists(new_id):
        return None, _rejected(result, f"compaction successor session {new_id!r} does not exist")
    await services.checkin_session(session)
    successor = await services.checkout_session(new_id, cwd=os.getcwd())
    if session_key:
        await services.session_index.bind(session_key, new_id)
    logger.info("continuing session %s on its compaction successor %s", session.session_id, new_id)
    return successor, result


def _rejected(result: CompactResult, why: str) -> CompactResult:
    logger.warning("context engine successor rejected: %s", why)
    return CompactResult(
        ok=False,
        compacted=False,
        reason=f"context engine successor rejected: {why}",
        result=result.result,
    )


@dataclass(frozen=True, slots=True)
class PreCompactionSnapshot:
    """The branch (entry, message) pairs captured before a compaction, or ``None``."""

    session_id: str
    pairs: list[tuple[dict[str, Any], Any]] | None

    @classmethod
    def capture(cls, session: Session, in_flight: Callable[[], bool]) -> PreCompactionSnapshot:
        """Capture, trusted only when no compaction is in flight before and after the read."""
        pairs = capture_pre_compaction_snapshot(
            lambda: branch_messages_with_entries(session), in_flight
        )
        return cls(session.session_id, pairs)

    async def restore_after_timeout(
        self, session: Session, *, run: CheckinRun | None = None
    ) -> bool:
        """The run timed out during the compaction: put the leaf back on the pre-compaction
        history when the branch moved away from it; whether it did. A failed flush is
        ``run``'s error (``flush_session``)."""
        pairs = self.pairs or []
        if not pairs or session.get_leaf_id() == str(pairs[-1][0]["id"]):
            return False  # nothing captured, or the branch never moved
        current = [message for _, message in branch_messages_with_entries(session)]
        selection = select_compaction_timeout_snapshot(
            timed_out_during_compaction=True,
            pre_compaction_snapshot=[message for _, message in pairs],
            pre_compaction_session_id=self.session_id,
            current_snapshot=current,
            current_session_id=session.session_id,
        )
        if selection.source != "pre-compaction" or selection.session_id_used != session.session_id:
            return False
        target = str(pairs[len(selection.messages) - 1][0]["id"])
        await session.branch(target)
        await flush_session(run, session, "compaction-timeout restore")
        logger.warning(
            "timeout during compaction of %s: continuing from the pre-compaction snapshot",
            session.session_id,
        )
        return True
