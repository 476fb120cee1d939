"""The plugin manager: built-ins, explicit plugins and the ``openclaw_runtime`` entry points.

Nothing loads at import time: ``get_plugin_manager()`` builds a fresh manager, and every
``Runtime`` owns one. Registration order is built-ins, then explicit plugins, then entry
points (discovered with stevedore), so plugins are called before the ``trylast`` built-ins.

Load-failure policy: a plugin whose import fails is skipped with a warning naming the plugin
and the cause, and listed as failed; in strict mode (``OPENCLAW_RUNTIME_STRICT_PLUGINS=1``)
it raises ``PluginLoadError``. Two distributions declaring the same entry-point name is a
``PluginConflictError``, never a silent skip.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pluggy

import openclaw_runtime.hookspecs as hookspecs  # the submodule, not the package face

from ._exceptions import (
    ConfigurationError,
    HookError,
    OpenClawRuntimeWarning,
    PluginConflictError,
    PluginLoadError,
    PluginValidationError,
)
from ._markers import PROJECT_NAME
from ._version import __version__

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "HookCall",
    "OpenClawPluginManager",
    "PluginPolicy",
    "PluginRecord",
    "get_plugin_manager",
    "parse_bool_env",
    "resolve_plugin_policy",
]

ENTRY_POINT_GROUP = PROJECT_NAME
ENV_ALLOW = "OPENCLAW_RUNTIME_PLUGINS"
ENV_DISABLE = "OPENCLAW_RUNTIME_DISABLE_PLUGINS"
ENV_TRACE = "OPENCLAW_RUNTIME_TRACE_PLUGINS"
ENV_STRICT = "OPENCLAW_RUNTIME_STRICT_PLUGINS"

#: (name, module path) of the plugins that ship inside the core distribution.
BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    ("builtin.core", "openclaw_runtime.builtins.core"),
    ("builtin.providers", "openclaw_runtime.builtins.providers"),
    ("builtin.failover", "openclaw_runtime.builtins.failover"),
    ("builtin.context", "openclaw_runtime.builtins.context"),
    ("builtin.transcript", "openclaw_runtime.builtins.transcript"),
    ("builtin.repair", "openclaw_runtime.builtins.repair"),
    ("builtin.backends", "openclaw_runtime.builtins.backends"),
)

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class PluginPolicy:
    """Which entry-point plugins load and how failures are handled.

    ``allow=None`` loads every plugin; an empty ``allow`` loads none. ``"*"`` in ``blocked``
    blocks all of them.
    """

    allow: frozenset[str] | None = None
    blocked: frozenset[str] = frozenset()
    strict: bool = False
    trace: bool = False

    def admits(self, name: str) -> bool:
        """Whether the entry-point plugin ``name`` may load."""
        if "*" in self.blocked or name in self.blocked:
            return False
        return self.allow is None or name in self.allow


def parse_bool_env(name: str, value: str) -> bool:
    """Read a boolean environment variable; an unreadable value is a clear error."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigurationError(f"{name}={value!r} is not a boolean; use 1/0, true/false, yes/no")


def _parse_names(value: str) -> frozenset[str]:
    return frozenset(part.strip() for part in value.split(",") if part.strip())


def resolve_plugin_policy(
    *,
    env: Mapping[str, str],
    config_allow: Sequence[str] | None = None,
    config_disable: Sequence[str] = (),
    config_strict: bool = False,
    config_trace: bool = False,
    allow: Iterable[str] | None = None,
    blocked: Iterable[str] | None = None,
    strict: bool | None = None,
    trace: bool | None = None,
) -> PluginPolicy:
    """Combine explicit arguments, environment variables and config (in that precedence)."""
    if allow is not None:
        allow_set: frozenset[str] | None = frozenset(allow)
    elif ENV_ALLOW in env:
        allow_set = _parse_names(env[ENV_ALLOW])
    else:
        allow_set = frozenset(config_allow) if config_allow is not None else None

    if blocked is not None:
        blocked_set = frozenset(blocked)
    elif ENV_DISABLE in env:
        blocked_set = _parse_names(env[ENV_DISABLE])
    else:
        blocked_set = frozenset(config_disable)

    if strict is None:
        strict = parse_bool_env(ENV_STRICT, env[ENV_STRICT]) if ENV_STRICT in env else config_strict
    if trace is None:
        trace = parse_bool_env(ENV_TRACE, env[ENV_TRACE]) if ENV_TRACE in env else config_trace
    return PluginPolicy(allow_set, blocked_set, strict, trace)


