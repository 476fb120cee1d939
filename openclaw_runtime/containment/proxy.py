"""``GuardedBackend``: a plugin's backend object behind the guard.

A backend (lanes, auth store, steering store, session index, session store) holds state a run
cannot do without, so a raising backend cannot be "skipped" like an observer: the run must stop.
What the guard adds is attribution and visibility. An exception from a backend method that is
not one of the runtime's own errors (those are part of the backend protocol: a lane timeout, a
ledger that cannot be read) is recorded as a fault of the plugin and re-raised as
``PluginBackendError`` naming the plugin, the backend and the method, so the run ends with an
error that says whose code failed instead of the plugin's raw exception. Nothing falls back to
the embedded default on its own: silently moving a shared (Redis) session onto local files
would split its state.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .._exceptions import OpenClawRuntimeError, PluginBackendError
from .guard import PluginGuard

__all__ = ["GuardedBackend", "backend_error"]


def backend_error(
    guard: PluginGuard, plugin: str | None, label: str, method: str, exc: Exception
) -> PluginBackendError:
    """Record ``exc`` as a fault of ``plugin`` and build the error the run reports."""
    fault = guard.fault(plugin, "register_backends", exc, unit=f"backend:{label}")
    error = PluginBackendError(
        f"{label} backend of plugin {plugin!r} failed in {method}: {fault.error}",
        plugin_name=plugin,
    )
    return error


class _GuardedContext:
    """An async context manager returned by a backend method (``lanes.hold(...)``)."""

    def __init__(self, inner: Any, owner: GuardedBackend, method: str) -> None:
        self._inner = inner
        self._owner = owner
        self._method = method

    async def __aenter__(self) -> Any:
        try:
            return await self._inner.__aenter__()
        except OpenClawRuntimeError:
            raise
        except Exception as exc:
            raise self._owner._error(self._method, exc) from exc

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self._inner.__aexit__(*exc_info)
        except OpenClawRuntimeError:
            raise
        except Exception as exc:
            if exc is exc_info[1]:
                raise
            raise self._owner._error(self._method, exc) from exc


class GuardedBackend:
    """Every method of ``target`` with plugin exceptions attributed (see the module doc)."""

    def __init__(self, target: Any, guard: PluginGuard, plugin: str | None, label: str) -> None:
        self._target = target
        self._guard = guard
        self._plugin = plugin
        self._label = label

    @property
    def wrapped(self) -> Any:
        """The backend itself."""
        return self._target

    @property
    def plugin(self) -> str | None:
        """The plugin that registered the backend."""
        return self._plugin

    @property
    def label(self) -> str:
        """``<kind>:<name>`` of the backend."""
        return self._label

    def _error(self, method: str, exc: Exception) -> PluginBackendError:
        return backend_error(self._guard, self._plugin, self._label, method, exc)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("__") or not callable(value) or inspect.isclass(value):
            return value
        return self._wrap(name, value)

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = method(*args, **kwargs)
            except OpenClawRuntimeError:
                raise
            except Exception as exc:
                raise self._error(name, exc) from exc
            if inspect.isawaitable(result):
                return self._await(name, result)
            if hasattr(result, "__aenter__") and hasattr(result, "__aexit__"):
                return _GuardedContext(result, self, name)
            return result

        call.__name__ = name
        return call

    async def _await(self, name: str, awaitable: Any) -> Any:
        try:
            return await awaitable
        except OpenClawRuntimeError:
            raise
        except Exception as exc:
            raise self._error(name, exc) from exc

    def __repr__(self) -> str:
        return f"<GuardedBackend {self._label} of {self._plugin!r}: {self._target!r}>"
