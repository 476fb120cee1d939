"""Plain-text tool-call grammar (openclaw-spec §9.1-9.2): primitives and every syntax."""

from __future__ import annotations

import json

import pytest

from openclaw_runtime.repair import (
    PlainTextToolCallParseOptions,
    StructuralLineBreaks,
    parse_standalone_plain_text_tool_call_blocks,
)
from openclaw_runtime.repair.grammar import (
    DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES,
    END_TOOL_REQUEST,
    HARMONY_CALL_MARKER,
    HARMONY_CHANNEL_MARKER,
    HARMONY_MESSAGE_MARKER,
    MAX_PLAIN_TEXT_TOOL_NAME_CHARS,
    consume_line_break,
    consume_structural_line_break_after_horizontal_whitespace,
    index_of_ascii_marker_ignore_case,
    is_ascii_marker_prefix_ignore_case,
    is_js_blank,
    is_literal_prefix_at,
    is_plain_text_tool_name_char,
    is_xmlish_name_char,
    js_trim,
    skip_horizontal_whitespace,
    skip_line_indentation,
    skip_whitespace,
    starts_with_ascii_marker_ignore_case,
    utf8_byte_length_within_limit,
)
from openclaw_runtime.repair.json_object import parse_json_tool_call_blocks_at, scan_json_object

parse = parse_standalone_plain_text_tool_call_blocks


def single(raw: str, **options):
    blocks = parse(raw, PlainTextToolCallParseOptions(**options) if options else None)
    assert blocks is not None, f"expected a call in {raw!r}"
    assert len(blocks) == 1
    return blocks[0]


# --------------------------------------------------------------------------- constants


def test_markers_and_limits_are_openclaws():
    assert END_TOOL_REQUEST == "[END_TOOL_REQUEST]"
    assert HARMONY_CHANNEL_MARKER == "<|channel|>"
    assert HARMONY_MESSAGE_MARKER == "<|message|>"
    assert HARMONY_CALL_MARKER == "<|call|>"
    assert MAX_PLAIN_TEXT_TOOL_NAME_CHARS == 120
    assert DEFAULT_MAX_PLAIN_TEXT_TOOL_PAYLOAD_BYTES == 256_000


# --------------------------------------------------------------------------- primitives


@pytest.mark.parametrize(
    ("char", "plain", "xmlish"),
    [
        ("a", True, True),
        ("Z", True, True),
        ("9", True, True),
        ("_", True, True),
        ("-", True, True),
        (".", False, True),
        (":", False, True),
        ("@", False, False),
        ("/", False, False),
        (" ", False, False),
        ("\n", False, False),
        ("é", False, False),
        ("", False, False),
    ],
)
def test_name_characters(char, plain, xmlish):
    assert is_plain_text_tool_name_char(char) is plain
    assert is_xmlish_name_char(char) is xmlish


@pytest.mark.parametrize(
    ("text", "start", "horizontal", "indentation", "anywhere"),
    [
        ("  \tabc", 0, 3, 3, 3),
        (" \n x", 0, 1, 1, 3),
        ("abc", 0, 0, 0, 0),
        ("", 0, 0, 0, 0),
        ("abc", 10, 10, 10, 10),
        (" \n\t\r x", 0, 1, 1, 5),
        ("\u00a0\ufeffx", 0, 0, 2, 2),  # JavaScript whitespace, not spaces/tabs
        ("\u2028x", 0, 0, 1, 1),  # a line terminator JavaScript indents with
        ("\x1cx", 0, 0, 0, 0),  # Python's isspace() says yes; JavaScript's \s says no
        ("\x85x", 0, 0, 0, 0),
    ],
)
def test_whitespace_skipping_follows_javascript(text, start, horizontal, indentation, anywhere):
    assert skip_horizontal_whitespace(text, start) == horizontal
    assert skip_line_indentation(text, start) == indentation
    assert skip_whitespace(text, start) == anywhere


