"""OpenAI OAuth (ChatGPT/Codex) usage probe: ask WHAM why a profile failed.

A detail-less or rate-limit failure of an OpenAI OAuth profile is ambiguous: a short burst, a
subscription window that resets in hours, an expired token or a dead account. One
``GET …/backend-api/wham/usage`` tells them apart; ``apply_wham_cooldown_result`` turns the
answer into the ledger entry. The URL is injectable so tests talk to a local server.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..redaction import package_logger
from .cooldown import (
    MAX_SAFE_INTEGER,
    as_date_timestamp_ms,
    resolve_usage_window_until,
)
from .profiles import AuthProfile, UnresolvedCredentialError, normalize_provider_id
from .state import ProfileUsageStats

if TYPE_CHECKING:
    import httpx

__all__ = [
    "WHAM_BURST_COOLDOWN_MS",
    "WHAM_DEAD_ACCOUNT_COOLDOWN_MS",
    "WHAM_HALF_OPEN_REPROBE_INTERVAL_MS",
    "WHAM_HTTP_ERROR_COOLDOWN_MS",
    "WHAM_PROBE_FAILURE_COOLDOWN_MS",
    "WHAM_TIMEOUT_MS",
    "WHAM_TOKEN_EXPIRED_COOLDOWN_MS",
    "WHAM_USAGE_URL",
    "WhamCooldownProbeResult",
    "WhamProbe",
    "apply_wham_cooldown_result",
    "interpret_wham_usage",
    "is_same_wham_credential",
    "probe_wham_for_cooldown",
]

logger = package_logger(logging.getLogger("openclaw_runtime.auth"))

WHAM_USAGE_URL: Final = "https://chatgpt.com/backend-api/wham/usage"
WHAM_TIMEOUT_MS: Final = 3_000
WHAM_BURST_COOLDOWN_MS: Final = 15_000
WHAM_PROBE_FAILURE_COOLDOWN_MS: Final = 30_000
WHAM_HTTP_ERROR_COOLDOWN_MS: Final = 5 * 60 * 1000
WHAM_TOKEN_EXPIRED_COOLDOWN_MS: Final = 12 * 60 * 60 * 1000
WHAM_DEAD_ACCOUNT_COOLDOWN_MS: Final = 24 * 60 * 60 * 1000
WHAM_HALF_OPEN_REPROBE_INTERVAL_MS: Final = 45 * 60 * 1000

_CLASSIFICATIONS: Final = {"wham_token_expired": "auth", "wham_account_dead": "auth_permanent"}


@dataclass(frozen=True, slots=True)
class WhamCooldownProbeResult:
    """What WHAM said: a cooldown length and label, or a quota block until a reset time."""

    cooldown_ms: float
    reason: str
    available: bool = False
    blocked_until: float | None = None
    blocked_source: str | None = None


@dataclass(frozen=True, slots=True)
class WhamProbe:
    """How to reach WHAM. ``url`` is injectable; ``transport`` lets tests swap httpx's."""

    url: str = WHAM_USAGE_URL
    timeout_ms: float = WHAM_TIMEOUT_MS
    version: str | None = None
    transport: httpx.AsyncBaseTransport | None = None

    def headers(self, access_token: str, account_id: str | None) -> dict[str, str]:
        """Request headers (the bearer token is only ever placed here)."""
        version = (self.version or os.environ.get("OPENCLAW_VERSION", "")).strip()
        headers = {
            "Authorization": f"Bearer {access_token}",
            "Accept": "application/json",
            "originator": "openclaw",
            "User-Agent": f"openclaw/{version or 'dev'}",
        }
        if version:
            headers["version"] = version
        if account_id:
            headers["ChatGPT-Account-Id"] = account_id
        return headers


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _positive_seconds_to_safe_ms(value: object) -> float | None:
    if not _is_number(value) or not math.isfinite(value) or value <= 0:  # type: ignore[arg-type,operator]
        return None
    if not float(value).is_integer():  # type: ignore[arg-type]
        return None
    ms = int(value) * 1000  # type: ignore[call-overload]
    return ms if ms <= MAX_SAFE_INTEGER else None


def _reset_ms(window: object, now_ms: float) -> float | None:
    if not isinstance(window, Mapping):
        return None
    after: Any = window.get("reset_after_seconds")
    if _is_number(after) and math.isfinite(after) and after > 0:
        return _positive_seconds_to_safe_ms(after)
    reset_at: Any = window.get("reset_at")
    if _is_number(reset_at) and math.isfinite(reset_at) and reset_at > 0:
        epoch_ms = math.trunc(reset_at) * 1000
        if epoch_ms > MAX_SAFE_INTEGER or as_date_timestamp_ms(epoch_ms) is None:
            return None
        return max(0, epoch_ms - now_ms)
    return None


def _exhausted(window: object) -> bool:
    used = window.get("used_percent") if isinstance(window, Mapping) else None
    return _is_number(used) and math.isfinite(used) and used >= 100  # type: ignore[arg-type,operator]


def _failed() -> WhamCooldownProbeResult:
    return WhamCooldownProbeResult(WHAM_PROBE_FAILURE_COOLDOWN_MS, "wham_probe_failed")


