"""Stream stages: a stream transformer that can also run as plain calls, without a generator.

Every model call's events pass through the runtime's stream transformers (the built-in
plain-text tool-call repairer, then the reply-tag splitter). As async generators, each is a
layer every event is resumed through, and a layer to close (two generator layers per event and
per close, ≈ 45 µs per model call in a tool loop). A transformer that also offers
``open_stage(context)`` describes the same work as a ``StreamStage``: ``feed(event)`` returns
the events to emit now, ``flush()`` those to emit when the input ends without a terminal
event, and ``stops_at_terminal`` says whether its generator stops reading after ``done`` /
``error``. When every transformer of a chain offers a stage, ``repair.compose`` runs the
stages in its own loop (``feed_stages``), in the order the generators would have run them:
the same events, the same error, the same reads of the provider's stream. A transformer
without ``open_stage`` (any plugin's, and every guarded one) keeps the generator chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..events import AssistantMessageEvent
from ..llm import Context

__all__ = ["MAX_FUSED_STAGES", "StreamStage", "open_stages"]

#: How many stages ``repair.compose`` runs in one loop (the built-in chain has two); a longer
#: chain keeps its generators.
MAX_FUSED_STAGES = 2


class StreamStage(Protocol):
    """One stream's state of a transformer, fed event by event (see the module doc)."""

    stops_at_terminal: bool

    def feed(self, event: AssistantMessageEvent) -> list[AssistantMessageEvent]:
        """The events to emit now for ``event`` (possibly none)."""
        ...

    def flush(self) -> list[AssistantMessageEvent]:
        """The input ended without a terminal event: what is still held."""
        ...


def open_stages(transformers: Sequence[Any], context: Context) -> tuple[StreamStage, ...] | None:
    """A stage for each of ``transformers`` on a stream for ``context``, or None when one of
    them has no ``open_stage`` (then the chain runs as generators) or there are too many."""
    if not transformers or len(transformers) > MAX_FUSED_STAGES:
        return None
    openers = []
    for transformer in transformers:
        opener = getattr(transformer, "open_stage", None)
        if opener is None:
            return None
        openers.append(opener)
    return tuple(opener(context) for opener in openers)