@pytest.mark.parametrize(
    ("text", "start", "expected"),
    [
        ("hello\nworld", 5, 6),
        ("hello\r\nworld", 5, 7),
        ("hello\rworld", 5, 6),
        ("hello world", 5, None),
        ("abc", 10, None),
        ("\nabc", 0, 1),
        ("\r", 0, 1),
    ],
)
def test_consume_line_break(text, start, expected):
    assert consume_line_break(text, start) == expected


@pytest.mark.parametrize(
    ("text", "offsets", "expected", "used"),
    [
        ("  \nx", set(), 3, set()),  # a real break wins
        ("  x", set(), None, set()),
        ("  x", {2}, 2, {2}),  # virtual break at the end of the spaces: nothing consumed
        ("  x", {0}, 0, {0}),
        ("  x", {3}, None, set()),  # past the spaces: not a line break
        ("  \nx", {0}, 3, set()),  # real break preferred over a virtual one
    ],
)
def test_structural_line_breaks(text, offsets, expected, used):
    breaks = StructuralLineBreaks(frozenset(offsets), used=set())
    assert consume_structural_line_break_after_horizontal_whitespace(text, 0, breaks) == expected
    assert breaks.used == used


@pytest.mark.parametrize(
    ("text", "blank", "trimmed"),
    [
        ("", True, ""),
        (" \n\t", True, ""),
        ("\u00a0x\ufeff", False, "x"),
        ("\x1c", False, "\x1c"),
    ],
)
def test_javascript_trim(text, blank, trimmed):
    assert is_js_blank(text) is blank
    assert js_trim(text) == trimmed


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("abc", 3, 3),
        ("abc", 2, None),
        ("é", 2, 2),
        ("é", 1, None),  # 1 character, 2 bytes: the byte count decides
        ("€", 3, 3),
        ("😀", 4, 4),
        ("😀", 3, None),
    ],
)
def test_utf8_byte_length_within_limit(text, limit, expected):
    assert utf8_byte_length_within_limit(text, 0, len(text), limit) == expected


@pytest.mark.parametrize(
    ("text", "start", "literal", "expected"),
    [
        ("<|ca", 0, "<|call|>", True),
        ("x<|ca", 1, "<|call|>", True),
        ("", 0, "<|call|>", True),  # nothing yet: still a prefix
        ("<|call|>", 0, "<|call|>", False),  # complete is not a strict prefix
        ("<|cap", 0, "<|call|>", False),
        ("abc", -1, "abc", False),
    ],
)
def test_is_literal_prefix_at(text, start, literal, expected):
    assert is_literal_prefix_at(text, start, literal) is expected


@pytest.mark.parametrize(
    ("text", "cursor", "marker", "starts", "prefix"),
    [
        ("Hello World", 0, "hello", True, False),
        ("HELLO World", 0, "hello", True, False),
        ("hello World", 0, "HELLO", False, False),  # the marker is compared as given
        ("xyz", 0, "abc", False, False),
        ("ab", 0, "abc", False, True),
        ("xx</FUNCTION>", 2, "</function>", True, False),
        ("</FUN", 0, "</function>", False, True),
    ],
)
def test_ascii_marker_matching(text, cursor, marker, starts, prefix):
    assert starts_with_ascii_marker_ignore_case(text, cursor, marker) is starts
    assert is_ascii_marker_prefix_ignore_case(text, cursor, marker) is prefix


@pytest.mark.parametrize(
    ("text", "start", "expected"),
    [
        ("</parameter>abc", 0, 0),
        ("xx</PARAMETER>", 0, 2),
        ("hello world", 0, -1),
        ("aa</parameter>bb", 3, -1),
        ("prefix</parameter>", 0, 6),
        ("", 0, -1),
    ],
)
def test_index_of_ascii_marker_ignore_case(text, start, expected):
    assert index_of_ascii_marker_ignore_case(text, "</parameter>", start) == expected


