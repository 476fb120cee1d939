"""The model catalog: models by ``provider/id``, by unambiguous id, and by alias."""

from __future__ import annotations

from collections.abc import Iterable

from .._exceptions import ComponentNotFoundError, ConfigurationError, PluginConflictError
from ..llm import Model

__all__ = ["ModelRegistry"]


class ModelRegistry:
    """Every model the runtime knows, with the plugin that contributed it."""

    def __init__(self) -> None:
        self._models: dict[str, Model] = {}
        self._owners: dict[str, str | None] = {}
        self._aliases: dict[str, str] = {}

    def add(self, model: Model, *, aliases: Iterable[str] = (), plugin: str | None = None) -> None:
        """Register ``model``; its ref ``provider/id`` and each alias must be free."""
        if not isinstance(model, Model):
            raise ConfigurationError(
                f"register_models expects openclaw_runtime.llm.Model, got {type(model).__name__}"
            )
        ref = model.ref
        if ref in self._models:
            raise PluginConflictError(
                f"model {ref!r} is registered by both plugin {self._owners[ref]!r} "
                f"and plugin {plugin!r}",
                plugin_name=plugin,
            )
        for alias in aliases:
            taken = self._aliases.get(alias)
            if taken is not None or alias in self._models:
                raise PluginConflictError(
                    f"model alias {alias!r} of {ref!r} is already taken by {taken or alias!r}",
                    plugin_name=plugin,
                )
        self._models[ref] = model
        self._owners[ref] = plugin
        for alias in aliases:
            self._aliases[alias] = ref

    def resolve(self, name: str) -> Model:
        """Find a model by ``provider/id``, alias, or id (when only one provider has it)."""
        if name in self._models:
            return self._models[name]
        if name in self._aliases:
            return self._models[self._aliases[name]]
        matches = [m for m in self._models.values() if m.id == name]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            refs = ", ".join(sorted(m.ref for m in matches))
            raise ComponentNotFoundError("model", f"{name} (ambiguous: {refs})", self._models)
        raise ComponentNotFoundError("model", name, [*self._models, *self._aliases])

    def owner(self, ref: str) -> str | None:
        """The plugin that registered ``ref``."""
        return self._owners.get(ref)

    def aliases(self) -> dict[str, str]:
        """alias → ``provider/id``."""
        return dict(self._aliases)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self._models.values(), key=lambda m: m.ref))

    def __len__(self) -> int:
        return len(self._models)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self.resolve(name)
        except ComponentNotFoundError:
            return False
        return True
