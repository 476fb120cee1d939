"""Named component registries: one per slot, every entry attributed to its plugin.

The host never silently renames or replaces a component: registering a taken name is a
``PluginConflictError`` naming both plugins, and an unknown name is a
``ComponentNotFoundError`` listing what is registered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ._exceptions import ComponentNotFoundError, PluginConflictError

__all__ = ["ComponentRegistry", "Registration"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Registration(Generic[T]):
    """One registered component: its name, the object, who registered it, and options."""

    name: str
    component: T
    plugin: str | None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def order(self) -> int:
        """Pipeline position (default 100)."""
        return int(self.options.get("order", 100))


class ComponentRegistry(Generic[T]):
    """Components of one kind (``"context engine"``, ``"provider"``...) by name."""

    def __init__(
        self,
        kind: str,
        *,
        not_found: Callable[[str, list[str]], ComponentNotFoundError] | None = None,
    ) -> None:
        self.kind = kind
        self._entries: dict[str, Registration[T]] = {}
        self._not_found = not_found

    def add(self, name: str, component: T, *, plugin: str | None = None, **options: Any) -> None:
        """Register ``component`` as ``name`` for ``plugin``."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")
        existing = self._entries.get(name)
        if existing is not None:
            raise PluginConflictError(
                f"{self.kind} {name!r} is registered by both plugin {existing.plugin!r} "
                f"and plugin {plugin!r}",
                plugin_name=plugin,
            )
        self._entries[name] = Registration(name, component, plugin, dict(options))

    def get(self, name: str) -> T:
        """The component registered as ``name``."""
        return self.registration(name).component

    def registration(self, name: str) -> Registration[T]:
        """The full registration of ``name``."""
        try:
            return self._entries[name]
        except KeyError:
            if self._not_found is not None:
                raise self._not_found(name, list(self._entries)) from None
            raise ComponentNotFoundError(self.kind, name, self._entries) from None

    def ordered(self) -> list[Registration[T]]:
        """Registrations in pipeline order: ``(order, name)``."""
        return sorted(self._entries.values(), key=lambda r: (r.order, r.name))

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    def registrations(self) -> list[Registration[T]]:
        """Every registration, by name."""
        return [self._entries[name] for name in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<ComponentRegistry {self.kind}: {', '.join(self.names()) or 'empty'}>"
