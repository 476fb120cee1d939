"""Fake models and hand-written streams: the provider-free side of the testing kit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from ..events import AssistantMessageEvent, AssistantMessageEventStream
from ..llm import Model

__all__ = ["fake_model", "scripted_stream"]


def fake_model(**overrides: Any) -> Model:
    """A model served by a ``FakeProvider`` (api ``fake``)."""
    fields: dict[str, Any] = {"id": "fake-model", "api": "fake", "provider": "fake"}
    fields.update(overrides)
    return Model(**fields)


def scripted_stream(events: Iterable[AssistantMessageEvent]) -> AssistantMessageEventStream:
    """An assistant-message stream that replays ``events`` (like httpx's MockTransport)."""

    async def replay() -> AsyncIterator[AssistantMessageEvent]:
        for event in events:
            yield event

    return AssistantMessageEventStream(replay())