def interpret_wham_usage(data: object, now_ms: float) -> WhamCooldownProbeResult:
    """Map a 200 response body to a result (pure; see the module docstring)."""
    rate_limit = data.get("rate_limit") if isinstance(data, Mapping) else None
    if not rate_limit or not isinstance(rate_limit, Mapping):
        return _failed()
    if rate_limit.get("limit_reached") is False:
        return WhamCooldownProbeResult(
            WHAM_BURST_COOLDOWN_MS, "wham_burst_contention", available=True
        )
    primary = rate_limit.get("primary_window")
    secondary = rate_limit.get("secondary_window")
    primary_reset = _reset_ms(primary, now_ms)
    secondary_reset = _reset_ms(secondary, now_ms)

    def block(reset_ms: float | None, reason: str) -> WhamCooldownProbeResult:
        if reset_ms is None:
            return _failed()
        return WhamCooldownProbeResult(
            WHAM_BURST_COOLDOWN_MS,
            reason,
            blocked_until=resolve_usage_window_until(now_ms, reset_ms),
            blocked_source="wham",
        )

    if not secondary:
        return block(primary_reset, "wham_personal_rolling")
    if _exhausted(secondary):
        return block(secondary_reset, "wham_team_weekly")
    if _exhausted(primary):
        return block(primary_reset, "wham_team_rolling")
    return _failed()


async def probe_wham_for_cooldown(
    profile: AuthProfile,
    probe: WhamProbe,
    *,
    now_ms: float,
    env: Mapping[str, str] | None = None,
) -> WhamCooldownProbeResult | None:
    """Ask WHAM about ``profile`` (None when it is not an OAuth profile with a token)."""
    if profile.mode != "oauth" or profile.credential is None:
        return None
    try:
        access = profile.credential.resolve(env).get_secret_value()
    except UnresolvedCredentialError:
        return None
    import httpx  # lazy: start-up time (only a probe needs the HTTP client)

    try:
        async with httpx.AsyncClient(
            transport=probe.transport, timeout=probe.timeout_ms / 1000
        ) as client:
            response = await client.get(
                probe.url, headers=probe.headers(access, profile.account_id)
            )
            if response.status_code in (401, 403):
                result = (
                    WhamCooldownProbeResult(WHAM_TOKEN_EXPIRED_COOLDOWN_MS, "wham_token_expired")
                    if response.status_code == 401
                    else WhamCooldownProbeResult(WHAM_DEAD_ACCOUNT_COOLDOWN_MS, "wham_account_dead")
                )
                logger.warning(
                    "WHAM probe classified auth profile %s unavailable: status=%s "
                    "cooldownClassification=%s cooldownMs=%s",
                    profile.id,
                    response.status_code,
                    result.reason,
                    result.cooldown_ms,
                )
                return result
            if not response.is_success:
                return WhamCooldownProbeResult(WHAM_HTTP_ERROR_COOLDOWN_MS, "wham_http_error")
            data: Any = response.json()
    except (httpx.HTTPError, ValueError):
        return _failed()
    return interpret_wham_usage(data, now_ms)


def is_same_wham_credential(expected: AuthProfile, current: AuthProfile | None) -> bool:
    """The probe's answer still belongs to the profile's current credential."""
    return (
        current is not None
        and expected.mode == "oauth"
        and current.mode == "oauth"
        and normalize_provider_id(expected.provider) == normalize_provider_id(current.provider)
        and expected.credential == current.credential
        and expected.account_id == current.account_id
    )


def apply_wham_cooldown_result(
    existing: ProfileUsageStats,
    computed: ProfileUsageStats,
    now_ms: float,
    result: WhamCooldownProbeResult,
) -> ProfileUsageStats:
    """Overlay WHAM's answer on the locally computed entry.

    A quota block replaces the cooldown (keeping a later active block); 401/403 become an
    ``auth``/``auth_permanent`` profile-wide cooldown with its classification; a failed probe
    during a rate limit keeps the local backoff; otherwise the cooldown is the longer of the
    active one and WHAM's.
    """

    def active(value: float | None) -> float:
        return value if _is_number(value) and math.isfinite(value) and value > now_ms else 0  # type: ignore[arg-type,operator,return-value]

    if result.blocked_until:
        return computed.replace(
            last_probe_at=now_ms,
            blocked_until=max(active(existing.blocked_until), result.blocked_until),
            blocked_reason="subscription_limit",
            blocked_source=result.blocked_source or "wham",
            blocked_model=None,
            blocked_scope=None,
            cooldown_until=None,
            cooldown_reason=None,
            cooldown_classification=None,
            cooldown_model=None,
        )
    classification = result.reason if result.reason in _CLASSIFICATIONS else None
    if not classification and not result.available and computed.cooldown_reason == "rate_limit":
        return computed.replace(last_probe_at=now_ms)
    return computed.replace(
        last_probe_at=now_ms,
        cooldown_until=max(
            active(existing.cooldown_until), resolve_usage_window_until(now_ms, result.cooldown_ms)
        ),
        cooldown_reason=_CLASSIFICATIONS[classification]
        if classification
        else computed.cooldown_reason,
        cooldown_classification=classification,
        cooldown_model=None if classification else computed.cooldown_model,
    )
