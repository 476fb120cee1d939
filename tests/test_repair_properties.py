"""Property tests: the grammar round-trips every syntax, never raises, and the stream repairer's
result does not depend on how the provider split its text."""

from __future__ import annotations

import itertools
import json
import string

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_runtime.events import Done, Start, TextDelta, TextEnd, TextStart
from openclaw_runtime.llm import Context, Tool
from openclaw_runtime.messages import AssistantMessage, TextContent
from openclaw_runtime.repair import (
    BUILTIN_TOOL_CALL_FORMATS,
    FormatScanOptions,
    parse_standalone_plain_text_tool_call_blocks,
    promote_plain_text_tool_calls,
    repair_plain_text_tool_calls,
    scan_plain_text_json_tool_call,
    scan_plain_text_tool_call,
    strip_plain_text_tool_call_blocks,
)
from openclaw_runtime.repair.formats import scan_standalone_plain_text_tool_calls
from openclaw_runtime.repair.scan import AllowedToolNameMatcher
from openclaw_runtime.repair.xmlish import scan_xmlish_tool_call

FORMATS = tuple(BUILTIN_TOOL_CALL_FORMATS.values())
PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# --------------------------------------------------------------------------- strategies

NAME_ALPHABET = string.ascii_letters + string.digits + "_-"
names = st.text(alphabet=NAME_ALPHABET, min_size=1, max_size=120)
long_names = st.text(alphabet=NAME_ALPHABET, min_size=121, max_size=140)
xml_names = st.text(alphabet=NAME_ALPHABET + ".:", min_size=1, max_size=120)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
xml_values = st.text(
    alphabet=st.characters(blacklist_characters="<\r\n", blacklist_categories=("Cs",)), max_size=20
)
xml_arguments = st.dictionaries(xml_names, xml_values, max_size=3)


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


@st.composite
def json_syntax_calls(draw, name_strategy=names):
    """A bracket, tool-bracket, Harmony or bare-JSON call and what it must parse to."""
    name = draw(name_strategy)
    args = draw(arguments)
    payload = dumps(args)
    space = draw(st.sampled_from(["", " ", "\n", "  \n"]))
    form = draw(st.sampled_from(["named", "tool", "harmony", "flat", "function", "wrapper"]))
    if form == "named":
        closer = draw(st.sampled_from([f"[/{name}]", "[END_TOOL_REQUEST]"]))
        eol = draw(st.sampled_from(["\n", "\r\n", "  \n"]))
        raw = f"[{name}]{eol}{payload}{space}{closer}"
    elif form == "tool":
        closer = draw(st.sampled_from(["", "<|call|>", "[END_TOOL_REQUEST]", f"[/{name}]"]))
        raw = f"[tool:{name}]{space}{payload}{space if closer else ''}{closer}"
    elif form == "harmony":
        channel = draw(st.sampled_from(["commentary", "analysis", "final"]))
        marker = draw(st.sampled_from(["", "<|channel|>"]))
        message = draw(st.sampled_from(["", "<|message|>", " <|message|> "]))
        closer = draw(st.sampled_from(["", "<|call|>"]))
        raw = f"{marker}{channel} to={name} code{message if message else ' '}{payload}{closer}"
    elif form == "flat":
        key = draw(st.sampled_from(["arguments", "args", "input", "parameters"]))
        as_string = draw(st.booleans())
        raw = dumps({"name": name, key: payload if as_string else args})
    elif form == "function":
        raw = dumps({"function": {"name": name, "arguments": payload}})
    else:
        raw = dumps({"tool_calls": [{"function": {"name": name, "arguments": args}}]})
    return raw, name, args


@st.composite
def xml_calls(draw, name_strategy=xml_names):
    name = draw(name_strategy)
    args = draw(xml_arguments)
    body = "".join(f"<parameter={key}>{value}</parameter>" for key, value in args.items())
    raw = f"<function={name}>{body}</function>"
    return raw, name, args


calls = json_syntax_calls() | xml_calls()


# --------------------------------------------------------------------------- grammar


