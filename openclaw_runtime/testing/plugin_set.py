"""``PluginSet``: plugins registered for one test, handed to every runtime the test builds."""

from __future__ import annotations

from typing import Any

from .._plugins import OpenClawPluginManager

__all__ = ["PluginSet"]


class PluginSet:
    """Plugins registered for one test; ``runtime_factory`` passes them to each runtime."""

    def __init__(self, pm: OpenClawPluginManager) -> None:
        self.pm = pm
        self.items: list[tuple[str, Any]] = []

    def __call__(self, plugin: Any, name: str | None = None) -> str:
        registered = self.pm.register(plugin, name=name)
        assert registered is not None, f"plugin {name or plugin!r} is blocked or already registered"
        self.pm.check_pending()
        self.items.append((registered, plugin))
        return registered

    def unregister_all(self) -> None:
        for name, _plugin in reversed(self.items):
            self.pm.unregister(name=name)
        self.items.clear()
