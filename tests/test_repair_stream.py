"""The plain-text tool-call stream repairer and repairer composition, on asyncio and trio."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from openclaw_runtime.agent import Agent, tool
from openclaw_runtime.events import (
    AssistantMessageEventStream,
    Done,
    Start,
    TextDelta,
)
from openclaw_runtime.llm import Context, StreamOptions, Tool
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.repair import (
    BUILTIN_TOOL_CALL_FORMATS,
    FormatScan,
    PlainTextToolCallBlock,
    PlainTextToolCallRepairer,
    apply_stream_repairers,
    repair_plain_text_tool_calls,
)
from openclaw_runtime.repair.compose import bind_tool_call_formats
from openclaw_runtime.testing import EventRecorder, FakeProvider, fake_model, scripted_stream, text
from tests.stream_support import provider_events

pytestmark = pytest.mark.anyio

MODEL = fake_model()
CONTEXT = Context(tools=[Tool("read", "read a file"), Tool("write", "write a file")])


class Recorded:
    """Runs the repairer over a source and remembers how many source events had been pulled
    when each output event was emitted (so holding back is observable)."""

    def __init__(self, source, repairer=repair_plain_text_tool_calls, context=CONTEXT):
        self.source = list(source)
        self.repairer = repairer
        self.context = context
        self.pulled = 0
        self.closed = False
        self.out: list = []

    async def _source(self) -> AsyncIterator:
        try:
            for event in self.source:
                self.pulled += 1
                yield event
        finally:
            self.closed = True

    async def run(self) -> Recorded:
        stream = self.repairer(self._source(), self.context)
        async for event in stream:
            self.out.append((self.pulled, event))
        return self

    @property
    def events(self) -> list:
        return [event for _, event in self.out]

    @property
    def types(self) -> list[str]:
        return [event.type for event in self.events]

    @property
    def final(self) -> AssistantMessage:
        last = self.events[-1]
        return last.message if last.type == "done" else last.error

    def emitted_at(self, event) -> int:
        return next(pulled for pulled, e in self.out if e is event)


def text_deltas(events) -> str:
    return "".join(e.delta for e in events if e.type == "text_delta")


# --------------------------------------------------------------------------- promotion


@pytest.mark.parametrize(
    ("chunks", "name", "arguments"),
    [
        (['[read]\n{"pa', 'th":"/tmp/a"}\n[/re', "ad]"], "read", {"path": "/tmp/a"}),
        (['[tool:write]{"path":"b"}', "<|ca", "ll|>"], "write", {"path": "b"}),
        (
            ['<|channel|>commentary to=read code<|message|>{"path":"c"}<|call|>'],
            "read",
            {"path": "c"},
        ),
        (
            ["<function=read>\n<parameter=path>\n/d\n</parameter>\n</function>"],
            "read",
            {"path": "/d"},
        ),
        (['{"name":"read",', '"arguments":{"path":"e"}}'], "read", {"path": "e"}),
        (["\n\n", '[tool:read]{"path":"f"}', "\n"], "read", {"path": "f"}),
    ],
)
async def test_a_plain_text_call_is_promoted(chunks, name, arguments):
    run = await Recorded(provider_events(("text", chunks))).run()
    assert run.types == ["start", "toolcall_start", "toolcall_delta", "toolcall_end", "done"]
    done = run.events[-1]
    assert done.reason == "toolUse"
    assert done.message.stop_reason == "toolUse"
    (call,) = done.message.content
    assert (call.name, call.arguments) == (name, arguments)
    assert re.fullmatch(r"call_[0-9a-f]{24}", call.id)
    assert run.events[3].tool_call is call
    assert text_deltas(run.events) == ""  # the raw call never reached the consumer


async def test_text_blocks_join_with_a_virtual_line_break():
    run = await Recorded(
        provider_events(("text", ["[read]"]), ("text", ['{"path":"a"}[/read]']))
    ).run()
    assert [(c.name, c.arguments) for c in run.final.tool_calls()] == [("read", {"path": "a"})]


async def test_several_calls_are_promoted_together():
    chunks = ['[tool:read]{"path":"a"}\n', '[tool:write]{"path":"b"}\n']
    run = await Recorded(provider_events(("text", chunks))).run()
    assert [c.name for c in run.final.tool_calls()] == ["read", "write"]
    assert [e.content_index for e in run.events if e.type == "toolcall_start"] == [0, 1]


async def test_thinking_is_kept_and_moved_onto_the_promoted_message():
    run = await Recorded(
        provider_events(
            ("thinking", ["let me ", "look"]),
            ("text", ['[tool:read]{"path":"a"}']),
            ("thinking", ["then answer"]),
        )
    ).run()
    assert run.types[:4] == ["start", "thinking_start", "thinking_delta", "thinking_delta"]
    final = run.final
    assert [b.type for b in final.content] == ["thinking", "toolCall", "thinking"]
    tail = run.events[-4:-1]  # the trailing thinking block, held while the call was pending
    assert [(e.type, e.content_index) for e in tail] == [
        ("thinking_start", 2),
        ("thinking_delta", 2),
        ("thinking_end", 2),
    ]
    assert all(e.partial is final for e in tail)


async def test_a_done_only_stream_gets_a_start_and_the_call_events():
    message = AssistantMessage(
        content=[TextContent(text='[tool:read]{"path":"a"}')], stop_reason="stop"
    )
    run = await Recorded([Done("stop", message)]).run()
    assert run.types == ["start", "toolcall_start", "toolcall_delta", "toolcall_end", "done"]
    assert run.events[0].partial.content == []


async def test_a_resolver_widens_the_names_and_ids_can_be_injected():
    def case_insensitive(raw, allowed):
        return next((n for n in allowed if n.lower() == raw.lower()), None)

    repairer = PlainTextToolCallRepairer(
        resolve_tool_name=case_insensitive, tool_call_id=lambda: "call_x"
    )
    run = await Recorded(provider_events(("text", ['[tool:READ]{"path":"a"}'])), repairer).run()
    (call,) = run.final.tool_calls()
    assert (call.id, call.name) == ("call_x", "read")
    plain = await Recorded(provider_events(("text", ['[tool:READ]{"path":"a"}']))).run()
    assert plain.final.tool_calls() == []


# --------------------------------------------------------------------------- release unchanged


@pytest.mark.parametrize(
    "blocks",
    [
        [("text", ["Hello ", "world"])],
        [("text", ['[tool:read]{"path":"a"}', "\nDone."])],  # prose after a call
        [("text", ["Sure:\n", '[tool:read]{"path":"a"}'])],  # prose before a call
        [("text", ["[tool:delete]{}"])],  # not one of the request's tools
        [("text", ['[tool:read]{"path":}'])],  # invalid JSON
        [("text", ["[tool:re", " nope"])],
        [("text", ['[read]\n{"path":"a"}'])],  # unfinished at done
        [("text", ['[tool:read]{"path":"a"}']), ("thinking", ["x"]), ("text", ["prose"])],
        [("text", ['[tool:read]{"path":"a"}']), ("call", ToolCall(id="n", name="read"))],
        [("thinking", ["just thinking"])],
    ],
)
async def test_what_cannot_be_promoted_is_released_unchanged(blocks):
    source = list(provider_events(*blocks))
    run = await Recorded(source).run()
    assert run.events == source  # the very same events, in the same order
    assert all(a is b for a, b in zip(run.events, source, strict=True))


async def test_length_and_errors_are_never_promoted():
    length = list(provider_events(("text", ['[tool:read]{"path":"a"}']), reason="length"))
    assert (await Recorded(length).run()).events == length


@pytest.mark.parametrize("error", ["aborted", "provider exploded"])
async def test_error_events_release_the_held_text_and_pass_unchanged(error):
    source = list(provider_events(("text", ['[tool:read]{"path":"a"}']), error=error))
    run = await Recorded([*source, Done("stop", AssistantMessage())]).run()
    assert run.events == source  # nothing after the error is forwarded
    assert run.events[-1] is source[-1]
    assert run.closed


async def test_text_that_can_still_be_a_call_is_held_back():
    source = list(provider_events(("text", ["[tool:re", "ad]", " nope"])))
    run = await Recorded(source).run()
    assert run.events == source
    first_delta = source[2]
    assert first_delta.delta == "[tool:re"
    # emitted only once " nope" (source event 5) proved it is not a call
    assert run.emitted_at(first_delta) == 5


async def test_impossible_text_is_released_as_soon_as_it_is_known():
    source = list(provider_events(("text", ["[tool:wr", "ite", "]{}"])))
    run = await Recorded(source, context=Context(tools=[Tool("read", "r")])).run()
    assert run.events == source
    assert run.emitted_at(source[2]) == 3  # "wr" is no prefix of "read": released at once


async def test_prose_is_released_at_its_first_word():
    source = list(provider_events(("text", ["Hello", " there", " friend"])))
    run = await Recorded(source).run()
    assert [run.emitted_at(e) for e in source] == [1, 3, 3, 4, 5, 6, 7]


async def test_a_stream_without_done_releases_what_it_held():
    source = list(provider_events(("text", ['[tool:read]{"path":"a"}'])))[:-1]
    run = await Recorded(source).run()
    assert run.events == source


async def test_without_tools_the_stream_passes_through():
    source = list(provider_events(("text", ['[tool:read]{"path":"a"}'])))
    run = await Recorded(source, context=Context()).run()
    assert run.events == source


@pytest.mark.parametrize(
    "chunking",
    [
        ['[read]\n{"path":"a b"}\n[/read]'],
        ["[", "read", "]", "\n", '{"path":"a b"}', "\n", "[/read]"],
        list('[read]\n{"path":"a b"}\n[/read]'),
    ],
)
async def test_chunk_boundaries_do_not_change_the_final_message(chunking):
    repairer = PlainTextToolCallRepairer(tool_call_id=lambda: "call_1")
    run = await Recorded(provider_events(("text", chunking)), repairer).run()
    final = run.final.to_dict()
    del final["timestamp"]
    assert final["content"] == [
        {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a b"}}
    ]
    assert final["stopReason"] == "toolUse"


# --------------------------------------------------------------------------- formats


class ArrowFormat:
    """A plugin format: ``>>name key=value ...`` ending with a line break."""

    pattern = re.compile(r">>([A-Za-z0-9_-]+)((?: [A-Za-z_]+=\S+)*)\n")

    def parse_at(self, text, start, options, line_breaks):
        match = self.pattern.match(text, start)
        if match is None or not options.allows(match.group(1)):
            return None
        arguments = dict(pair.split("=", 1) for pair in match.group(2).split())
        return [
            PlainTextToolCallBlock(match.group(1), arguments, start, match.end(), match.group(0))
        ]

    def scan_at(self, text, start, options):
        rest = text[start:]
        if len(rest) < 2:
            return FormatScan("prefix" if ">>".startswith(rest) else "invalid")
        if not rest.startswith(">>"):
            return FormatScan("invalid")
        if "\n" not in rest:
            return FormatScan("prefix")
        match = self.pattern.match(text, start)
        if match is None or not options.accepts(match.group(1)):
            return FormatScan("invalid")
        return FormatScan("complete", match.end())


async def test_a_plugin_format_is_recognized_once_bound():
    chunks = [">>re", "ad path=/tmp", "\n"]
    unbound = await Recorded(provider_events(("text", chunks))).run()
    assert unbound.final.tool_calls() == []
    bound = PlainTextToolCallRepairer().with_formats(
        {**BUILTIN_TOOL_CALL_FORMATS, "arrow": ArrowFormat()}
    )
    run = await Recorded(provider_events(("text", chunks)), bound).run()
    assert [(c.name, c.arguments) for c in run.final.tool_calls()] == [("read", {"path": "/tmp"})]
    assert text_deltas(run.events) == ""


def test_binding_a_format_that_is_not_one_names_it():
    def parse_acme_calls(text):
        return []

    with pytest.raises(
        TypeError, match=r"tool-call format 'acme' .*missing parse_at\(\), scan_at\(\)"
    ):
        PlainTextToolCallRepairer().with_formats({"acme": parse_acme_calls})


def test_binding_reports_and_skips_invalid_formats_when_asked():
    def passthrough(events, context):
        return events

    reported = []
    bound = bind_tool_call_formats(
        [PlainTextToolCallRepairer(), passthrough],
        {"bracket": BUILTIN_TOOL_CALL_FORMATS["bracket"], "acme": lambda text: []},
        on_invalid=lambda name, exc: reported.append((name, str(exc))),
    )
    assert bound[0].formats == (BUILTIN_TOOL_CALL_FORMATS["bracket"],)
    assert bound[1] is passthrough  # takes no formats: unchanged
    assert [name for name, _ in reported] == ["acme"]
    assert "missing parse_at(), scan_at()" in reported[0][1]
    with pytest.raises(TypeError, match="'acme'"):
        bind_tool_call_formats([PlainTextToolCallRepairer()], {"acme": object()})


class ExplodingFormat:
    def parse_at(self, text, start, options, line_breaks):
        raise RuntimeError("boom")

    def scan_at(self, text, start, options):
        raise RuntimeError("boom")


async def test_a_format_that_raises_never_breaks_the_stream(caplog):
    repairer = PlainTextToolCallRepairer().with_formats(
        [ExplodingFormat(), *BUILTIN_TOOL_CALL_FORMATS.values()]
    )
    run = await Recorded(provider_events(("text", ['[tool:read]{"path":"a"}'])), repairer).run()
    assert [c.name for c in run.final.tool_calls()] == ["read"]
    only_broken = PlainTextToolCallRepairer().with_formats([ExplodingFormat()])
    source = list(provider_events(("text", ['[tool:read]{"path":"a"}'])))
    assert (await Recorded(source, only_broken).run()).events == source
    assert "boom" in caplog.text


async def test_a_failing_resolver_fails_open():
    def broken(raw, allowed):
        raise RuntimeError("resolver bug")

    source = list(provider_events(("text", ['[tool:read]{"path":"a"}'])))
    run = await Recorded(source, PlainTextToolCallRepairer(resolve_tool_name=broken)).run()
    assert run.events == source


# --------------------------------------------------------------------------- composition


def upper_case(events, context):
    async def transform():
        async for event in events:
            if event.type == "text_delta":
                event = TextDelta(event.content_index, event.delta.upper(), event.partial)
            yield event

    return transform()


def tagging(tag, seen):
    async def transform(events, context):
        async for event in events:
            seen.append((tag, event.type))
            yield event

    return transform


async def test_transformers_apply_in_order():
    provider = FakeProvider()
    provider.reply(text("hello there"))
    seen = []
    stream_fn = apply_stream_repairers(
        provider.stream_fn, [tagging("a", seen), upper_case, tagging("b", seen)]
    )
    stream = stream_fn(MODEL, CONTEXT, StreamOptions())
    assert isinstance(stream, AssistantMessageEventStream)
    deltas = [e.delta async for e in stream if e.type == "text_delta"]
    assert "".join(deltas) == "HELLO THERE"
    assert seen[:2] == [("a", "start"), ("b", "start")]
    assert (await stream.result()).text() == "hello there"  # the provider's message itself


async def test_no_transformers_returns_the_provider_stream_fn():
    stream_fn = FakeProvider().stream_fn
    assert apply_stream_repairers(stream_fn, []) is stream_fn


async def test_an_async_stream_fn_is_awaited():
    provider = FakeProvider()
    provider.reply(text('[tool:read]{"path":"a"}'))

    async def stream_fn(model, context, options):
        return provider.stream_fn(model, context, options)

    stream = apply_stream_repairers(stream_fn, [repair_plain_text_tool_calls])(
        MODEL, CONTEXT, StreamOptions()
    )
    assert (await stream.result()).tool_calls()[0].name == "read"


async def test_closing_the_outer_stream_closes_every_layer():
    closed = []

    async def endless() -> AsyncIterator:
        message = AssistantMessage()
        try:
            yield Start(message)
            while True:
                yield TextDelta(0, "prose ", message)
        finally:
            closed.append("provider")

    def stream_fn(model, context, options):
        return AssistantMessageEventStream(endless())

    def closing(tag):
        async def transform(events, context):
            try:
                async for event in events:
                    yield event
            finally:
                closed.append(tag)

        return transform

    stream = apply_stream_repairers(
        stream_fn, [closing("inner"), repair_plain_text_tool_calls, closing("outer")]
    )(MODEL, CONTEXT, StreamOptions())
    count = 0
    async for _event in stream:
        count += 1
        if count == 5:
            break
    await stream.aclose()
    assert closed == ["outer", "inner", "provider"]


async def test_repair_closes_its_source_when_closed_early():
    run = Recorded(provider_events(("text", ["Hello", " world"])))
    stream = repair_plain_text_tool_calls(run._source(), CONTEXT)
    assert (await stream.__anext__()).type == "start"
    await stream.aclose()
    assert run.closed


# --------------------------------------------------------------------------- end to end


async def test_an_agent_runs_a_tool_the_model_wrote_as_text():
    seen_paths = []

    @tool
    async def read(path: str) -> str:
        """Read a file."""
        seen_paths.append(path)
        return f"contents of {path}"

    provider = FakeProvider()
    provider.reply(text('[read]\n{"path": "/tmp/notes.txt"}\n[/read]', chunk=4))
    provider.reply("The file says hello.")
    agent = Agent(
        model=MODEL,
        stream_fn=apply_stream_repairers(provider.stream_fn, [repair_plain_text_tool_calls]),
        tools=[read],
    )
    recorder = EventRecorder()
    agent.subscribe(recorder)
    messages = await agent.prompt("read my notes")

    assert seen_paths == ["/tmp/notes.txt"]
    user, call_message, result, answer = messages
    assert isinstance(user, UserMessage)
    assert call_message.stop_reason == "toolUse"
    (call,) = call_message.content
    assert isinstance(call, ToolCall)
    assert (call.name, call.arguments) == ("read", {"path": "/tmp/notes.txt"})
    assert isinstance(result, ToolResultMessage)
    assert (result.tool_call_id, result.text()) == (call.id, "contents of /tmp/notes.txt")
    assert answer.text() == "The file says hello."
    assert agent.state.messages[1] is call_message
    streamed = [
        e.assistant_message_event.delta
        for e in recorder.of("message_update")
        if e.assistant_message_event.type == "text_delta"
    ]
    assert "[read]" not in "".join(streamed)  # the user never saw the raw call
    assert provider.history[1].context.messages[1].content[0].type == "toolCall"


async def test_the_builtin_plugin_registers_the_repairer_and_the_formats(runtime_factory):
    runtime = runtime_factory()
    components = runtime.components
    repairer = components.stream_repairers.registration("plain_text_tool_calls")
    assert repairer.plugin == "builtin.repair"
    assert {
        r.name for r in components.tool_call_formats.registrations() if r.plugin == "builtin.repair"
    } == {
        "json_object",
        "bracket",
        "harmony",
        "xmlish",
    }
    # the binding the host performs (see openclaw_runtime/builtins/repair.py)
    formats = {r.name: r.component for r in components.tool_call_formats.ordered()}
    repairers = [r.component for r in components.stream_repairers.ordered()]
    transformers = bind_tool_call_formats(repairers, formats)
    assert transformers[0].formats == tuple(formats.values())
    provider = FakeProvider()
    provider.reply(text("<function=write><parameter=path>/a</parameter></function>"))
    stream = apply_stream_repairers(provider.stream_fn, transformers)(
        MODEL, CONTEXT, StreamOptions()
    )
    assert (await stream.result()).tool_calls()[0].arguments == {"path": "/a"}


async def test_scripted_streams_can_be_repaired():
    events = list(provider_events(("text", ['[tool:read]{"path":"a"}'])))
    stream = AssistantMessageEventStream(
        repair_plain_text_tool_calls(scripted_stream(events), CONTEXT)
    )
    assert (await stream.result()).stop_reason == "toolUse"
