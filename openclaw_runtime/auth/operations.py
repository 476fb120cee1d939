"""The calls that write the auth-profile ledger, on top of any store (OpenClaw's names).

A store has two operations (``AuthProfileStore``, the ``backends.auth.AuthStore`` protocol):
``load()`` a snapshot and ``update(fn)``, which applies a pure function to the freshest state
atomically. ``mark_auth_profile_failure``, ``mark_auth_profile_success``, ``..._used``,
``..._blocked_until``, ``clear_auth_profile_cooldown`` and the post-run success bookkeeping
are written once here on top of those two, so a backend (the JSON file, Redis in a plugin)
only has to make ``update`` atomic. A store failure during bookkeeping is logged and dropped;
a scope violation is raised.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, Final, Literal, Protocol

import anyio
import anyio.abc

from .._exceptions import OpenClawRuntimeError
from ..backends.auth import AuthStore
from ..redaction import package_logger
from .cooldown import (
    DEFAULT_AUTH_COOLDOWN_POLICY,
    AuthCooldownPolicy,
    apply_blocked_until,
    apply_failure,
    is_auth_cooldown_bypassed_for_provider,
    reset_auth_profile_failure_state,
)
from .profiles import resolve_provider_id_for_auth
from .recording import should_probe_wham_for_failure
from .state import AuthProfileStoreState, ProfileUsageStats, check_auth_profile_failure_reason
from .wham import (
    WhamProbe,
    apply_wham_cooldown_result,
    is_same_wham_credential,
    probe_wham_for_cooldown,
)

__all__ = [
    "POST_RUN_AUTH_PROFILE_SUCCESS_SLOW_MS",
    "AuthProfileScopeError",
    "AuthProfileStore",
    "AuthProfileStoreError",
    "StartsSoon",
    "clear_auth_profile_cooldown",
    "mark_auth_profile_blocked_until",
    "mark_auth_profile_cooldown",
    "mark_auth_profile_failure",
    "mark_auth_profile_success",
    "mark_auth_profile_used",
    "mark_embedded_run_auth_profile_success",
    "record_auth_profile_success",
]

logger = package_logger(logging.getLogger("openclaw_runtime.auth"))

#: Success bookkeeping slower than this is logged as a warning.
POST_RUN_AUTH_PROFILE_SUCCESS_SLOW_MS: Final = 1_000


class AuthProfileStoreError(OpenClawRuntimeError):
    """The auth-profile store could not be read, locked or written."""


class AuthProfileScopeError(AuthProfileStoreError):
    """An update through a scoped store touched a profile outside the run's scope."""


#: The ledger backend protocol (``backends.auth.AuthStore``) under its historical name.
AuthProfileStore = AuthStore


def _now_ms(now_ms: float | None) -> float:
    return now_ms if now_ms is not None else time.time_ns() // 1_000_000


# --- the high-level operations (OpenClaw's names) ---------------------------------------------


def _dropped(kind: str, profile_id: str, exc: Exception) -> None:
    logger.warning(
        "dropped auth profile bookkeeping after locked store update failed: kind=%s "
        "profileId=%s error=%s",
        kind,
        profile_id,
        exc,
    )


async def _update_one(
    store: AuthProfileStore,
    kind: str,
    profile_id: str,
    compute: Callable[[AuthProfileStoreState], ProfileUsageStats | AuthProfileStoreState | None],
) -> ProfileUsageStats | None:
    """Run ``compute`` inside ``store.update``; return the profile's new entry if it changed."""
    changed: list[ProfileUsageStats] = []

    def fn(state: AuthProfileStoreState) -> AuthProfileStoreState | None:
        result = compute(state)
        if result is None or result is state.stats_for(profile_id):
            return None
        new_state = (
            result
            if isinstance(result, AuthProfileStoreState)
            else state.with_usage_stats(profile_id, result)
        )
        entry = new_state.stats_for(profile_id)
        if entry is not None:
            changed.append(entry)
        return new_state

    try:
        await store.update(fn)
    except AuthProfileScopeError:
        raise
    except AuthProfileStoreError as exc:
        _dropped(kind, profile_id, exc)
        return None
    return changed[-1] if changed else None


