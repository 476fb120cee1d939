"""Which event kinds a run hands out: built and fanned out only when someone asked for them.

A run emits about twenty events (run, lane, attempt, fallback, agent, message, tool); handing
one out means redacting it and calling the run's ``on_event`` and every ``on_agent_event``
plugin. With nobody listening that is pure cost, so a run computes once, at its start, the
kinds its listeners want (``wanted_event_kinds``) and skips the rest: the runner does not
even build a run-level event nobody wants (``RunState.wants``).

A listener wants every kind unless it says otherwise: an ``on_event`` callable (or a plugin's
``on_agent_event`` implementation function) with an ``event_kinds`` attribute — an iterable
of event type names, e.g. ``{"run_end", "message_update"}`` — gets only those. Events that
feed the run's own state (a message's end appends it to the transcript, a turn's end flushes
it, tool executions feed the messaging-send tracker, every event pushes the lanes' deadline
out) are produced and used whatever is wanted: only the handing out is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..events import Event
from .run_options import with_closest_name

__all__ = [
    "ALL_EVENT_KINDS",
    "NO_EVENT_KINDS",
    "EventKinds",
    "declared_event_kinds",
    "wanted_event_kinds",
]


class _AllKinds(frozenset[str]):
    """Every kind: ``kind in ALL_EVENT_KINDS`` is always true."""

    __slots__ = ()

    def __contains__(self, kind: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "ALL_EVENT_KINDS"


#: The kinds a listener without an ``event_kinds`` declaration wants: all of them.
ALL_EVENT_KINDS: frozenset[str] = _AllKinds()

EventKinds = frozenset[str]
#: what a run with no listener wants (shared: a frozenset is never changed)
NO_EVENT_KINDS: EventKinds = frozenset()


def _known_kinds() -> set[str]:
    known: set[str] = set()
    pending: list[type] = [Event]
    while pending:
        cls = pending.pop()
        known.add(getattr(cls, "type", ""))
        pending.extend(cls.__subclasses__())
    known.discard("event")
    known.discard("")
    return known


def declared_event_kinds(listener: Any) -> EventKinds:
    """The kinds ``listener`` asked for: its ``event_kinds`` attribute, else every kind.

    Raises ``TypeError`` for a declaration that is not an iterable of strings and
    ``ValueError`` naming the kinds no event has (a typo would otherwise never fire)."""
    declared = getattr(listener, "event_kinds", None)
    if declared is None:
        return ALL_EVENT_KINDS
    if isinstance(declared, str) or not isinstance(declared, Iterable):
        raise TypeError(
            f"event_kinds of {listener!r} must be an iterable of event type names, "
            f"got {type(declared).__name__}"
        )
    kinds = frozenset(declared)
    wrong = sorted(repr(k) for k in kinds if not isinstance(k, str))
    if wrong:
        raise TypeError(f"event_kinds of {listener!r} must be strings, got {', '.join(wrong)}")
    known = _known_kinds()
    unknown = sorted(kinds - known)
    if unknown:
        named = ", ".join(with_closest_name(kind, known) for kind in unknown)
        raise ValueError(f"event_kinds of {listener!r} names unknown event types: {named}")
    return kinds


def wanted_event_kinds(listeners: Iterable[Any]) -> EventKinds:
    """The union of what ``listeners`` want (none: nothing is handed out)."""
    wanted: set[str] = set()
    for listener in listeners:
        kinds = declared_event_kinds(listener)
        if isinstance(kinds, _AllKinds):
            return ALL_EVENT_KINDS
        wanted |= kinds
    # nobody listening (most runs): one shared empty set, not a new one held per run
    return frozenset(wanted) if wanted else NO_EVENT_KINDS
