"""The model catalog: models by ``provider/id``, by unambiguous id, and by alias."""

from __future__ import annotations

from collections.abc import Iterable

from .._exceptions import ComponentNotFoundError, ConfigurationError
from .._registry import ComponentClash, resolve_component_clash
from ..llm import Model
from .model_hints import UnknownModelError

__all__ = ["ModelRegistry"]


class ModelRegistry:
    """Every model the runtime knows, with the plugin that contributed it."""

    def __init__(self) -> None:
        self._models: dict[str, Model] = {}
        self._owners: dict[str, str | None] = {}
        self._aliases: dict[str, str] = {}
        #: ``[plugins] prefer`` (model ref → plugin) and every clash seen.
        self.prefer: dict[str, str] = {}
        self.load_order: dict[str, int] = {}
        self.clashes: list[ComponentClash] = []
        #: ``provider/id`` → the plugin whose model a ``[[models]]`` entry replaced.
        self.overrides: dict[str, str] = {}

    def add(
        self, model: Model, *, aliases: Iterable[str] = (), plugin: str | None = None
    ) -> list[ComponentClash]:
        """Register ``model``; a model from config (``plugin=None``) replaces a plugin's
        quietly (``overrides``); otherwise a taken ref or alias is a clash, recorded and
        settled by ``resolve_component_clash``. Returns the clashes it caused."""
        if not isinstance(model, Model):
            raise ConfigurationError(
                f"register_models expects openclaw_runtime.llm.Model, got {type(model).__name__}"
            )
        found: list[ComponentClash] = []
        ref = model.ref
        if ref in self._models and plugin is None and self._owners[ref] is not None:
            # a [[models]] entry replacing a catalog row is what config is for: not a clash
            self.overrides[ref] = str(self._owners[ref])
            self._models[ref] = model
            self._owners[ref] = None
            return found
        if ref in self._models:
            owner = self._owners[ref]
            if plugin is None and owner is not None:
                winner, rule = None, "config"
            else:
                winner, rule = resolve_component_clash(
                    ref, owner, plugin, self.prefer, self.load_order
                )
            keep_new = winner == plugin and winner != owner
            found.append(
                ComponentClash(
                    "model",
                    ref,
                    kept=plugin if keep_new else owner,
                    dropped=owner if keep_new else plugin,
                    rule=rule,
                )
            )
            if not keep_new:
                self.clashes.extend(found)
                return found
        self._models[ref] = model
        self._owners[ref] = plugin
        for alias in aliases:
            taken = self._aliases.get(alias)
            if taken is not None or alias in self._models:
                owner = self._owners.get(taken or alias)
                found.append(ComponentClash("model alias", alias, owner, plugin, "first"))
                continue
            self._aliases[alias] = ref
        self.clashes.extend(found)
        return found

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
        raise UnknownModelError(name, [*self._models, *self._aliases])

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
