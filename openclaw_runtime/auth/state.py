"""The shared health ledger of auth profiles, in OpenClaw's on-disk shape.

``ProfileUsageStats`` is one profile's entry under ``usageStats`` in ``auth-profiles.json``
(``errorCount``, ``failureCounts``, ``cooldownUntil``/``Reason``/``Model``, ``disabledUntil``,
``blockedUntil``, ``lastUsed``, ``lastFailureAt``...). ``AuthProfileStoreState`` is a whole
store snapshot: profiles, explicit ``order``, ``lastGood`` and ``usageStats``.

Both are immutable: policy functions return new values, stores persist them. Unknown keys and
values of an unexpected type are kept aside in ``extra`` and written back unchanged, so a file
shared with OpenClaw survives a round trip.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Final

from .profiles import AuthProfile, resolve_provider_id_for_auth

__all__ = [
    "AUTH_PROFILE_FAILURE_REASONS",
    "AuthProfileStoreState",
    "ProfileUsageStats",
    "check_auth_profile_failure_reason",
    "usage_stats_from_json",
    "usage_stats_to_json",
]

#: ``AuthProfileFailureReason`` in OpenClaw's priority order (``FAILURE_REASON_PRIORITY``):
#: what may be recorded against a profile. ``server_error``, ``tls_certificate`` and
#: ``context_overflow`` are failover reasons that never reach the ledger.
AUTH_PROFILE_FAILURE_REASONS: Final[tuple[str, ...]] = (
    "auth_permanent",
    "auth",
    "session_expired",
    "billing",
    "format",
    "model_not_found",
    "overloaded",
    "timeout",
    "rate_limit",
    "empty_response",
    "no_error_details",
    "unclassified",
    "unknown",
)
_REASON_SET: Final = frozenset(AUTH_PROFILE_FAILURE_REASONS)


def check_auth_profile_failure_reason(reason: object) -> str:
    """``reason`` as a plain string, or a ``ValueError`` naming it and the allowed values."""
    value = str(reason.value) if hasattr(reason, "value") else reason
    if not isinstance(value, str) or value not in _REASON_SET:
        raise ValueError(
            f"unknown auth profile failure reason {reason!r}; expected one of "
            + ", ".join(AUTH_PROFILE_FAILURE_REASONS)
        )
    return value


# field name -> (JSON key, kind)
_NUMBER, _INT, _TEXT, _COUNTS = "number", "int", "text", "counts"
_FIELDS: Final[dict[str, tuple[str, str]]] = {
    "last_used": ("lastUsed", _NUMBER),
    "blocked_until": ("blockedUntil", _NUMBER),
    "blocked_reason": ("blockedReason", _TEXT),
    "blocked_source": ("blockedSource", _TEXT),
    "blocked_model": ("blockedModel", _TEXT),
    "blocked_scope": ("blockedScope", _TEXT),
    "cooldown_until": ("cooldownUntil", _NUMBER),
    "cooldown_reason": ("cooldownReason", _TEXT),
    "cooldown_classification": ("cooldownClassification", _TEXT),
    "cooldown_model": ("cooldownModel", _TEXT),
    "disabled_until": ("disabledUntil", _NUMBER),
    "disabled_reason": ("disabledReason", _TEXT),
    "error_count": ("errorCount", _INT),
    "failure_counts": ("failureCounts", _COUNTS),
    "last_failure_at": ("lastFailureAt", _NUMBER),
    "last_probe_at": ("lastProbeAt", _NUMBER),
}
_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_number(value: float) -> float | int:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True, slots=True)
class ProfileUsageStats:
    """One profile's ledger entry. Times are ms since the epoch; ``None`` means absent."""

    last_used: float | None = None
    blocked_until: float | None = None
    blocked_reason: str | None = None
    blocked_source: str | None = None
    blocked_model: str | None = None
    blocked_scope: str | None = None
    cooldown_until: float | None = None
    cooldown_reason: str | None = None
    cooldown_classification: str | None = None
    cooldown_model: str | None = None
    disabled_until: float | None = None
    disabled_reason: str | None = None
    error_count: int | None = None
    failure_counts: Mapping[str, int] | None = None
    last_failure_at: float | None = None
    last_probe_at: float | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    def __post_init__(self) -> None:
        if self.failure_counts is not None and not isinstance(
            self.failure_counts, MappingProxyType
        ):
            object.__setattr__(self, "failure_counts", MappingProxyType(dict(self.failure_counts)))

    def replace(self, **changes: Any) -> ProfileUsageStats:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    def failure_count(self, reason: str) -> int:
        """How many failures of ``reason`` are recorded (0 when none)."""
        return int((self.failure_counts or {}).get(reason, 0))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProfileUsageStats:
        """Parse OpenClaw's camelCase entry; values of the wrong type go to ``extra``."""
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        json_to_field = {key: (name, kind) for name, (key, kind) in _FIELDS.items()}
        for key, value in data.items():
            if key not in json_to_field:
                extra[key] = value
                continue
            name, kind = json_to_field[key]
            if value is None:
                continue
            if kind in (_NUMBER, _INT) and _is_number(value):
                known[name] = int(value) if kind == _INT and float(value).is_integer() else value
            elif kind == _TEXT and isinstance(value, str):
                known[name] = value
            elif kind == _COUNTS and isinstance(value, Mapping):
                counts = {str(k): v for k, v in value.items() if _is_number(v)}
                known[name] = {k: int(v) if float(v).is_integer() else v for k, v in counts.items()}
            else:
                extra[key] = value
        return cls(**known, extra=MappingProxyType(extra) if extra else _EMPTY)

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's camelCase entry; absent fields are omitted (like ``undefined``)."""
        out: dict[str, Any] = dict(self.extra)
        for name, (key, kind) in _FIELDS.items():
            value = getattr(self, name)
            if value is None:
                continue
            if kind == _COUNTS:
                out[key] = {k: _json_number(v) for k, v in value.items()}
            elif kind in (_NUMBER, _INT):
                out[key] = _json_number(value)
            else:
                out[key] = value
        return out

    def is_empty(self) -> bool:
        """No field set at all."""
        return not self.extra and all(
            getattr(self, f.name) is None for f in fields(self) if f.name != "extra"
        )


