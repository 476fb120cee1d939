"""Named component registries: one per slot, every entry attributed to its plugin.

The host never silently renames a component. Two plugins registering the same name is a
*clash*: it is recorded (``ComponentRegistry.clashes``, shown by ``openclaw-runtime plugins``,
``doctor`` and a warning) and settled by ``resolve_component_clash`` — the plugin named in
``[plugins] prefer`` for that name wins, else a built-in wins over a plugin, else the first
registration stays — so a clash never stops a run. An unknown name is a
``ComponentNotFoundError`` listing what is registered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ._exceptions import ComponentNotFoundError

__all__ = [
    "BUILTIN_PLUGIN_PREFIX",
    "ComponentClash",
    "ComponentRegistry",
    "Registration",
    "resolve_component_clash",
]

#: Plugins shipped inside the core distribution are named ``builtin.<area>``.
BUILTIN_PLUGIN_PREFIX = "builtin."

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


@dataclass(frozen=True, slots=True)
class ComponentClash:
    """Two plugins registered ``name`` in one slot; ``kept``'s registration is the one used."""

    kind: str
    name: str
    kept: str | None
    dropped: str | None
    rule: str  # "config" ([plugins] prefer), "builtin" or "first" (loaded first)

    def message(self) -> str:
        """One sentence for warnings, ``plugins`` and ``doctor``."""
        why = {
            "config": "[plugins] prefer picks it",
            "builtin": "built-in components win",
            "first": f"it loaded first; set [plugins] prefer.{self.name} to choose",
        }[self.rule]
        return (
            f"{self.kind} {self.name!r} is registered by both plugin {self.kept!r} and plugin "
            f"{self.dropped!r}; using plugin {self.kept!r} ({why})"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "kind": self.kind,
            "name": self.name,
            "kept": self.kept,
            "dropped": self.dropped,
            "rule": self.rule,
            "message": self.message(),
        }


def _is_builtin(plugin: str | None) -> bool:
    return plugin is not None and plugin.startswith(BUILTIN_PLUGIN_PREFIX)


def resolve_component_clash(
    name: str,
    first: str | None,
    second: str | None,
    prefer: Mapping[str, str],
    load_order: Mapping[str, int] | None = None,
) -> tuple[str | None, str]:
    """Which of two plugins registering ``name`` wins, and by which rule.

    ``prefer`` (``[plugins] prefer``: name → plugin) decides when it names one of them; else a
    built-in (``builtin.*``) beats a plugin; else the plugin loaded first (``load_order``:
    built-ins, explicit plugins, entry points by name) wins; without an order, the earlier
    registration (``first``) stays.
    """
    picked = prefer.get(name)
    if picked is not None and picked in (first, second):
        return picked, "config"
    if _is_builtin(first) != _is_builtin(second):
        return (first if _is_builtin(first) else second), "builtin"
    if load_order and first in load_order and second in load_order:
        assert first is not None and second is not None
        return (second if load_order[second] < load_order[first] else first), "first"
    return first, "first"


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
        #: ``[plugins] prefer``: component name → the plugin whose registration wins a clash.
        self.prefer: Mapping[str, str] = {}
        #: Plugin name → load position (settles a clash ``prefer`` does not).
        self.load_order: Mapping[str, int] = {}
        #: Every clash seen, in registration order.
        self.clashes: list[ComponentClash] = []

    def add(
        self, name: str, component: T, *, plugin: str | None = None, **options: Any
    ) -> ComponentClash | None:
        """Register ``component`` as ``name`` for ``plugin``; a taken name is a clash,
        recorded, settled (``resolve_component_clash``) and returned."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")
        registration = Registration(name, component, plugin, dict(options))
        existing = self._entries.get(name)
        if existing is None:
            self._entries[name] = registration
            return None
        winner, rule = resolve_component_clash(
            name, existing.plugin, plugin, self.prefer, self.load_order
        )
        keep_new = winner == plugin and winner != existing.plugin
        clash = ComponentClash(
            self.kind,
            name,
            kept=plugin if keep_new else existing.plugin,
            dropped=existing.plugin if keep_new else plugin,
            rule=rule,
        )
        if keep_new:
            self._entries[name] = registration
        self.clashes.append(clash)
        return clash

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