@pytest.mark.parametrize(
    ("text", "kind", "end", "depth", "in_string", "escaped"),
    [
        ('{"a":1}', "complete", 7, 0, False, False),
        ('{"a":{"b":2}}', "complete", 13, 0, False, False),
        ('{"a":"}"}', "complete", 9, 0, False, False),  # braces in strings do not count
        ('{"a":"\\\\"}', "complete", 10, 0, False, False),  # an escaped backslash
        ('{"a":"\\"}"}', "complete", 11, 0, False, False),  # an escaped quote
        ("{}", "complete", 2, 0, False, False),
        ('{"a":1', "prefix", 6, 1, False, False),
        ('{"value":"still open', "prefix", 20, 1, True, False),
        ('{"a":"\\', "prefix", 7, 1, True, True),
        ('{"a":{', "prefix", 6, 2, False, False),
    ],
)
def test_scan_json_object(text, kind, end, depth, in_string, escaped):
    scan = scan_json_object(text, 0)
    assert (scan.kind, scan.end) == (kind, end)
    assert (scan.state.depth, scan.state.in_string, scan.state.escaped) == (
        depth,
        in_string,
        escaped,
    )


# --------------------------------------------------------------------------- named bracket


@pytest.mark.parametrize(
    ("raw", "name", "arguments"),
    [
        (
            '[read]\n{"path":"/tmp/file.txt","line_start":1}\n[END_TOOL_REQUEST]',
            "read",
            {"path": "/tmp/file.txt", "line_start": 1},
        ),
        ('[read]\n{"path":"/tmp/file"}[/read]', "read", {"path": "/tmp/file"}),
        ('[read]\r\n{"path":"a"}\r\n[/read]', "read", {"path": "a"}),
        ('[read]\r{"path":"a"}[/read]', "read", {"path": "a"}),
        ('[read]  \t\n  {"path":"a"}  \n  [/read]', "read", {"path": "a"}),
        ('  \n[read]\n{"path":"a"}\n[/read]\n\n', "read", {"path": "a"}),
        ('[get-weather_2]\n{"city":"Oslo"}\n[END_TOOL_REQUEST]', "get-weather_2", {"city": "Oslo"}),
        (
            '[read]\n{"nested":{"a":[1,2,{"b":null}]}}\n[/read]',
            "read",
            {"nested": {"a": [1, 2, {"b": None}]}},
        ),
        ('[read]\n{"big":9223372036854775807}\n[/read]', "read", {"big": 9223372036854775807}),
        ('[read]\n{"text":"}[/read]"}\n[/read]', "read", {"text": "}[/read]"}),
    ],
)
def test_named_bracket_calls(raw, name, arguments):
    block = single(raw)
    assert (block.name, block.arguments) == (name, arguments)
    assert (block.start, block.raw) == (len(raw) - len(raw.lstrip()), raw.strip())


@pytest.mark.parametrize(
    "raw",
    [
        '[read]\n{"path":"a"}',  # the closer is required
        '[read] {"path":"a"}[/read]',  # the JSON must start on the next line
        '[read]{"path":"a"}[/read]',
        '[read]\n{"path":"a"}[/write]',  # a wrong named closer
        '[read]\n{"path":}\n[/read]',  # balanced but invalid JSON
        "[read]\n[1,2]\n[/read]",  # not an object
        '[read]\n{"a":NaN}\n[/read]',  # JSON.parse rejects NaN
        '[read]\n{"a":Infinity}\n[/read]',
        '[re ad]\n{"a":1}\n[/read]',
        '[]\n{"a":1}\n[/]',
        '[read.file]\n{"a":1}\n[/read.file]',  # dots are XML-only
        '[read]\n{"a":1}\n[/read] trailing prose',
        'Sure:\n[read]\n{"a":1}\n[/read]',
    ],
)
def test_named_bracket_rejects(raw):
    assert parse(raw) is None


# --------------------------------------------------------------------------- tool bracket