@PROPERTY_SETTINGS
@given(calls)
def test_every_rendered_call_parses_back(call):
    raw, name, args = call
    blocks = parse_standalone_plain_text_tool_call_blocks(raw)
    assert blocks is not None
    assert [(b.name, b.arguments) for b in blocks] == [(name, args)]
    assert blocks[0].raw == raw


@PROPERTY_SETTINGS
@given(st.lists(calls, min_size=1, max_size=4), st.sampled_from(["\n", "\n\n", " \n ", "\r\n"]))
def test_a_sequence_of_calls_parses_in_order(sequence, separator):
    raw = separator.join(call[0] for call in sequence)
    blocks = parse_standalone_plain_text_tool_call_blocks(raw)
    assert blocks is not None
    assert [(b.name, b.arguments) for b in blocks] == [(c[1], c[2]) for c in sequence]
    assert all(raw[b.start : b.end] == b.raw for b in blocks)


@PROPERTY_SETTINGS
@given(long_names, arguments)
def test_names_longer_than_120_characters_never_parse(name, args):
    payload = dumps(args)
    for raw in (
        f"[{name}]\n{payload}\n[/{name}]",
        f"[tool:{name}]{payload}",
        f"analysis to={name} code {payload}",
        f"<function={name}></function>",
    ):
        assert parse_standalone_plain_text_tool_call_blocks(raw) is None


@PROPERTY_SETTINGS
@given(calls, st.from_regex(r"[A-Za-z][A-Za-z ,.!?]{0,30}", fullmatch=True))
def test_prose_next_to_a_call_is_never_standalone(call, prose):
    raw = call[0]
    assert parse_standalone_plain_text_tool_call_blocks(f"{prose}\n{raw}") is None
    assert parse_standalone_plain_text_tool_call_blocks(f"{raw}\n{prose}") is None


@PROPERTY_SETTINGS
@given(st.text(max_size=200) | st.text(alphabet='[]{}<>|:=/"\\ \nabcdtolrea_-', max_size=200))
def test_nothing_raises_on_arbitrary_text(raw):
    parse_standalone_plain_text_tool_call_blocks(raw)
    strip_plain_text_tool_call_blocks(raw)
    for start in range(min(len(raw), 8)):
        scan_plain_text_json_tool_call(raw, start)
        scan_xmlish_tool_call(raw, start)
        scan = scan_plain_text_tool_call(raw, start)
        assert scan.next > start or scan.kind != "invalid"
    scan_standalone_plain_text_tool_calls(raw, FORMATS)


@PROPERTY_SETTINGS
@given(st.text(alphabet=string.ascii_letters + " .,\n", max_size=200))
def test_text_without_markers_is_never_stripped(raw):
    assert strip_plain_text_tool_call_blocks(raw) == raw


@PROPERTY_SETTINGS
@given(calls, st.from_regex(r"[A-Za-z][A-Za-z ,.!?]{0,30}", fullmatch=True))
def test_a_whole_line_call_between_prose_lines_is_stripped(call, prose):
    raw, _name, _args = call
    if raw.startswith("{"):
        return  # bare JSON next to prose is an example and stays (covered by table tests)
    assert strip_plain_text_tool_call_blocks(f"{prose}\n{raw}\n{prose}") == f"{prose}\n{prose}"


@PROPERTY_SETTINGS
@given(st.lists(calls, min_size=1, max_size=3), st.data())
def test_every_prefix_of_standalone_calls_may_still_become_calls(sequence, data):
    """The stream holds text while this says prefix/complete; a prefix of text that will
    parse must never be judged invalid, or chunking would change the result."""
    raw = "\n".join(call[0] for call in sequence)
    matcher = AllowedToolNameMatcher.of(call[1] for call in sequence)
    options = FormatScanOptions(matcher)
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    assert scan_standalone_plain_text_tool_calls(raw[:cut], FORMATS, options) != "invalid"
    assert scan_standalone_plain_text_tool_calls(raw, FORMATS, options) == "complete"


# --------------------------------------------------------------------------- stream


