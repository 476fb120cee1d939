"""Streaming scans (complete | prefix | invalid) and stripping of visible text (spec §9.3)."""

from __future__ import annotations

import pytest

import openclaw_runtime.repair.strip as strip_module
from openclaw_runtime.repair import (
    StructuralLineBreaks,
    scan_plain_text_json_tool_call,
    scan_plain_text_tool_call,
    strip_plain_text_tool_call_blocks,
)
from openclaw_runtime.repair.scan import AllowedToolNameMatcher
from openclaw_runtime.repair.xmlish import scan_xmlish_tool_call

# --------------------------------------------------------------------------- JSON-payload scan


@pytest.mark.parametrize(
    "raw",
    [
        '[read]\n{"path":"/tmp/file"}[/read]visible',
        '[read]\n{"path":"/tmp/file"}[END_TOOL_REQUEST]visible',
        '<|channel|>commentary to=read code<|message|>{"path":"/tmp/file"}<|call|>visible',
        '[tool:read]{"path":"/tmp/file"}<|call|>visible',
    ],
)
def test_complete_call_ends_before_a_visible_suffix(raw):
    scan = scan_plain_text_json_tool_call(raw)
    assert scan.kind == "complete"
    assert raw[scan.end :] == "visible"
    assert scan.candidate.name.of(raw) == "read"
    assert scan.candidate.payload.of(raw) == '{"path":"/tmp/file"}'


@pytest.mark.parametrize(
    ("raw", "syntax", "name", "name_complete"),
    [
        ("", None, None, None),
        ("[", None, None, None),
        ("[t", None, None, None),
        ("[tool", None, None, None),
        ("[tool:", None, None, None),
        ("[tool:re", "tool-bracket", "re", False),
        ("[re", "named-bracket", "re", False),
        ("[read]", "named-bracket", "read", True),
        ("[read]  \t", "named-bracket", "read", True),
        ("[read]\n", "named-bracket", "read", True),
        ("[read]\n  ", "named-bracket", "read", True),
        ("<", None, None, None),
        ("<|chan", None, None, None),
        ("<|channel|>", None, None, None),
        ("comment", None, None, None),
        ("analysis", None, None, None),
        ("analysis \t", None, None, None),
        ("final to", None, None, None),
        ("commentary to=re", "harmony", "re", False),
        ("commentary to=read ", "harmony", "read", True),
        ("commentary to=read co", "harmony", "read", True),
        ("commentary to=read code", "harmony", "read", True),
        ("commentary to=read code <|mes", "harmony", "read", True),
        ("commentary to=read code <", "harmony", "read", True),
        ('[read]\n{"path":1}[/re', "named-bracket", "read", True),
        ('[read]\n{"path":1}\n[END_TOOL', "named-bracket", "read", True),
        ('[read]\n{"path":1}  ', "named-bracket", "read", True),
    ],
)
def test_streaming_prefixes(raw, syntax, name, name_complete):
    scan = scan_plain_text_json_tool_call(raw)
    assert scan.kind == "prefix"
    candidate = scan.candidate
    assert (candidate.syntax if candidate else None) == syntax
    assert (candidate.name.of(raw) if candidate else None) == name
    assert (candidate.name_complete if candidate else None) == name_complete


@pytest.mark.parametrize(
    ("raw", "rest"),
    [
        ('[read]\n{"path":"/tmp/file"}[/write] visible', "[/write] visible"),
        ("[read] x", "x"),
        ("[read]x", "x"),
        ("[re ad]", " ad]"),
        ("[tool:read] x", "x"),
        ("hello", "hello"),
        ("<b>", "<b>"),
        ("analysis-x", "-x"),
        ("analysis to read", "to read"),
        ("analysis to=read x", "x"),
        ("analysis to=read code <x", "<x"),
        ("analysis to=read code x", "x"),
    ],
)
def test_invalid_reports_where_it_failed(raw, rest):
    scan = scan_plain_text_json_tool_call(raw)
    assert scan.kind == "invalid"
    assert raw[scan.at :] == rest


def test_invalid_closer_keeps_the_payload_candidate():
    raw = '[read]\n{"path":"/tmp/file"}[/write] visible'
    scan = scan_plain_text_json_tool_call(raw)
    assert scan.candidate.payload.of(raw) == '{"path":"/tmp/file"}'


def test_incomplete_json_exposes_its_lexical_state():
    raw = '[tool:read]{"value":"still open'
    scan = scan_plain_text_json_tool_call(raw)
    assert scan.kind == "prefix"
    assert (
        scan.candidate.json.depth,
        scan.candidate.json.escaped,
        scan.candidate.json.in_string,
    ) == (
        1,
        False,
        True,
    )
    assert scan.candidate.payload.of(raw) == '{"value":"still open'


def test_a_text_part_boundary_serves_as_the_header_line_break():
    raw = '[read]{"path":"/tmp/file"}[/read]'
    breaks = StructuralLineBreaks(frozenset({len("[read]")}), used=set())
    assert scan_plain_text_json_tool_call(raw, 0, breaks).kind == "complete"
    assert breaks.used == {len("[read]")}
    assert scan_plain_text_json_tool_call(raw).kind == "invalid"


