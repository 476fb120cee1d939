"""Recorders for assertions: every event an agent emitted, every hook call the host made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._plugins import HookCall
from ..events import Event

__all__ = ["EventRecorder", "HookRecorder", "event_label"]


def event_label(event: Event) -> str:
    """``type`` plus the role of the message it carries, e.g. ``message_start:user``."""
    message = getattr(event, "message", None)
    if message is not None and event.type != "message_update":
        return f"{event.type}:{message.role}"
    return event.type


class EventRecorder:
    """An emit sink and ``Agent`` listener that keeps every event it is given."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event, *_signal: Any) -> None:
        self.events.append(event)

    def labels(self, *, updates: bool = False) -> list[str]:
        """Event labels in order (``message_update`` left out unless ``updates``)."""
        return [event_label(e) for e in self.events if updates or e.type != "message_update"]

    def of(self, kind: str) -> list[Any]:
        """Events of one type."""
        return [e for e in self.events if e.type == kind]


@dataclass
class HookRecorder:
    """Every hook call the host made, in order."""

    calls: list[HookCall] = field(default_factory=list)

    def __call__(self, call: HookCall) -> None:
        self.calls.append(call)

    def getcalls(self, name: str) -> list[HookCall]:
        """Calls of the hook ``name``."""
        return [c for c in self.calls if c.hook == name]

    def assert_called(self, name: str, **kwargs: Any) -> HookCall:
        """The first call of ``name`` whose kwargs include ``kwargs``; fails otherwise."""
        for call in self.getcalls(name):
            if all(call.kwargs.get(k) == v for k, v in kwargs.items()):
                return call
        seen = [dict(c.kwargs) for c in self.getcalls(name)]
        raise AssertionError(f"hook {name!r} was not called with {kwargs!r}; calls: {seen!r}")
