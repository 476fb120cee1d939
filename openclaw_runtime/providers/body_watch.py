"""One idle deadline and one abort hook per streamed body, instead of a cancel scope per read.

Wrapping every network read in a cancel scope with a deadline cost 17–40 % of the time per
SSE event (a timer armed and cancelled per read). The transport already re-arms a read timeout
on every read; ``body_watch`` points that timeout at the idle limit once the headers are in,
and turns an abort into a ``shutdown()`` of the connection's socket, which wakes a pending read
at once (the server sees the connection close, as it did when the read was cancelled).

Guarantees kept, and why they hold:

* idle: a read that waits longer than ``idle`` fails with the transport's ``ReadTimeout``,
  reported as the idle timeout; the header wait keeps its own (longer) ``read`` limit. When
  ``idle`` exceeds that limit, the shorter ``read`` limit still applies and keeps its own
  message, as before.
* abort: checked before every read; one that fires during a read shuts the socket, the read
  fails, and the failure is reported as the abort. The hook is removed when the body ends,
  before the connection can go back to the pool.

``body_watch`` returns ``None`` when the transport exposes no socket (``MockTransport``, an
HTTP/2 stream) or no read timeout to re-point; callers then guard each read themselves.
"""

from __future__ import annotations

import socket
from contextlib import suppress
from typing import Any, Literal

import httpx

from ..abort import AbortSignal

__all__ = ["BodyWatch", "body_timeout", "body_watch"]


def body_timeout(
    idle: float | None, read: float | None
) -> tuple[float | None, Literal["idle", "read"] | None]:
    """The per-read timeout for a body, and what its expiry means.

    The tighter of the two limits wins; a tie is the idle timeout (the body is streaming).
    """
    if idle is None and read is None:
        return None, None
    if read is None or (idle is not None and idle <= read):
        return idle, "idle"
    return read, "read"


class BodyWatch:
    """The abort hook and the meaning of a read timeout for one response body."""

    __slots__ = ("_remove", "_sock", "_timeout_kind", "signal")

    def __init__(
        self, sock: Any, signal: AbortSignal | None, timeout_kind: Literal["idle", "read"] | None
    ) -> None:
        self._sock = sock
        self.signal = signal
        self._timeout_kind = timeout_kind
        self._remove = signal.add_callback(self._shutdown) if signal is not None else None

    def _shutdown(self) -> None:
        with suppress(OSError, AttributeError, ValueError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def cause(self, exc: BaseException) -> Literal["aborted", "idle"] | None:
        """Why a read failed, when it was us: the abort, or the idle deadline."""
        if self.signal is not None and self.signal.aborted:
            return "aborted"
        if isinstance(exc, httpx.ReadTimeout) and self._timeout_kind == "idle":
            return "idle"
        return None

    def close(self) -> None:
        """Unhook from the signal (the socket may be pooled again after this)."""
        if self._remove is not None:
            self._remove()
            self._remove = None


def body_watch(
    response: httpx.Response, signal: AbortSignal | None, idle: float | None
) -> BodyWatch | None:
    """Point the body's read timeout at ``idle`` and hook the abort to the socket; ``None``
    when this transport does not allow it (the caller then guards each read)."""
    stream = response.extensions.get("network_stream")
    get_info = getattr(stream, "get_extra_info", None)
    sock = get_info("socket") if get_info is not None else None
    timeouts = response.request.extensions.get("timeout")
    if sock is None or not hasattr(sock, "shutdown") or not isinstance(timeouts, dict):
        return None
    timeout, kind = body_timeout(idle, timeouts.get("read"))
    # read by the transport when the body's first read starts (httpcore: per response)
    timeouts["read"] = timeout
    return BodyWatch(sock, signal, kind)
