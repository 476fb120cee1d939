"""One cancellation shield for nested stream closes.

Closing a repaired stream closes its layers, and closing a layer can close further layers
(the containment wrapper closes the repairer and its tap inside the composer's close). Every
close must finish even when the task is being cancelled — a provider layer releases its HTTP
response there — so each runs under a shielded cancel scope. A close that runs inside
another shielded close of the same task is already protected: cancel scopes nest with the
call stack, and an async generator's ``aclose`` runs in the task that awaits it. So only the
outermost close needs a scope of its own; ``ShieldedClose`` enters one only when no close
of this task is shielded already (a context variable marks the shielded stretch). Each
scope costs an entry and an exit per stream (a task look-up, a scope object).
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from types import TracebackType

import anyio

__all__ = ["ShieldedClose"]

_SHIELDED: ContextVar[bool] = ContextVar("openclaw_runtime_shielded_close", default=False)


class ShieldedClose:
    """``with ShieldedClose(): ...`` — the block cannot be cancelled (a shielded cancel
    scope, unless an enclosing ``ShieldedClose`` of this task already is one)."""

    __slots__ = ("_scope", "_token")

    def __init__(self) -> None:
        self._scope: anyio.CancelScope | None = None
        self._token: Token[bool] | None = None

    def __enter__(self) -> None:
        if _SHIELDED.get():
            return
        self._token = _SHIELDED.set(True)
        scope = anyio.CancelScope(shield=True)
        try:
            scope.__enter__()
        except BaseException:
            _SHIELDED.reset(self._token)
            raise
        self._scope = scope

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        scope = self._scope
        if scope is None:
            return None
        self._scope = None
        try:
            return scope.__exit__(exc_type, exc, tb)
        finally:
            assert self._token is not None
            _SHIELDED.reset(self._token)