@pytest.mark.parametrize(
    ("raw", "arguments"),
    [
        ('[tool:read]{"path":"a"}', {"path": "a"}),
        ('[tool:read] {"path":"a"}', {"path": "a"}),
        ('[tool:read]\n{"path":"a"}', {"path": "a"}),
        ('[tool:read]{"path":"a"}<|call|>', {"path": "a"}),
        ('[tool:read]{"path":"a"}\n[END_TOOL_REQUEST]', {"path": "a"}),
        ('[tool:read]{"path":"a"}  [/read]', {"path": "a"}),
        ("[tool:read]{}", {}),
    ],
)
def test_tool_bracket_calls(raw, arguments):
    block = single(raw)
    assert (block.name, block.arguments, block.end) == ("read", arguments, len(raw))


@pytest.mark.parametrize(
    "raw",
    [
        '[tool:read]{"path":"a"}<|cap',  # a non-closer suffix is left over
        '[tool:read]{"path":"a"}[/write]',
        "[tool:read]",
        "[tool:read] nothing",
        "[tool:]{}",
        '[tool:read]{"a":1',
        '[tool:read]"text"',
    ],
)
def test_tool_bracket_rejects(raw):
    assert parse(raw) is None


# --------------------------------------------------------------------------- Harmony


@pytest.mark.parametrize(
    "raw",
    [
        'commentary to=read code {"path":"a"}',
        'analysis to=read code {"path":"a"}',
        'final to=read code {"path":"a"}',
        '<|channel|>commentary to=read code<|message|>{"path":"a"}<|call|>',
        '<|channel|>commentary to=read code <|message|> {"path":"a"} <|call|>',
        'commentary\tto=read\tcode\n{"path":"a"}',
        'commentary   to=read   code{"path":"a"}',
        'commentary to=read code {"path":"a"}[END_TOOL_REQUEST]',
        'commentary to=read code {"path":"a"}[/read]',
    ],
)
def test_harmony_calls(raw):
    block = single(raw)
    assert (block.name, block.arguments, block.end) == ("read", {"path": "a"}, len(raw))


@pytest.mark.parametrize(
    "raw",
    [
        'unknown to=foo code {"a":1}',
        'commentary foo code {"a":1}',
        'commentary to= code {"a":1}',
        'commentary to=read foo {"a":1}',
        "commentary to=read code notjson",
        'commentaryto=read code {"a":1}',
        'commentary to=read code <|msg|>{"a":1}',
        '<|chan|>commentary to=read code {"a":1}',
        'COMMENTARY to=read code {"a":1}',  # channel words are case-sensitive
        'commentary to=read.x code {"a":1}',
    ],
)
def test_harmony_rejects(raw):
    assert parse(raw) is None


# --------------------------------------------------------------------------- XML-ish


@pytest.mark.parametrize(
    ("raw", "name", "arguments"),
    [
        (
            "<function=read><parameter=path>/tmp/a</parameter></function>",
            "read",
            {"path": "/tmp/a"},
        ),
        ("<function=read></function>", "read", {}),  # the function form needs no parameter
        ("<FUNCTION=read><PARAMETER=path>a</PARAMETER></FUNCTION>", "read", {"path": "a"}),
        (
            "<function=ns:read.v2><parameter=a.b>x</parameter></function>",
            "ns:read.v2",
            {"a.b": "x"},
        ),
        (
            "<function=write>\n<parameter=path>\n/tmp/a\n</parameter>\n<parameter=content>\nline 1\nline 2\n</parameter>\n</function>",
            "write",
            {"path": "/tmp/a", "content": "line 1\nline 2"},
        ),
        (
            "<function=read><parameter=path>\r\n/tmp/a\r\n</parameter></function>",
            "read",
            {"path": "/tmp/a"},
        ),
        ("<function=read><parameter=path>  a  </parameter></function>", "read", {"path": "  a  "}),
        (
            "<function=read><parameter=n>42</parameter></function>",
            "read",
            {"n": "42"},
        ),  # stays a string
        ("[read]\n<parameter=path>a</parameter></function>", "read", {"path": "a"}),
        ("[tool:read]<parameter=path>a</parameter>", "read", {"path": "a"}),  # no close needed
        (
            "[tool:read]<parameter=a>1</parameter><parameter=b>2</parameter></function>",
            "read",
            {"a": "1", "b": "2"},
        ),
        (
            "<function=read><parameter=x>1</parameter><parameter=x>2</parameter></function>",
            "read",
            {"x": "2"},
        ),
    ],
)
def test_xmlish_calls(raw, name, arguments):
    block = single(raw)
    assert (block.name, block.arguments, block.end) == (name, arguments, len(raw))