@dataclass(slots=True)
class PluginRecord:
    """What the host knows about one plugin, for ``openclaw-runtime plugins``."""

    name: str
    source: Literal["builtin", "explicit", "entrypoint"]
    status: Literal["loaded", "failed", "blocked"] = "loaded"
    entry_point: str | None = None
    error: str | None = None
    distribution: str | None = None
    version: str | None = None
    hooks: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class HookCall:
    """One call of one hook implementation by the host."""

    hook: str
    plugin: str | None
    kwargs: Mapping[str, Any]
    result: Any = None
    error: BaseException | None = None


class OpenClawPluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers where each plugin came from and which ones failed."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.call_monitors: list[Callable[[HookCall], None]] = []
        #: Plugins whose ``runtime_add_hookspecs`` raised (the ``Runtime`` records them as
        #: faults); in strict mode the error is raised instead.
        self.hookspec_faults: list[tuple[str | None, Exception]] = []
        self.strict = False

    def _hookexec(
        self,
        hook_name: str,
        methods: Sequence[Any],
        kwargs: Mapping[str, object],
        firstresult: bool,
    ) -> object | list[object]:
        # Only historic replays and direct ``pm.hook.x()`` calls come through here (the host
        # calls implementations one by one); ``runtime_add_hookspecs`` is replayed inside
        # ``register()``, so a raising one would otherwise abort loading every plugin.
        if hook_name != "runtime_add_hookspecs":
            return super()._hookexec(hook_name, methods, kwargs, firstresult)
        results: list[object] = []
        for method in methods:
            try:
                answer = super()._hookexec(hook_name, [method], kwargs, False)
            except Exception as exc:
                if self.strict:
                    raise HookError(
                        f"plugin {method.plugin_name!r} raised in {hook_name}: {exc}",
                        hook_name=hook_name,
                        plugin_name=method.plugin_name,
                    ) from exc
                self.hookspec_faults.append((method.plugin_name, exc))
                continue
            if isinstance(answer, list):
                results.extend(answer)
        return results

    def add_call_monitor(self, monitor: Callable[[HookCall], None]) -> Callable[[], None]:
        """Watch every hook call the host makes (``openclaw_runtime.testing`` uses this)."""
        self.call_monitors.append(monitor)
        return lambda: self.call_monitors.remove(monitor) if monitor in self.call_monitors else None

    def plugin_records(self) -> list[PluginRecord]:
        """Every plugin known to the manager, with its hooks, distribution and status."""
        dists = _distributions_by_entry_point()
        out = []
        for record in self.records.values():
            plugin = self.get_plugin(record.name)
            if plugin is not None:
                record.hooks = sorted(c.name for c in self.get_hookcallers(plugin) or [])
            if record.source == "entrypoint" and record.distribution is None:
                found = dists.get((record.name, record.entry_point or ""))
                if found is not None:
                    record.distribution, record.version = found
            elif record.source == "builtin":
                record.distribution, record.version = "openclaw-runtime", _core_version()
            out.append(record)
        return out


def get_plugin_manager(
    *,
    plugins: Sequence[Any] = (),
    load_entrypoints: bool = True,
    policy: PluginPolicy | None = None,
    on_load_failure: Literal["raise", "warn"] | None = None,
) -> OpenClawPluginManager:
    """Build a fresh manager: built-ins, then ``plugins``, then (optionally) entry points.

    ``plugins`` items are modules/objects with hookimpls, or ``(name, plugin)`` pairs.
    ``on_load_failure`` overrides the policy's strictness.
    """
    policy = policy or resolve_plugin_policy(env=os.environ)
    strict = policy.strict if on_load_failure is None else on_load_failure == "raise"
    pm = OpenClawPluginManager()
    pm.strict = strict
    pm.hook.runtime_add_hookspecs.call_historic(kwargs={"pm": pm})

    for name, module_path in BUILTIN_PLUGINS:
        _register(
            pm, importlib.import_module(module_path), name, PluginRecord(name, "builtin"), strict
        )
    for item in plugins:
        name, plugin = item if isinstance(item, tuple) else (None, item)
        name = name or _plugin_name(plugin)
        _register(pm, plugin, name, PluginRecord(name, "explicit"), strict)
    if load_entrypoints:
        _load_entrypoint_plugins(pm, policy, strict)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        culprit = pm.get_name(exc.plugin) if exc.plugin is not None else None
        raise PluginValidationError(str(exc), plugin_name=culprit) from exc
    if policy.trace:
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()
    return pm


