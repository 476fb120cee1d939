"""The built-in stream chain run as stages (``repair.stages``) against the generator chain.

The runtime wraps every model call's stream in the plain-text tool-call repairer and the
reply-tag splitter. When both offer ``open_stage``, ``repair.compose`` feeds them in its own
loop instead of nesting their generators. These tables run the same provider streams through
both forms — and through the splitter as it was written before it had a stage (kept below as
the reference) — and compare everything a consumer can see: each event with the message it
carries (as it is when the event arrives), how many provider events had been read when each
came out, the error, the stream's result, and whether the provider's stream was closed.
On asyncio and trio.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from openclaw_runtime.events import (
    AssistantMessageEventStream,
    Done,
    Error,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
)
from openclaw_runtime.llm import Context, StreamOptions, Tool
from openclaw_runtime.messages import AssistantMessage, TextContent, ToolCall
from openclaw_runtime.repair import (
    BUILTIN_TOOL_CALL_FORMATS,
    PlainTextToolCallRepairer,
    apply_stream_repairers,
)
from openclaw_runtime.repair.compose import _repaired_events
from openclaw_runtime.repair.formats import coerce_tool_call_formats
from openclaw_runtime.repair.stages import open_stages
from openclaw_runtime.reply import split_message_tags, with_reply_tag_splitting
from openclaw_runtime.reply import stream as reply_stream
from openclaw_runtime.testing import fake_model
from tests.stream_support import provider_events
from tests.test_stream_close_shield import _SlowCloseProvider as SlowClose
from tests.test_stream_close_shield import read_until_cancelled

pytestmark = pytest.mark.anyio

MODEL = fake_model()
WITH_TOOLS = Context(tools=[Tool("read", "read a file"), Tool("write", "write a file")])
NO_TOOLS = Context(tools=[])
REPAIRER = PlainTextToolCallRepairer().with_formats(BUILTIN_TOOL_CALL_FORMATS)


def _repairer() -> PlainTextToolCallRepairer:
    """The built-in repairer with ids counted from 0 (each run of a shape gets the same)."""
    ids = itertools.count()
    return dataclasses.replace(REPAIRER, tool_call_id=lambda: f"promoted_{next(ids)}")


class Boom(RuntimeError):
    """The provider's stream failing mid-way."""


def _call(n: int = 0) -> ToolCall:
    return ToolCall(id=f"call_{n}", name="read", arguments={"path": f"f{n}.txt"})


def _done_only() -> list[Any]:
    message = AssistantMessage(api="fake", provider="fake", model="fake-model")
    message.content.append(_call())
    message.stop_reason = "toolUse"
    return [Done("toolUse", message)]


def _after_done() -> list[Any]:
    events = list(provider_events(("text", ["hi"])))
    late = events[0].partial
    return [*events, TextStart(1, late), TextDelta(1, "late", late), TextEnd(1, "late", late)]


def _unended(terminal: str) -> Iterator[Any]:
    """Text whose block never gets ``text_end`` before the terminal event (the splitter
    still holds a possible tag)."""
    message = AssistantMessage(api="fake", provider="fake", model="fake-model")
    yield Start(message)
    block = TextContent(text="")
    message.content.append(block)
    yield TextStart(0, message)
    for chunk in ("see ", "<thi"):
        block.text += chunk
        yield TextDelta(0, chunk, message)
    if terminal == "done":
        yield Done("stop", message)
    else:
        message.stop_reason = "error"
        message.error_message = "cut"
        yield Error("error", message)


