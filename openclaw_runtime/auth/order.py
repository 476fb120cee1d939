"""Which profiles a run may use, in which order, and why the others were left out.

``resolve_auth_profile_order`` (OpenClaw's ``order.ts``): an explicit order (store over
config) is a hard constraint, but profiles in cooldown move behind the available ones, soonest
expiry first; a preferred profile still leads. Without an explicit order, profiles sort by
type (oauth < token < api_key), live OAuth before expired, least recently used first.
``resolve_auth_profile_eligibility`` says why a profile is (not) usable with a reason code;
``resolve_profiles_unavailable_reason`` names the likeliest reason all candidates are out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .cooldown import (
    ALL_MODELS,
    ModelSelector,
    clear_expired_cooldowns,
    is_active_unusable_window,
    is_profile_in_cooldown,
    resolve_profile_unusable_until,
)
from .profiles import AuthProfile, normalize_provider_id, resolve_provider_id_for_auth
from .state import AUTH_PROFILE_FAILURE_REASONS, AuthProfileStoreState, ProfileUsageStats

__all__ = [
    "AuthCredentialReasonCode",
    "AuthProfileEligibility",
    "AuthProfileEligibilityReasonCode",
    "AuthProfileOrderResolution",
    "TokenExpiryState",
    "dedupe_profile_ids",
    "evaluate_stored_credential_eligibility",
    "is_auth_profile_in_cooldown",
    "prepend_auth_profile_pin",
    "resolve_auth_profile_eligibility",
    "resolve_auth_profile_order",
    "resolve_auth_profile_order_with_metadata",
    "resolve_explicit_auth_order_selection",
    "resolve_profiles_unavailable_reason",
    "resolve_token_expiry_state",
]

AuthCredentialReasonCode = Literal[
    "ok", "missing_credential", "invalid_expires", "expired", "unresolved_ref"
]
AuthProfileEligibilityReasonCode = Literal[
    "ok",
    "missing_credential",
    "invalid_expires",
    "expired",
    "unresolved_ref",
    "profile_missing",
    "provider_mismatch",
    "mode_mismatch",
]
TokenExpiryState = Literal["missing", "valid", "expired", "invalid_expires"]


@dataclass(frozen=True, slots=True)
class AuthProfileEligibility:
    """Whether a profile can serve a provider now, and the reason code either way."""

    eligible: bool
    reason_code: AuthProfileEligibilityReasonCode

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's ``{eligible, reasonCode}``."""
        return {"eligible": self.eligible, "reasonCode": self.reason_code}


@dataclass(frozen=True, slots=True)
class AuthProfileOrderResolution:
    """Ordered usable profile ids, and whether an explicit order owned the selection."""

    profile_ids: tuple[str, ...]
    has_explicit_order: bool


_OK: Final = AuthProfileEligibility(True, "ok")


def resolve_token_expiry_state(expires: object, now_ms: float) -> TokenExpiryState:
    """``missing`` (None), ``invalid_expires`` (not a positive finite number), or by time."""
    if expires is None:
        return "missing"
    if not isinstance(expires, int | float) or isinstance(expires, bool):
        return "invalid_expires"
    if not math.isfinite(expires) or expires <= 0:
        return "invalid_expires"
    return "expired" if now_ms >= expires else "valid"


def evaluate_stored_credential_eligibility(
    profile: AuthProfile,
    now_ms: float,
    *,
    env: Mapping[str, str] | None = None,
    check_refs: bool = True,
) -> AuthProfileEligibility:
    """Whether the credential itself can be used (OpenClaw's ``credential-state.ts``).

    ``api_key`` and ``token`` need a key/token (or a reference to one); a ``token`` must not
    be expired or carry a malformed ``expires``; ``oauth`` needs an access or refresh token (an
    expired OAuth token is refreshable, so expiry does not make it ineligible). With
    ``check_refs``, an env/file reference that cannot be resolved now is ``unresolved_ref``
    (checked without reading the secret).
    """
    if profile.mode == "aws-sdk":
        return _OK
    refs = [ref for ref in (profile.credential, profile.refresh) if ref is not None]
    primary = profile.refresh if profile.mode == "oauth" else None
    if profile.credential is None and primary is None:
        return AuthProfileEligibility(False, "missing_credential")
    if profile.mode == "token":
        expiry = resolve_token_expiry_state(profile.expires, now_ms)
        if expiry == "invalid_expires":
            return AuthProfileEligibility(False, "invalid_expires")
        if expiry == "expired":
            return AuthProfileEligibility(False, "expired")
    if check_refs and not any(ref.is_resolvable(env) for ref in refs):
        return AuthProfileEligibility(False, "unresolved_ref")
    return _OK