@pytest.mark.parametrize(
    "build",
    [
        lambda name: f"[{name}]\n{{}}[/{name}]",
        lambda name: f"[tool:{name}] {{}}",
        lambda name: f"analysis to={name} code {{}}",
    ],
)
def test_scan_accepts_120_character_names_and_rejects_the_121st(build):
    assert scan_plain_text_json_tool_call(build("x" * 120)).kind == "complete"
    oversized = scan_plain_text_json_tool_call(build("x" * 121))
    assert oversized.kind == "invalid"
    assert oversized.at > 0


@pytest.mark.parametrize(
    "call", ['[tool:read]{"path":"/tmp/file"}', 'analysis to=read code {"path":"/tmp/file"}']
)
@pytest.mark.parametrize("marker", ["<|call|>", "[END_TOOL_REQUEST]", "[/read]"])
def test_every_partial_optional_closer_stays_a_prefix(call, marker):
    for split in range(1, len(marker)):
        assert scan_plain_text_json_tool_call(call + marker[:split]).kind == "prefix"
        assert scan_plain_text_json_tool_call(call + "\n " + marker[:split]).kind == "prefix"
    complete = scan_plain_text_json_tool_call(call + marker)
    assert (complete.kind, complete.end) == ("complete", len(call) + len(marker))


@pytest.mark.parametrize(
    "call", ['[tool:read]{"path":"/tmp/file"}', 'analysis to=read code {"path":"/tmp/file"}']
)
@pytest.mark.parametrize("suffix", ["", "<|cap", " tail", "\n[/write]"])
def test_a_non_closer_suffix_completes_at_the_end_of_the_json(call, suffix):
    scan = scan_plain_text_json_tool_call(call + suffix)
    assert (scan.kind, scan.end) == ("complete", len(call))


def test_a_named_call_needs_its_closer():
    for suffix in ["[/re", "[END_", "  ", "\n"]:
        assert scan_plain_text_json_tool_call('[read]\n{"a":1}' + suffix).kind == "prefix"
    assert scan_plain_text_json_tool_call('[read]\n{"a":1}<|call|>').kind == "invalid"


# --------------------------------------------------------------------------- XML-ish scan


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("<", "prefix"),
        ("<FUNC", "prefix"),
        ("<function=", "prefix"),
        ("<function=re", "prefix"),
        ("<function=read>", "prefix"),
        ("<function=read><param", "prefix"),
        ("<function=read><parameter=pa", "prefix"),
        ("<function=read><parameter=path>va", "prefix"),
        ("<function=read><parameter=path>v</param", "prefix"),
        ("<function=read><parameter=path>v</parameter>", "prefix"),
        ("<function=read><parameter=path>v</parameter></fun", "prefix"),
        ("<function=read><parameter=path>v</parameter></function>", "complete"),
        ("<function=read></function>", "complete"),
        ("[tool:read]<parameter=a>1</parameter>", "complete"),
        ("[tool:read]<parameter=a>1</parameter>  ", "complete"),
        ("[read]", "prefix"),
        ("[read]\n", "prefix"),
        ("[read] ", "invalid"),  # the XML scanner wants the line break right away
        ("<b>", "invalid"),
        ("<function=read>x", "invalid"),
        ("<function=read!>", "invalid"),
        ("[read]\n</function>", "invalid"),
        ("text", "invalid"),
    ],
)
def test_xmlish_scan(raw, kind):
    assert scan_xmlish_tool_call(raw).kind == kind


def test_xmlish_prefix_reports_an_open_parameter_and_a_complete_tool_bracket_end():
    raw = "<function=read><parameter=path>/tm"
    scan = scan_xmlish_tool_call(raw)
    assert scan.candidate.active_parameter_open_end == len("<function=read><parameter=path>")
    assert scan.candidate.payload.end == len(raw)
    partial = "[tool:read]<parameter=a>1</parameter><param"
    scan = scan_xmlish_tool_call(partial)
    assert scan.kind == "prefix"
    assert scan.complete_end == len("[tool:read]<parameter=a>1</parameter>")


# --------------------------------------------------------------------------- combined scan


READ_ONLY = AllowedToolNameMatcher.of(["read"])


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("[tool:re", "prefix"),
        ("[tool:wr", "invalid"),
        ("[tool:read]{}", "complete"),
        ("[tool:write]{}", "invalid"),
        ("[readx", "invalid"),
        ("<function=read></function>", "complete"),
        ("<function=write></function>", "invalid"),
        ("analysis to=read code {}", "complete"),
        ("analysis to=rea", "prefix"),
        ("analysis", "prefix"),
        ("[", "prefix"),
        ('[tool:read]{"a":}', "invalid"),  # structurally complete, arguments invalid
    ],
)
def test_combined_scan_with_a_name_matcher(raw, kind):
    assert scan_plain_text_tool_call(raw, matcher=READ_ONLY).kind == kind


