"""A run made live: registered so ``Runtime.steer`` & co. reach it while it holds its session.

``live_run_scope`` wraps the part of a run that holds the session: it builds the run's
``LiveRunHandle`` (whose abort controller becomes the run's abort signal, fired also by the
request's own signal), registers it, opens the session's inbox in the steering store when the
store has one (``LiveInbox``: messages from other processes; an inbox owned under a lease,
``LiveInboxLease``, is renewed by a background task while the run lives), and undoes all of
it when the run ends, whatever ends it. Messages another process managed to append after the
run's last drain are logged (count only) and dropped; the run had already answered.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, TypeGuard

import anyio

from ..backends.steering import LiveInbox, LiveInboxLease
from ..redaction import package_logger
from .live import LiveRunHandle
from .live_follow import keep_inbox_alive, live_inbox_of

if TYPE_CHECKING:
    from ..abort import AbortSignal
    from .request import RunRequest
    from .run_state import RunState

__all__ = ["is_inbox_lease", "live_inbox_of", "live_run_scope", "with_abort_signal"]

logger = package_logger(logging.getLogger("openclaw_runtime.runner.live"))


def live_run_scope(run: RunState) -> AbstractAsyncContextManager[LiveRunHandle]:
    """Register ``run`` as the live run of its session for the duration of the block."""
    if live_inbox_of(run.services.steering_store) is None:
        return _LiveRunScope(run)  # the usual case: no generator, no wrapper to hold
    return _live_run_scope(run)


def _make_live(run: RunState) -> LiveRunHandle:
    """Build the run's handle, make its signal the run's, register it."""
    agent = run.config.agent
    handle = LiveRunHandle(
        session_id=run.session_id,
        session_key=run.session_key,
        run_id=run.run_id,
        steering_mode=agent.steering_mode,
        follow_up_mode=agent.follow_up_mode,
        abort_signal=run.request.abort_signal,
    )
    run.request = with_abort_signal(run.request, handle.signal)
    run.live = handle
    run.services.live_runs.set(handle)
    return handle


def _unregister(run: RunState, handle: LiveRunHandle) -> None:
    run.services.live_runs.clear(handle)
    if handle.pending():
        logger.warning(
            "%d live message(s) for session %s were not read: its run ended first",
            handle.pending(),
            run.session_id,
        )


class _LiveRunScope:
    """``_live_run_scope`` for a store without an inbox, written as a class: the same steps
    in the same order, without the generator and its context-manager wrapper (objects a
    waiting run would hold)."""

    __slots__ = ("_handle", "_run")

    def __init__(self, run: RunState) -> None:
        self._run = run

    async def __aenter__(self) -> LiveRunHandle:
        self._handle = _make_live(self._run)
        return self._handle

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _unregister(self._run, self._handle)


@asynccontextmanager
async def _live_run_scope(run: RunState) -> AsyncIterator[LiveRunHandle]:
    handle = _make_live(run)
    inbox = live_inbox_of(run.services.steering_store)
    try:
        if inbox is not None:
            try:
                await inbox.open(run.session_id, run.run_id)
            except Exception as exc:  # the run works without it, reachable from here only
                logger.warning("live messages from other processes are off for this run: %s", exc)
                inbox = None
            else:
                handle.remote = partial(inbox.take, run.session_id)
        leased = inbox is not None and is_inbox_lease(inbox)
        if not leased:
            # nothing to renew (no inbox, or one that needs no lease: the file inbox): no
            # renewal block, which would only yield (two generator layers fewer)
            yield handle
        else:
            async with _renewing(handle, inbox):
                yield handle
    finally:
        _unregister(run, handle)
        if inbox is not None and handle.remote is not None:
            with anyio.CancelScope(shield=True):
                try:
                    # the handle's id: a compaction successor may have moved the run
                    late = await inbox.close(handle.session_id, run.run_id)
                except Exception as exc:
                    logger.warning("cannot close the live-message inbox: %s", exc)
                    late = []
            if late:
                logger.warning(
                    "%d live message(s) for session %s arrived after its run's last turn",
                    len(late),
                    run.session_id,
                )


def with_abort_signal(request: RunRequest, signal: AbortSignal) -> RunRequest:
    """A copy of ``request`` with ``abort_signal`` set (the caller's request is not changed).

    What ``dataclasses.replace`` gives, without building the request again: its
    ``__post_init__`` only checks and fills in fields of a request that already passed it,
    and the signal is not among the fields it looks at."""
    copied = copy.copy(request)
    copied.abort_signal = signal
    return copied


def is_inbox_lease(inbox: object) -> TypeGuard[LiveInboxLease]:
    """``isinstance(inbox, LiveInboxLease)`` without the protocol check's walk over the
    protocol's members (≈ 70 µs a run): the same test, member by member, as the runtime
    check makes (``renew_every_s`` present, ``renew`` present and not None)."""
    return hasattr(inbox, "renew_every_s") and getattr(inbox, "renew", None) is not None


@asynccontextmanager
async def _renewing(handle: LiveRunHandle, inbox: LiveInbox | None) -> AsyncIterator[None]:
    """Renew a leased inbox in the background for the block (nothing for other inboxes)."""
    if inbox is None or handle.remote is None or not is_inbox_lease(inbox):
        yield
        return
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_inbox_alive, handle, inbox)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # the block's own exception, not wrapped by the renewal task group
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
