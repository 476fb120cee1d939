"""The HTTP side: a quiet ``ThreadingHTTPServer`` and the handler that serves keep-alive
connections, carrying out each request's ``Plan`` (JSON errors, SSE streams, hangs, cuts) and
noticing clients that go away. It asks its ``Owner`` (the server) for every decision.
"""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import sys
import threading
import traceback
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import orjson

from .faults import error_body
from .plans import Plan, route
from .wire import completion_object, sse_events

__all__ = ["POLL_S", "Connection", "HTTPServer", "Handler", "Owner", "shutdown_socket"]

POLL_S = 0.05


class Connection:
    """A live client connection: its socket and the thread serving it (for ``stop()``)."""

    __slots__ = ("sock", "thread")

    def __init__(self, sock: socket.socket, thread: threading.Thread) -> None:
        self.sock = sock
        self.thread = thread


class Owner(Protocol):
    """What the handler asks of the server that owns it (``FaultInjectingOpenAIServer``)."""

    chunk_chars: int
    _lock: threading.Lock
    _stopping: threading.Event

    def _decide(self, method: str, path: str, api_key: str | None, raw: bytes) -> Plan: ...

    def _decide_get(self, path: str, api_key: str | None) -> Plan: ...

    def _record_other(self, method: str, path: str, api_key: str | None) -> Plan: ...

    def _mark_disconnected(self, sequence: int) -> None: ...

    def _next_id(self) -> int: ...

    def _begin_hold(self) -> int: ...

    def _hold_released(self, generation: int) -> bool: ...

    def _track(self, connection: Connection) -> bool: ...

    def _untrack(self, connection: Connection) -> None: ...