# --- config view ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _AuthConfigView:
    profiles: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # id -> (provider, mode)
    order: Mapping[str, Sequence[str]] = field(default_factory=dict)


def _auth_config_view(cfg: Any) -> _AuthConfigView:
    """Config profiles and order from ``AuthSettings``, ``RuntimeConfig`` or OpenClaw's dict."""
    if cfg is None:
        return _AuthConfigView()
    if isinstance(cfg, Mapping):
        auth = cfg.get("auth", cfg)
        auth = auth if isinstance(auth, Mapping) else {}
        raw_profiles = auth.get("profiles") or {}
        profiles: dict[str, tuple[str, str]] = {}
        entries: Iterable[tuple[Any, Any]] = (
            raw_profiles.items()
            if isinstance(raw_profiles, Mapping)
            else ((p.get("id"), p) for p in raw_profiles if isinstance(p, Mapping))
        )
        for profile_id, entry in entries:
            if isinstance(entry, AuthProfile):
                profiles[entry.id] = (entry.provider, entry.mode)
            elif isinstance(entry, Mapping) and isinstance(profile_id, str):
                profiles[profile_id] = (
                    str(entry.get("provider", "")),
                    str(entry.get("mode", entry.get("type", ""))),
                )
        raw_order = auth.get("order") or {}
        order = {
            str(k): [i for i in v if isinstance(i, str)]
            for k, v in raw_order.items()
            if isinstance(v, list | tuple)
        }
        return _AuthConfigView(profiles, order)
    auth = getattr(cfg, "auth", cfg)
    return _AuthConfigView(
        {p.id: (p.provider, p.mode) for p in getattr(auth, "profiles", ())},
        dict(getattr(auth, "order", {}) or {}),
    )


def _find_normalized(entries: Mapping[str, Any], provider: str) -> Any:
    key = normalize_provider_id(provider)
    for name, value in entries.items():
        if normalize_provider_id(name) == key:
            return value
    return None


def resolve_explicit_auth_order_selection(
    store_order: Mapping[str, Sequence[str]] | None,
    configured_order: Mapping[str, Sequence[str]] | None,
    provider: str,
) -> tuple[list[str] | None, bool]:
    """The explicit order for ``provider`` (store wins over config) and whether from store."""
    stored = _find_normalized(store_order or {}, resolve_provider_id_for_auth(provider))
    if stored is not None:
        return list(stored), True
    configured = _find_normalized(configured_order or {}, resolve_provider_id_for_auth(provider))
    return (list(configured) if configured is not None else None), False


# --- eligibility ---------------------------------------------------------------------------------


def resolve_auth_profile_eligibility(
    *,
    store: AuthProfileStoreState,
    provider: str,
    profile_id: str,
    now_ms: float,
    cfg: Any = None,
    env: Mapping[str, str] | None = None,
    check_refs: bool = True,
) -> AuthProfileEligibility:
    """Whether ``profile_id`` can authenticate ``provider`` now, with a reason code.

    ``profile_missing`` (unknown id; a configured ``aws-sdk`` profile needs no stored
    credential), ``provider_mismatch`` (stored or configured provider differs),
    ``mode_mismatch`` (configured mode differs from the credential type; an ``oauth`` config
    accepts a ``token`` credential), then the credential's own state.
    """
    view = _auth_config_view(cfg)
    provider_key = resolve_provider_id_for_auth(provider)
    configured = view.profiles.get(profile_id)
    credential = store.profiles.get(profile_id)
    if credential is None:
        if (
            configured is not None
            and configured[1] == "aws-sdk"
            and resolve_provider_id_for_auth(configured[0]) == provider_key
        ):
            return _OK
        return AuthProfileEligibility(False, "profile_missing")
    if resolve_provider_id_for_auth(credential.provider) != provider_key:
        return AuthProfileEligibility(False, "provider_mismatch")
    if configured is not None:
        if resolve_provider_id_for_auth(configured[0]) != provider_key:
            return AuthProfileEligibility(False, "provider_mismatch")
        if configured[1] != credential.mode and not (
            configured[1] == "oauth" and credential.mode == "token"
        ):
            return AuthProfileEligibility(False, "mode_mismatch")
    return evaluate_stored_credential_eligibility(
        credential, now_ms, env=env, check_refs=check_refs
    )