def _plugin_name(plugin: Any) -> str:
    module_name = getattr(plugin, "__name__", None)
    if isinstance(module_name, str):
        return module_name
    return f"{type(plugin).__module__}.{type(plugin).__qualname__}@{id(plugin):x}"


def _register(
    pm: OpenClawPluginManager, plugin: Any, name: str, record: PluginRecord, strict: bool
) -> None:
    if name in pm.records:
        raise PluginConflictError(f"two plugins are named {name!r}", plugin_name=name)
    pm.records[name] = record
    try:
        pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        record.status, record.error = "failed", str(exc)
        if strict or record.source != "entrypoint":
            raise PluginValidationError(f"plugin {name!r}: {exc}", plugin_name=name) from exc
        _warn(f"skipping plugin {name!r}: {exc}")
    except ValueError as exc:  # the same object registered twice under two names
        raise PluginConflictError(f"plugin {name!r}: {exc}", plugin_name=name) from exc


def _load_entrypoint_plugins(pm: OpenClawPluginManager, policy: PluginPolicy, strict: bool) -> None:
    # A manager with no extensions gives us stevedore's (cached) entry-point listing
    # without importing anything, so blocked or conflicting plugins are never imported.
    from stevedore import ExtensionManager  # lazy: start-up time (until plugins load)

    listing: ExtensionManager[Any] = ExtensionManager.make_test_instance(
        [], namespace=ENTRY_POINT_GROUP
    )
    by_name: dict[str, list[Any]] = {}
    for ep in listing.list_entry_points():
        by_name.setdefault(ep.name, []).append(ep)

    selected: list[str] = []
    for name in sorted(by_name):
        eps = by_name[name]
        if not policy.admits(name):
            pm.records[name] = PluginRecord(name, "entrypoint", "blocked", entry_point=eps[0].value)
            continue
        if len({ep.value for ep in eps}) > 1:
            dists = _distributions_by_entry_point()
            owners = ", ".join(
                f"{dists.get((name, ep.value), ('unknown distribution', ''))[0]} ({ep.value})"
                for ep in eps
            )
            raise PluginConflictError(
                f"entry-point name {name!r} in group {ENTRY_POINT_GROUP!r} is declared more "
                f"than once: {owners}; uninstall one or block the name with {ENV_DISABLE}",
                plugin_name=name,
            )
        selected.append(name)
    if not selected:
        return

    def on_failure(_manager: Any, ep: Any, exc: BaseException) -> None:
        record = PluginRecord(ep.name, "entrypoint", "failed", entry_point=ep.value)
        record.error = f"{type(exc).__name__}: {exc}"
        pm.records[ep.name] = record
        if strict:
            raise PluginLoadError(
                f"plugin {ep.name!r} ({ep.value}) failed to load: {record.error}",
                plugin_name=ep.name,
                entry_point=ep.value,
            ) from exc
        _warn(f"skipping plugin {ep.name!r} ({ep.value}): {record.error}")

    from stevedore import NamedExtensionManager  # lazy: start-up time (until plugins load)

    loaded = NamedExtensionManager(
        ENTRY_POINT_GROUP,
        names=selected,
        name_order=True,
        on_load_failure_callback=on_failure,
    )
    for ext in loaded.extensions:
        record = PluginRecord(ext.name, "entrypoint", entry_point=ext.entry_point.value)
        _register(pm, ext.plugin, ext.name, record, strict)


def _warn(message: str) -> None:
    warnings.warn(message, OpenClawRuntimeWarning, stacklevel=4)


def _distributions_by_entry_point() -> dict[tuple[str, str], tuple[str, str]]:
    """(entry-point name, value) → (distribution name, version) for our group."""
    # the stdlib's importlib.metadata (3.10+) has entry_points(group=) and EntryPoint.dist
    import importlib.metadata  # lazy: start-up time (only plugin listings need it)

    out: dict[tuple[str, str], tuple[str, str]] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist
        if dist is not None:
            out[(ep.name, ep.value)] = (dist.metadata["Name"], dist.version)
    return out


def _core_version() -> str:
    return __version__