JSON_CALL = ['{"name":"read",', '"arguments":{"path":"e"}}']
#: provider streams, made lazily (the partial message grows as the events are read)
SHAPES: dict[str, Callable[[], Iterable[Any]]] = {
    "text": lambda: provider_events(("text", ["Hel", "lo ", "there"])),
    "think tags": lambda: provider_events(("text", ["<thi", "nk>plan</think>", "The answer"])),
    "final tags": lambda: provider_events(
        ("text", ["<think>x</think><final>A", "nswer</final> tail"])
    ),
    "open tag at the end": lambda: provider_events(("text", ["see <thi"])),
    "native call": lambda: provider_events(("call", _call()), reason="toolUse"),
    "two native calls": lambda: provider_events(
        ("call", _call(0)), ("call", _call(1)), reason="toolUse"
    ),
    "done only": _done_only,
    "text then call": lambda: provider_events(
        ("text", ["Let me look."]), ("call", _call()), reason="toolUse"
    ),
    "thinking, tags, call": lambda: provider_events(
        ("thinking", ["hm", "m"]),
        ("text", ["<think>more</think>ok"]),
        ("call", _call()),
        reason="toolUse",
    ),
    "plain-text call": lambda: provider_events(("text", JSON_CALL), reason="toolUse"),
    "plain-text call, stop": lambda: provider_events(("text", JSON_CALL)),
    "thinking then plain-text call": lambda: provider_events(
        ("thinking", ["why"]), ("text", JSON_CALL), reason="toolUse"
    ),
    "bracket call": lambda: provider_events(
        ("text", ['[read]\n{"pa', 'th":"/tmp/a"}\n[/re', "ad]"])
    ),
    "unknown tool": lambda: provider_events(
        ("text", ['{"name":"nope","arguments":{}}']), reason="toolUse"
    ),
    "call prefix then prose": lambda: provider_events(
        ("text", ['{"name":"re', "... never mind, prose"])
    ),
    "length": lambda: provider_events(("text", JSON_CALL), reason="length"),
    "error after text": lambda: provider_events(("text", ["partial"]), error="boom"),
    "aborted mid call": lambda: provider_events(("text", JSON_CALL[:1]), error="aborted"),
    "no terminal, held": lambda: provider_events(("text", JSON_CALL[:1]), reason=None),
    "no terminal, prose": lambda: provider_events(("text", ["just words"]), reason=None),
    "events after done": _after_done,
    "done without text_end": lambda: _unended("done"),
    "error without text_end": lambda: _unended("error"),
    "empty": lambda: [],
    "raises mid-stream": lambda: _raising(provider_events(("text", JSON_CALL)), after=3),
    "raises after prose": lambda: _raising(provider_events(("text", ["plain words"])), after=4),
}


def _raising(events: Iterator[Any], *, after: int) -> Iterator[Any]:
    for _ in range(after):
        yield next(events)
    raise Boom("gone")


class Provider:
    """A provider stream function over a scripted iterator (read lazily, so it may raise);
    counts reads and notes the close."""

    def __init__(self, script: Iterable[Any], *, bare: bool = False) -> None:
        self.script = script
        self.bare = bare  # hand out the generator itself: nothing stops it at ``done``
        self.pulled = 0
        self.closed = False

    async def _source(self) -> AsyncIterator[Any]:
        try:
            for item in self.script:
                self.pulled += 1
                yield item
        finally:
            self.closed = True

    def __call__(self, model: Any, context: Any, options: Any) -> Any:
        return self._source() if self.bare else AssistantMessageEventStream(self._source())


def _snapshot(value: Any) -> Any:
    if isinstance(value, BaseModel):
        # the messages of two runs of a shape are made apart: their clocks differ
        return {k: v for k, v in value.model_dump().items() if k != "timestamp"}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            {f.name: _snapshot(getattr(value, f.name)) for f in dataclasses.fields(value)},
        )
    if isinstance(value, list):
        return [_snapshot(item) for item in value]
    return value


