"""Server-sent events, decoded incrementally from raw bytes.

Bytes arrive in arbitrary chunks: a line ending, a ``data:`` prefix or a multi-byte UTF-8
character may be split across two reads. The decoder works on bytes, keeps the unfinished
line, and hands out complete events only. It follows the WHATWG rules that matter for model
APIs: ``\\n``, ``\\r\\n`` and lone ``\\r`` line endings; ``:`` comment lines (``: ping``) are
ignored; several ``data:`` lines join with ``\\n``; one optional space after the colon is
stripped; an event is dispatched on a blank line; a final event without its blank line is
dispatched by ``close()``.

Data stays ``bytes`` so JSON can be decoded straight from it (orjson takes bytes): the
per-token hot path never builds a ``str`` it does not need. ``feed_data`` is that hot path for
callers that read only the data (Chat Completions): when a read is nothing but whole one-line
``data: `` events, their payloads come from one ``split`` of the read, with no per-event object;
``one_event`` answers the read that is exactly one such event without a list.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import NamedTuple

__all__ = ["SSEDecoder", "SSEEvent", "aiter_sse"]

_BLANK = [b""]
_new_event = tuple.__new__  # builds an SSEEvent without the NamedTuple's Python-level __new__
#: Unfinished bytes kept as they came; past this, their complete lines are consumed.
_RESCAN_LIMIT = 64 * 1024
_DATA = b"data: "
_NEXT_DATA = b"\n\ndata: "


class SSEEvent(NamedTuple):
    """One dispatched event: its ``event`` name (``message`` by default) and raw data."""

    data: bytes
    event: str = "message"
    id: str | None = None

    @property
    def text(self) -> str:
        """The data as text (invalid UTF-8 replaced rather than raised)."""
        return self.data.decode("utf-8", errors="replace")


class SSEDecoder:
    """Feed bytes, get events. One decoder per response."""

    __slots__ = ("_buffer", "_data", "_event", "_id", "_last_id")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []
        self._event: str | None = None
        self._id: str | None = None
        self._last_id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode ``chunk``; return the events it completed (possibly none)."""
        buffer = self._buffer + chunk if self._buffer else chunk
        if b"\r" in buffer:
            # a trailing \r may be the first half of \r\n: keep it for the next chunk
            hold = buffer.endswith(b"\r")
            if hold:
                buffer = buffer[:-1]
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if hold:
                buffer += b"\r"
        # whole events end with a blank line: split on it, and an event that is one
        # ``data: `` line (what model APIs send) is dispatched without walking its lines
        blocks = buffer.split(b"\n\n")
        rest = blocks.pop()
        clean = not self._data and self._event is None and self._id is None
        last_id = self._last_id
        count = len(blocks)
        if (
            clean
            and count
            and buffer.count(b"\n") - rest.count(b"\n") == 2 * count  # one line per block
            and buffer.startswith(b"data: ")
            and buffer.count(b"\n\ndata: ") - rest.startswith(b"data: ") == count - 1
        ):
            # every block is one ``data: `` line: the shape model APIs stream
            self._buffer = rest
            if len(rest) > _RESCAN_LIMIT and b"\n" in rest:
                return self._consume_tail(
                    rest, [_new_event(SSEEvent, (b[6:], "message", last_id)) for b in blocks]
                )
            return [_new_event(SSEEvent, (block[6:], "message", last_id)) for block in blocks]
        events: list[SSEEvent] = []
        for block in blocks:
            if clean and block.startswith(b"data: ") and b"\n" not in block:
                events.append(_new_event(SSEEvent, (block[6:], "message", last_id)))
            else:
                self._lines(block.split(b"\n"), events)
                self._lines(_BLANK, events)  # the blank line that ended the block
                clean = True
                last_id = self._last_id
        self._buffer = rest
        if len(rest) > _RESCAN_LIMIT and b"\n" in rest:
            return self._consume_tail(rest, events)
        return events

    def feed_data(self, chunk: bytes) -> list[bytes]:
        """Decode ``chunk``; return the data of the events it completed (names and ids are
        tracked as ``feed`` tracks them, not returned). Equal to ``[e.data for e in feed(chunk)]``.
        """
        buffer = self._buffer
        if buffer:
            buffer += chunk
        elif (
            chunk.startswith(_DATA)
            and chunk.find(b"\n") == len(chunk) - 2
            and chunk[-1] == 0x0A  # ``data: ...\n\n`` with no other line break: one event
            and 0x0D not in chunk  # (an int test is a memchr; ``b"\r" in`` costs 7 times more)
            and not self._data
            and self._event is None
            and self._id is None
        ):
            return [chunk[6:-2]]  # one whole event, the shape of a read per event
        else:
            buffer = chunk
        clean = not self._data and self._event is None and self._id is None
        end = buffer.rfind(b"\n\n")
        if clean and end > 5 and buffer.startswith(_DATA) and 0x0D not in buffer:
            rest = buffer[end + 2 :]
            if len(rest) <= _RESCAN_LIMIT or b"\n" not in rest:
                # ``data: A\n\ndata: B ... \n\n<rest>``: one split gives A, B, ... when the
                # only line breaks before the last blank line are those between the events
                head = buffer[6:end]
                payloads = head.split(_NEXT_DATA)
                if head.count(b"\n") == 2 * len(payloads) - 2:
                    self._buffer = rest
                    return payloads
        self._buffer = b""
        return [event.data for event in self.feed(buffer)]

    def one_event(self, chunk: bytes) -> bytes | None:
        """The data of ``chunk`` when it is exactly one whole one-line ``data: `` event and
        nothing is pending (a read per event, the shape model APIs stream); else ``None`` and
        nothing is consumed (use ``feed_data``). ``feed_data``'s first test, without its list."""
        if (
            chunk.startswith(_DATA)
            and chunk.find(b"\n") == len(chunk) - 2
            and chunk[-1] == 0x0A  # ``data: ...\n\n`` with no other line break: one event
            and 0x0D not in chunk  # (an int test is a memchr; ``b"\r" in`` costs 7 times more)
            and not self._buffer
            and not self._data
            and self._event is None
            and self._id is None
        ):
            return chunk[6:-2]
        return None

    def _consume_tail(self, rest: bytes, events: list[SSEEvent]) -> list[SSEEvent]:
        """A long run of lines without a blank one: consume them, keep the last."""
        lines = rest.split(b"\n")
        self._buffer = lines.pop()
        self._lines(lines, events)
        return events

    def _lines(self, lines: list[bytes], events: list[SSEEvent]) -> None:
        data = self._data
        for line in lines:
            if line.startswith(b"data: "):
                data.append(line[6:])
            elif not line:
                if len(data) == 1 and self._event is None and self._id is None:
                    events.append(SSEEvent(data.pop(), "message", self._last_id))
                else:
                    self._dispatch(events)
                    data = self._data
            elif line[0] == 0x3A:  # ":" comment / keep-alive ping
                continue
            else:
                self._field(line)

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch a last event that lacked its blank line."""
        events: list[SSEEvent] = []
        lines = self._buffer.split(b"\n")
        self._buffer = b""
        tail = lines.pop().rstrip(b"\r")
        self._lines(lines, events)
        if tail and tail[0] != 0x3A:
            self._field(tail)
        self._dispatch(events)
        return events

    def _field(self, line: bytes) -> None:
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", errors="replace")
        elif name == b"id" and b"\x00" not in value:
            self._id = value.decode("utf-8", errors="replace")
        # "retry" and unknown fields are ignored, as the spec says

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._id is not None:
            self._last_id = self._id
            self._id = None
        if not self._data:
            self._event = None
            return
        data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        events.append(SSEEvent(data, self._event or "message", self._last_id))
        self._data = []
        self._event = None


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Events from an async iterable of byte chunks (e.g. ``response.aiter_raw()``)."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event
