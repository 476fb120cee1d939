"""A real HTTP server on 127.0.0.1 that answers from a script, for provider tests.

It is uvicorn serving a raw ASGI app in a background thread (its own event loop), so tests on
asyncio and trio talk to it over real sockets. Each request pops the next ``ScriptedReply``:
status, headers and a body made of byte chunks (each one a separate write), ``Pause``-s and an
optional ``HANG`` (stop sending and wait until the client goes away). Requests are recorded;
client disconnects are counted, so a test can prove an abort really closed the connection.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson

__all__ = ["HANG", "LocalHTTPServer", "Pause", "RecordedRequest", "ScriptedReply", "sse_body"]


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait before sending the next chunk."""

    seconds: float


class _Hang:
    def __repr__(self) -> str:
        return "HANG"


#: Stop sending (headers already out) and wait for the client to disconnect.
HANG = _Hang()


def sse_body(
    events: Iterable[Any], *, done: bool = True, event_names: Sequence[str | None] | None = None
) -> bytes:
    """Encode events (dicts become JSON) as an SSE body, with a final ``[DONE]`` if asked."""
    parts = []
    names = list(event_names) if event_names is not None else []
    for index, event in enumerate(events):
        data = event if isinstance(event, bytes | str) else orjson.dumps(event)
        data = data.encode() if isinstance(data, str) else data
        name = names[index] if index < len(names) else None
        prefix = f"event: {name}\n".encode() if name else b""
        parts.append(prefix + b"data: " + data + b"\n\n")
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


@dataclass
class ScriptedReply:
    """One response: status, headers and body parts (bytes, ``Pause`` or ``HANG``)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    body: list[bytes | Pause | _Hang] = field(default_factory=list)

    @classmethod
    def sse(
        cls, events: Iterable[Any], *, done: bool = True, chunk: int | None = None, **kw: Any
    ) -> ScriptedReply:
        """An SSE stream, optionally cut into ``chunk``-byte writes."""
        raw = sse_body(events, done=done, event_names=kw.pop("event_names", None))
        return cls(body=split_bytes(raw, chunk) if chunk else [raw], **kw)

    @classmethod
    def json(
        cls, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> ScriptedReply:
        """A JSON response (error bodies)."""
        return cls(
            status, {"content-type": "application/json", **(headers or {})}, [orjson.dumps(payload)]
        )

    @classmethod
    def text(
        cls,
        status: int,
        text: str,
        content_type: str = "text/plain",
        headers: dict[str, str] | None = None,
    ) -> ScriptedReply:
        """A plain-text or HTML response."""
        return cls(status, {"content-type": content_type, **(headers or {})}, [text.encode()])


def split_bytes(raw: bytes, size: int) -> list[bytes | Pause | _Hang]:
    """``raw`` in ``size``-byte pieces."""
    return [raw[i : i + size] for i in range(0, len(raw), size)]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """What a client sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON."""
        return orjson.loads(self.body)


class LocalHTTPServer:
    """Scripted server on ``127.0.0.1:<free port>``; use as a context manager or start/stop."""

    def __init__(self) -> None:
        self.script: deque[ScriptedReply] = deque()
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0
        self._disconnect_cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self._socket: socket.socket | None = None

    # scripting -------------------------------------------------------------------------------

    def enqueue(self, *replies: ScriptedReply) -> LocalHTTPServer:
        """Answer the next requests with ``replies``, in order."""
        self.script.extend(replies)
        return self

    def reset(self) -> None:
        """Forget the script and recorded requests."""
        self.script.clear()
        self.requests.clear()
        with self._disconnect_cond:
            self.disconnects = 0

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._socket is not None, "server not started"
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def wait_for_disconnects(self, count: int, timeout: float = 5.0) -> bool:
        """Block (in a worker thread) until ``count`` clients disconnected mid-response."""
        deadline = time.monotonic() + timeout
        with self._disconnect_cond:
            while self.disconnects < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._disconnect_cond.wait(remaining)
            return True

    # lifecycle -------------------------------------------------------------------------------

    def start(self) -> LocalHTTPServer:
        """Bind a free port and serve in a background thread."""
        import uvicorn  # lazy: a test-only dependency; the package imports without it

        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # small writes go out at once (accepted sockets inherit it on Linux): without it
        # Nagle + delayed ACK add ~40 ms to every multi-write response
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.bind(("127.0.0.1", 0))
        config = uvicorn.Config(
            self._app, interface="asgi3", lifespan="off", log_level="error", access_log=False
        )
        self._server = uvicorn.Server(config)
        sockets = [self._socket]
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": sockets}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("local HTTP server did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Shut the server down."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> LocalHTTPServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def next_reply(self, request: RecordedRequest) -> ScriptedReply:
        """The answer to ``request``: the next scripted reply (a subclass may answer from
        the request instead, e.g. ``AnthropicMessagesServer``)."""
        del request
        if self.script:
            return self.script.popleft()
        return ScriptedReply.text(500, "no scripted reply left")

    # the ASGI app ------------------------------------------------------------------------------

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        recorded = RecordedRequest(scope["method"], scope["path"], headers, body)
        self.requests.append(recorded)
        reply = self.next_reply(recorded)
        gone = anyio.Event()

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await send(
                {
                    "type": "http.response.start",
                    "status": reply.status,
                    "headers": [(k.encode(), v.encode()) for k, v in reply.headers.items()],
                }
            )
            completed = True
            for part in reply.body:
                if gone.is_set():
                    completed = False
                    break
                if isinstance(part, Pause):
                    with anyio.move_on_after(part.seconds):
                        await gone.wait()
                elif isinstance(part, _Hang):
                    await gone.wait()
                    completed = False
                    break
                else:
                    await send({"type": "http.response.body", "body": part, "more_body": True})
            if completed and not gone.is_set():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                tg.cancel_scope.cancel()
            else:
                await gone.wait()
                with self._disconnect_cond:
                    self.disconnects += 1
                    self._disconnect_cond.notify_all()
                tg.cancel_scope.cancel()


def iter_byte_splits(raw: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Every way to cut ``raw`` in two (for chunk-boundary tests)."""
    for index in range(1, len(raw)):
        yield raw[:index], raw[index:]