async def _observe(
    make_fn: Callable[[Any], Any],
    shape: str,
    context: Context,
    *,
    stop_at_terminal: bool,
    raw: bool = False,
) -> dict[str, Any]:
    """What a consumer sees; ``raw``: below the event streams (the provider's and the one
    the chain's function returns stop at the first terminal event; the chain's own loop,
    over a provider that is a bare generator, may read on)."""
    provider = Provider(SHAPES[shape](), bare=raw)
    stream_fn = make_fn(provider)
    if raw:
        stream: Any = _repaired_events(
            stream_fn.__wrapped__, stream_fn.chain, MODEL, context, StreamOptions()
        )
    else:
        stream = stream_fn(MODEL, context, StreamOptions())
    seen: list[Any] = []
    error: str | None = None
    try:
        async for event in stream:
            seen.append((provider.pulled, _snapshot(event)))
            if stop_at_terminal and event.type in ("done", "error"):
                break
    except Exception as exc:  # the provider's failure, as the consumer gets it
        error = f"{type(exc).__name__}: {exc}"
    await stream.aclose()
    result: Any = None
    if not raw:
        try:
            result = _snapshot(await stream.result())
        except Exception as exc:
            result = f"{type(exc).__name__}: {exc}"
    return {
        "events": seen,
        "error": error,
        "result": result,
        "pulled": provider.pulled,
        "closed": provider.closed,
    }


# --------------------------------------------------------------------------- the three forms


