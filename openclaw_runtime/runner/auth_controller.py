"""The inner failover level: which auth profile an attempt uses, and moving to the next one.

For one model candidate the controller resolves the ordered profile candidates once (explicit
order first, profiles in cooldown behind the others; a locked profile is the only candidate),
starts at the first one not in cooldown, and on ``advance()`` scans forward past profiles in
cooldown (OpenClaw's ``advanceAuthProfile``). Failures go on the shared ledger only when the
recording policy says the profile is to blame (``resolve_auth_profile_failure_reason``).

Secrets are resolved per attempt and handed to the provider; they never leave this module
in an event, a log line or an error message.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..auth import (
    DEFAULT_AUTH_COOLDOWN_POLICY,
    AuthProfileStore,
    AuthProfileStoreState,
    UnresolvedCredentialError,
    create_scoped_auth_profile_store,
    is_auth_profile_in_cooldown,
    mark_auth_profile_failure,
    resolve_auth_profile_failure_reason,
    resolve_auth_profile_order,
    resolve_profiles_unavailable_reason,
)
from ..auth.cooldown import AuthCooldownPolicy
from ..config import AuthSettings

__all__ = ["AuthController", "AuthProfilesUnavailableError"]


class AuthProfilesUnavailableError(Exception):
    """Every auth profile of the provider is cooling down or disabled (the caller turns it
    into a failover error with ``reason``)."""

    def __init__(self, provider: str, reason: str | None) -> None:
        super().__init__(
            f"No available auth profile for {provider} "
            f"(all in cooldown or unavailable{': ' + reason if reason else ''})."
        )
        self.provider = provider
        self.reason = reason


def _now_ms() -> float:
    return time.time() * 1000


@dataclass
class AuthController:
    """Profile candidates for one provider/model, the current one and the rotation state."""

    store: AuthProfileStore
    settings: AuthSettings
    provider: str
    model_id: str
    preferred: str | None = None
    locked: str | None = None
    env: Mapping[str, str] | None = None
    cooldown_policy: AuthCooldownPolicy | None = None
    candidates: list[str | None] = field(default_factory=list)
    index: int = 0
    state: AuthProfileStoreState | None = None
    scoped: AuthProfileStore | None = None

    async def start(self) -> None:
        """Resolve the candidates and pick the first usable one.

        Raises ``AuthProfilesUnavailableError`` when profiles exist but all are cooling down.
        A provider without profiles runs with ``None`` (the provider's own key lookup).
        """
        state = await self.store.load()
        now = _now_ms()
        if self.locked:
            ordered = [self.locked]
        else:
            ordered = resolve_auth_profile_order(
                store=state,
                provider=self.provider,
                now_ms=now,
                cfg=self.settings,
                preferred_profile=self.preferred or self.settings.preferred_profile,
                for_model=self.model_id,
                env=self.env,
            )
        self.candidates = list(ordered) if ordered else [None]
        ids = [pid for pid in self.candidates if pid is not None]
        self.scoped = create_scoped_auth_profile_store(self.store, ids) if ids else None
        self.state = state
        self.index = 0
        while self.index < len(self.candidates):
            candidate = self.candidates[self.index]
            if candidate is None or not self._cooling(state, candidate, now):
                return
            self.index += 1
        raise AuthProfilesUnavailableError(
            self.provider,
            resolve_profiles_unavailable_reason(store=state, profile_ids=ids, now_ms=now),
        )

    @property
    def current(self) -> str | None:
        """The profile id in use (None: no profiles for this provider)."""
        return self.candidates[self.index] if self.index < len(self.candidates) else None

    @property
    def candidate_count(self) -> int:
        """Number of profile candidates (sizes the retry budget)."""
        return len([c for c in self.candidates if c is not None])

    def _cooling(self, state: AuthProfileStoreState, profile_id: str, now: float) -> bool:
        return is_auth_profile_in_cooldown(state, profile_id, now_ms=now, model_id=self.model_id)

    async def api_key(self) -> str | None:
        """The current profile's secret (None: let the provider find its key)."""
        profile_id = self.current
        if profile_id is None:
            return None
        state = self.state or await self.store.load()
        profile = state.profiles.get(profile_id) or self.settings.profile(profile_id)
        if profile is None:
            raise UnresolvedCredentialError(f"auth profile {profile_id!r} does not exist")
        return profile.resolve_secret(self.env).get_secret_value()

    async def record_failure(
        self,
        failover_reason: str | None,
        *,
        provider_started: bool,
        run_id: str | None = None,
    ) -> str | None:
        """Put the current profile's failure on the ledger if the policy blames the profile;
        returns the recorded reason (None when exempt)."""
        profile_id = self.current
        if profile_id is None:
            return None
        reason = resolve_auth_profile_failure_reason(
            failover_reason, provider_started=provider_started
        )
        if reason is None:
            return None
        store = self.scoped or self.store
        await mark_auth_profile_failure(
            store,
            profile_id,
            reason,
            model_id=self.model_id,
            run_id=run_id,
            policy=self.cooldown_policy or DEFAULT_AUTH_COOLDOWN_POLICY,
        )
        return reason

    async def advance(self) -> str | None:
        """Move to the next candidate not in cooldown; its id, or None when none is left.
        A locked profile never rotates."""
        if self.locked:
            return None
        state = await self.store.load()
        self.state = state
        now = _now_ms()
        index = self.index + 1
        while index < len(self.candidates):
            candidate = self.candidates[index]
            if candidate is not None and not self._cooling(state, candidate, now):
                self.index = index
                return candidate
            index += 1
        return None
