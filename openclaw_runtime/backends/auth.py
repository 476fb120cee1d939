"""The auth-store seam: where the shared auth-profile health ledger lives.

A store has two operations: ``load()`` a snapshot and ``update(fn)``, which applies a pure
function to the freshest state atomically. Every ledger operation (``mark_auth_profile_failure``,
``mark_auth_profile_success``... in ``auth.operations``) is written once on top of those two, so a
backend only has to make ``update`` atomic: a file lock (the embedded default), a Redis
``WATCH``/``MULTI`` retry loop or a Lua script. Then the cooldown rules (30 s → 1 min → 5 min,
disable backoff, the non-extendable active window, model-scope widening) hold for every process
sharing the ledger without each backend re-implementing them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias, runtime_checkable

from ..auth.state import AuthProfileStoreState

__all__ = ["AuthStore", "UpdateFn"]

UpdateFn: TypeAlias = Callable[[AuthProfileStoreState], AuthProfileStoreState | None]


@runtime_checkable
class AuthStore(Protocol):
    """A backend of the auth-profile ledger (``[backends] auth_store``).

    Guarantees (``AuthStoreContract`` checks them):

    * ``load()`` returns a consistent snapshot, never half of an update;
    * ``update(fn)`` is an atomic read-modify-write: ``fn`` sees the freshest state and no
      other update (in this process or any other sharing the store) lands between that read
      and the write of ``fn``'s result, so N concurrent updates that each add one failure
      leave N failures recorded;
    * ``fn`` may be called more than once (optimistic backends retry it on a conflict), so it
      must be pure; only the result of its last call is stored;
    * an update may change ``order``, ``last_good`` and ``usage_stats`` only; a changed
      ``profiles`` raises ``AuthProfileStoreError`` and nothing is written;
    * if ``fn`` raises, nothing is written and the exception propagates;
    * a store that cannot be read, locked or written raises ``AuthProfileStoreError`` (the
      ledger operations log it as dropped bookkeeping and the run goes on).
    """

    async def load(self) -> AuthProfileStoreState:
        """A consistent snapshot (profiles, order, lastGood, usageStats)."""
        ...

    async def update(self, fn: UpdateFn) -> AuthProfileStoreState:
        """Apply ``fn`` to the freshest state atomically and persist its result.

        ``fn`` is pure and synchronous and may run in a worker thread; returning ``None`` (or
        its argument) means "no change" (nothing is written). Returns the state after the
        update.
        """
        ...
