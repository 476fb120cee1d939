"""Wrap a provider's ``StreamFn`` so its events pass through stream repairers.

``apply_stream_repairers(stream_fn, [a, b])`` returns a ``StreamFn`` whose stream is
``b(a(provider_events, context), context)``: the first transformer sees the provider's events,
the last one's output is what the caller iterates. Closing the returned stream closes every
transformer, outermost first, and then the provider's stream (releasing its HTTP response).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, TypeAlias

import anyio

from ..events import AssistantMessageEvent, AssistantMessageEventStream
from ..llm import Context, Model, StreamFn, StreamOptions
from .formats import ToolCallFormat, coerce_tool_call_formats

__all__ = ["StreamTransformer", "apply_stream_repairers", "bind_tool_call_formats"]

#: ``transformer(events, context)`` → the repaired events (an async generator, typically).
StreamTransformer: TypeAlias = Callable[
    [AsyncIterator[AssistantMessageEvent], Context], AsyncIterator[AssistantMessageEvent]
]


async def _aclose(stream: Any) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


async def _repaired_events(
    stream_fn: StreamFn,
    transformers: tuple[StreamTransformer, ...],
    model: Model,
    context: Context,
    options: StreamOptions,
) -> AsyncIterator[AssistantMessageEvent]:
    result = stream_fn(model, context, options)
    provider_stream = await result if inspect.isawaitable(result) else result
    layers: list[Any] = [provider_stream]
    try:
        events: AsyncIterator[AssistantMessageEvent] = provider_stream
        for transformer in transformers:
            events = transformer(events, context)
            layers.append(events)
        async for event in events:
            yield event
    finally:
        with anyio.CancelScope(shield=True):
            for layer in reversed(layers):
                await _aclose(layer)


def apply_stream_repairers(
    stream_fn: StreamFn, transformers: Iterable[StreamTransformer]
) -> StreamFn:
    """``stream_fn`` with every transformer applied to its stream, in order.

    With no transformers the provider's ``stream_fn`` is returned as it is.
    """
    chain = tuple(transformers)
    if not chain:
        return stream_fn
    for transformer in chain:
        if not callable(transformer):
            raise TypeError(f"stream repairer {transformer!r} is not callable")

    def repaired_stream_fn(
        model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        return AssistantMessageEventStream(
            _repaired_events(stream_fn, chain, model, context, options)
        )

    repaired_stream_fn.__wrapped__ = stream_fn  # type: ignore[attr-defined]
    return repaired_stream_fn


def bind_tool_call_formats(
    transformers: Iterable[StreamTransformer],
    formats: Mapping[str, Any],
    *,
    on_invalid: Callable[[str, TypeError], None] | None = None,
) -> list[StreamTransformer]:
    """Give every transformer that takes formats (has ``with_formats``) the registered ones.

    ``formats`` maps registered names to formats, in the order to try them. A registration
    that is not a ``ToolCallFormat`` raises ``TypeError`` naming it, unless ``on_invalid``
    is given: then it is reported there and left out.
    """
    valid: dict[str, ToolCallFormat] = {}
    for name, fmt in formats.items():
        try:
            (checked,) = coerce_tool_call_formats({name: fmt})
        except TypeError as exc:
            if on_invalid is None:
                raise
            on_invalid(name, exc)
            continue
        valid[name] = checked
    bound: list[StreamTransformer] = []
    for transformer in transformers:
        with_formats = getattr(transformer, "with_formats", None)
        bound.append(with_formats(valid) if callable(with_formats) else transformer)
    return bound
