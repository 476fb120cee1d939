"""HTTP plumbing shared by every provider: clients, timeouts, abort and idle watchdogs.

* ``HTTPClientPool`` keeps one pooled ``httpx.AsyncClient`` per event loop, because a client's
  connections belong to the loop (asyncio or trio) that opened them.
* ``guarded()`` runs one network step (opening the request; reading one chunk where the
  transport offers no socket) inside a cancel scope that fires on the run's abort signal or
  when the idle deadline passes, and says which of the two happened — the scope never spans a
  ``yield`` of the provider. A streamed body normally needs no scope per read:
  ``stream_chunks`` uses ``body_watch`` (one idle deadline and one abort hook per stream).
* ``Timeouts`` are the three knobs users tune: connect, read (until the response starts) and
  idle (the longest silence allowed once the body streams).
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, aclosing
from dataclasses import dataclass
from types import AsyncGeneratorType
from typing import Any, TypeVar, cast

import anyio
import httpx
import sniffio

from ..abort import AbortSignal
from ..llm import StreamOptions
from .body_watch import BodyWatch, body_watch

__all__ = [
    "DRAIN_LIMIT",
    "Aborted",
    "HTTPClientPool",
    "IdleTimeout",
    "OpenBody",
    "Timeouts",
    "body_reader",
    "guarded",
    "read_body_capped",
    "stream_chunks",
]

T = TypeVar("T")

#: After a complete message, at most this much trailing body is read before closing.
DRAIN_LIMIT = 64 * 1024


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds; ``None`` disables a limit."""

    connect: float | None = 10.0
    read: float | None = 600.0
    idle: float | None = 120.0

    @classmethod
    def from_options(cls, options: StreamOptions, default: Timeouts | None = None) -> Timeouts:
        """Per-request overrides from ``StreamOptions`` on top of ``default``."""
        base = default or cls()
        return cls(
            connect=options.connect_timeout
            if options.connect_timeout is not None
            else base.connect,
            read=options.read_timeout if options.read_timeout is not None else base.read,
            idle=options.idle_timeout if options.idle_timeout is not None else base.idle,
        )

    def httpx(self) -> httpx.Timeout:
        """The httpx timeout for opening a request (connect + waiting for headers)."""
        return httpx.Timeout(
            connect=self.connect, read=self.read, write=self.read, pool=self.connect
        )


def _pick(override: float | None, default: float | None) -> float | None:
    return override if override is not None else default


class Aborted(Exception):
    """The run's abort signal fired during a network step."""


class IdleTimeout(TimeoutError):
    """No data arrived within the idle timeout."""


async def guarded(
    step: Callable[[], Awaitable[T]], signal: AbortSignal | None, deadline_s: float | None
) -> T:
    """Await ``step()``; ``Aborted`` if the signal fires, ``IdleTimeout`` past the deadline."""
    if signal is not None and signal.aborted:
        raise Aborted()
    deadline = math.inf if deadline_s is None else anyio.current_time() + deadline_s
    scope = anyio.CancelScope(deadline=deadline)
    remove = signal.add_callback(scope.cancel) if signal is not None else None
    try:
        with scope:
            return await step()
    finally:
        if remove is not None:
            remove()
    # only reached when the scope swallowed its own cancellation
    if signal is not None and signal.aborted:
        raise Aborted()
    raise IdleTimeout()


def _raise_if_ours(watch: BodyWatch, exc: BaseException) -> None:
    """A failed read that was our abort or our idle deadline raises as that; else returns."""
    cause = watch.cause(exc)
    if cause == "aborted":
        raise Aborted() from None
    if cause == "idle":
        raise IdleTimeout() from None