def usage_stats_from_json(data: object) -> dict[str, ProfileUsageStats]:
    """Parse a ``usageStats`` object (non-object entries are skipped)."""
    if not isinstance(data, Mapping):
        return {}
    return {
        str(profile_id): ProfileUsageStats.from_dict(entry)
        for profile_id, entry in data.items()
        if isinstance(entry, Mapping)
    }


def usage_stats_to_json(stats: Mapping[str, ProfileUsageStats]) -> dict[str, Any]:
    """The ``usageStats`` object for ``stats``."""
    return {profile_id: entry.to_dict() for profile_id, entry in stats.items()}


def _frozen_map(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if value is None:
        return _EMPTY
    if isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True)
class AuthProfileStoreState:
    """A snapshot of one auth-profile store.

    ``profiles`` holds every known profile (stored and configured); ``order`` is the explicit
    per-provider order kept in the store (it wins over config); ``last_good`` maps a provider
    to the profile that last succeeded; ``usage_stats`` is the health ledger.
    """

    version: int = 1
    profiles: Mapping[str, AuthProfile] = field(default_factory=lambda: _EMPTY)
    order: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _EMPTY)
    last_good: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    usage_stats: Mapping[str, ProfileUsageStats] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        object.__setattr__(self, "profiles", _frozen_map(self.profiles))
        if not isinstance(self.order, MappingProxyType):
            object.__setattr__(
                self, "order", _frozen_map({k: tuple(v) for k, v in self.order.items()})
            )
        object.__setattr__(self, "last_good", _frozen_map(self.last_good))
        object.__setattr__(self, "usage_stats", _frozen_map(self.usage_stats))

    @classmethod
    def of(
        cls,
        profiles: Mapping[str, AuthProfile] | list[AuthProfile] | tuple[AuthProfile, ...] = (),
        *,
        usage_stats: Mapping[str, ProfileUsageStats | Mapping[str, Any]] | None = None,
        order: Mapping[str, list[str] | tuple[str, ...]] | None = None,
        last_good: Mapping[str, str] | None = None,
    ) -> AuthProfileStoreState:
        """Build a snapshot from profiles and (camelCase dict or parsed) usage entries."""
        by_id = (
            dict(profiles)
            if isinstance(profiles, Mapping)
            else {profile.id: profile for profile in profiles}
        )
        stats = {
            profile_id: entry
            if isinstance(entry, ProfileUsageStats)
            else ProfileUsageStats.from_dict(entry)
            for profile_id, entry in (usage_stats or {}).items()
        }
        return cls(
            profiles=by_id,
            usage_stats=stats,
            order={k: tuple(v) for k, v in (order or {}).items()},
            last_good=dict(last_good or {}),
        )

    def stats_for(self, profile_id: str) -> ProfileUsageStats | None:
        """The ledger entry of ``profile_id``, if any."""
        return self.usage_stats.get(profile_id)

    def with_usage_stats(self, profile_id: str, stats: ProfileUsageStats) -> AuthProfileStoreState:
        """A copy whose entry for ``profile_id`` is ``stats``."""
        return replace(self, usage_stats={**self.usage_stats, profile_id: stats})

    def with_last_good(self, provider_key: str, profile_id: str) -> AuthProfileStoreState:
        """A copy where ``profile_id`` is the last good profile of ``provider_key``.

        Other keys that normalize to the same provider are dropped, as OpenClaw's
        ``replaceProviderAuthState`` does.
        """
        canonical = resolve_provider_id_for_auth(provider_key)
        kept = {
            key: value
            for key, value in self.last_good.items()
            if resolve_provider_id_for_auth(key) != canonical
        }
        kept[canonical] = profile_id
        return replace(self, last_good=kept)

    def replace(self, **changes: Any) -> AuthProfileStoreState:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)
