"""The per-request caches of an open session, shared by its attempts: projections, the
running token sum, the converted messages, the turn validation's previous answer.

Every attempt installs a fresh context guard and a fresh loop, and before each request the
guard projects every message of the history (a tool result is fingerprinted: a JSON dump and
a hash), measures the tokens of the projected history (the mid-turn precheck) and the loop
converts it for the provider. The history of a session kept open holds the same message
objects from turn to turn, so what the previous request did for them can be reused; this keeps
one :class:`~openclaw_runtime.context.guard.ProjectionMemo` (with its token sum), one
:class:`~openclaw_runtime.agent.convert.PrefixConverter` and one
:class:`~openclaw_runtime.transcript.turn_memo.TurnValidationMemo` per session object for as
long as the object lives, and a turn's first request on a long history does the work of what
is new only.

At the end of an attempt, ``release_attempt_caches`` drops what the session's caches hold of
the attempt's own messages (the kernel's objects): the next attempt starts from the session's
models, other objects, so they could never be reused, and a session kept open would hold them
(≈ 20 GC-tracked objects per tool call) for every full collection to walk.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..agent.convert import PrefixConverter
from ..context.guard import ProjectionMemo
from ..transcript.turn_memo import TurnValidationMemo

__all__ = [
    "release_attempt_caches",
    "session_converter",
    "session_projection_memo",
    "session_turn_memo",
]

_MEMOS: weakref.WeakKeyDictionary[Any, ProjectionMemo] = weakref.WeakKeyDictionary()
_CONVERTERS: weakref.WeakKeyDictionary[Any, PrefixConverter] = weakref.WeakKeyDictionary()
_TURNS: weakref.WeakKeyDictionary[Any, TurnValidationMemo] = weakref.WeakKeyDictionary()


def session_projection_memo(session: Any) -> ProjectionMemo:
    """The memo of ``session`` (a fresh, unshared one when the object cannot be weakly keyed)."""
    return _kept_for(session, _MEMOS, ProjectionMemo)


def session_converter(session: Any) -> PrefixConverter:
    """The ``convert_to_llm`` of ``session``'s attempts (a fresh, unshared one when the
    object cannot be weakly keyed)."""
    return _kept_for(session, _CONVERTERS, PrefixConverter)


def session_turn_memo(session: Any) -> TurnValidationMemo:
    """The turn validation memo of ``session``'s attempts (a fresh, unshared one when the
    object cannot be weakly keyed)."""
    return _kept_for(session, _TURNS, TurnValidationMemo)


_T = TypeVar("_T")


def _kept_for(
    session: Any, table: weakref.WeakKeyDictionary[Any, _T], make: Callable[[], _T]
) -> _T:
    """``table``'s value for ``session``, made on first use (unshared when the session
    object is not weakly referenceable or not hashable)."""
    try:
        value = table.get(session)
        if value is None:
            value = table[session] = make()
    except TypeError:
        return make()
    return value


def release_attempt_caches(session: Any, history: Sequence[Any]) -> None:
    """Forget the attempt's own messages in ``session``'s caches at the attempt's end.

    ``history`` is what the attempt started from (the session's models). The incremental
    sanitizer drops its tool-loop cache and keeps its prefix; the projection memo keeps the
    projections of ``history`` and of the sanitizer's cached output only (the messages a
    later request of the session can resend), and the leading run of the last request made
    of them, which the token sum and the converter keep too. None of it changes what a later
    call returns."""
    sanitizer = session.replay_sanitizer
    sanitizer.end_attempt()
    try:
        memo = _MEMOS.get(session)
        converter = _CONVERTERS.get(session)
        turns = _TURNS.get(session)
    except TypeError:  # not weakly referenceable, or not hashable: its caches were not kept
        return
    if turns is not None:
        turns.keep_leading(sanitizer.cached_outputs)
    if memo is not None:
        memo.keep_only(history, sanitizer.cached_outputs)
    if converter is not None:
        converter.keep_leading(memo.kept_outputs() if memo is not None else ())