async def stream_chunks(
    response: httpx.Response,
    signal: AbortSignal | None,
    idle: float | None,
    *,
    complete: Callable[[], bool] | None = None,
    drain_s: float = 1.0,
    body: OpenBody | None = None,
) -> AsyncGenerator[bytes, None]:
    """The decoded body, one network read at a time, under the abort signal and idle deadline.

    Decoded: a server that honours our ``accept-encoding`` (httpx sends ``gzip, deflate``, and
    ``br``/``zstd`` when those packages are installed) compresses its SSE stream or error body;
    ``aiter_bytes`` undoes that content encoding, ``aiter_raw`` would hand the decoders gzip
    bytes that no event or JSON can be read from. A body without a content encoding is read
    from the response's byte stream itself (``body_reader``): the bytes ``aiter_raw`` would
    hand out, without its generator per read; as with ``aiter_raw``, a read error names the
    request and a body read to its end closes the response.

    The idle deadline costs nothing per read: it is the transport's own read timeout, which
    every read re-arms and which is switched from the header wait (``Timeouts.read``) to the
    idle limit once the body starts (``body_watch``). The abort signal shuts the connection's
    socket down, which wakes a pending read at once. Where neither is possible (a transport
    without a socket, e.g. ``httpx.MockTransport``), each read runs under ``guarded()``.

    Once ``complete()`` says the message is whole, the rest of the body (normally nothing but
    its end, read so the connection can be reused) gets ``drain_s`` of silence and 64 KiB at
    most, and a silent server, a cut connection or an abort no longer matter: the message
    stays complete. Use it under ``contextlib.aclosing`` when you may stop early (trio
    finalizes unclosed async generators noisily). ``body``: a body already opened (and
    possibly partly read directly, see ``OpenBody``) to go on with.
    """
    drained = 0
    opened = body if body is not None else OpenBody(response, signal, idle)
    raw, watch = opened.raw, opened.watch
    try:
        async with aclosing(raw) as chunks:
            if watch is not None and not (complete is not None and complete()):
                # the body streams: a plain ``async for`` over the reads (the cheapest hop),
                # the abort checked before each read, until the message is complete
                if signal is not None and signal.aborted:
                    raise Aborted()
                try:
                    async for chunk in chunks:
                        if chunk:
                            yield chunk
                        if complete is not None and complete():
                            break
                        if signal is not None and signal.aborted:
                            raise Aborted()
                    else:
                        await _body_ended(response, watch)
                        return
                except httpx.HTTPError as exc:
                    _raise_if_ours(watch, exc)
                    raise
            # the rest: drained after a complete message, or each read guarded (no watch)
            while True:
                done = complete is not None and complete()
                try:
                    if done or watch is None:
                        chunk = await guarded(chunks.__anext__, signal, drain_s if done else idle)
                    else:
                        if signal is not None and signal.aborted:
                            raise Aborted()
                        chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    try:
                        await _body_ended(response, watch)
                    except httpx.HTTPError as exc:  # as a failed last read, like aiter_raw's
                        if done:
                            return  # complete: closing it can no longer fail the message
                        if watch is not None:
                            _raise_if_ours(watch, exc)
                        raise
                    return
                except (Aborted, IdleTimeout, httpx.HTTPError) as exc:
                    if done:
                        return
                    if watch is not None and not isinstance(exc, Aborted | IdleTimeout):
                        _raise_if_ours(watch, exc)
                    raise
                if done:
                    drained += len(chunk)
                    if drained > DRAIN_LIMIT:
                        return
                if chunk:
                    yield chunk  # trailing data still reaches the caller (usage may come late)
    except httpx.RequestError as exc:
        exc.request = response.request  # as ``aiter_raw`` names it
        raise
    finally:
        if watch is not None:
            watch.close()


class OpenBody:
    """A response body opened for reading: its reader (``body_reader``) and, when the
    transport has a socket, its ``BodyWatch`` (``watch``; ``None``: each read needs guarding).

    While ``watch`` is set, a caller may iterate ``raw`` itself, as ``stream_chunks``' streaming
    loop does, saving that generator's hop per read (a provider's read per SSE event): check
    the abort signal before each read, pass a failed read to ``failed``, call ``ended`` when
    the body ends, ``close`` in any case, and hand the body to ``stream_chunks(body=...)`` for
    the rest once the message is complete (the drain)."""

    __slots__ = ("raw", "response", "watch")

    def __init__(
        self, response: httpx.Response, signal: AbortSignal | None, idle: float | None
    ) -> None:
        self.response = response
        self.raw = body_reader(response)
        self.watch = body_watch(response, signal, idle)

    def failed(self, exc: httpx.HTTPError) -> None:
        """A read failed: raises ``Aborted``/``IdleTimeout`` when it was our abort or idle
        deadline; otherwise names the request (as ``aiter_raw`` does) and returns (re-raise)."""
        if self.watch is not None:
            _raise_if_ours(self.watch, exc)
        if isinstance(exc, httpx.RequestError):
            exc.request = self.response.request

    async def ended(self) -> None:
        """The body was read to its end (see ``_body_ended``)."""
        await _body_ended(self.response, self.watch)

    def close(self) -> None:
        """Unhook the abort (idempotent)."""
        if self.watch is not None:
            self.watch.close()