def _generator_only(transformer: Any) -> Any:
    """``transformer`` without ``open_stage``: the chain keeps its generators."""

    def plain(events: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
        return transformer(events, context)

    probe = getattr(transformer, "passes_through", None)
    if probe is not None:
        plain.passes_through = probe  # type: ignore[attr-defined]
    return plain


async def _reference_split(
    events: AsyncIterator[Any], context: Any = None, *, enforce_final_tag: bool = False
) -> AsyncIterator[Any]:
    """``split_reply_tag_events`` as it was before it had a stage (integ8), verbatim."""
    _Rebuilder, _reindexed = reply_stream._Rebuilder, reply_stream._reindexed
    passthrough_start, passthrough = reply_stream._PASSTHROUGH_START, reply_stream._PASSTHROUGH
    rebuilder = None
    async for event in events:
        if isinstance(event, Start):
            out = event.partial.model_copy(update={"content": []})
            rebuilder = _Rebuilder(out, enforce_final_tag=enforce_final_tag)
            yield Start(out)
            continue
        if isinstance(event, Done):
            if rebuilder is not None:
                for pending in rebuilder.end_text_block():
                    yield pending
            yield Done(
                event.reason, split_message_tags(event.message, enforce_final_tag=enforce_final_tag)
            )
            continue
        if isinstance(event, Error):
            if rebuilder is not None:
                for pending in rebuilder.end_text_block():
                    yield pending
            yield Error(
                event.reason, split_message_tags(event.error, enforce_final_tag=enforce_final_tag)
            )
            continue
        if rebuilder is None:
            yield event
            continue
        if isinstance(event, TextStart):
            continue
        if isinstance(event, TextDelta):
            for out_event in rebuilder.segments(rebuilder.splitter.feed(event.delta)):
                yield out_event
            continue
        if isinstance(event, TextEnd):
            for out_event in rebuilder.end_text_block():
                yield out_event
            continue
        if isinstance(event, passthrough):
            if isinstance(event, passthrough_start):
                for out_event in rebuilder.end_text_block():
                    yield out_event
                block = event.partial.content[event.content_index]
                rebuilder.passthrough_block(event.content_index, block)
            index = rebuilder.index_map.get(event.content_index)
            if index is None:
                block = event.partial.content[event.content_index]
                index = rebuilder.passthrough_block(event.content_index, block)
            yield _reindexed(event, index, rebuilder.out)
            continue
        yield event


def fused(enforce: bool | None) -> Callable[[Any], Any]:
    """What the runtime builds: the repairer's chain, extended by the splitter (stages);
    ``None``: the repairer alone."""
    if enforce is None:
        return lambda provider: apply_stream_repairers(provider, [_repairer()])
    return lambda provider: with_reply_tag_splitting(
        apply_stream_repairers(provider, [_repairer()]), enforce_final_tag=enforce
    )


def nested(enforce: bool | None) -> Callable[[Any], Any]:
    """The same chain as nested generators (the form before stages)."""
    if enforce is None:
        return lambda provider: apply_stream_repairers(provider, [_generator_only(_repairer())])
    splitter = reply_stream._SPLITTING[enforce]
    return lambda provider: apply_stream_repairers(
        provider, [_generator_only(_repairer()), _generator_only(splitter)]
    )


def reference(enforce: bool | None) -> Callable[[Any], Any]:
    """Nested generators with the splitter as written before it had a stage."""
    if enforce is None:
        return nested(None)

    def split(events: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
        return _reference_split(events, context, enforce_final_tag=enforce)

    return lambda provider: apply_stream_repairers(provider, [_generator_only(_repairer()), split])


# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize(
    ("stop_at_terminal", "raw"),
    [(False, False), (True, False), (False, True)],
    ids=["drain", "stop-at-done", "below-the-event-stream"],
)
@pytest.mark.parametrize(
    "enforce", [False, True, None], ids=["splitter", "splitter-enforce-final", "repairer-alone"]
)
@pytest.mark.parametrize("context", [WITH_TOOLS, NO_TOOLS], ids=["tools", "no-tools"])
@pytest.mark.parametrize("shape", list(SHAPES))
async def test_stages_give_what_the_generators_gave(
    shape: str, context: Context, enforce: bool | None, stop_at_terminal: bool, raw: bool
) -> None:
    how = {"stop_at_terminal": stop_at_terminal, "raw": raw}
    got = await _observe(fused(enforce), shape, context, **how)
    as_generators = await _observe(nested(enforce), shape, context, **how)
    before = await _observe(reference(enforce), shape, context, **how)
    assert got == as_generators
    assert got == before


async def test_the_runtime_chain_runs_as_stages() -> None:
    """The fused loop is really taken for the built-in chain (the table above would pass
    trivially if it were not), and a transformer without a stage keeps the generators."""
    splitter = reply_stream._SPLITTING[False]
    stages = open_stages([REPAIRER, splitter], WITH_TOOLS)
    assert stages is not None
    assert [type(stage).__name__ for stage in stages] == ["_Normalizer", "ReplyTagSplitStage"]
    assert open_stages([_generator_only(REPAIRER), splitter], WITH_TOOLS) is None
    assert open_stages([REPAIRER, splitter, splitter], WITH_TOOLS) is None  # too many: generators
    assert open_stages([], WITH_TOOLS) is None
    # no tools: the repairer is left out, the splitter runs alone
    alone = open_stages([REPAIRER, splitter], NO_TOOLS)
    assert alone is not None
    assert [type(stage).__name__ for stage in alone] == ["ReplyTagSplitStage"]
    assert open_stages([REPAIRER], NO_TOOLS) is None  # nothing left: the generator path


class NotAFormat:
    """Has neither ``parse_at`` nor ``scan_at``."""


@pytest.mark.parametrize(
    "repairer",
    [
        PlainTextToolCallRepairer(),
        REPAIRER,
        PlainTextToolCallRepairer(formats=(BUILTIN_TOOL_CALL_FORMATS["bracket"],)),
        PlainTextToolCallRepairer().with_formats({"xmlish": BUILTIN_TOOL_CALL_FORMATS["xmlish"]}),
    ],
    ids=["default", "all built-ins", "given", "bound"],
)
def test_the_stage_checks_the_formats_once_and_uses_the_same_ones(
    repairer: PlainTextToolCallRepairer,
) -> None:
    expected = (
        tuple(BUILTIN_TOOL_CALL_FORMATS.values())
        if repairer.formats is None
        else coerce_tool_call_formats(repairer.formats)
    )
    first = repairer.open_stage(WITH_TOOLS)
    again = repairer.open_stage(WITH_TOOLS)
    assert first is not None and again is not None
    assert first.formats == expected and again.formats is first.formats
    assert first is not again  # a stage per stream
    rebound = repairer.with_formats({"bracket": BUILTIN_TOOL_CALL_FORMATS["bracket"]})
    stage = rebound.open_stage(WITH_TOOLS)
    assert stage is not None and stage.formats == (BUILTIN_TOOL_CALL_FORMATS["bracket"],)


def test_a_bad_format_fails_every_stage_it_would_open() -> None:
    repairer = PlainTextToolCallRepairer(formats=(NotAFormat(),))  # type: ignore[arg-type]
    for _ in range(2):
        with pytest.raises(TypeError, match="does not implement ToolCallFormat"):
            repairer.open_stage(WITH_TOOLS)


@pytest.mark.parametrize("shape", ["text", "plain-text call", "native call", "no terminal, held"])
async def test_the_fused_chain_uses_no_transformer_generator(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With stages, neither the repairer's nor the splitter's generator is made."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a transformer generator was made")

    monkeypatch.setattr(PlainTextToolCallRepairer, "__call__", refuse)
    monkeypatch.setattr(type(reply_stream._SPLITTING[False]), "__call__", refuse)
    got = await _observe(fused(False), shape, WITH_TOOLS, stop_at_terminal=False)
    assert got["events"]


async def _drive(stage: Any, events: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for event in events:
        out.extend(_snapshot(e) for e in stage.feed(event))
        if stage.stops_at_terminal and event.type in ("done", "error"):
            return out
    out.extend(_snapshot(e) for e in stage.flush())
    return out


async def _generate(transformer: Any, events: Iterable[Any], context: Context) -> list[Any]:
    async def source() -> AsyncIterator[Any]:
        for event in events:
            yield event

    return [_snapshot(e) async for e in transformer(source(), context)]


@pytest.mark.parametrize("context", [WITH_TOOLS, NO_TOOLS], ids=["tools", "no-tools"])
@pytest.mark.parametrize("shape", [s for s in SHAPES if not s.startswith("raises")])
async def test_each_stage_alone_matches_its_generator(shape: str, context: Context) -> None:
    """Each stage driven by the rule ``repair.stages`` states, against its generator on its
    own (the no-tools repairer stage included, which the chain leaves out)."""
    stage = _repairer().open_stage(context)
    expected = await _generate(_repairer(), SHAPES[shape](), context)
    if stage is None:  # left out of the chain: the generator must pass the stream untouched
        assert context is NO_TOOLS
        assert expected == [_snapshot(event) for event in SHAPES[shape]()]
    else:
        assert await _drive(stage, SHAPES[shape]()) == expected
    for enforce in (False, True):
        stage = reply_stream._SPLITTING[enforce].open_stage(context)
        assert await _drive(stage, SHAPES[shape]()) == await _generate(
            lambda events, ctx, e=enforce: _reference_split(events, ctx, enforce_final_tag=e),
            SHAPES[shape](),
            context,
        )


# --------------------------------------------------------------------------- closing


@pytest.mark.parametrize("wrapped", [False, True], ids=["bare-source", "event-stream"])
@pytest.mark.parametrize("stop_after", ["start", "text_delta", "done"])
async def test_the_fused_chain_closes_its_provider_in_a_cancelled_scope(
    stop_after: str, wrapped: bool
) -> None:
    """The stages' loop closes the provider under a shield unless the provider's event
    stream has already ended and closed its source (then closing waits for nothing)."""
    closed: list[str] = []

    def provider(model: Any, context: Any, options: Any) -> Any:
        source = SlowClose(list(provider_events(("text", ["hi ", "there"]))), closed)
        return AssistantMessageEventStream(source) if wrapped else source

    stream_fn = with_reply_tag_splitting(apply_stream_repairers(provider, [REPAIRER]))
    seen = await read_until_cancelled(stream_fn(MODEL, WITH_TOOLS, StreamOptions()), stop_after)
    assert seen[-1] == stop_after
    assert closed == ["provider"]


async def test_an_event_stream_is_settled_once_done_with_nothing_to_close() -> None:
    async def source() -> AsyncIterator[Any]:
        for event in provider_events(("text", ["a"])):
            yield event

    pulled = AssistantMessageEventStream(source())
    assert not pulled.settled
    types = [event.type async for event in pulled]
    assert types[-1] == "done" and pulled.settled  # the terminal event closed the source

    ended_early = AssistantMessageEventStream(source())
    ended_early.end()  # done, but its source is still there to close
    assert ended_early.done and not ended_early.settled
    await ended_early.aclose()
    assert ended_early.settled

    pushed = AssistantMessageEventStream()  # push mode: no source
    assert not pushed.settled
    pushed.fail(RuntimeError("x"))
    assert pushed.settled
