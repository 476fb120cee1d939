"""One tool-result projection memo per open session, shared by the guards of its attempts.

Every attempt installs a fresh context guard, and the guard projects every message of the
history before each request (a tool result is fingerprinted: a JSON dump and a hash). The
history of a session kept open holds the same message objects from turn to turn, so the
projections of the previous request can be reused; this keeps one
:class:`~openclaw_runtime.context.guard.ProjectionMemo` per session object for as long as the
object lives.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..context.guard import ProjectionMemo

__all__ = ["session_projection_memo"]

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