def shutdown_socket(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class ClientGone(Exception):
    """The client closed its connection while we were writing or waiting."""


class HTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with daemon threads, no DNS lookup at bind, quiet errors."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64
    owner: Owner

    def server_bind(self) -> None:
        # small writes go out at once (Nagle + delayed ACK would add ~40 ms per write);
        # accepted sockets inherit it on Linux, and the handler sets it again elsewhere
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socketserver.TCPServer.server_bind(self)  # skips HTTPServer's getfqdn()
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client went away: nothing to report
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """One connection: keep-alive requests, answered from the owner's decisions."""

    protocol_version = "HTTP/1.1"
    server_version = "openclaw-fault-server/1"
    server: HTTPServer
    _connection: Connection | None = None

    def version_string(self) -> str:
        """The ``server`` header: this server's name, without the Python version."""
        return self.server_version

    # plumbing --------------------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._connection = Connection(self.connection, threading.current_thread())
        if not self.server.owner._track(self._connection):
            shutdown_socket(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            if self._connection is not None:
                self.server.owner._untrack(self._connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests and the demo read ``requests`` instead (and keys never leak)."""

    @property
    def _owner(self) -> Owner:
        return self.server.owner

    def _api_key(self) -> str | None:
        auth = self.headers.get("authorization") or ""
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        other = self.headers.get("api-key") or self.headers.get("x-api-key")
        return other.strip() if other and other.strip() else None

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            parts: list[bytes] = []
            while True:
                size_line = self.rfile.readline(1024)
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
        except OSError as exc:
            raise ClientGone() from exc

    def _write_chunk(self, data: bytes) -> None:
        self._write(b"%X\r\n%s\r\n" % (len(data), data))

    def _start(self, status: int, headers: Mapping[str, str]) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
        except OSError as exc:
            raise ClientGone() from exc

    def _wait_for_disconnect(self) -> bool:
        """Block until the client closes the connection (True) or the server stops."""
        stopping = self._owner._stopping
        sock = self.connection
        while not stopping.is_set():
            try:
                readable, _, _ = select.select([sock], [], [], POLL_S)
            except (OSError, ValueError):
                return True
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        return True
                except OSError:
                    return True
                stopping.wait(POLL_S)  # bytes are waiting (a pipelined request): no spin
        return False

    # requests --------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._serve(self._owner._decide_get(self.path, self._api_key()))

    def do_POST(self) -> None:
        try:
            raw = self._read_body()
        except (OSError, ValueError):
            self.close_connection = True
            return
        owner = self._owner
        if route(self.path) != "chat":
            self._serve(owner._record_other("POST", self.path, self._api_key()))
            return
        try:
            plan = owner._decide("POST", self.path, self._api_key(), raw)
        except Exception:  # a bug here must not look like a network failure to the client
            traceback.print_exc()
            message = "The fault-injecting server failed on this request (see its stderr)."
            plan = Plan("error", -1, 500, error_body(message, "server_error"))
        self._serve(plan)

    def _serve(self, plan: Plan) -> None:
        owner = self._owner
        try:
            if plan.delay_s > 0 and owner._stopping.wait(plan.delay_s):
                self.close_connection = True
                return
            if plan.kind == "hang":
                self._hang(plan)
            elif plan.kind in ("empty_stream", "headers_only"):
                self._quiet_stream(plan.kind == "empty_stream")
            elif plan.kind == "completion":
                self._completion(plan)
            else:
                self._json(plan, plan.status, plan.payload, plan.headers)
        except ClientGone:
            self.close_connection = True
            owner._mark_disconnected(plan.index)

    def _json(self, plan: Plan, status: int, payload: Any, headers: Mapping[str, str]) -> None:
        """A whole response: JSON (dict, or bytes already encoded) or text (str bodies)."""
        if isinstance(payload, str):
            data = payload.encode()
            kind = "text/html" if payload.lstrip().startswith("<") else "text/plain"
        else:
            data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
            kind = "application/json"
        base = {
            "content-type": kind,
            "content-length": str(len(data)),
            "x-request-id": f"req_{plan.index + 1:06d}",
        }
        overrides = {k.lower(): v for k, v in headers.items() if k.lower() != "content-length"}
        self._start(status, {**base, **overrides})
        self._write(data)

    def _quiet_stream(self, complete: bool) -> None:
        """llama.cpp's answer to a streamed prompt it cannot fit: a 200 whose body is empty,
        or whose connection closes right after the headers (``complete=False``)."""
        self._start(200, {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
        self.close_connection = True
        if complete:
            self._write(b"0\r\n\r\n")
        else:
            shutdown_socket(self.connection)

    def _hang(self, plan: Plan) -> None:
        if not plan.before_headers:
            kind = "text/event-stream" if plan.stream else "application/json"
            self._start(200, {"content-type": kind, "transfer-encoding": "chunked"})
        self.close_connection = True
        if self._wait_for_disconnect():
            raise ClientGone()

    def _hold(self) -> None:
        """Pause a stream until ``release_holds()``; a client that leaves ends it."""
        owner = self._owner
        generation = owner._begin_hold()
        sock = self.connection
        while not owner._hold_released(generation):
            if owner._stopping.is_set():
                raise ClientGone()
            try:
                readable, _, _ = select.select([sock], [], [], POLL_S)
            except (OSError, ValueError):
                raise ClientGone() from None
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        raise ClientGone()
                except OSError:
                    raise ClientGone() from None
                owner._stopping.wait(POLL_S)

    def _completion(self, plan: Plan) -> None:
        completion = plan.completion
        assert completion is not None
        owner = self._owner
        with owner._lock:
            response_id = f"chatcmpl-{owner._next_id():06d}"
        if not plan.stream:
            data = orjson.dumps(completion_object(completion, response_id))
            if completion.cut_after is not None:
                # promise the whole body, send half of it, hang up
                self._start(
                    200, {"content-type": "application/json", "content-length": str(len(data))}
                )
                self._write(data[: len(data) // 2])
                self.close_connection = True
                return
            self._json(plan, 200, data, {})
            return
        events = sse_events(completion, response_id, owner.chunk_chars, plan.include_usage)
        self._start(
            200,
            {
                "content-type": "text/event-stream; charset=utf-8",
                "cache-control": "no-cache",
                "transfer-encoding": "chunked",
            },
        )
        if completion.cut_after is not None:
            content_events = len(events) - (2 if plan.include_usage else 1)
            for event in events[: min(completion.cut_after, content_events)]:
                self._write_chunk(b"data: " + orjson.dumps(event) + b"\n\n")
            if completion.error_event is not None:
                error = completion.error_event
                data = error.encode() if isinstance(error, str) else orjson.dumps(error)
                self._write_chunk(b"data: " + data + b"\n\n")
            self.close_connection = True  # no terminating chunk: the body is cut
            shutdown_socket(self.connection)
            return
        for position, event in enumerate(events):
            if position == completion.hold_after:
                self._hold()
            self._write_chunk(b"data: " + orjson.dumps(event) + b"\n\n")
        self._write_chunk(b"data: [DONE]\n\n")
        self._write(b"0\r\n\r\n")