def test_combined_scan_flags_payloads_over_the_cap():
    raw = '[tool:read]{"v":"' + "x" * 50 + '"}'
    assert scan_plain_text_tool_call(raw, max_payload_bytes=1000).over_cap is False
    capped = scan_plain_text_tool_call(raw, max_payload_bytes=10)
    assert (capped.kind, capped.over_cap) == ("complete", True)  # recognized, never executable
    growing = scan_plain_text_tool_call(raw[:-5], max_payload_bytes=10)
    assert (growing.kind, growing.over_cap) == ("prefix", True)


def test_combined_scan_progress_skips_what_it_owns():
    raw = "<function=read><parameter=x>" + "y" * 50 + "</parameter>X"
    scan = scan_plain_text_tool_call(raw)
    assert scan.kind == "invalid"
    assert scan.next == len(raw) - 1
    assert scan_plain_text_tool_call("hello").next == 1


@pytest.mark.parametrize(
    ("line", "scanner"),
    [
        ("[tool:read] {\n", scan_plain_text_json_tool_call),
        ("<function=read><parameter=x>x\n", scan_xmlish_tool_call),
    ],
)
def test_a_long_repeated_incomplete_candidate_is_one_prefix(line, scanner):
    raw = line * 20_000
    scan = scanner(raw)
    assert scan.kind == "prefix"
    assert scan.candidate.payload.end == len(raw)
    assert strip_plain_text_tool_call_blocks(raw) == raw


# --------------------------------------------------------------------------- strip


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a [tool:x]{} b", "a [tool:x]{} b"),  # not at a line start
        ("a\n[tool:x]{}\nb", "a\nb"),
        ("a\r\n[tool:x]{}\r\nb", "a\r\nb"),
        ('before\n[read]\n{"path":"/tmp/file.txt"}\n[END_TOOL_REQUEST]\nafter', "before\nafter"),
        ('before\ncommentary to=read code {"path":"/tmp/file.txt"}\nafter', "before\nafter"),
        (
            'before\n<|channel|>analysis to=read code<|message|>{"a":1}<|call|>\nafter',
            "before\nafter",
        ),
        ("before\n<function=read><parameter=p>v</parameter></function>\nafter", "before\nafter"),
        ("before\n<FUNCTION=read></FUNCTION>\nafter", "before\nafter"),
        ("  [tool:x]{}\nafter", "after"),
        ("[tool:a]{} [tool:b]{}\nafter", "after"),  # adjacent calls go together
        ("[tool:a]{}\n[tool:b]{}\nafter", "after"),
        ('[read]\n{"a":1}[/read]visible', "visible"),
        ("text\n[tool:x]{}", "text\n"),
        ('[read]\n{"path":}\n[/read]', '[read]\n{"path":}\n[/read]'),  # balanced, invalid JSON
        ('before\n[read]\n{"a":1}', 'before\n[read]\n{"a":1}'),  # unfinished: kept
        ("before\n[tool:x]{\nafter", "before\n[tool:x]{\nafter"),
        ("[tool:read]<parameter=a>1</parameter><param", "<param"),
        ("plain answer, nothing to see", "plain answer, nothing to see"),
        ("", ""),
        ("See [link] here", "See [link] here"),
        ("[note]\nnot a call", "[note]\nnot a call"),
    ],
)
def test_strip_removes_whole_line_blocks_only(raw, expected):
    assert strip_plain_text_tool_call_blocks(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"name":"read","arguments":{"path":"/tmp"}}', ""),
        (
            '{"name":"read","arguments":{"path":"/tmp"}}\n'
            '{"name":"write","arguments":{"path":"/out","content":"hello"}}',
            "",
        ),
        # the JSON lookup skips whitespace, so a blank line before a call goes with it
        ('  {"name":"read","arguments":{}}\n\n{"name":"b","arguments":{}}\n', ""),
        (
            'Here is the expected format:\n{"name":"read","arguments":{"path":"/tmp"}}\n'
            "Copy this template, replacing the path with your file.",
            None,
        ),
        ('Extraction complete: {"status":"ok","count":42}', None),
        (
            '{"name":"read","arguments":{"path":"/tmp"}}\nThen the tool returns the file contents.',
            None,
        ),
        ('{"name":"read","status":"ok"}', None),
    ],
)
def test_json_blocks_are_stripped_only_when_every_line_is_a_call(raw, expected):
    assert strip_plain_text_tool_call_blocks(raw) == (raw if expected is None else expected)


def test_bracket_blocks_are_stripped_even_next_to_prose():
    raw = 'Reading it now.\n[tool:read]{"path":"a"}\nDone.'
    assert strip_plain_text_tool_call_blocks(raw) == "Reading it now.\nDone."


@pytest.mark.parametrize(
    "raw",
    [
        "<function=read><parameter=x>x\n" * 256 + "</parameter>X",
        "[read]\n{\n" * 256 + "}" * 256 + "[/wrong]",
    ],
)
def test_strip_scans_a_far_invalid_candidate_once(raw, monkeypatch):
    calls = 0
    real = strip_module.scan_plain_text_tool_call

    def counting(*args, **kwargs):
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(strip_module, "scan_plain_text_tool_call", counting)
    assert strip_plain_text_tool_call_blocks(raw) == raw
    assert calls < 8  # not once per line: the scanner's progress is honoured