@pytest.mark.parametrize(
    "raw",
    [
        "<function=read>",
        "<function=read><parameter=path>a",
        "<function=read><parameter=path>a</parameter>",
        "<function=>x</function>",
        "<function=read><parameter=>a</parameter></function>",
        "<function=read><parameter=x!>a</parameter></function>",
        "<function=read>text</function>",
        "[read]\n</function>",  # a bracket opening needs a parameter first
        "[read]<parameter=a>1</parameter></function>",  # named bracket needs the line break
        '<invoke name="read"></invoke>',  # scrub-only dialect: never promoted
        "<b>bold</b>",
    ],
)
def test_xmlish_rejects(raw):
    assert parse(raw) is None


# --------------------------------------------------------------------------- bare JSON objects


@pytest.mark.parametrize(
    ("raw", "calls"),
    [
        ('{"name":"read","arguments":{"path":"/tmp"}}', [("read", {"path": "/tmp"})]),
        ('{"name":" read ","args":{"a":1}}', [("read", {"a": 1})]),
        ('{"tool_name":"read","input":{"a":1}}', [("read", {"a": 1})]),
        ('{"tool":"read","parameters":{"a":1}}', [("read", {"a": 1})]),
        ('{"function_name":"read","arguments":{}}', [("read", {})]),
        ('{"name":"read","arguments":"{\\"a\\":1}"}', [("read", {"a": 1})]),
        ('{"name":"read","arguments":null,"args":{"a":1}}', [("read", {"a": 1})]),
        ('{"function":{"name":"read","arguments":"{\\"a\\":1}"}}', [("read", {"a": 1})]),
        ('{"type":"function","function":{"name":"read","arguments":{}}}', [("read", {})]),
        ('{"name":"read","type":" Tool_Use ","input":{"a":1}}', [("read", {"a": 1})]),
        (
            '{"tool_calls":[{"function":{"name":"read","arguments":{"path":"a"}}},{"function":{"name":"write","arguments":{"path":"b"}}}]}',
            [("read", {"path": "a"}), ("write", {"path": "b"})],
        ),
        ('{"toolCalls":[{"name":"read","arguments":{}}]}', [("read", {})]),
        (
            '{"tool_calls":[{"function":{"name":"read","arguments":"oops"},"name":"read","arguments":{"a":1}}]}',
            [("read", {"a": 1})],  # falls back to the entry itself
        ),
        (
            '{"name":"read","arguments":{}}\n{"name":"write","arguments":{}}',
            [("read", {}), ("write", {})],
        ),
    ],
)
def test_json_object_calls(raw, calls):
    blocks = parse(raw)
    assert blocks is not None
    assert [(b.name, b.arguments) for b in blocks] == calls


@pytest.mark.parametrize(
    "raw",
    [
        '{"name":"read","status":"ok"}',  # a name but no arguments key
        '{"status":"ok","count":42}',
        '{"city":"Beijing","temp":25}',
        '{"name":"read","arguments":[1,2]}',
        '{"name":"read","arguments":"[1,2]"}',  # a string must parse to an object
        '{"name":"read","arguments":"not json"}',
        '{"name":"read","arguments":"NaN"}',
        '{"name":"read","arguments":42}',
        '{"name":"","arguments":{}}',
        '{"name":"   ","arguments":{}}',
        '{"name":"read","arguments":null}',
        '{"name":"read","type":"tool_call"}',  # shape 4 still needs arguments
        '{"tool_calls":[{"function":{"name":"read","arguments":{}}},{"function":{"name":"write"}}]}',
        '{"tool_calls":[{"name":"read","arguments":{}},"oops"]}',
        '{"tool_name":5,"tool":"read","arguments":{}}',  # the first present key decides
        '[{"name":"read","arguments":{}}]',
        '{"name":"read","arguments":{}} and some prose',
        'Here: {"name":"read","arguments":{}}',
    ],
)
def test_json_object_rejects(raw):
    assert parse(raw) is None


