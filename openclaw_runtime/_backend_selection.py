"""Which backend of each kind a ``Runtime`` uses: ``[backends]`` names, resolved.

A kind left unset gets the embedded default (``builtin.backends``); a name is looked up among
the registered backends of that kind; plugin backends run behind ``GuardedBackend`` so their
failures are attributed and contained. An unknown name is an ``UnknownBackendError`` listing
the registered ones.
"""

from __future__ import annotations

from typing import Any

from ._components import Components
from ._exceptions import ComponentNotFoundError, OpenClawRuntimeError, UnknownBackendError
from ._registry import BUILTIN_PLUGIN_PREFIX
from .backends import BACKEND_KINDS, EMBEDDED_BACKEND
from .builtins.backends import EMBEDDED_FACTORIES
from .config import RuntimeConfig
from .containment import PluginGuard
from .containment.proxy import GuardedBackend, backend_error

__all__ = ["build_backend", "check_backend_names"]


def check_backend_names(config: RuntimeConfig, components: Components) -> None:
    """``UnknownBackendError`` for the first ``[backends]`` name nothing registered."""
    for kind in BACKEND_KINDS:
        name = getattr(config.backends, kind)
        if name is None or name == EMBEDDED_BACKEND:
            continue
        registry = components.backends[kind]
        if name not in registry:
            raise UnknownBackendError(kind, name, registry.names())


def build_backend(
    kind: str, host: Any, *, config: RuntimeConfig, components: Components, guard: PluginGuard
) -> Any:
    """Build the ``[backends]`` backend of ``kind`` for ``host`` (what factories receive):
    the embedded default when unset, else the registered one of that name (plugin backends
    behind ``GuardedBackend``)."""
    name = getattr(config.backends, kind)
    if name is None:
        return EMBEDDED_FACTORIES[kind](host)
    registry = components.backends[kind]
    try:
        registration = registry.registration(name)
    except ComponentNotFoundError:
        if name == EMBEDDED_BACKEND:  # the built-in plugin was blocked: still the default
            return EMBEDDED_FACTORIES[kind](host)
        raise UnknownBackendError(kind, name, registry.names()) from None
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