def is_auth_profile_in_cooldown(
    store: AuthProfileStoreState,
    profile_id: str,
    *,
    now_ms: float,
    model_id: ModelSelector = None,
) -> bool:
    """OpenClaw's store-level ``isProfileInCooldown(store, profileId, now, forModel)``."""
    profile = store.profiles.get(profile_id)
    return is_profile_in_cooldown(
        store.stats_for(profile_id),
        model_id,
        now_ms,
        provider=profile.provider if profile is not None else None,
    )


# --- order ---------------------------------------------------------------------------------------


def dedupe_profile_ids(profile_ids: Iterable[str]) -> list[str]:
    """First occurrence of each id, in order."""
    return list(dict.fromkeys(profile_ids))


def prepend_auth_profile_pin(
    resolution: AuthProfileOrderResolution, profile_id: str | None
) -> AuthProfileOrderResolution:
    """A session pin leads the order without dropping the other candidates."""
    if not profile_id:
        return resolution
    rest = tuple(pid for pid in resolution.profile_ids if pid != profile_id)
    return AuthProfileOrderResolution((profile_id, *rest), resolution.has_explicit_order)


def _type_score(profile: AuthProfile | None) -> int:
    kind = profile.mode if profile is not None else None
    return {"oauth": 0, "token": 1, "api_key": 2}.get(kind or "", 3)


def resolve_auth_profile_order_with_metadata(
    *,
    store: AuthProfileStoreState,
    provider: str,
    now_ms: float,
    cfg: Any = None,
    preferred_profile: str | None = None,
    for_model: str | None = None,
    cooldown_scope: Literal["all-models"] | None = None,
    readiness_mode: Literal["execution", "read-only"] = "execution",
    env: Mapping[str, str] | None = None,
) -> AuthProfileOrderResolution:
    """Ordered usable profiles for ``provider`` plus whether an explicit order owned them.

    Expired windows are cleared first (in this snapshot) so a profile whose cooldown just
    ended gets a fresh counter instead of an immediate longer penalty. ``cfg`` is
    ``AuthSettings``, a ``RuntimeConfig`` or OpenClaw's ``{"auth": {"profiles", "order"}}``.
    """
    view = _auth_config_view(cfg)
    if not (view.profiles or view.order or store.profiles or store.order):
        # no profile and no order anywhere (most runs without profiles): nothing to order
        return AuthProfileOrderResolution((), False)
    return _walk_auth_profile_order(
        view,
        store=store,
        provider=provider,
        now_ms=now_ms,
        cfg=cfg,
        preferred_profile=preferred_profile,
        for_model=for_model,
        cooldown_scope=cooldown_scope,
        readiness_mode=readiness_mode,
        env=env,
    )


def _walk_auth_profile_order(
    view: _AuthConfigView,
    *,
    store: AuthProfileStoreState,
    provider: str,
    now_ms: float,
    cfg: Any,
    preferred_profile: str | None,
    for_model: str | None,
    cooldown_scope: Literal["all-models"] | None,
    readiness_mode: Literal["execution", "read-only"],
    env: Mapping[str, str] | None,
) -> AuthProfileOrderResolution:
    """``resolve_auth_profile_order_with_metadata``'s walk (every case but "nothing at all",
    which it answers itself; the equivalence test compares the two on that case)."""
    auth_key = resolve_provider_id_for_auth(provider)
    state = clear_expired_cooldowns(store, now_ms)
    explicit_order, from_store = resolve_explicit_auth_order_selection(
        state.order, view.order, provider
    )
    explicit_profiles = [
        pid
        for pid, (prov, _) in view.profiles.items()
        if resolve_provider_id_for_auth(prov) == auth_key
    ]
    store_profiles = [
        pid
        for pid, profile in state.profiles.items()
        if resolve_provider_id_for_auth(profile.provider) == auth_key
    ]
    base = explicit_order if explicit_order is not None else (explicit_profiles or store_profiles)
    if not base:
        return AuthProfileOrderResolution((), explicit_order is not None)

    def valid(profile_id: str) -> bool:
        eligibility = resolve_auth_profile_eligibility(
            store=state, provider=provider, profile_id=profile_id, now_ms=now_ms, cfg=cfg, env=env
        )
        return eligibility.eligible or (
            readiness_mode == "read-only" and eligibility.reason_code == "unresolved_ref"
        )

    filtered = [pid for pid in base if valid(pid)]
    repaired = False
    # repair drift from older setups: configured/stored ids that no longer exist in the store
    if (
        not filtered
        and all(pid not in state.profiles for pid in base)
        and (from_store or explicit_profiles)
    ):
        filtered = [pid for pid in store_profiles if valid(pid)]
        repaired = True

    candidates = dedupe_profile_ids(filtered)
    model: ModelSelector = ALL_MODELS if cooldown_scope == "all-models" else for_model

    def in_cooldown(profile_id: str) -> bool:
        return is_auth_profile_in_cooldown(state, profile_id, now_ms=now_ms, model_id=model)

    def unusable_until(profile_id: str) -> float:
        stats = state.stats_for(profile_id) or ProfileUsageStats()
        until = resolve_profile_unusable_until(stats, model)
        return until if until is not None else now_ms

    available = [pid for pid in candidates if not in_cooldown(pid)]
    cooling = sorted((pid for pid in candidates if in_cooldown(pid)), key=unusable_until)

    if explicit_order and not repaired:
        ordered = [*available, *cooling]
        has_explicit = True
    else:

        def sort_key(profile_id: str) -> tuple[int, int, float]:
            profile = state.profiles.get(profile_id)
            expired_oauth = (
                profile is not None
                and profile.mode == "oauth"
                and resolve_token_expiry_state(profile.expires, now_ms) == "expired"
            )
            stats = state.stats_for(profile_id)
            last_used = stats.last_used if stats and stats.last_used is not None else 0
            return (_type_score(profile), 1 if expired_oauth else 0, last_used)

        ordered = [*sorted(available, key=sort_key), *cooling]
        has_explicit = explicit_order is not None

    if preferred_profile and preferred_profile in ordered:
        ordered = [preferred_profile, *(pid for pid in ordered if pid != preferred_profile)]
    return AuthProfileOrderResolution(tuple(ordered), has_explicit)


