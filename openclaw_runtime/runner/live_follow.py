"""Keeping a live run reachable while it runs: the inbox lease, and a session that moves.

Two things can make ``Runtime.steer`` lose a run that is still working:

* the steering store's inbox is owned under a lease with a TTL (``LiveInboxLease``, the
  Redis inbox: a pid proves nothing on another machine). ``keep_inbox_alive`` renews it every
  ``renew_every_s`` while the run lives; it follows the handle's current session id and never
  raises (a lost lease or an unreachable store is logged; the run goes on, reachable from its
  own process);
* a compaction successor moves the run to a new session id mid-run. ``follow_successor``
  re-keys the registry's handle (``steer(session_id=new)`` and the session key, which the
  index now binds to the new id, both reach the run) and moves the inbox: the old one is
  closed, what waited in it is queued on the run, and the new session's inbox is opened.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import cast

import anyio

from ..backends.steering import LiveInbox, LiveInboxLease
from ..redaction import package_logger
from .live import LiveRunHandle, LiveRunRegistry

__all__ = ["follow_successor", "keep_inbox_alive", "live_inbox_of"]

logger = package_logger(logging.getLogger("openclaw_runtime.runner.live"))


def live_inbox_of(store: object) -> LiveInbox | None:
    """The steering store's inbox for live messages across processes, if it has one."""
    inbox = getattr(store, "live_inbox", None)
    if inbox is None:
        return None
    # a runtime-checkable Protocol check costs ~70 µs a run: a class that itself has every
    # member of the protocol passes it for all its instances, so remember such classes
    kind = type(inbox)
    if kind in _INBOX_CLASSES:
        return cast("LiveInbox", inbox)
    if not isinstance(inbox, LiveInbox):
        return None
    if all(hasattr(kind, name) for name in _INBOX_MEMBERS):
        _INBOX_CLASSES.add(kind)
    return inbox


_INBOX_MEMBERS = tuple(name for name in vars(LiveInbox) if not name.startswith("_"))
_INBOX_CLASSES: set[type] = set()


async def keep_inbox_alive(handle: LiveRunHandle, inbox: LiveInboxLease) -> None:
    """Renew the run's inbox lease until cancelled (or until another run owns it)."""
    while True:
        await anyio.sleep(inbox.renew_every_s)
        if handle.remote is None:
            return  # the inbox was given up (a failed move to a successor)
        try:
            kept = await inbox.renew(handle.session_id, handle.run_id)
        except Exception as exc:  # retried at the next tick; the lease may lapse meanwhile
            logger.warning("cannot renew the live-inbox lease of %s: %s", handle.session_id, exc)
            continue
        if not kept:
            logger.warning(
                "another run owns the live inbox of session %s: this run no longer receives "
                "messages from other processes",
                handle.session_id,
            )
            return


async def follow_successor(
    handle: LiveRunHandle,
    registry: LiveRunRegistry,
    inbox: LiveInbox | None,
    new_session_id: str,
) -> None:
    """The run continues on ``new_session_id``: re-key it, move its inbox (see the module
    docstring). Shielded: a cancellation must not leave the inbox half moved."""
    old = handle.session_id
    if old == new_session_id or not registry.rekey(handle, new_session_id):
        return
    if inbox is None or handle.remote is None:
        return
    with anyio.CancelScope(shield=True):
        try:
            waiting = await inbox.close(old, handle.run_id)
        except Exception as exc:
            logger.warning("cannot close the live inbox of %s: %s", old, exc)
            waiting = []
        for kind, text in waiting:
            handle.enqueue(kind, text)
        try:
            await inbox.open(new_session_id, handle.run_id)
        except Exception as exc:
            handle.remote = None
            logger.warning(
                "live messages from other processes are off for this run after its move to %s: %s",
                new_session_id,
                exc,
            )
            return
    handle.remote = partial(inbox.take, new_session_id)