def test_json_object_blocks_share_the_wrapper_offsets():
    raw = '  {"tool_calls":[{"name":"a","arguments":{}},{"name":"b","arguments":{}}]}'
    blocks = parse_json_tool_call_blocks_at(raw, 0)
    assert blocks is not None
    assert {(b.start, b.end, b.raw) for b in blocks} == {(2, len(raw), raw.strip())}


def test_empty_tool_calls_list_falls_through_to_other_shapes():
    assert parse('{"tool_calls":[],"name":"read","arguments":{}}')[0].name == "read"


# --------------------------------------------------------------------------- several calls


def test_mixed_syntaxes_in_one_text_parse_in_order():
    raw = "\n".join(
        [
            '[read]\n{"path":"a"}\n[/read]',
            '[tool:read]{"path":"b"}<|call|>',
            'analysis to=read code {"path":"c"}',
            "<function=read><parameter=path>d</parameter></function>",
            '{"name":"read","arguments":{"path":"e"}}',
        ]
    )
    blocks = parse(raw)
    assert blocks is not None
    assert [b.arguments["path"] for b in blocks] == ["a", "b", "c", "d", "e"]
    assert all(raw[b.start : b.end] == b.raw for b in blocks)


def test_blank_text_has_no_calls():
    assert parse("") is None
    assert parse(" \n\t ") is None


# --------------------------------------------------------------------------- names: 120 vs 121


NAME_BUILDERS = {
    "named bracket": lambda name: f"[{name}]\n{{}}\n[/{name}]",
    "tool bracket": lambda name: f"[tool:{name}] {{}}",
    "harmony": lambda name: f"analysis to={name} code {{}}",
    "xml function": lambda name: f"<function={name}></function>",
    "xml bracket": lambda name: f"[tool:{name}]<parameter=a>1</parameter>",
}


@pytest.mark.parametrize("syntax", sorted(NAME_BUILDERS))
def test_names_of_120_characters_are_accepted_and_121_rejected(syntax):
    build = NAME_BUILDERS[syntax]
    accepted = parse(build("x" * 120))
    assert accepted is not None and accepted[0].name == "x" * 120
    assert parse(build("x" * 121)) is None


def test_parameter_names_follow_the_same_limit():
    ok = "<function=read><parameter={}>v</parameter></function>"
    assert parse(ok.format("p" * 120)) is not None
    assert parse(ok.format("p" * 121)) is None


@pytest.mark.parametrize(
    "raw",
    [
        '[read]\n{"path":"a"}\n[/read]',
        '[tool:read]{"path":"a"}',
        'commentary to=read code {"path":"a"}',
        "<function=read><parameter=path>a</parameter></function>",
        '{"name":"read","arguments":{"path":"a"}}',
    ],
)
def test_allowed_tool_names_filter_every_syntax(raw):
    assert parse(raw, {"allowedToolNames": ["read"]}) is not None
    assert parse(raw, {"allowedToolNames": ["write"]}) is None
    assert parse(raw, PlainTextToolCallParseOptions(allowed_tool_names=frozenset())) is None


# --------------------------------------------------------------------------- payload cap