TOOLS = ("read", "write")
CONTEXT = Context(tools=[Tool(name, name) for name in TOOLS])


@st.composite
def response_texts(draw):
    """Whole responses: calls to the request's tools, prose, and mixtures of both."""
    tool_names = st.sampled_from(TOOLS)
    tool_calls = st.lists(
        json_syntax_calls(tool_names) | xml_calls(tool_names), min_size=1, max_size=3
    )
    prose = st.from_regex(r"[A-Za-z][A-Za-z ,.!?\n]{0,40}", fullmatch=True)
    kind = draw(st.sampled_from(["calls", "calls", "prose", "calls+prose", "prose+calls", "noise"]))
    if kind == "noise":
        return draw(st.text(alphabet='[]{}<>|:=/"\\ \nabcdtolrea_-', min_size=1, max_size=60))
    if kind == "prose":
        return draw(prose)
    text = "\n".join(call[0] for call in draw(tool_calls))
    if kind == "calls+prose":
        return f"{text}\n{draw(prose)}"
    if kind == "prose+calls":
        return f"{draw(prose)}\n{text}"
    return text


def stream_of(blocks: list[list[str]]) -> list:
    """Provider events for text blocks, each given as its list of deltas."""
    message = AssistantMessage(api="fake", provider="fake", model="fake-model")
    events: list = [Start(message)]
    for index, chunks in enumerate(blocks):
        block = TextContent(text="")
        message.content.append(block)
        events.append(TextStart(index, message))
        for chunk in chunks:
            block.text += chunk
            events.append(TextDelta(index, chunk, message))
        events.append(TextEnd(index, block.text, message))
    events.append(Done("stop", message))
    return events


def split_at(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c for c in cuts if 0 < c < len(text))})
    return [text[a:b] for a, b in itertools.pairwise(points)] or [""]


def repaired(events: list, backend: str) -> tuple[list, list[str]]:
    async def main() -> list:
        count = 0

        def ids() -> str:
            nonlocal count
            count += 1
            return f"call_{count}"

        async def source():
            for event in events:
                yield event

        return [e async for e in repair_plain_text_tool_calls(source(), CONTEXT, tool_call_id=ids)]

    out = anyio.run(main, backend=backend)
    return out, [e.type for e in out]


def final_dict(out: list) -> dict:
    final = out[-1].message.to_dict()
    final.pop("timestamp")
    return final


@PROPERTY_SETTINGS
@given(
    response_texts(),
    st.lists(st.integers(min_value=1, max_value=400), max_size=3),
    st.lists(st.integers(min_value=1, max_value=400), max_size=30),
    st.sampled_from(["asyncio", "trio"]),
)
def test_chunk_boundaries_never_change_the_result(text, block_cuts, delta_cuts, backend):
    blocks = split_at(text, block_cuts)  # the same block structure in both runs
    whole = stream_of([[block] for block in blocks])
    offsets = [0]
    for block in blocks:
        offsets.append(offsets[-1] + len(block))
    chunked = stream_of(
        [
            split_at(block, [c - start for c in delta_cuts])
            for block, start in zip(blocks, offsets, strict=False)
        ]
    )
    out_whole, _ = repaired(whole, backend)
    out_chunked, types = repaired(chunked, backend)

    assert final_dict(out_chunked) == final_dict(out_whole)
    visible = "".join(e.delta for e in out_chunked if e.type == "text_delta")
    message = out_chunked[-1].message
    if message.stop_reason == "toolUse":
        assert visible.strip() == ""  # a promoted call was never shown as text
        assert types.count("toolcall_end") == len(message.tool_calls()) > 0
        expected = promote_plain_text_tool_calls(
            chunked[-1].message, TOOLS, tool_call_id=lambda: "x"
        )
        assert expected is not None
        assert [(c.name, c.arguments) for c in message.tool_calls()] == [
            (c.name, c.arguments) for c in expected.message.tool_calls()
        ]
    else:
        assert out_chunked == chunked  # released unchanged: the very same events
        assert promote_plain_text_tool_calls(chunked[-1].message, TOOLS) is None