async def mark_auth_profile_failure(
    store: AuthProfileStore,
    profile_id: str,
    reason: str,
    *,
    model_id: str | None = None,
    now_ms: float | None = None,
    policy: AuthCooldownPolicy = DEFAULT_AUTH_COOLDOWN_POLICY,
    wham_probe: WhamProbe | None = None,
    run_id: str | None = None,
) -> ProfileUsageStats | None:
    """Record a failure of ``reason`` (on ``model_id``) against the shared ledger.

    Skipped (returns None) for unknown profiles, OpenRouter/Kilocode profiles and
    ``no_error_details`` unless ``wham_probe`` is given and the profile is an OpenAI OAuth
    profile with a live token (then WHAM is asked first, outside the lock). Filter reasons with
    ``resolve_auth_profile_failure_reason`` before calling. Returns the new ledger entry.
    Store failures are logged ("dropped auth profile bookkeeping") and return None.
    """
    reason = check_auth_profile_failure_reason(reason)
    try:
        snapshot = await store.load()
    except AuthProfileScopeError:
        raise
    except AuthProfileStoreError as exc:
        _dropped("failure", profile_id, exc)
        return None
    profile = snapshot.profiles.get(profile_id)
    if profile is None or is_auth_cooldown_bypassed_for_provider(profile.provider):
        return None
    probe_now = _now_ms(now_ms)
    probing = wham_probe is not None and should_probe_wham_for_failure(profile, reason, probe_now)
    if reason == "no_error_details" and not probing:
        return None
    wham_result = (
        await probe_wham_for_cooldown(profile, wham_probe, now_ms=probe_now)
        if probing and wham_probe is not None
        else None
    )

    def compute(state: AuthProfileStoreState) -> ProfileUsageStats | None:
        current = state.profiles.get(profile_id)
        if current is None or is_auth_cooldown_bypassed_for_provider(current.provider):
            return None
        now = _now_ms(now_ms)
        # the probe answered for the credential it saw; a replaced credential gets nothing
        result = (
            wham_result
            if wham_result is not None
            and should_probe_wham_for_failure(current, reason, now)
            and is_same_wham_credential(profile, current)
            else None
        )
        if reason == "no_error_details" and result is None:
            return None
        existing = state.stats_for(profile_id) or ProfileUsageStats()
        computed = apply_failure(
            existing, reason, model_id, now, policy.for_provider(current.provider)
        )
        return (
            apply_wham_cooldown_result(existing, computed, now, result)
            if result is not None
            else computed
        )

    entry = await _update_one(store, "failure", profile_id, compute)
    if entry is not None:
        logger.debug(
            "auth profile failure recorded: runId=%s profileId=%s reason=%s model=%s "
            "errorCount=%s cooldownUntil=%s disabledUntil=%s",
            run_id,
            profile_id,
            reason,
            model_id,
            entry.error_count,
            entry.cooldown_until,
            entry.disabled_until,
        )
    return entry


async def mark_auth_profile_cooldown(
    store: AuthProfileStore, profile_id: str, *, now_ms: float | None = None
) -> ProfileUsageStats | None:
    """A transient failure of unknown cause (30 s → 1 min → 5 min)."""
    return await mark_auth_profile_failure(store, profile_id, "unknown", now_ms=now_ms)


async def mark_auth_profile_blocked_until(
    store: AuthProfileStore,
    profile_id: str,
    blocked_until: float,
    source: Literal["codex_rate_limits", "wham"] | str,
    *,
    model_id: str | None = None,
    now_ms: float | None = None,
) -> ProfileUsageStats | None:
    """Block a profile until a provider-reported quota reset (see ``apply_blocked_until``)."""

    def compute(state: AuthProfileStoreState) -> ProfileUsageStats | None:
        current = state.profiles.get(profile_id)
        if current is None or is_auth_cooldown_bypassed_for_provider(current.provider):
            return None
        return apply_blocked_until(
            state.stats_for(profile_id), blocked_until, source, model_id, _now_ms(now_ms)
        )

    return await _update_one(store, "blocked_until", profile_id, compute)


