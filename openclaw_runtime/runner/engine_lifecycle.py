"""The context engine's lifecycle around a run: bootstrap, turn maintenance, deferred compaction.

``context.lifecycle_policy`` decides *when*; this module does it, with the run's services:

* ``bootstrap_context_engine`` — the first run of a session in this process, when the session
  already existed, gives the engine its cold start: ``bootstrap``, then ``maintain``
  (reason ``bootstrap``) in the foreground. Once per engine and session per process (the
  engine keeps its own store; OpenClaw asks engines to make bootstrap idempotent);
* ``maintain_after_turn`` — after a successful turn: ``maintain`` in the foreground, or, for an
  engine that declares ``turn_maintenance_mode = "background"``, scheduled off the reply's path;
* ``schedule_background_maintenance`` — the background pass: announced at once (the next run
  of the session waits for it before queueing), then run as free work that takes the session
  lane (so it starts after the run that scheduled it) and the session, calls ``maintain`` and
  hands both back. Deferred budget compaction uses it with
  ``allow_deferred_compaction_execution``.

Every engine call goes through the quarantine proxy: an engine that raises is quarantined
(the plugin fault, its event on the run and the persisted record, as for any engine method)
and the legacy fallback answers; nothing here fails the run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..containment import PluginFault, fault_scope
from ..context.compaction import SummaryModel, compact_session_direct
from ..context.engine import (
    BootstrapParams,
    CompactResult,
    ContextEngineRuntimeContext,
    MaintainParams,
    MaintenanceResult,
)
from ..context.lifecycle_policy import (
    MaintenanceReason,
    has_engine_method,
    resolve_maintenance_mode,
    should_bootstrap_context_engine,
)
from ..redaction import package_logger
from .background import spawn_background
from .lane_policy import resolve_session_lane
from .session_ops import transcript_rewriter

if TYPE_CHECKING:
    from ..backends import Session
    from .services import RunServices

__all__ = [
    "bootstrap_context_engine",
    "maintain_after_turn",
    "maintenance_runtime_context",
    "run_maintenance",
    "schedule_background_maintenance",
    "session_needs_bootstrap",
]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))


def _engine_id(engine: Any) -> str:
    return str(getattr(engine, "engine_id", None) or getattr(engine.info, "id", "engine"))


def maintenance_runtime_context(
    session: Session,
    *,
    background: bool,
    token_budget: int | None = None,
    current_token_count: int | None = None,
    summary_models: Sequence[SummaryModel] = (),
    keep_recent_tokens: int = 20_000,
) -> ContextEngineRuntimeContext:
    """What ``maintain`` may call back: transcript rewrites on ``session`` and, when summary
    models are given, the runtime's own compaction of it."""

    compact_session: Callable[..., Awaitable[CompactResult]] | None = None
    if summary_models:

        async def compact(**kwargs: Any) -> CompactResult:
            return await compact_session_direct(
                session,
                list(summary_models),
                keep_recent_tokens=keep_recent_tokens,
                force=bool(kwargs.get("force", True)),
                token_budget=kwargs.get("token_budget", token_budget),
                current_token_count=kwargs.get("current_token_count", current_token_count),
            )

        compact_session = compact

    return ContextEngineRuntimeContext(
        token_budget=token_budget,
        current_token_count=current_token_count,
        allow_deferred_compaction_execution=background,
        compact_session=compact_session,
        rewrite_transcript_entries=transcript_rewriter(session),
    )


async def run_maintenance(
    engine: Any,
    session: Session,
    reason: MaintenanceReason,
    *,
    session_key: str | None,
    runtime_context: ContextEngineRuntimeContext,
) -> MaintenanceResult | None:
    """One ``maintain`` call (None when the engine has none)."""
    if not has_engine_method(engine, "maintain"):
        return None
    result = await engine.maintain(
        MaintainParams(
            session_id=session.session_id,
            session_file=str(session.path),
            session_key=session_key,
            runtime_context=runtime_context,
        )
    )
    await session.flush()
    if isinstance(result, MaintenanceResult) and result.changed:
        logger.info(
            "context engine maintenance (%s) rewrote %d entries, freed %d bytes (session %s)",
            reason,
            result.rewritten_entries,
            result.bytes_freed,
            session.session_id,
        )
    return result if isinstance(result, MaintenanceResult) else None


