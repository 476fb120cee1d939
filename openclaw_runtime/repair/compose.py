"""Wrap a provider's ``StreamFn`` so its events pass through stream repairers.

``apply_stream_repairers(stream_fn, [a, b])`` returns a ``StreamFn`` whose stream is
``b(a(provider_events, context), context)``: the first transformer sees the provider's events,
the last one's output is what the caller iterates. Closing the returned stream closes every
transformer, outermost first, and then the provider's stream (releasing its HTTP response).
A transformer with a ``passes_through(context)`` method that answers True for a request is
left out of that request's stream (the built-in plain-text tool-call repairer when the request
offers no tools): a stage that would only copy events costs two generator layers per event.
When every remaining transformer also offers ``open_stage`` (the built-in chain: the repairer
and the reply-tag splitter), their stages run inside this module's own loop instead of as
nested generators (``repair.stages``): the same events, errors and closes, two generator
layers fewer per event.

``guard_stream_repairers`` puts every plugin's repairer and every tool-call format behind the
runtime's ``PluginGuard``: a repairer that raises is taken out of *that* stream (the events it
had swallowed since its last output are replayed and the rest pass through unrepaired, so the
run goes on as if the stage were not there), a format that raises counts as "no match"; both
are recorded as faults of their plugin, and repeated faults quarantine them. The core's own
repairers (registered by a ``builtin.*`` plugin: the plain-text tool-call repairer) stay bare,
as the built-in transcript sanitizers do: the guard costs two generator layers and a
shielded close per model call, and the built-in contains its own failures (it releases what
it holds and passes the stream through); the plugin formats it is given stay guarded.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from typing import Any, TypeAlias

import anyio

from .._registry import BUILTIN_PLUGIN_PREFIX
from ..containment import PluginGuard, component_unit
from ..events import AssistantMessageEvent, AssistantMessageEventStream
from ..llm import Context, Model, StreamFn, StreamOptions
from .formats import FormatScan, FormatScanOptions, ToolCallFormat, coerce_tool_call_formats
from .stages import open_stages

__all__ = [
    "GuardedToolCallFormat",
    "StreamTransformer",
    "apply_stream_repairers",
    "bind_tool_call_formats",
    "extend_stream_repairers",
    "guard_stream_repairer",
    "guard_stream_repairers",
    "is_builtin_plugin",
]

REPAIRER_HOOK = "register_stream_repairers"
FORMAT_HOOK = "register_tool_call_formats"
_NO_MATCH = FormatScan("invalid")
_TERMINAL = frozenset({"done", "error"})

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
    # an event stream as it is (never awaitable: no ABC check per model call), else awaited
    # when awaitable
    if type(result) is not AssistantMessageEventStream and inspect.isawaitable(result):
        result = await result
    provider_stream = result
    layers: list[Any] = [provider_stream]
    try:
        events: AsyncIterator[AssistantMessageEvent] = provider_stream
        stages = open_stages(transformers, context)
        if stages is None:
            for transformer in transformers:
                if _passes_through(transformer, context):
                    continue
                events = transformer(events, context)
                layers.append(events)
            async for event in events:
                yield event
        elif len(stages) == 1:  # the stage's generator, run as calls (``repair.stages``)
            (first,) = stages
            async for event in provider_stream:
                for out in first.feed(event):
                    yield out
                if first.stops_at_terminal and event.type in _TERMINAL:
                    break
            else:
                for out in first.flush():
                    yield out
        else:  # two stages: the second is fed each output of the first as it comes
            first, second = stages
            ended = False
            async for event in provider_stream:
                for middle in first.feed(event):
                    for out in second.feed(middle):
                        yield out
                    if second.stops_at_terminal and middle.type in _TERMINAL:
                        ended = True
                        break
                if ended or (first.stops_at_terminal and event.type in _TERMINAL):
                    ended = True
                    break
            if not ended:
                for middle in first.flush():
                    for out in second.feed(middle):
                        yield out
                    if second.stops_at_terminal and middle.type in _TERMINAL:
                        ended = True
                        break
                if not ended:
                    for out in second.flush():
                        yield out
        # a provider stream that raised just ended for the layers iterating it: its own error
        # (not "ended without a completion event") is what the run must report
        failure = getattr(provider_stream, "failure", None)
        if isinstance(failure, Exception):
            raise failure
    finally:
        if len(layers) == 1 and getattr(provider_stream, "settled", False) is True:
            # stages, and a provider stream that ended: closing it waits for nothing, so
            # there is no wait to shield (a shielded scope per model call saved)
            await provider_stream.aclose()
        else:
            with anyio.CancelScope(shield=True):
                for layer in reversed(layers):
                    await _aclose(layer)


def _passes_through(transformer: Any, context: Context) -> bool:
    """Does ``transformer`` say a stream for ``context`` passes it untouched? (A probe that
    is missing, raises or answers anything but True: no.)"""
    probe = getattr(transformer, "passes_through", None)
    if probe is None:
        return False
    try:
        return probe(context) is True
    except Exception:
        return False


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
    return _RepairedStreamFn(stream_fn, chain)


class _RepairedStreamFn:
    """What ``apply_stream_repairers`` returns: a ``StreamFn`` whose stream runs ``chain``
    over ``__wrapped__``'s events. A small object rather than a closure (its cells, its
    attribute dict), and it keeps the chains ``extend_stream_repairers`` made from it, so an
    attempt that adds the same transformers to the runtime's repaired function (every attempt
    adds the reply-tag splitter) allocates nothing."""

    __slots__ = ("__wrapped__", "_extended", "chain")

    def __init__(self, stream_fn: StreamFn, chain: tuple[StreamTransformer, ...]) -> None:
        self.__wrapped__ = stream_fn
        self.chain = chain
        self._extended: list[_RepairedStreamFn] | None = None

    def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        return AssistantMessageEventStream(
            _repaired_events(self.__wrapped__, self.chain, model, context, options)
        )

    def extended(self, chain: tuple[StreamTransformer, ...]) -> _RepairedStreamFn:
        """This chain followed by ``chain`` (kept: the same extension is asked for again)."""
        made = self._extended
        if made is None:
            made = self._extended = []
        size = len(self.chain)
        for known in made:
            tail = known.chain[size:]
            if len(tail) == len(chain) and all(map(operator.is_, tail, chain)):
                return known
        extended = apply_stream_repairers(self.__wrapped__, (*self.chain, *chain))
        assert isinstance(extended, _RepairedStreamFn)
        if len(made) < _KEPT_EXTENSIONS:
            made.append(extended)
        return extended


#: How many extensions a repaired function keeps (the reply-tag splitter comes in two).
_KEPT_EXTENSIONS = 4


def extend_stream_repairers(
    stream_fn: StreamFn, transformers: Iterable[StreamTransformer]
) -> StreamFn:
    """``apply_stream_repairers(stream_fn, transformers)``, but when ``stream_fn`` was itself
    made by ``apply_stream_repairers`` the transformers join its chain instead of wrapping it:
    one repaired stream (an event stream and two generator layers per event) fewer held by
    every model call in flight.

    Only for transformers that yield nothing after their input ends or raises (the reply-tag
    splitter): then both give the same events, the same error and the same closing order.
    """
    chain = tuple(transformers)
    if not chain or not isinstance(stream_fn, _RepairedStreamFn):
        return apply_stream_repairers(stream_fn, chain)
    for transformer in chain:
        if not callable(transformer):
            raise TypeError(f"stream repairer {transformer!r} is not callable")
    return stream_fn.extended(chain)


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


# --------------------------------------------------------------------------- containment


class GuardedToolCallFormat:
    """A registered format behind the guard: raising or quarantined means "no match"."""

    def __init__(
        self, fmt: ToolCallFormat, *, guard: PluginGuard, plugin: str | None, name: str
    ) -> None:
        self.wrapped = fmt
        self._guard = guard
        self._plugin = plugin
        self._unit = component_unit("tool_call_format", name)

    def parse_at(
        self,
        text: str,
        start: int,
        options: Any,
        line_breaks: Any,
    ) -> Any:
        """``parse_at`` of the format; None when it raised or is quarantined."""
        if not self._guard.admits(self._plugin, self._unit):
            return None
        try:
            blocks = self.wrapped.parse_at(text, start, options, line_breaks)
        except Exception as exc:
            self._guard.fault(self._plugin, FORMAT_HOOK, exc, unit=self._unit)
            return None
        self._guard.succeeded(self._plugin, self._unit)
        return blocks

    def scan_at(self, text: str, start: int, options: FormatScanOptions) -> FormatScan:
        """``scan_at`` of the format; ``invalid`` when it raised or is quarantined."""
        if not self._guard.admits(self._plugin, self._unit):
            return _NO_MATCH
        try:
            scan = self.wrapped.scan_at(text, start, options)
        except Exception as exc:
            self._guard.fault(self._plugin, FORMAT_HOOK, exc, unit=self._unit)
            return _NO_MATCH
        self._guard.succeeded(self._plugin, self._unit)
        return scan

    def __repr__(self) -> str:
        return f"GuardedToolCallFormat({self.wrapped!r})"


async def _guarded_events(
    transformer: StreamTransformer,
    events: AsyncIterator[AssistantMessageEvent],
    context: Context,
    guard: PluginGuard,
    plugin: str | None,
    unit: str,
) -> AsyncIterator[AssistantMessageEvent]:
    if not guard.admits(plugin, unit):
        async for event in events:
            yield event
        return
    # events the repairer took since it last yielded: replayed if it raises
    pending: list[AssistantMessageEvent] = []
    upstream_error: list[BaseException] = []

    async def tap() -> AsyncGenerator[AssistantMessageEvent, None]:
        try:
            async for event in events:
                pending.append(event)
                yield event
        except Exception as exc:
            upstream_error.append(exc)  # the provider's failure, not the plugin's
            raise

    tapped = tap()
    failure: Exception | None = None
    inner: Any = None
    try:
        try:
            inner = transformer(tapped, context)
            iterator = inner.__aiter__()
        except Exception as exc:
            failure = exc
        while failure is None:
            try:
                event = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except Exception as exc:
                if upstream_error and _caused_by(exc, upstream_error[0]):
                    raise
                failure = exc
                break
            pending.clear()
            if event.type in _TERMINAL:
                # the consumer may stop here and close us: the repairer did its job
                guard.succeeded(plugin, unit)
            yield event
    finally:
        with anyio.CancelScope(shield=True):
            if inner is not None:
                try:
                    await _aclose(inner)
                except Exception as exc:  # a repairer whose cleanup raises
                    failure = failure or exc
            await tapped.aclose()
    if failure is None:
        guard.succeeded(plugin, unit)
        return
    guard.fault(plugin, REPAIRER_HOOK, failure, unit=unit)
    for event in pending:
        yield event
    async for event in events:
        yield event


def _caused_by(exc: BaseException, cause: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(32):
        if seen is None:
            return False
        if seen is cause:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def guard_stream_repairer(
    transformer: StreamTransformer, *, guard: PluginGuard, plugin: str | None, name: str
) -> StreamTransformer:
    """``transformer`` behind the guard (see the module docstring)."""
    unit = component_unit("stream_repairer", name)

    def guarded(
        events: AsyncIterator[AssistantMessageEvent], context: Context
    ) -> AsyncIterator[AssistantMessageEvent]:
        return _guarded_events(transformer, events, context, guard, plugin, unit)

    guarded.__wrapped__ = transformer  # type: ignore[attr-defined]
    probe = getattr(transformer, "passes_through", None)
    if callable(probe):
        guarded.passes_through = probe  # type: ignore[attr-defined]
    return guarded


def guard_stream_repairers(
    repairers: Iterable[tuple[str, str | None, StreamTransformer]],
    formats: Mapping[str, Any],
    *,
    owners: Mapping[str, str | None],
    guard: PluginGuard,
    on_invalid: Callable[[str, TypeError], None] | None = None,
) -> list[StreamTransformer]:
    """Registered ``(name, plugin, repairer)`` triples, bound to the registered formats and
    wrapped, every format and repairer behind ``guard``. A repairer whose ``with_formats``
    raises is left out (a fault of its plugin)."""
    valid: dict[str, Any] = {}
    for name, fmt in formats.items():
        try:
            coerce_tool_call_formats({name: fmt})
        except TypeError as exc:
            if on_invalid is None:
                raise
            on_invalid(name, exc)
            continue
        valid[name] = GuardedToolCallFormat(fmt, guard=guard, plugin=owners.get(name), name=name)
    out: list[StreamTransformer] = []
    for name, plugin, transformer in repairers:
        with_formats = getattr(transformer, "with_formats", None)
        if callable(with_formats):
            unit = component_unit("stream_repairer", name)
            try:
                transformer = with_formats(valid)
            except Exception as exc:
                guard.fault(plugin, REPAIRER_HOOK, exc, unit=unit)
                continue
        if is_builtin_plugin(plugin):
            out.append(transformer)  # the core's own stage: no guard layers (module doc)
            continue
        out.append(guard_stream_repairer(transformer, guard=guard, plugin=plugin, name=name))
    return out


def is_builtin_plugin(plugin: str | None) -> bool:
    """Is ``plugin`` one of the core's own (``builtin.*``)? Their repairers run unguarded."""
    return plugin is not None and plugin.startswith(BUILTIN_PLUGIN_PREFIX)