def _json_payload_of_bytes(size: int, char: str = "x") -> str:
    """A JSON object of exactly ``size`` UTF-8 bytes."""
    overhead = len('{"v":""}')
    width = len(char.encode())
    assert (size - overhead) % width == 0
    return json.dumps(
        {"v": char * ((size - overhead) // width)}, ensure_ascii=False, separators=(",", ":")
    )


CAP_BUILDERS = {
    "named bracket": lambda payload: f"[read]\n{payload}\n[/read]",
    "tool bracket": lambda payload: f"[tool:read]{payload}",
    "harmony": lambda payload: f"analysis to=read code {payload}",
    "json object": lambda payload: '{"name":"read","arguments":' + payload + "}",
}


@pytest.mark.parametrize("syntax", sorted(CAP_BUILDERS))
def test_default_payload_cap_is_256000_utf8_bytes(syntax):
    build = CAP_BUILDERS[syntax]
    extra = len('{"name":"read","arguments":}') if syntax == "json object" else 0
    at_cap = build(_json_payload_of_bytes(256_000 - extra))
    over = build(_json_payload_of_bytes(256_000 - extra + 1))
    assert parse(at_cap) is not None
    assert parse(over) is None


@pytest.mark.parametrize("syntax", sorted(CAP_BUILDERS))
def test_payload_cap_counts_bytes_not_characters(syntax):
    payload = json.dumps({"v": "é" * 20}, ensure_ascii=False)
    raw = CAP_BUILDERS[syntax](payload)
    capped = raw if syntax == "json object" else payload  # a bare object is its own payload
    size = len(capped.encode())
    assert size > len(capped)
    assert parse(raw, {"maxPayloadBytes": size}) is not None
    assert parse(raw, {"maxPayloadBytes": size - 1}) is None
    assert parse(raw, {"maxPayloadBytes": len(capped)}) is None  # the characters alone would fit


def test_xmlish_payload_cap_covers_the_body():
    body = "<parameter=a>" + "x" * 20 + "</parameter>"
    raw = f"<function=read>{body}</function>"
    assert parse(raw, {"maxPayloadBytes": len(body)}) is not None
    assert parse(raw, {"maxPayloadBytes": len(body) - 1}) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"maxPayloadBytes": -1}, "maxPayloadBytes"),
        ({"maxPayloadBytes": "big"}, "maxPayloadBytes"),
        ({"allowedToolNames": "read"}, "allowedToolNames"),
        ({"allowedNames": ["read"]}, "allowedNames"),
    ],
)
def test_bad_options_are_named(options, message):
    with pytest.raises((TypeError, ValueError), match=message):
        parse("[tool:read]{}", options)


# --------------------------------------------------------------------------- virtual line breaks


@pytest.mark.parametrize(
    ("parts", "arguments"),
    [
        (["[read]", '{"path":"/tmp/file"}[/read]'], {"path": "/tmp/file"}),
        (["[read]", '  {"path":"/tmp"}[/read]'], {"path": "/tmp"}),
        (["[read]  ", '{"path":"/tmp"}[/read]'], {"path": "/tmp"}),
        (
            ["[read]", "<parameter=content>literal </function> tail</parameter></function>"],
            {"content": "literal </function> tail"},
        ),
        (["<function=read><parameter=path>", "/tmp</parameter></function>"], {"path": "/tmp"}),
        (["<function=read><parameter=path> ", "/tmp</parameter></function>"], {"path": " \n/tmp"}),
        (
            ["<function=read><parameter=path>", "  \n/tmp</parameter></function>"],
            {"path": "  \n/tmp"},
        ),
        (
            ["<function=read><parameter=path>", "  \r\n/tmp</parameter></function>"],
            {"path": "  \r\n/tmp"},
        ),
    ],
)
def test_text_part_boundaries_act_as_line_breaks(parts, arguments):
    offsets = set()
    offset = 0
    for part in parts[:-1]:
        offset += len(part)
        offsets.add(offset)
    blocks = parse("".join(parts), None, StructuralLineBreaks(frozenset(offsets)))
    assert blocks is not None and blocks[0].arguments == arguments
    # without the boundary the named-bracket header has no line break
    if parts[0] == "[read]":
        assert parse("".join(parts)) is None
