"""The SSE decoder: framing rules, and chunk boundaries anywhere."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openclaw_runtime.providers.sse import SSEDecoder, SSEEvent

SAMPLE = (
    b": ping\n\n"
    b'data: {"a": "h\xc3\xa9llo"}\n\n'
    b"event: content_block_delta\r\ndata: line one\r\ndata: line two\r\n\r\n"
    b"id: 7\ndata:no-space\n\n"
    b"retry: 1000\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SSEEvent('{"a": "héllo"}'.encode()),
    SSEEvent(b"line one\nline two", "content_block_delta"),
    SSEEvent(b"no-space", id="7"),
    SSEEvent(b"[DONE]", id="7"),
]


def decode(*chunks: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events


def test_framing_rules():
    assert decode(SAMPLE) == EXPECTED


def test_every_byte_position_split_gives_the_same_events():
    for cut in range(1, len(SAMPLE)):
        assert decode(SAMPLE[:cut], SAMPLE[cut:]) == EXPECTED, f"split at byte {cut}"


def test_one_byte_at_a_time():
    assert decode(*(SAMPLE[i : i + 1] for i in range(len(SAMPLE)))) == EXPECTED


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"data: a\rdata: b\r\r", [SSEEvent(b"a\nb")]),  # lone CR line endings
        (b"data: x", [SSEEvent(b"x")]),  # final event without blank line
        (b": only a comment", []),
        (b"event: named\n\n", []),  # an event without data is not dispatched
        (b"data:\n\n", [SSEEvent(b"")]),
        (b"data:  two spaces\n\n", [SSEEvent(b" two spaces")]),  # only one space is stripped
        (b"unknown: field\ndata: y\n\n", [SSEEvent(b"y")]),
        (b"\xef\xbb\xbfdata: bom?\n\n", []),  # a BOM-prefixed field name is not "data"
    ],
)
def test_edge_cases(raw, expected):
    assert decode(raw) == expected


def test_invalid_utf8_is_replaced_not_raised():
    (event,) = decode(b"data: \xff\xfe\n\n")
    assert event.text == "\ufffd\ufffd"


events_strategy = st.lists(
    st.tuples(
        st.one_of(st.none(), st.sampled_from(["message_start", "ping", "delta"])),
        st.lists(
            st.text(
                alphabet=st.characters(exclude_characters="\r\n", exclude_categories=("Cs",)),
                max_size=20,
            ),
            min_size=1,
            max_size=3,
        ),
    ),
    max_size=8,
)


@given(
    events=events_strategy, cuts=st.lists(st.integers(min_value=0), max_size=12), crlf=st.booleans()
)
def test_any_chunking_of_any_stream_decodes_identically(events, cuts, crlf):
    newline = b"\r\n" if crlf else b"\n"
    raw = b""
    expected = []
    for name, lines in events:
        if name:
            raw += b"event: " + name.encode() + newline
        for line in lines:
            raw += b"data: " + line.encode() + newline
        raw += newline
        expected.append(SSEEvent("\n".join(lines).encode(), name or "message"))
    positions = sorted({c % (len(raw) + 1) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *positions], [*positions, len(raw)], strict=True)]
    assert decode(*chunks) == expected
