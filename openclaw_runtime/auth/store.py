"""Auth-profile stores: where the shared health ledger lives, and the calls that write it.

A store has two operations (``AuthProfileStore``): ``load()`` a snapshot and ``update(fn)``,
which applies a pure function to the freshest state atomically. Everything else
(``mark_auth_profile_failure``, ``mark_auth_profile_success``...) is written once on top of
those two, so a backend (the JSON file here, Redis in a plugin) only has to make ``update``
atomic.

``JsonFileAuthProfileStore`` is OpenClaw's ``auth-profiles.json``: one JSON file guarded by a
file lock, replaced atomically (temp file + fsync + ``os.replace``), so many processes on one
machine share one ledger and lose no update. Its blocking I/O runs in a worker thread.
``create_scoped_auth_profile_store`` narrows any store to a run's candidate profiles.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
import anyio.abc
import filelock
import orjson

from .._exceptions import ConfigurationError, OpenClawRuntimeError
from .._files import DamagedStateFile, atomic_write, load_or_set_aside, remove_stale_temps
from ..backends.auth import AuthStore, UpdateFn
from ..redaction import package_logger
from .cooldown import (
    DEFAULT_AUTH_COOLDOWN_POLICY,
    AuthCooldownPolicy,
    apply_blocked_until,
    apply_failure,
    is_auth_cooldown_bypassed_for_provider,
    reset_auth_profile_failure_state,
)
from .profiles import AuthProfile, resolve_provider_id_for_auth
from .recording import should_probe_wham_for_failure
from .state import (
    AuthProfileStoreState,
    ProfileUsageStats,
    check_auth_profile_failure_reason,
    usage_stats_from_json,
    usage_stats_to_json,
)
from .wham import (
    WhamProbe,
    apply_wham_cooldown_result,
    is_same_wham_credential,
    probe_wham_for_cooldown,
)

if TYPE_CHECKING:
    from ..config import RuntimeConfig

__all__ = [
    "AUTH_PROFILES_FILENAME",
    "POST_RUN_AUTH_PROFILE_SUCCESS_SLOW_MS",
    "AuthProfileScopeError",
    "AuthProfileStore",
    "AuthProfileStoreBase",
    "AuthProfileStoreError",
    "InMemoryAuthProfileStore",
    "JsonFileAuthProfileStore",
    "ScopedAuthProfileStore",
    "UpdateFn",
    "clear_auth_profile_cooldown",
    "create_scoped_auth_profile_store",
    "document_with_state",
    "mark_auth_profile_blocked_until",
    "mark_auth_profile_cooldown",
    "mark_auth_profile_failure",
    "mark_auth_profile_success",
    "mark_auth_profile_used",
    "mark_embedded_run_auth_profile_success",
    "merge_configured_profiles",
    "open_auth_profile_store",
    "record_auth_profile_success",
    "state_from_document",
]

logger = package_logger(logging.getLogger("openclaw_runtime.auth"))

AUTH_PROFILES_FILENAME: Final = "auth-profiles.json"
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


def _check_profiles_unchanged(before: AuthProfileStoreState, after: AuthProfileStoreState) -> None:
    if after.profiles is not before.profiles and dict(after.profiles) != dict(before.profiles):
        raise AuthProfileStoreError(
            "an auth-profile store update may change order, lastGood and usageStats only, "
            "not profiles"
        )


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


def mark_embedded_run_auth_profile_success(
    task_group: anyio.abc.TaskGroup,
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


def _profiles_by_id(profiles: Iterable[AuthProfile]) -> dict[str, AuthProfile]:
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
        configured = _profiles_by_id(profiles)
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
            _check_profiles_unchanged(before, after)
            self._state = after
            return after

    def __repr__(self) -> str:
        return f"InMemoryAuthProfileStore(profiles={sorted(self._state.profiles)!r})"


# --- the JSON file ----------------------------------------------------------------------------


def state_from_document(
    document: Mapping[str, Any], configured: Mapping[str, AuthProfile] | None = None
) -> AuthProfileStoreState:
    """Parse an ``auth-profiles.json`` object; configured profiles win over stored ones.

    A stored profile that cannot be parsed is skipped with a warning naming its id and the
    problem (never its secret).
    """
    profiles: dict[str, AuthProfile] = {}
    raw_profiles = document.get("profiles")
    if isinstance(raw_profiles, Mapping):
        for profile_id, raw in raw_profiles.items():
            try:
                profiles[str(profile_id)] = AuthProfile.from_openclaw(str(profile_id), raw)
            except ValueError as exc:
                logger.warning("skipping stored auth profile: %s", exc)
    profiles = merge_configured_profiles(profiles, configured or {})
    order: dict[str, tuple[str, ...]] = {}
    raw_order = document.get("order")
    if isinstance(raw_order, Mapping):
        for provider, ids in raw_order.items():
            if isinstance(ids, list):
                order[str(provider)] = tuple(i for i in ids if isinstance(i, str))
    raw_last_good = document.get("lastGood")
    last_good = (
        {str(k): v for k, v in raw_last_good.items() if isinstance(v, str)}
        if isinstance(raw_last_good, Mapping)
        else {}
    )
    version = document.get("version")
    return AuthProfileStoreState(
        version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
        profiles=profiles,
        order=order,
        last_good=last_good,
        usage_stats=usage_stats_from_json(document.get("usageStats")),
    )


def document_with_state(
    document: Mapping[str, Any], state: AuthProfileStoreState
) -> dict[str, Any]:
    """``document`` with the ledger of ``state`` written in; everything else kept as is.

    Stored profiles (and their secrets) are passed through untouched: this runtime never
    re-serializes a credential.
    """
    out = dict(document)
    out.setdefault("version", state.version)
    for key, value in (
        ("order", {k: list(v) for k, v in state.order.items()}),
        ("lastGood", dict(state.last_good)),
        ("usageStats", usage_stats_to_json(state.usage_stats)),
    ):
        if value:
            out[key] = value
        else:
            out.pop(key, None)
    return out


class JsonFileAuthProfileStore(AuthProfileStoreBase):
    """OpenClaw's ``auth-profiles.json``, safe for many processes on one machine.

    Reads need no lock (the file is only ever replaced whole); updates hold
    ``<file>.lock`` while they read, apply and write. Profiles from config (``profiles``) are
    merged into every snapshot but never written to the file. A file that cannot be parsed
    is set aside as ``<file>.corrupt-<time>-<pid>`` with a warning and the ledger starts
    empty (``_files.load_or_set_aside``): a damaged ledger never stops a run.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        profiles: Iterable[AuthProfile] = (),
        lock_timeout: float = 30.0,
    ) -> None:
        self.path = Path(path).expanduser()
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        self._loaded: tuple[tuple[int, int, int], AuthProfileStoreState] | None = None
        self._configured = _profiles_by_id(profiles)
        self._swept = False  # stale temp files of dead writers removed (once, at first read)

    def __repr__(self) -> str:
        return f"JsonFileAuthProfileStore({str(self.path)!r})"

    # synchronous core (runs in a worker thread) ---------------------------------------------

    @staticmethod
    def _parse_document(data: bytes) -> dict[str, Any]:
        if not data.strip():
            return {}
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            # no excerpt of the bytes: the file holds credentials
            raise DamagedStateFile(
                f"not valid JSON at line {exc.lineno}, column {exc.colno}"
            ) from None
        if not isinstance(document, dict):
            raise DamagedStateFile("not a JSON object")
        return document

    def _file_lock(self) -> filelock.FileLock:
        return filelock.FileLock(self.lock_path, timeout=self.lock_timeout, mode=0o600)

    def _read_document(self, *, locked: bool = False) -> dict[str, Any]:
        """The stored document; a damaged file is set aside (warning) and reads as empty."""
        if not self._swept:
            self._swept = True
            remove_stale_temps(self.path.parent, [self.path.name])
        try:
            return load_or_set_aside(
                self.path,
                self._parse_document,
                dict,
                what="auth profile store",
                logger=logger,
                lock=None if locked else self._file_lock,
            )
        except OSError as exc:
            raise AuthProfileStoreError(
                f"cannot read auth profile store {str(self.path)!r}: {exc.strerror}"
            ) from None
        except filelock.Timeout:
            raise AuthProfileStoreError(
                f"timed out after {self.lock_timeout}s waiting for the lock {str(self.lock_path)!r}"
            ) from None

    def _write_document(self, document: Mapping[str, Any]) -> None:
        payload = orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
        try:
            atomic_write(self.path, payload, tag="auth")
        except OSError as exc:
            raise AuthProfileStoreError(
                f"cannot write auth profile store {str(self.path)!r}: {exc.strerror}"
            ) from None

    def load_sync(self) -> AuthProfileStoreState:
        """Blocking ``load``."""
        return state_from_document(self._read_document(), self._configured)

    def update_sync(self, fn: UpdateFn) -> AuthProfileStoreState:
        """Blocking ``update``: lock, read, apply ``fn``, write atomically, unlock."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AuthProfileStoreError(
                f"cannot create directory {str(self.path.parent)!r}: {exc.strerror}"
            ) from None
        try:
            with self._file_lock():
                document = self._read_document(locked=True)
                before = state_from_document(document, self._configured)
                after = fn(before)
                if after is None or after is before:
                    return before
                _check_profiles_unchanged(before, after)
                self._write_document(document_with_state(document, after))
                return after
        except filelock.Timeout:
            raise AuthProfileStoreError(
                f"timed out after {self.lock_timeout}s waiting for the lock {str(self.lock_path)!r}"
            ) from None

    # async API ---------------------------------------------------------------------------------

    async def load(self) -> AuthProfileStoreState:
        # the file is only ever replaced whole, so (inode, size, mtime) identifies a version:
        # an unchanged file is not read again (every run loads the ledger at least once)
        try:
            stat = os.stat(self.path)
            marker: tuple[int, int, int] | None = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        except FileNotFoundError:
            marker = (0, 0, 0)
        except OSError:
            marker = None
        cached = self._loaded
        if marker is not None and cached is not None and cached[0] == marker:
            return cached[1]
        state = await anyio.to_thread.run_sync(self.load_sync)
        if marker is not None:
            self._loaded = (marker, state)
        return state

    async def update(self, fn: UpdateFn) -> AuthProfileStoreState:
        return await anyio.to_thread.run_sync(self.update_sync, fn)


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
            _check_profiles_unchanged(view, new)
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


def open_auth_profile_store(
    config: RuntimeConfig, *, path: str | os.PathLike[str] | None = None
) -> JsonFileAuthProfileStore:
    """The embedded default store of ``config``: ``auth.store_path`` (or
    ``<state_dir>/auth-profiles.json``) with the configured profiles merged in."""
    return JsonFileAuthProfileStore(
        path if path is not None else config.auth_store_path(), profiles=config.auth.profiles
    )
