"""Stream stages: a stream transformer that can also run as plain calls, without a generator.

Every model call's events pass through the runtime's stream transformers (the built-in
plain-text tool-call repairer, then the reply-tag splitter). As async generators, each is a
layer every event is resumed through, and a layer to close (with their set-up, ≈ 25–35 µs of
CPU per model call in a tool loop before stages). A transformer that also offers
``open_stage(context)`` describes the same work as a ``StreamStage``: ``feed(event)`` returns
the events to emit now, ``flush()`` those to emit when the input ends without a terminal
event, and ``stops_at_terminal`` says whether its generator stops reading after ``done`` /
``error``; ``open_stage`` answers None when a stream for that context would pass untouched
(the stage is left out). When every transformer of a chain offers a stage,
``repair.compose`` runs the stages in its own loop, in the order the generators would have
run them: the same events, the same error, the same reads and closes of the provider's
stream. A transformer without ``open_stage`` (any plugin's, and every guarded one) keeps the
generator chain.
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
    """A stage for each of ``transformers`` on a stream for ``context`` (one whose
    ``open_stage`` answers None passes such a stream untouched and is left out), or None when
    one of them has no ``open_stage`` (then the chain runs as generators), when there are
    more than ``MAX_FUSED_STAGES`` or none at all. ``open_stage`` must have no side effects:
    the stages of a chain that then runs as generators are dropped."""
    stages: list[StreamStage] = []
    for transformer in transformers:
        opener = getattr(transformer, "open_stage", None)
        if opener is None:
            return None
        stage = opener(context)
        if stage is not None:
            stages.append(stage)
    if not stages or len(stages) > MAX_FUSED_STAGES:
        return None
    return tuple(stages)
