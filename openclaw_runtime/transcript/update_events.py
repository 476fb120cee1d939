"""Telling listeners that a session's transcript file was rewritten in place.

Appends reach listeners as run events, but a rewrite (oversized tool results cut down, old
replay payloads compacted) changes lines that were already read: a UI that caches the
transcript, an index, or a second process tailing the file must reload it. OpenClaw emits
``emitSessionTranscriptUpdate(sessionFile)`` after such a rewrite and lets anything subscribe
(``onSessionTranscriptUpdate``); these are the twins. Listeners run synchronously, in
subscription order; one that raises is logged and the others still run, because a broken
observer must never turn a successful rewrite into a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..redaction import package_logger

__all__ = [
    "SessionTranscriptUpdate",
    "emit_session_transcript_update",
    "subscribe_session_transcript_updates",
]

logger = package_logger(logging.getLogger("openclaw_runtime.transcript"))


@dataclass(frozen=True, slots=True)
class SessionTranscriptUpdate:
    """One rewrite of ``session_file``: why, and how many entries it rewrote."""

    session_file: str
    session_id: str | None = None
    reason: str = "rewrite"
    rewritten_entries: int = 0


Listener = Callable[[SessionTranscriptUpdate], None]
_listeners: list[Listener] = []


def subscribe_session_transcript_updates(listener: Listener) -> Callable[[], None]:
    """Call ``listener`` for every rewrite from now on; returns the unsubscribe function."""
    _listeners.append(listener)

    def unsubscribe() -> None:
        if listener in _listeners:
            _listeners.remove(listener)

    return unsubscribe


def emit_session_transcript_update(update: SessionTranscriptUpdate) -> None:
    """Deliver ``update`` to every listener; a listener's exception is logged, not raised."""
    if not update.session_file:
        raise ValueError("a session transcript update needs the session file it concerns")
    for listener in list(_listeners):
        try:
            listener(update)
        except Exception:
            logger.exception("session transcript update listener %r raised", listener)