async def mark_auth_profile_success(
    store: AuthProfileStore,
    profile_id: str,
    provider: str | None = None,
    *,
    now_ms: float | None = None,
) -> ProfileUsageStats | None:
    """A request succeeded: clear every window and counter, set ``lastUsed`` and ``lastGood``.

    Nothing happens when the profile is unknown or belongs to another provider than
    ``provider`` (default: the profile's own).
    """

    def compute(state: AuthProfileStoreState) -> AuthProfileStoreState | None:
        current = state.profiles.get(profile_id)
        if current is None:
            return None
        provider_key = resolve_provider_id_for_auth(provider or current.provider)
        if resolve_provider_id_for_auth(current.provider) != provider_key:
            return None
        entry = reset_auth_profile_failure_state(
            state.stats_for(profile_id), last_used=_now_ms(now_ms)
        )
        return state.with_usage_stats(profile_id, entry).with_last_good(provider_key, profile_id)

    return await _update_one(store, "success", profile_id, compute)


async def mark_auth_profile_used(
    store: AuthProfileStore, profile_id: str, *, now_ms: float | None = None
) -> ProfileUsageStats | None:
    """The profile was used successfully: ``lastUsed`` = now and failure state cleared."""

    def compute(state: AuthProfileStoreState) -> ProfileUsageStats | None:
        if profile_id not in state.profiles:
            return None
        return reset_auth_profile_failure_state(
            state.stats_for(profile_id), last_used=_now_ms(now_ms)
        )

    return await _update_one(store, "used", profile_id, compute)


async def clear_auth_profile_cooldown(
    store: AuthProfileStore, profile_id: str
) -> ProfileUsageStats | None:
    """Manual reset: every window and counter cleared (other history kept)."""

    def compute(state: AuthProfileStoreState) -> ProfileUsageStats | None:
        existing = state.stats_for(profile_id)
        return None if existing is None else reset_auth_profile_failure_state(existing)

    return await _update_one(store, "clear_cooldown", profile_id, compute)


def _redact_identifier(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:12]


async def record_auth_profile_success(
    store: AuthProfileStore,
    profile_id: str,
    provider: str | None = None,
    *,
    run_id: str | None = None,
    session_id: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    now_ms: float | None = None,
) -> None:
    """``mark_auth_profile_success`` for after a run: never raises, logs when slow or failed.

    Slower than ``POST_RUN_AUTH_PROFILE_SUCCESS_SLOW_MS`` (measured with ``clock``, seconds)
    logs a warning, so slow background bookkeeping is visible instead of silently piling up.
    """
    started = clock()
    safe_id = _redact_identifier(profile_id)
    try:
        await mark_auth_profile_success(store, profile_id, None, now_ms=now_ms)
    except Exception as exc:
        logger.warning(
            "post-run auth-profile success bookkeeping failed: runId=%s sessionId=%s "
            "provider=%s profileId=%s error=%s",
            run_id,
            session_id,
            provider,
            safe_id,
            exc,
        )
        return
    duration_ms = round((clock() - started) * 1000)
    if duration_ms >= POST_RUN_AUTH_PROFILE_SUCCESS_SLOW_MS:
        logger.warning(
            "post-run auth-profile success bookkeeping completed after %sms: runId=%s "
            "sessionId=%s provider=%s profileId=%s",
            duration_ms,
            run_id,
            session_id,
            provider,
            safe_id,
        )
    else:
        logger.debug(
            "post-run auth-profile success bookkeeping completed: runId=%s sessionId=%s "
            "durationMs=%s",
            run_id,
            session_id,
            duration_ms,
        )


class StartsSoon(Protocol):
    """Where a fire-and-forget task is started: a task group, or what stands in for one."""

    def start_soon(
        self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: object = None
    ) -> None: ...


def mark_embedded_run_auth_profile_success(
    task_group: anyio.abc.TaskGroup | StartsSoon,
    store: AuthProfileStore,
    profile_id: str | None,
    provider: str | None = None,
    *,
    auth_profile_state_mode: Literal["read-write", "read-only"] = "read-write",
    run_id: str | None = None,
    session_id: str | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Fire and forget: record the run's success in ``task_group`` without waiting for it."""
    if auth_profile_state_mode == "read-only" or not profile_id:
        return

    async def run() -> None:
        await record_auth_profile_success(
            store, profile_id, provider, run_id=run_id, session_id=session_id, clock=clock
        )

    task_group.start_soon(run)