def resolve_auth_profile_order(
    *,
    store: AuthProfileStoreState,
    provider: str,
    now_ms: float,
    cfg: Any = None,
    preferred_profile: str | None = None,
    for_model: str | None = None,
    cooldown_scope: Literal["all-models"] | None = None,
    readiness_mode: Literal["execution", "read-only"] = "execution",
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """The ordered profile ids a run should try for ``provider`` (see the module docstring)."""
    return list(
        resolve_auth_profile_order_with_metadata(
            store=store,
            provider=provider,
            now_ms=now_ms,
            cfg=cfg,
            preferred_profile=preferred_profile,
            for_model=for_model,
            cooldown_scope=cooldown_scope,
            readiness_mode=readiness_mode,
            env=env,
        ).profile_ids
    )


# --- why everything is unavailable --------------------------------------------------------------

_REASON_SET: Final = frozenset(AUTH_PROFILE_FAILURE_REASONS)


def resolve_profiles_unavailable_reason(
    *, store: AuthProfileStoreState, profile_ids: Iterable[str], now_ms: float
) -> str | None:
    """The most likely reason every candidate is unavailable, or None.

    An active disable scores 1000 for its reason, an active block 1000 for ``rate_limit``, an
    active cooldown 1000 for its ``cooldownReason``, else each recorded failure count adds its
    count, else ``unknown`` gets 1. The highest score wins; ties go to the earlier reason in
    ``AUTH_PROFILE_FAILURE_REASONS`` (``auth_permanent`` first).
    """
    scores: dict[str, float] = {}

    def add(reason: str, value: float) -> None:
        if reason in _REASON_SET and value > 0 and math.isfinite(value):
            scores[reason] = scores.get(reason, 0) + value

    for profile_id in profile_ids:
        stats = store.stats_for(profile_id)
        if stats is None:
            continue
        if (
            is_active_unusable_window(stats.disabled_until, now_ms)
            and stats.disabled_reason in _REASON_SET
        ):
            add(stats.disabled_reason, 1_000)
            continue
        if is_active_unusable_window(stats.blocked_until, now_ms):
            add("rate_limit", 1_000)
            continue
        if not is_active_unusable_window(stats.cooldown_until, now_ms):
            continue
        if stats.cooldown_reason in _REASON_SET:
            add(stats.cooldown_reason, 1_000)
            continue
        recorded = False
        for reason, count in (stats.failure_counts or {}).items():
            if reason in _REASON_SET and count > 0:
                add(reason, count)
                recorded = True
        if not recorded:
            add("unknown", 1)

    best: str | None = None
    best_score = -1.0
    for reason in AUTH_PROFILE_FAILURE_REASONS:
        score = scores.get(reason)
        if score is not None and score > best_score:
            best, best_score = reason, score
    return best
