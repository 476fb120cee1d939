"""``openclaw-runtime doctor``: is this setup able to run? One row per check, ok/warn/fail.

It checks what a first run would trip over, in the order it would trip: the config, the
state directory, the plugins (load errors, hook faults recorded by any process, quarantines,
component-name clashes, a damaged fault record set aside, their ``[plugins.settings.*]``
tables), the default model and fallbacks
(registered, with a provider that speaks their API, with a key), the context engine, and
every auth profile's credential (resolvable or not — never the value), and state files that
were found damaged and set aside (``*.corrupt-*``; a warning each). Exit 1 on any fail.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio
import click

from .._exceptions import OpenClawRuntimeError
from .._files import find_set_aside_files
from .._runtime import Runtime
from ..auth.profiles import AuthProfile
from ..config import CONFIG_FILENAME, ENV_CONFIG, ENV_MODEL, ENV_STATE_DIR, RuntimeConfig
from ..llm import Model
from ..providers.api_names import OPENAI_COMPLETIONS_API
from ..providers.keys import api_key_env_names, is_local_base_url, resolve_env_api_key
from ..runner.entry import BUILTIN_DEFAULT_MODEL
from ._common import EXIT_FAILED, load_config, safe, safe_json
from .profiles import profile_rows

__all__ = ["Check", "doctor", "run_checks"]

Status = Literal["ok", "warn", "fail"]
#: APIs served in-process: they need no key.
_KEYLESS_APIS = frozenset({"echo", "fake", "scripted"})


@dataclass(frozen=True, slots=True)
class Check:
    """One row of the report."""

    status: Status
    check: str
    detail: str


def _config_source(ctx: click.Context) -> str:
    obj = ctx.find_root().obj or {}
    path = obj.get("config_path") or os.environ.get(ENV_CONFIG)
    if path:
        return str(path)
    return f"./{CONFIG_FILENAME}" if Path(CONFIG_FILENAME).exists() else "defaults (no file)"


def _state_dir(config: RuntimeConfig) -> Check:
    path = config.state_dir.expanduser()
    if path.is_dir():
        try:
            with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-"):
                pass
        except OSError as exc:
            return Check("fail", "state dir", f"{path} is not writable ({exc.strerror})")
        return Check("ok", "state dir", f"{path} (writable)")
    if path.exists():
        return Check("fail", "state dir", f"{path} is not a directory")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return Check("fail", "state dir", f"{path} cannot be created ({parent} is a file)")
    if os.access(parent, os.W_OK):
        return Check("ok", "state dir", f"{path} (will be created)")
    return Check("fail", "state dir", f"{path} cannot be created ({parent} is not writable)")


def _plugins(runtime: Runtime) -> list[Check]:
    rows = []
    clashes: dict[str, Check] = {}
    for plugin in runtime.describe_plugins():
        name = plugin["name"]
        if plugin["load_error"]:
            rows.append(Check("fail", "plugin", f"{name}: {plugin['load_error']}"))
            continue
        if plugin["status"] == "blocked":
            rows.append(Check("ok", "plugin", f"{name}: disabled by policy"))
            continue
        if plugin["status"] != "not loaded":
            origin = plugin["distribution"] or plugin["source"]
            version = f" {plugin['version']}" if plugin["version"] else ""
            rows.append(Check("ok", "plugin", f"{name} ({origin}{version})"))
        rows.extend(_fault_rows(name, plugin))
        for clash in plugin["clashes"]:
            clashes.setdefault(clash["message"], Check("warn", "plugin clash", clash["message"]))
    rows.extend(clashes.values())
    for damaged in runtime.fault_record.damaged_files():
        rows.append(Check("warn", "plugin faults", f"damaged fault record kept aside as {damaged}"))
    return rows


def _plugin_settings(runtime: Runtime) -> list[Check]:
    """One row per ``[plugins.settings.<name>]`` table: its validated values (credentials
    masked), or a warning when no loaded plugin declares it. Invalid tables never get here:
    the runtime refuses them and the ``plugins`` row names the plugin and the key."""
    rows = []
    for name, entry in runtime.describe_plugin_settings().items():
        if entry["plugin"] is None:
            detail = f"[plugins.settings.{name}] is set but no loaded plugin declares it"
            rows.append(Check("warn", "plugin settings", detail))
            continue
        values = ", ".join(f"{k}={v!r}" for k, v in entry["values"].items()) or "no keys"
        rows.append(Check("ok", "plugin settings", f"{name} ({entry['plugin']}): {values}"))
    return rows


def _fault_rows(name: str, plugin: dict[str, Any]) -> list[Check]:
    """Recorded faults (every process) and current quarantines of one plugin, as warnings."""
    rows = []
    for entry in plugin["faults"]:
        where = entry["hook"] if entry["unit"] == entry["hook"] else entry["unit"]
        when = datetime.fromtimestamp(entry["lastAt"], UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        quarantined = f", quarantined {entry['quarantines']}x" if entry.get("quarantines") else ""
        rows.append(
            Check(
                "warn",
                "plugin",
                f"{name} failed in {where} {entry['count']}x{quarantined}, last {when}: "
                f"{entry['error']} (clear: openclaw-runtime plugins --clear-faults)",
            )
        )
    if not plugin["faults"]:  # the record could not be written: this process's faults
        for fault in plugin["hook_errors"]:
            rows.append(
                Check("warn", "plugin", f"{name} failed in {fault['hook']}: {fault['error']}")
            )
    for quarantine in plugin["quarantines"]:
        unit = quarantine.get("unit") or f"context engine {quarantine.get('engineId')}"
        rows.append(Check("warn", "plugin", f"{name}: {unit} is quarantined in this process"))
    return rows


def _model(runtime: Runtime, label: str, name: str) -> tuple[Check, Model | None]:
    aliases = {**runtime.models.aliases(), **runtime.config.agent.model_aliases}
    ref = aliases.get(name, name)
    try:
        model = runtime.resolve_model(ref)
    except OpenClawRuntimeError as exc:
        return Check("fail", label, f"{name}: {exc}"), None
    try:
        runtime.components.providers.get(model.api)
    except OpenClawRuntimeError:
        return Check("fail", label, f"{model.ref}: no provider speaks api {model.api!r}"), None
    where = f", {model.base_url}" if model.base_url else ""
    return Check("ok", label, f"{model.ref} ({model.api}{where})"), model


def _key(runtime: Runtime, model: Model, profiles: list[AuthProfile]) -> Check | None:
    if model.api in _KEYLESS_APIS:
        return None
    label = f"key for {model.provider}"
    own = [p.id for p in profiles if p.provider == model.provider]
    if own:
        return Check("ok", label, f"auth profiles: {', '.join(own)}")
    names = api_key_env_names(model.provider)
    if resolve_env_api_key(model.provider, runtime.env) is not None:
        found = next(n for n in names if (runtime.env or os.environ).get(n, "").strip())
        return Check("ok", label, f"${found}")
    if model.base_url and is_local_base_url(model.base_url):
        return Check("ok", label, "local endpoint: no key needed")
    status: Status = "fail" if model.api == OPENAI_COMPLETIONS_API else "warn"
    wanted = " or ".join(f"${n}" for n in names)
    return Check(status, label, f"no key found: set {wanted} or add an [[auth.profiles]] entry")


def _models(runtime: Runtime, profiles: list[AuthProfile]) -> list[Check]:
    agent = runtime.config.agent
    rows: list[Check] = []
    models: list[Model] = []
    if agent.model:
        row, model = _model(runtime, "default model", agent.model)
    else:
        row, model = _model(runtime, "default model", BUILTIN_DEFAULT_MODEL)
        row = Check(
            row.status if row.status == "fail" else "warn",
            row.check,
            f"{row.detail}: no [agent] model configured, runs use the offline echo model",
        )
    rows.append(row)
    models += [model] if model is not None else []
    for name in agent.fallbacks:
        row, model = _model(runtime, "fallback model", name)
        rows.append(row)
        models += [model] if model is not None else []
    if agent.compaction_model:
        row, model = _model(runtime, "compaction model", agent.compaction_model)
        rows.append(row)
        models += [model] if model is not None else []
    seen: set[str] = set()
    for model in models:
        if model.provider in seen:
            continue
        seen.add(model.provider)
        key = _key(runtime, model, profiles)
        if key is not None:
            rows.append(key)
    return rows


async def _context_engine(runtime: Runtime) -> Check:
    name = runtime.config.context_engine
    try:
        runtime.components.context_engines.get(name)
    except OpenClawRuntimeError as exc:
        # checked first: resolving would quarantine it and quietly fall back to "legacy"
        return Check("fail", "context engine", str(exc))
    try:
        await runtime.resolve_context_engine()
    except Exception as exc:  # any failure here is exactly what doctor must report
        return Check("fail", "context engine", f"{name}: {type(exc).__name__}: {exc}")
    for quarantine in runtime.context_engines.list_quarantines():
        if quarantine.engine_id == name:
            detail = f"{name}: failed in {quarantine.operation} ({quarantine.reason})"
            return Check("fail", "context engine", detail + ", runs fall back to legacy")
    return Check("ok", "context engine", name)


def _auth(runtime: Runtime) -> tuple[list[Check], list[AuthProfile]]:
    config = runtime.config
    rows: list[Check] = []
    state = None
    store = runtime.auth_store
    load = getattr(store, "load_sync", None)
    path = Path(getattr(store, "path", config.auth_store_path()))
    if load is None:  # a backend ([backends] auth_store, e.g. Redis): reading it is the check
        where = f"{config.backends.selected('auth_store')!r} auth store backend"
        try:
            state = anyio.run(store.load)
        except Exception as exc:
            rows.append(Check("fail", "auth store", f"{where}: {safe(exc)}"))
        else:
            rows.append(Check("ok", "auth store", f"{where}, {len(state.profiles)} profile(s)"))
    else:
        try:
            state = load()
        except OpenClawRuntimeError as exc:
            rows.append(Check("fail", "auth store", safe(exc)))
        else:
            where = f"{path}" if path.exists() else f"{path} (not created yet)"
            rows.append(Check("ok", "auth store", f"{where}, {len(state.profiles)} profile(s)"))
    profiles = {p.id: p for p in config.auth.profiles}
    if state is not None:
        profiles.update({pid: p for pid, p in state.profiles.items() if pid not in profiles})
    health = {row["id"]: row for row in profile_rows(config, state)} if state is not None else {}
    for profile in profiles.values():
        label = f"profile {profile.id}"
        source = profile.credential_source()
        if profile.mode == "aws-sdk":
            rows.append(Check("ok", label, f"{profile.provider} · aws-sdk credentials chain"))
            continue
        if profile.credential is None:
            rows.append(Check("fail", label, f"{profile.provider} · no credential configured"))
            continue
        if not profile.credential.is_resolvable(runtime.env):
            rows.append(
                Check(
                    "fail",
                    label,
                    f"{profile.provider} · {source} cannot be resolved"
                    + _why_unresolvable(profile),
                )
            )
            continue
        row = health.get(profile.id)
        if row is not None and row["status"] != "healthy":
            rows.append(
                Check("warn", label, f"{profile.provider} · {source} · {row['description']}")
            )
        else:
            rows.append(Check("ok", label, f"{profile.provider} · {source}"))
    return rows, list(profiles.values())


def _set_aside(runtime: Runtime) -> list[Check]:
    """One warning per damaged state file kept aside, and one for transcript lines kept aside."""
    state = runtime.config.state_dir.expanduser()
    sessions = state / "sessions"
    folders = [state, sessions, state / "subagents", runtime.config.auth_store_path().parent]
    rows = [
        Check(
            "warn", "set-aside file", f"{path}: damaged state file kept aside; inspect, then delete"
        )
        for path in find_set_aside_files(folders)
    ]
    try:
        kept = sorted(p.name for p in sessions.glob("*.jsonl.invalid.jsonl"))
    except OSError:
        kept = []
    if kept:
        shown = ", ".join(kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        rows.append(
            Check(
                "warn",
                "set-aside file",
                f"unreadable transcript lines kept in {shown} ({sessions})",
            )
        )
    return rows


def _why_unresolvable(profile: AuthProfile) -> str:
    credential = profile.credential
    if credential is None:
        return ""
    if credential.env is not None:
        return f" (${credential.env} is not set)"
    if credential.file is not None:
        return " (no such file)"
    if credential.exec is not None:
        return " (exec references are not resolved by this runtime)"
    return ""


def _env_overrides() -> str:
    applied = [name for name in (ENV_STATE_DIR, ENV_MODEL) if name in os.environ]
    return f"; overridden by ${', $'.join(applied)}" if applied else ""


def run_checks(ctx: click.Context) -> list[Check]:
    """Every check, in the order a run would need them; stops early only when the rest
    cannot be evaluated (no config, no runtime)."""
    try:
        config = load_config(ctx)
    except OpenClawRuntimeError as exc:
        return [Check("fail", "config", safe(exc))]
    checks = [Check("ok", "config", _config_source(ctx) + _env_overrides()), _state_dir(config)]
    try:
        runtime = Runtime(config)
        runtime.components  # noqa: B018 - collecting registrations is the check
    except OpenClawRuntimeError as exc:
        return [*checks, Check("fail", "plugins", safe(exc))]
    try:
        auth_rows, profiles = _auth(runtime)
        model_rows = _models(runtime, profiles)
        engine = anyio.run(_context_engine, runtime)
        plugin_rows = _plugins(runtime)  # last: resolution above may record hook faults
        plugin_rows += _plugin_settings(runtime)
        aside_rows = _set_aside(runtime)  # after _auth: reading a damaged ledger sets it aside
    finally:
        runtime.close()
    return [*checks, *plugin_rows, *model_rows, engine, *auth_rows, *aside_rows]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Check the setup: config, state dir, plugins, models, context engine, credentials."""
    checks = run_checks(ctx)
    failed = sum(1 for c in checks if c.status == "fail")
    warned = sum(1 for c in checks if c.status == "warn")
    if as_json:
        click.echo(safe_json([asdict(c) for c in checks], indent=2, ensure_ascii=False))
    else:
        colors = {"ok": "green", "warn": "yellow", "fail": "red"}
        width = max(len(c.check) for c in checks)
        for c in checks:
            status = click.style(f"{c.status:<4}", fg=colors[c.status], bold=c.status == "fail")
            click.echo(f"{status}  {c.check:<{width}}  {safe(c.detail)}")
        summary = f"{failed} failed, {warned} warning{'s' if warned != 1 else ''}"
        click.echo(("\nnot ready: " if failed else "\nready: ") + summary)
    if failed:
        sys.exit(EXIT_FAILED)
