"""``openclaw-runtime profiles``: each auth profile's health from the shared ledger.

Healthy, cooling down (a cooldown or a quota block) or disabled — with the reason and until
when, never the secret. ``profile_rows`` is also what ``doctor`` reads the ledger with.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import anyio
import click

from .._runtime import Runtime
from ..auth.cooldown import is_active_unusable_window, is_auth_cooldown_bypassed_for_provider
from ..auth.json_file import open_auth_profile_store
from ..auth.profiles import AuthProfile
from ..auth.state import AuthProfileStoreState
from ..config import RuntimeConfig
from ._common import EXIT_FAILED, command_errors, load_config, safe, safe_json

__all__ = ["profile_rows", "profiles"]


def _iso_ms(ms: float) -> str:
    """``Date.toISOString()`` of a ms timestamp (UTC, millisecond precision)."""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _profile_status(
    state: AuthProfileStoreState, profile_id: str, provider: str, now_ms: float
) -> dict[str, Any]:
    """``healthy``, ``cooling_down`` (cooldown or quota block) or ``disabled``, with details."""
    stats = state.stats_for(profile_id)
    status: dict[str, Any] = {"status": "healthy", "until_ms": None, "reason": None, "model": None}
    if stats is None or is_auth_cooldown_bypassed_for_provider(provider):
        return status
    if is_active_unusable_window(stats.disabled_until, now_ms):
        return {
            "status": "disabled",
            "until_ms": stats.disabled_until,
            "reason": stats.disabled_reason or "unknown",
            "model": None,
        }
    windows = []
    if is_active_unusable_window(stats.cooldown_until, now_ms):
        windows.append(
            (stats.cooldown_until, stats.cooldown_reason or "unknown", stats.cooldown_model)
        )
    if is_active_unusable_window(stats.blocked_until, now_ms):
        model = stats.blocked_model if stats.blocked_scope == "model" else None
        windows.append((stats.blocked_until, stats.blocked_reason or "rate_limit", model))
    if windows:
        until, reason, model = max(windows, key=lambda w: w[0] or 0)
        return {"status": "cooling_down", "until_ms": until, "reason": reason, "model": model}
    return status


def _describe_status(status: dict[str, Any]) -> str:
    if status["status"] == "healthy":
        return "healthy"
    until = _iso_ms(status["until_ms"])
    if status["status"] == "disabled":
        return f"disabled until {until} ({status['reason']})"
    model = f", model {status['model']}" if status["model"] else ""
    return f"cooling down until {until} ({status['reason']}{model})"


def profile_rows(config: RuntimeConfig, state: AuthProfileStoreState) -> list[dict[str, Any]]:
    """One row per configured or stored profile: provider, mode, credential source (never the
    value), health and failure counts."""
    now_ms = time.time_ns() // 1_000_000
    configured = {p.id: p for p in config.auth.profiles}
    ids = list(dict.fromkeys([*configured, *state.profiles]))
    rows = []
    for profile_id in ids:
        profile: AuthProfile = state.profiles.get(profile_id) or configured[profile_id]
        stats = state.stats_for(profile_id)
        status = _profile_status(state, profile_id, profile.provider, now_ms)
        rows.append(
            {
                "id": profile_id,
                "provider": profile.provider,
                "mode": profile.mode,
                "credential": profile.credential_source(),
                **status,
                "until": _iso_ms(status["until_ms"]) if status["until_ms"] else None,
                "description": _describe_status(status),
                "error_count": (stats.error_count or 0) if stats else 0,
                "failure_counts": dict(stats.failure_counts or {}) if stats else {},
                "last_used_ms": stats.last_used if stats else None,
            }
        )
    return rows


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the profiles as JSON.")
@click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Auth-profile store file (default: [auth] store_path or <state_dir>/auth-profiles.json).",
)
@click.pass_context
@command_errors(usage_exit=EXIT_FAILED)
def profiles(ctx: click.Context, as_json: bool, store_path: str | None) -> None:
    """Show each auth profile's health: healthy, cooling down or disabled (never secrets)."""
    config = load_config(ctx)
    if store_path is None and config.backends.selected("auth_store") is not None:
        # the ledger lives in a backend (Redis...): every worker sees the same health
        where = f"the {config.backends.selected('auth_store')!r} auth store"
        rows = profile_rows(config, anyio.run(_load_backend_ledger, config))
    else:
        store = open_auth_profile_store(config, path=store_path)
        where = str(store.path)
        rows = profile_rows(config, store.load_sync())
    if as_json:
        click.echo(safe_json(rows, indent=2))
        return
    if not rows:
        click.echo(f"no auth profiles (store: {where})")
        return
    width = max(len(row["id"]) for row in rows)
    for row in rows:
        label = f"{row['provider']}/{row['mode']}"
        click.echo(safe(f"{row['id']:<{width}}  {label:<20}  {row['description']}"))


async def _load_backend_ledger(config: RuntimeConfig) -> AuthProfileStoreState:
    """The ledger as the configured ``[backends] auth_store`` holds it."""
    async with Runtime(config) as runtime:
        return await runtime.auth_store.load()
