"""The ``AuthStore`` contract suite: a ledger update is an atomic read-modify-write (none lost
under concurrency, nothing written when it raises or changes nothing, profiles untouchable)."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ...auth.operations import AuthProfileStoreError, mark_auth_profile_failure
from ...auth.profiles import AuthProfile, CredentialRef
from ...auth.state import AuthProfileStoreState, ProfileUsageStats
from ...backends import (
    AuthStore,
)
from ._support import HANG_GUARD_S

__all__ = ["AuthStoreContract"]


class AuthStoreContract:
    """Inherit and provide an ``auth_store`` fixture returning a fresh, empty ledger that knows
    the profiles in ``AuthStoreContract.profiles``."""

    profiles = (
        AuthProfile(
            id="contract:a", provider="openai", mode="api_key", credential=CredentialRef(env="A")
        ),
        AuthProfile(
            id="contract:b", provider="openai", mode="api_key", credential=CredentialRef(env="B")
        ),
    )
    concurrent_updates = 16

    def test_meets_the_protocol(self, auth_store: Any) -> None:
        assert isinstance(auth_store, AuthStore)

    @pytest.mark.anyio
    async def test_load_shows_the_profiles_and_an_empty_ledger(self, auth_store: Any) -> None:
        state = await auth_store.load()
        assert {"contract:a", "contract:b"} <= set(state.profiles)
        assert state.stats_for("contract:a") is None

    @pytest.mark.anyio
    async def test_an_update_is_stored_and_returned(self, auth_store: Any) -> None:
        entry = ProfileUsageStats(error_count=3, cooldown_until=123_456.0)
        after = await auth_store.update(lambda s: s.with_usage_stats("contract:a", entry))
        assert after.stats_for("contract:a") == entry
        assert (await auth_store.load()).stats_for("contract:a") == entry

    @pytest.mark.anyio
    async def test_no_change_writes_nothing(self, auth_store: Any) -> None:
        before = await auth_store.load()
        after = await auth_store.update(lambda s: None)
        assert after.usage_stats == before.usage_stats
        assert (await auth_store.load()).usage_stats == before.usage_stats

    @pytest.mark.anyio
    async def test_a_raising_update_writes_nothing(self, auth_store: Any) -> None:
        def explode(state: AuthProfileStoreState) -> AuthProfileStoreState:
            raise ZeroDivisionError("fn failed")

        with pytest.raises(ZeroDivisionError):
            await auth_store.update(explode)
        assert (await auth_store.load()).stats_for("contract:a") is None

    @pytest.mark.anyio
    async def test_an_update_cannot_change_profiles(self, auth_store: Any) -> None:
        def drop_profiles(state: AuthProfileStoreState) -> AuthProfileStoreState:
            return state.replace(profiles={}).with_usage_stats(
                "contract:a", ProfileUsageStats(error_count=1)
            )

        with pytest.raises(AuthProfileStoreError):
            await auth_store.update(drop_profiles)
        state = await auth_store.load()
        assert "contract:a" in state.profiles and state.stats_for("contract:a") is None

    @pytest.mark.anyio
    async def test_concurrent_updates_lose_nothing(self, auth_store: Any) -> None:
        def add_one(state: AuthProfileStoreState) -> AuthProfileStoreState:
            entry = state.stats_for("contract:a") or ProfileUsageStats()
            return state.with_usage_stats(
                "contract:a", entry.replace(error_count=(entry.error_count or 0) + 1)
            )

        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for _ in range(self.concurrent_updates):
                    tg.start_soon(auth_store.update, add_one)
        entry = (await auth_store.load()).stats_for("contract:a")
        assert entry is not None and entry.error_count == self.concurrent_updates

    @pytest.mark.anyio
    async def test_a_recorded_failure_cools_the_profile_for_every_reader(
        self, auth_store: Any
    ) -> None:
        now = 1_000_000_000_000.0
        entry = await mark_auth_profile_failure(auth_store, "contract:b", "rate_limit", now_ms=now)
        assert entry is not None and entry.cooldown_until is not None
        stored = (await auth_store.load()).stats_for("contract:b")
        assert stored == entry and entry.cooldown_until > now
