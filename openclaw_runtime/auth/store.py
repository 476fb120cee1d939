"""Auth-profile stores in memory, and the scoped view of any store.

``AuthProfileStoreBase`` gives every store the ledger calls of ``operations`` as methods;
``InMemoryAuthProfileStore`` keeps the ledger in this process; ``create_scoped_auth_profile_store``
narrows any store to a run's candidate profiles (least privilege for one run). The JSON file
store (OpenClaw's ``auth-profiles.json``) is ``json_file.JsonFileAuthProfileStore``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from .._exceptions import ConfigurationError
from ..backends.auth import UpdateFn
from .operations import (
    AuthProfileScopeError,
    AuthProfileStore,
    AuthProfileStoreError,
    clear_auth_profile_cooldown,
    mark_auth_profile_blocked_until,
    mark_auth_profile_failure,
    mark_auth_profile_success,
    mark_auth_profile_used,
)
from .profiles import AuthProfile
from .state import AuthProfileStoreState, ProfileUsageStats

__all__ = [
    "AuthProfileStoreBase",
    "InMemoryAuthProfileStore",
    "ScopedAuthProfileStore",
    "check_profiles_unchanged",
    "create_scoped_auth_profile_store",
    "merge_configured_profiles",
    "profiles_by_id",
]


def check_profiles_unchanged(before: AuthProfileStoreState, after: AuthProfileStoreState) -> None:
    """Raise when an update changed the profiles (a store update may not: they come from
    config and the stored file, never from the ledger)."""
    if after.profiles is not before.profiles and dict(after.profiles) != dict(before.profiles):
        raise AuthProfileStoreError(
            "an auth-profile store update may change order, lastGood and usageStats only, "
            "not profiles"
        )


# --- store base --------------------------------------------------------------------------------


class AuthProfileStoreBase:
    """Shared convenience methods; subclasses implement ``load`` and ``update``."""

    async def load(self) -> AuthProfileStoreState:  # pragma: no cover - abstract
        raise NotImplementedError

    async def update(self, fn: UpdateFn) -> AuthProfileStoreState:  # pragma: no cover
        raise NotImplementedError

    async def mark_auth_profile_failure(
        self, profile_id: str, reason: str, **options: Any
    ) -> ProfileUsageStats | None:
        """See the module-level ``mark_auth_profile_failure``."""
        return await mark_auth_profile_failure(self, profile_id, reason, **options)

    async def mark_auth_profile_success(
        self, profile_id: str, provider: str | None = None, **options: Any
    ) -> ProfileUsageStats | None:
        """See the module-level ``mark_auth_profile_success``."""
        return await mark_auth_profile_success(self, profile_id, provider, **options)

    async def mark_auth_profile_used(
        self, profile_id: str, **options: Any
    ) -> ProfileUsageStats | None:
        """See the module-level ``mark_auth_profile_used``."""
        return await mark_auth_profile_used(self, profile_id, **options)

    async def mark_auth_profile_blocked_until(
        self, profile_id: str, blocked_until: float, source: str, **options: Any
    ) -> ProfileUsageStats | None:
        """See the module-level ``mark_auth_profile_blocked_until``."""
        return await mark_auth_profile_blocked_until(
            self, profile_id, blocked_until, source, **options
        )

    async def clear_auth_profile_cooldown(self, profile_id: str) -> ProfileUsageStats | None:
        """See the module-level ``clear_auth_profile_cooldown``."""
        return await clear_auth_profile_cooldown(self, profile_id)

    def scoped(self, profile_ids: str | Iterable[str] | None) -> ScopedAuthProfileStore:
        """This store narrowed to ``profile_ids`` (``create_scoped_auth_profile_store``)."""
        return create_scoped_auth_profile_store(self, profile_ids)


def profiles_by_id(profiles: Iterable[AuthProfile]) -> dict[str, AuthProfile]:
    by_id: dict[str, AuthProfile] = {}
    for profile in profiles:
        if profile.id in by_id:
            raise ConfigurationError(f"auth profile {profile.id!r} is configured twice")
        by_id[profile.id] = profile
    return by_id


def merge_configured_profiles(
    stored: Mapping[str, AuthProfile], configured: Mapping[str, AuthProfile]
) -> dict[str, AuthProfile]:
    """Stored profiles overlaid with configured ones that bring a credential (or ``aws-sdk``).

    A configured profile without a credential is metadata only (provider, mode): it neither
    hides a stored credential nor appears as a credential itself, as in OpenClaw where
    ``auth.profiles`` in config never holds secrets.
    """
    merged = dict(stored)
    for profile_id, profile in configured.items():
        if profile.has_credential or profile.mode == "aws-sdk":
            merged[profile_id] = profile
    return merged


class InMemoryAuthProfileStore(AuthProfileStoreBase):
    """A ledger in this process only (tests, single-shot tools)."""

    def __init__(
        self, state: AuthProfileStoreState | None = None, *, profiles: Iterable[AuthProfile] = ()
    ) -> None:
        base = state or AuthProfileStoreState()
        configured = profiles_by_id(profiles)
        if configured:
            base = base.replace(profiles=merge_configured_profiles(base.profiles, configured))
        self._state = base
        self._lock = threading.Lock()

    @property
    def state(self) -> AuthProfileStoreState:
        """The current snapshot."""
        return self._state

    async def load(self) -> AuthProfileStoreState:
        return self._state

    async def update(self, fn: UpdateFn) -> AuthProfileStoreState:
        with self._lock:
            before = self._state
            after = fn(before)
            if after is None or after is before:
                return before
            check_profiles_unchanged(before, after)
            self._state = after
            return after

    def __repr__(self) -> str:
        return f"InMemoryAuthProfileStore(profiles={sorted(self._state.profiles)!r})"


# --- scoped view ------------------------------------------------------------------------------


def _normalize_ids(profile_ids: str | Iterable[str | None] | None) -> tuple[str, ...]:
    items: Iterable[str | None] = (
        [profile_ids] if profile_ids is None or isinstance(profile_ids, str) else profile_ids
    )
    seen: dict[str, None] = {}
    for item in items:
        if isinstance(item, str) and item.strip():
            seen.setdefault(item.strip())
    return tuple(seen)


class ScopedAuthProfileStore(AuthProfileStoreBase):
    """A run's view of a store: only its candidate profiles exist, and only they change.

    Other profiles are invisible (not in ``profiles``, ``usage_stats``, ``order`` or
    ``last_good``); an update that names one raises ``AuthProfileScopeError``.
    """

    def __init__(self, inner: AuthProfileStore, profile_ids: str | Iterable[str] | None) -> None:
        self.inner = inner
        self.profile_ids = _normalize_ids(profile_ids)

    def __repr__(self) -> str:
        return f"ScopedAuthProfileStore({self.inner!r}, {list(self.profile_ids)!r})"

    def restrict(self, full: AuthProfileStoreState) -> AuthProfileStoreState:
        """The part of ``full`` this scope may see."""
        visible = [pid for pid in self.profile_ids if pid in full.profiles]
        allowed = set(visible)
        return AuthProfileStoreState(
            version=full.version,
            profiles={pid: full.profiles[pid] for pid in visible},
            order={p: tuple(i for i in ids if i in allowed) for p, ids in full.order.items()},
            last_good={p: pid for p, pid in full.last_good.items() if pid in allowed},
            usage_stats={pid: full.usage_stats[pid] for pid in visible if pid in full.usage_stats},
        )

    async def load(self) -> AuthProfileStoreState:
        return self.restrict(await self.inner.load())

    async def update(self, fn: UpdateFn) -> AuthProfileStoreState:
        def apply(full: AuthProfileStoreState) -> AuthProfileStoreState | None:
            view = self.restrict(full)
            new = fn(view)
            if new is None or new is view:
                return None
            allowed = set(view.profiles)
            check_profiles_unchanged(view, new)
            if dict(new.order) != dict(view.order):
                raise AuthProfileScopeError("a scoped auth-profile store cannot change order")
            for pid in set(new.usage_stats) - allowed:
                raise AuthProfileScopeError(f"auth profile {pid!r} is outside this run's scope")
            for pid in new.last_good.values():
                if pid not in allowed:
                    raise AuthProfileScopeError(f"auth profile {pid!r} is outside this run's scope")
            usage = {
                pid: stats
                for pid, stats in full.usage_stats.items()
                if pid not in allowed or pid in new.usage_stats
            }
            usage.update(new.usage_stats)
            last_good = {
                p: pid
                for p, pid in full.last_good.items()
                if p not in view.last_good or p in new.last_good
            }
            last_good.update(new.last_good)
            return full.replace(usage_stats=usage, last_good=last_good)

        return self.restrict(await self.inner.update(apply))


def create_scoped_auth_profile_store(
    store: AuthProfileStore, profile_ids: str | Iterable[str] | None
) -> ScopedAuthProfileStore:
    """OpenClaw's ``createScopedAuthProfileStore``: least privilege for one run.

    Ids are trimmed, blanks dropped, duplicates collapsed; ids the store does not know simply
    do not appear. An empty scope sees an empty store (never the full one).
    """
    return ScopedAuthProfileStore(store, profile_ids)