async def session_needs_bootstrap(engine: Any, services: RunServices, session_id: str) -> bool:
    """Called before the run opens the session: is this the engine's first sight of a session
    that already existed? Records the sighting (later runs in this process answer False)."""
    key = (_engine_id(engine), session_id)
    first_time = key not in services.context_engine_sessions
    services.context_engine_sessions.add(key)
    has_bootstrap = has_engine_method(engine, "bootstrap")
    has_maintain = has_engine_method(engine, "maintain")
    if not first_time or not (has_bootstrap or has_maintain):
        return False  # skip the store lookup: nothing would be called
    return should_bootstrap_context_engine(
        had_session_file=await services.session_store.exists(session_id),
        has_bootstrap=has_bootstrap,
        has_maintain=has_maintain,
        already_bootstrapped=False,
    )


async def bootstrap_context_engine(
    engine: Any, session: Session, *, session_key: str | None
) -> None:
    """The engine's cold start for ``session``: ``bootstrap``, then foreground ``maintain``.
    A failure is logged, never raised: the turn goes on without it (OpenClaw warns only)."""
    try:
        await _bootstrap(engine, session, session_key=session_key)
    except Exception as exc:
        logger.warning("context engine bootstrap of %s failed: %s", session.session_id, exc)


async def _bootstrap(engine: Any, session: Session, *, session_key: str | None) -> None:
    if has_engine_method(engine, "bootstrap"):
        await engine.bootstrap(
            BootstrapParams(
                session_id=session.session_id,
                session_file=str(session.path),
                session_key=session_key,
            )
        )
    await run_maintenance(
        engine,
        session,
        "bootstrap",
        session_key=session_key,
        runtime_context=maintenance_runtime_context(session, background=False),
    )


def schedule_background_maintenance(
    engine: Any,
    services: RunServices,
    *,
    session_id: str,
    session_key: str | None,
    token_budget: int | None = None,
    current_token_count: int | None = None,
    summary_models: Sequence[SummaryModel] = (),
    keep_recent_tokens: int = 20_000,
) -> bool:
    """Schedule one background ``maintain`` of the session; False when one is already
    pending (it will see this turn too: it starts after the run that scheduled it)."""
    if services.maintenance_pending(session_id):
        return False
    done = services.defer_session_maintenance(session_id)
    lane = resolve_session_lane(session_key or session_id)

    faults: list[PluginFault] = []

    async def work() -> None:
        try:
            with fault_scope(faults.append):
                await maintain()
        except Exception as exc:
            logger.warning("deferred context engine maintenance of %s failed: %s", session_id, exc)
        finally:
            services.park_maintenance_faults(session_id, faults)
            done()

    async def maintain() -> None:
        async with services.lanes.hold(lane, capacity=1, priority="background"):
            session = await services.checkout_session(session_id, cwd=os.getcwd())
            try:
                await run_maintenance(
                    engine,
                    session,
                    "turn",
                    session_key=session_key,
                    runtime_context=maintenance_runtime_context(
                        session,
                        background=True,
                        token_budget=token_budget,
                        current_token_count=current_token_count,
                        summary_models=summary_models,
                        keep_recent_tokens=keep_recent_tokens,
                    ),
                )
            finally:
                await services.checkin_session(session)

    try:
        spawn_background(work, name=f"context-engine-maintenance:{session_id}")
    except Exception:
        done()
        raise
    return True


async def maintain_after_turn(
    engine: Any,
    session: Session,
    services: RunServices,
    *,
    session_key: str | None,
    token_budget: int | None,
) -> str:
    """Turn maintenance after a successful turn: ``skip``, ``foreground`` or ``background``.
    A failure is logged, never raised: it must not turn a finished answer into a failure."""
    mode = resolve_maintenance_mode(
        "turn",
        has_maintain=has_engine_method(engine, "maintain"),
        turn_maintenance_mode=str(getattr(engine.info, "turn_maintenance_mode", "foreground")),
    )
    try:
        if mode == "foreground":
            await run_maintenance(
                engine,
                session,
                "turn",
                session_key=session_key,
                runtime_context=maintenance_runtime_context(
                    session, background=False, token_budget=token_budget
                ),
            )
        elif mode == "background":
            schedule_background_maintenance(
                engine,
                services,
                session_id=session.session_id,
                session_key=session_key,
                token_budget=token_budget,
            )
    except Exception as exc:
        logger.warning("context engine turn maintenance of %s failed: %s", session.session_id, exc)
    return mode