async def _body_ended(response: httpx.Response, watch: BodyWatch | None) -> None:
    """The body was read to its end: unhook the abort from the socket, then close the
    response as ``aiter_raw`` does there (its connection goes back to the pool unhooked)."""
    if watch is not None:
        watch.close()
    await response.aclose()


def body_reader(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """The response body, decoded.

    With nothing to decode (no ``content-encoding``) the body is the response's own byte
    stream (``response.stream``, what ``aiter_raw`` iterates): ``aiter_raw`` would add one
    generator, a chunker call and a list per read for the same bytes, and ``aiter_bytes`` an
    identity decoder on top. The response is marked consumed, as ``aiter_raw`` marks it; unlike
    ``aiter_raw`` it is not closed when the body ends (``stream_chunks`` closes it then, and
    ``client.stream(...)`` always does on exit). Anything else (a content encoding, a body
    httpx already read, a closed response) goes through ``aiter_bytes``, which decodes or
    raises as httpx does.
    """
    stream = response.stream
    if (
        "content-encoding" not in response.headers
        and not response.is_stream_consumed
        and not response.is_closed
        and isinstance(stream, httpx.AsyncByteStream)
    ):
        body = aiter(stream)
        if isinstance(body, AsyncGeneratorType):  # closable, as ``aiter_raw`` is
            response.is_stream_consumed = True
            return body
    return cast(AsyncGenerator[bytes, None], response.aiter_bytes())


async def read_body_capped(
    response: httpx.Response, signal: AbortSignal | None, idle: float | None, limit: int = 65_536
) -> bytes:
    """An error body, at most ``limit`` bytes (an HTML page from a proxy can be large)."""
    parts: list[bytes] = []
    size = 0
    async with aclosing(stream_chunks(response, signal, idle)) as chunks:
        async for chunk in chunks:
            parts.append(chunk)
            size += len(chunk)
            if size >= limit:
                break
    return b"".join(parts)[:limit]


class HTTPClientPool:
    """One ``httpx.AsyncClient`` per running event loop, created on first use."""

    def __init__(self, **client_options: Any) -> None:
        self._options = client_options
        self._clients: dict[object, tuple[Any, httpx.AsyncClient]] = {}

    def get(self) -> httpx.AsyncClient:
        """The client for the current event loop."""
        key, loop = _current_loop()
        entry = self._clients.get(key)
        if entry is not None and entry[0] is loop:
            return entry[1]
        self._forget_dead_loops()
        client = httpx.AsyncClient(**self._options)
        self._clients[key] = (loop, client)
        return client

    def stream(
        self, method: str, url: str, **kwargs: Any
    ) -> AbstractAsyncContextManager[httpx.Response]:
        """``client.stream(...)`` on the current loop's client."""
        return self.get().stream(method, url, **kwargs)

    async def aclose(self) -> None:
        """Close the current loop's client (others die with their loops)."""
        key, loop = _current_loop()
        entry = self._clients.pop(key, None)
        if entry is not None and entry[0] is loop:
            await entry[1].aclose()

    def _forget_dead_loops(self) -> None:
        for key, (loop, _client) in list(self._clients.items()):
            closed = getattr(loop, "is_closed", None)
            if closed is not None and closed():
                del self._clients[key]
        while len(self._clients) > 8:
            self._clients.pop(next(iter(self._clients)))


def _current_loop() -> tuple[object, Any]:
    library = sniffio.current_async_library()
    if library == "asyncio":
        import asyncio  # lazy: only the running event loop's library is loaded

        loop: Any = asyncio.get_running_loop()
    else:
        import trio  # lazy: trio is optional; only a trio run gets here

        loop = trio.lowlevel.current_root_task()
    return (library, id(loop)), loop
