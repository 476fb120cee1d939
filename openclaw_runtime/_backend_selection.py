"""Which backend of each kind a ``Runtime`` uses: ``[backends]`` names, resolved.

A kind left unset gets ``[backends] default`` (``BackendSettings.selected``), and when that is
unset too the embedded default (``builtin.backends``); a name is looked up among
the registered backends of that kind; plugin backends run behind ``GuardedBackend`` so their
failures are attributed and contained. An unknown name is an ``UnknownBackendError`` listing
the registered ones.
"""

from __future__ import annotations

from typing import Any

from ._components import Components
from ._exceptions import (
    ComponentNotFoundError,
    ConfigurationError,
    OpenClawRuntimeError,
    UnknownBackendError,
)
from ._registry import BUILTIN_PLUGIN_PREFIX
from .backends import BACKEND_KINDS, EMBEDDED_BACKEND, MEMORY_BACKEND
from .builtins.backends import EMBEDDED_FACTORIES
from .builtins.memory import MEMORY_FACTORIES
from .config import RuntimeConfig
from .containment import PluginGuard
from .containment.proxy import GuardedBackend, backend_error

__all__ = ["build_backend", "check_backend_names"]

#: Built-in names that work even when the built-in plugin is blocked.
_BUILTIN_FACTORIES = {EMBEDDED_BACKEND: EMBEDDED_FACTORIES, MEMORY_BACKEND: MEMORY_FACTORIES}


def check_backend_names(config: RuntimeConfig, components: Components) -> None:
    """``UnknownBackendError`` for the first ``[backends]`` name nothing registered; a
    ``ConfigurationError`` when process-local lanes are asked to cap a whole machine."""
    if (
        config.backends.selected("lanes") == MEMORY_BACKEND
        and config.agent.global_cap_scope == "machine"
    ):
        raise ConfigurationError(
            "[agent] global_cap_scope = 'machine' needs lanes shared by the processes of the "
            "machine, but the lanes backend is 'memory' (this process only); use the "
            "'embedded' lanes or global_cap_scope = 'process'"
        )
    for kind in BACKEND_KINDS:
        name = config.backends.selected(kind)
        if name is None or name in _BUILTIN_FACTORIES:
            continue
        registry = components.backends[kind]
        if name not in registry:
            raise UnknownBackendError(kind, name, registry.names(), key=_key(config, kind))


def build_backend(
    kind: str, host: Any, *, config: RuntimeConfig, components: Components, guard: PluginGuard
) -> Any:
    """Build the ``[backends]`` backend of ``kind`` for ``host`` (what factories receive):
    the embedded default when neither the kind nor ``default`` names one, else the registered
    one of that name (plugin backends behind ``GuardedBackend``)."""
    name = config.backends.selected(kind)
    if name is None:
        return EMBEDDED_FACTORIES[kind](host)
    registry = components.backends[kind]
    try:
        registration = registry.registration(name)
    except ComponentNotFoundError:
        if name in _BUILTIN_FACTORIES:  # the built-in plugin was blocked: still built in
            return _BUILTIN_FACTORIES[name][kind](host)
        raise UnknownBackendError(kind, name, registry.names(), key=_key(config, kind)) from None
    plugin = registration.plugin
    if plugin is not None and plugin.startswith(BUILTIN_PLUGIN_PREFIX):
        return registration.component(host)
    label = f"{kind}:{name}"
    try:
        backend = registration.component(host)
    except OpenClawRuntimeError:
        raise
    except Exception as exc:
        raise backend_error(guard, plugin, label, "its factory", exc) from exc
    return GuardedBackend(backend, guard, plugin, label)


def _key(config: RuntimeConfig, kind: str) -> str:
    """The ``[backends]`` key that named the backend of ``kind``: its own, or ``default``."""
    return kind if getattr(config.backends, kind) is not None else "default"
