"""``SSEDecoder.feed`` splits a read into events at blank lines and takes a shortcut when every
event is one ``data:`` line; these cases pin that the shortcut and the line-by-line path give
the same events, whatever the mix of fields and however the bytes are cut."""

from __future__ import annotations

import pytest

from openclaw_runtime.providers.sse import SSEDecoder, SSEEvent


def decode(chunks: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.close()


def byte_by_byte(raw: bytes) -> list[SSEEvent]:
    return decode([raw[i : i + 1] for i in range(len(raw))])


CASES = [
    # (raw stream, expected events)
    (b"data: a\n\ndata: b\n\n", [SSEEvent(b"a"), SSEEvent(b"b")]),
    (b"id: 7\n\ndata: a\n\n", [SSEEvent(b"a", "message", "7")]),  # the id sticks
    (
        b"data: a\n\nevent: x\ndata: b\n\ndata: c\n\n",
        [SSEEvent(b"a"), SSEEvent(b"b", "x"), SSEEvent(b"c")],
    ),
    (b"data: a\ndata: b\n\n", [SSEEvent(b"a\nb")]),  # two data lines join
    (b": ping\n\ndata: a\n\n", [SSEEvent(b"a")]),  # a comment-only block dispatches nothing
    (b"data: a\n\n\n\ndata: b\n\n", [SSEEvent(b"a"), SSEEvent(b"b")]),  # extra blank lines
    (b"data: a\r\n\r\ndata: b\r\rdata:c\n\n", [SSEEvent(b"a"), SSEEvent(b"b"), SSEEvent(b"c")]),
    (b"data: a\n\ndata: tail", [SSEEvent(b"a"), SSEEvent(b"tail")]),  # close() flushes
    (b"data: a\n\ndata: x\ndata: y", [SSEEvent(b"a"), SSEEvent(b"x\ny")]),
    (b'data: {"a": "\\n\\n"}\n\n', [SSEEvent(b'{"a": "\\n\\n"}')]),  # escaped, not real
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_whole_reads_and_single_bytes_give_the_same_events(raw, expected):
    assert decode([raw]) == expected
    assert byte_by_byte(raw) == expected


def test_a_long_run_of_lines_without_a_blank_one_is_consumed_as_it_comes():
    decoder = SSEDecoder()
    line = b"data: " + b"x" * 1000 + b"\n"
    for _ in range(100):  # 100 KB of data lines, no blank line yet
        assert decoder.feed(line) == []
    assert len(decoder._buffer) < 70 * 1024  # bounded: complete lines left the buffer
    events = decoder.feed(b"\n")
    assert events == [SSEEvent(b"\n".join([b"x" * 1000] * 100))]
