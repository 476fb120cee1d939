"""Abort signals: a cooperative, inspectable stop request shared by a whole run.

A run has to *record* an abort (as an assistant message with ``stop_reason="aborted"``), not
just stop, so cancellation is a value the loop checks at every boundary rather than only an
exception. ``linked_cancel_scope()`` turns the signal into anyio cancellation for code that
should be interrupted mid-await (tool execution, HTTP reads).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import suppress
from types import TracebackType
from typing import Any

import anyio

from ._exceptions import OpenClawRuntimeError

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "TurnHandoff",
    "is_abort_error",
    "is_turn_handoff_abort",
]


class AbortError(OpenClawRuntimeError):
    """An operation stopped because its abort signal fired."""

    def __init__(self, message: str = "This operation was aborted") -> None:
        super().__init__(message)


class TurnHandoff:
    """Abort reason for a deliberate end of turn (yield-style tools).

    A handoff closes the turn without the "interrupted" guidance message, and tool calls the
    model already dispatched beside it keep running.
    """

    turn_handoff = True

    def __init__(self, message: str = "turn handed off") -> None:
        self.message = message

    def __str__(self) -> str:
        return self.message


class AbortSignal:
    """Read side of an abort: check ``aborted``, wait for it, or link a cancel scope to it."""

    __slots__ = ("_aborted", "_callbacks", "_event", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: Any = None
        #: made with the first callback (most signals never get one held while a run waits)
        self._callbacks: list[Callable[[], None]] | None = None
        self._event: anyio.Event | None = None

    @property
    def aborted(self) -> bool:
        """True once the controller aborted."""
        return self._aborted

    @property
    def reason(self) -> Any:
        """What the controller passed to ``abort()``; an ``AbortError`` by default."""
        return self._reason

    def reason_text(self) -> str:
        """A printable form of the reason."""
        reason = self._reason
        if isinstance(reason, BaseException):
            return str(reason) or type(reason).__name__
        return str(reason) if reason is not None else "Agent run aborted"

    def throw_if_aborted(self) -> None:
        """Raise ``AbortError`` (or the reason, if it is an exception) when aborted."""
        if self._aborted:
            if isinstance(self._reason, BaseException):
                raise self._reason
            raise AbortError(self.reason_text())

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` once on abort (now, if already aborted); returns a remover."""
        if self._aborted:
            callback()
            return _noop
        callbacks = self._callbacks
        if callbacks is None:
            callbacks = self._callbacks = []
        callbacks.append(callback)
        return _Remover(self, callback)

    async def wait(self) -> None:
        """Return once the signal is aborted."""
        if self._aborted:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()

    def linked_cancel_scope(self, *, ignore_handoff: bool = False) -> _LinkedCancelScope:
        """A cancel scope cancelled when this signal aborts (``with`` gives the scope).

        With ``ignore_handoff`` a ``TurnHandoff`` abort does not cancel the scope.
        """
        return _LinkedCancelScope(self, ignore_handoff)

    def _fire(self, reason: Any) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            callback()
        if self._event is not None:
            self._event.set()

    def __repr__(self) -> str:
        state = f"aborted reason={self.reason_text()!r}" if self._aborted else "active"
        return f"<AbortSignal {state}>"


class _LinkedCancelScope:
    """``AbortSignal.linked_cancel_scope()``: a context manager class rather than a generator
    one (a tool call enters one; the generator machinery cost more than the scope)."""

    __slots__ = ("_ignore_handoff", "_remove", "_scope", "_signal")

    def __init__(self, signal: AbortSignal, ignore_handoff: bool) -> None:
        self._signal = signal
        self._ignore_handoff = ignore_handoff
        self._scope: anyio.CancelScope | None = None
        self._remove: Callable[[], None] = _noop

    def __enter__(self) -> anyio.CancelScope:
        scope = self._scope = anyio.CancelScope()
        # this object is the callback (``__call__``): no closure per scope entered
        self._remove = self._signal.add_callback(self)  # cancels now if already aborted
        try:
            return scope.__enter__()
        except BaseException:
            self._remove()
            raise

    def __call__(self) -> None:
        """The signal fired: cancel the scope (unless it is a handoff we ignore)."""
        if not (self._ignore_handoff and is_turn_handoff_abort(self._signal)):
            assert self._scope is not None
            self._scope.cancel()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._scope is not None
        try:
            return self._scope.__exit__(exc_type, exc, tb)
        finally:
            self._remove()


class AbortController:
    """Write side of an abort: owns a signal and fires it once."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        """Fire the signal; later calls do nothing. Call from the event loop's thread."""
        self.signal._fire(AbortError() if reason is None else reason)

    @property
    def aborted(self) -> bool:
        """True once ``abort()`` was called."""
        return self.signal.aborted


def is_turn_handoff_abort(signal: AbortSignal | None) -> bool:
    """True when the signal aborted with a turn-handoff reason."""
    if signal is None or not signal.aborted:
        return False
    reason = signal.reason
    if isinstance(reason, dict):
        return reason.get("turn_handoff") is True or reason.get("turnHandoff") is True
    return getattr(reason, "turn_handoff", False) is True


def is_abort_error(error: BaseException) -> bool:
    """Whether an error means "aborted" rather than "broken" (OpenClaw's rule)."""
    if isinstance(error, AbortError) or type(error).__name__ == "AbortError":
        return True
    return re.search(r"abort|cancelled|canceled", str(error), re.IGNORECASE) is not None


def _noop() -> None:
    return None


class _Remover:
    """What ``AbortSignal.add_callback`` returns: takes the callback off the signal's list
    (one small object instead of a closure with its cells; a run holds several)."""

    __slots__ = ("_callback", "_signal")

    def __init__(self, signal: AbortSignal, callback: Callable[[], None]) -> None:
        self._signal = signal
        self._callback = callback

    def __call__(self) -> None:
        callbacks = self._signal._callbacks  # the list of now: a fired signal has none
        if callbacks is not None:
            with suppress(ValueError):
                callbacks.remove(self._callback)
