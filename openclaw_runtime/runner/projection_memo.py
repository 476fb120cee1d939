"""One tool-result projection memo per open session, shared by the guards of its attempts.

Every attempt installs a fresh context guard, and the guard projects every message of the
history before each request (a tool result is fingerprinted: a JSON dump and a hash). The
history of a session kept open holds the same message objects from turn to turn, so the
projections of the previous request can be reused; this keeps one
:class:`~openclaw_runtime.context.guard.ProjectionMemo` per session object for as long as the
object lives.

At the end of an attempt, ``release_attempt_caches`` drops what the session's caches hold of
the attempt's own messages (the kernel's objects): the next attempt starts from the session's
models, other objects, so they could never be reused, and a session kept open would hold them
(≈ 20 GC-tracked objects per tool call) for every full collection to walk.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from ..context.guard import ProjectionMemo

__all__ = ["release_attempt_caches", "session_projection_memo"]

_MEMOS: weakref.WeakKeyDictionary[Any, ProjectionMemo] = weakref.WeakKeyDictionary()


def session_projection_memo(session: Any) -> ProjectionMemo:
    """The memo of ``session`` (a fresh, unshared one when the object cannot be weakly keyed)."""
    try:
        memo = _MEMOS.get(session)
        if memo is None:
            memo = _MEMOS[session] = ProjectionMemo()
    except TypeError:  # not weakly referenceable, or not hashable
        return ProjectionMemo()
    return memo


def release_attempt_caches(session: Any, history: Sequence[Any]) -> None:
    """Forget the attempt's own messages in ``session``'s caches at the attempt's end.

    ``history`` is what the attempt started from (the session's models). The incremental
    sanitizer drops its tool-loop cache and keeps its prefix; the projection memo keeps the
    projections of ``history`` and of the sanitizer's cached output only (the messages a
    later request of the session can resend). Neither changes what a later call returns."""
    sanitizer = session.replay_sanitizer
    sanitizer.end_attempt()
    try:
        memo = _MEMOS.get(session)
    except TypeError:  # not weakly referenceable, or not hashable: its memos were not kept
        return
    if memo is not None:
        memo.keep_only(history, sanitizer.cached_outputs)
