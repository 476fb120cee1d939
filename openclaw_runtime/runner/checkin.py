"""Checking the session back in after the run: a failure there is a cleanup failure.

The check-in (``RunServices.checkin_session``) flushes what the session buffered and keeps it
open for the next turn. It runs after the run reached its outcome, like the lane release and
the steering ack, so a failure there must go through ``merge_run_cleanup_outcome``
(``run_result.after_backend_error``): a completed, streamed answer stands and the failure is
reported, never the other way round. The session object a plugin's store hands out is not
behind the backend guard (only the store's own methods are), so a raising ``flush`` used to
escape the run as the plugin's raw exception. ``check_in_session`` turns it into the
``PluginBackendError`` the run already handles, recorded as a fault of the store's plugin
(the embedded store has no plugin: the error is only logged when the answer stands).

Every other flush of a session the runner does (compaction, truncation, thinking strip,
prompt refusal, a queued message at the end, ``Runtime.compact_session``) fails the same
way through ``flush_session``: the lines stay buffered in the session, and the error names
the session and the phase instead of escaping as the store's raw ``OSError``. The checkout
(``check_out_session``) reports the lines such a failure kept, still not writable, the same
way ("reopening session …").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .._exceptions import PluginBackendError
from ..containment.proxy import GuardedBackend
from ..failover.events import redact_secret_text
from ..transcript.jsonl import SessionLockTimeout
from ..transcript.memory import aclose_is_noop, flush_is_noop

if TYPE_CHECKING:
    from ..backends import Session

__all__ = [
    "CheckinRun",
    "SessionUser",
    "check_in_session",
    "check_out_session",
    "checkin_never_suspends",
    "flush_session",
    "session_checkin_error",
    "session_flush_error",
]


class CheckinRun(Protocol):
    """What the check-in uses of its run (``run_state.RunState``, which imports this module
    for its turn-end flush error: a protocol, not that class)."""

    services: Any
    hooks: Any
    session_id: str


def session_checkin_error(
    run: CheckinRun, exc: Exception, during: str | None = None
) -> PluginBackendError:
    """The run's error for a failed check-in (or another flush of the session ``during``
    names), attributed to the session store's plugin (a fault is recorded for it) when a
    plugin provides the store."""
    if during is None:
        during = f"the session check-in (flush) of session {run.session_id}"
    store = run.services.session_store
    if isinstance(store, GuardedBackend):
        fault = run.hooks.record_fault(
            store.plugin, "register_backends", exc, unit=f"backend:{store.label}"
        )
        return PluginBackendError(
            f"{store.label} backend of plugin {store.plugin!r} failed in {during}: {fault.error}",
            plugin_name=store.plugin,
        )
    return PluginBackendError(
        f"the session store failed in {during}: "
        f"{type(exc).__name__}: {redact_secret_text(str(exc))}"
    )


def session_flush_error(
    run: CheckinRun, exc: Exception, phase: str, session_id: str | None = None
) -> PluginBackendError:
    """The run's error for a failed ``phase`` flush (``"turn-end"``, ``"compaction"``, …) of
    ``session_id`` (the run's session by default), whose lines stay buffered."""
    during = (
        f"the {phase} flush of session {session_id or run.session_id} "
        "(its entries stay buffered for the next flush)"
    )
    return session_checkin_error(run, exc, during)


async def flush_session(run: CheckinRun | None, session: Session, phase: str) -> None:
    """``session.flush()`` for ``run``: a failure (not a cancellation) is raised as
    ``session_flush_error``; with no run (a caller outside the runner), the store's own."""
    try:
        await session.flush()
    except PluginBackendError:
        raise
    except Exception as exc:
        if run is None:
            raise
        raise session_flush_error(run, exc, phase, session.session_id) from exc


async def check_out_session(run: CheckinRun, cwd: str) -> Session:
    """``RunServices.checkout_session`` of the run's session; lines a failed flush kept that
    still cannot be written (or whose lock is not had in time) are the run's error naming
    the session ("reopening session …") instead of the store's raw exception."""
    try:
        return await run.services.checkout_session(run.session_id, cwd=cwd)
    except (OSError, SessionLockTimeout) as exc:
        raise session_checkin_error(run, exc, f"reopening session {run.session_id}") from exc


@dataclass
class SessionUser:
    """A ``CheckinRun`` for work on a session outside a run (``Runtime.compact_session``):
    its failed flush is reported as a run's would be."""

    services: Any
    hooks: Any
    session_id: str


def checkin_never_suspends(run: CheckinRun, session: Session) -> bool:
    """Whether checking ``session`` in reaches no checkpoint: it and every session the
    check-in would close are memory sessions, whose ``flush`` and ``aclose`` await nothing.
    The run then needs no shielded scope around it (one around code that never reaches a
    checkpoint changes nothing)."""
    return flush_is_noop(session) and all(
        aclose_is_noop(closed) for closed in run.services.closed_by_checkin(session)
    )


async def check_in_session(run: CheckinRun, session: Session) -> None:
    """``RunServices.checkin_session`` with any failure raised as ``PluginBackendError``."""
    try:
        await run.services.checkin_session(session)
    except PluginBackendError:
        raise
    except Exception as exc:
        raise session_checkin_error(run, exc) from exc
