"""Server-sent events, decoded incrementally from raw bytes.

Bytes arrive in arbitrary chunks: a line ending, a ``data:`` prefix or a multi-byte UTF-8
character may be split across two reads. The decoder works on bytes, keeps the unfinished
line, and hands out complete events only. It follows the WHATWG rules that matter for model
APIs: ``\\n``, ``\\r\\n`` and lone ``\\r`` line endings; ``:`` comment lines (``: ping``) are
ignored; several ``data:`` lines join with ``\\n``; one optional space after the colon is
stripped; an event is dispatched on a blank line; a final event without its blank line is
dispatched by ``close()``.

Data stays ``bytes`` so JSON can be decoded straight from it (orjson takes bytes): the
per-token hot path never builds a ``str`` it does not need.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import NamedTuple

__all__ = ["SSEDecoder", "SSEEvent", "aiter_sse"]


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
        lines = buffer.split(b"\n")
        self._buffer = lines.pop()
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if line.startswith(b"data: "):  # the hot path: one data line per event
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
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch a last event that lacked its blank line."""
        events: list[SSEEvent] = []
        tail = self._buffer.rstrip(b"\r")
        self._buffer = b""
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
