"""Per-plugin settings: ``[plugins.settings.<name>]`` checked against the model a plugin declares.

Why a module of its own: ``config.py`` keeps the raw tables (it cannot know the plugins'
models), a plugin declares its pydantic model through ``register_plugin_settings``, and the
join of the two — validation with errors that name the plugin and the key, and a display
form that never shows a secret — is policy kept in small pure functions here. ``Runtime``
validates once, before ``runtime_configured``, so a plugin reads its settings from the start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ._exceptions import ConfigurationError
from ._hooks import Hooks

__all__ = [
    "DeclaredSettings",
    "collect_declared_settings",
    "describe_settings",
    "settings_problems",
    "unclaimed_settings",
    "validate_plugin_settings",
]

#: Keys whose values are never shown (``doctor``, ``plugins``), whatever their type.
_SECRET_HINTS = ("key", "token", "secret", "password", "authorization", "credential")
MASK = "***"


@dataclass(frozen=True, slots=True)
class DeclaredSettings:
    """A settings model a plugin declared: its table name, the model, the plugin."""

    name: str
    model: type[BaseModel]
    plugin: str | None


def _table(name: str) -> str:
    return f"[plugins.settings.{name}]"


def _check_declaration(name: object, model: object) -> None:
    """A bad ``register(name, model)`` call is a ``TypeError`` naming what was wrong."""
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"the settings name must be a non-empty string, got {name!r}")
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"settings {name!r}: expected a pydantic BaseModel subclass, got {model!r}")


def _unknown_keys(model: type[BaseModel], values: Mapping[str, Any]) -> list[str]:
    """Top-level keys the model does not know. A model that says nothing about extra keys is
    held to the runtime's rule (a typo is an error); one that sets ``extra`` keeps its rule."""
    if model.model_config.get("extra") is not None:
        return []
    known: set[str] = set()
    for field_name, info in model.model_fields.items():
        known.add(field_name)
        if info.alias:
            known.add(info.alias)
    return sorted(k for k in values if k not in known)


def settings_problems(
    declared: DeclaredSettings, values: Mapping[str, Any]
) -> tuple[BaseModel | None, list[str]]:
    """Validate one table: the settings instance, or the problems, each naming the table,
    the key and the plugin (never the value: a setting may hold a credential)."""
    owner = f"(plugin {declared.plugin!r})"
    problems = [
        f"{_table(declared.name)} {key}: unknown key {owner}"
        for key in _unknown_keys(declared.model, values)
    ]
    if problems:
        return None, problems
    try:
        return declared.model.model_validate(dict(values)), []
    except ValidationError as exc:
        for error in exc.errors(include_input=False, include_url=False):
            key = ".".join(str(p) for p in error["loc"]) or "(table)"
            problems.append(f"{_table(declared.name)} {key}: {error['msg']} {owner}")
        return None, problems


def validate_plugin_settings(
    declared: Mapping[str, DeclaredSettings], configured: Mapping[str, Mapping[str, Any]]
) -> dict[str, BaseModel]:
    """Every declared model validated against its table (absent table: the defaults).

    Raises ``ConfigurationError`` listing every problem of every plugin at once.
    """
    validated: dict[str, BaseModel] = {}
    problems: list[str] = []
    for name, declaration in declared.items():
        instance, found = settings_problems(declaration, configured.get(name, {}))
        problems.extend(found)
        if instance is not None:
            validated[name] = instance
    if problems:
        raise ConfigurationError("invalid plugin settings: " + "; ".join(problems))
    return validated


def unclaimed_settings(
    declared: Mapping[str, DeclaredSettings], configured: Mapping[str, Any]
) -> list[str]:
    """Configured tables no loaded plugin declares (not installed, disabled, or a typo)."""
    return sorted(name for name in configured if name not in declared)


def _masked(key: str, value: Any) -> Any:
    if any(hint in key.lower() for hint in _SECRET_HINTS):
        return MASK
    if isinstance(value, dict):
        return {k: _masked(str(k), v) for k, v in value.items()}
    return value


def describe_settings(instance: BaseModel) -> dict[str, Any]:
    """JSON-ready settings for display: ``SecretStr`` fields and keys that look like
    credentials (``api_key``, ``token``...) are masked."""
    dumped = instance.model_dump(mode="json")
    return {key: _masked(key, value) for key, value in dumped.items()}


def collect_declared_settings(hooks: Hooks) -> dict[str, DeclaredSettings]:
    """Call ``register_plugin_settings`` plugin by plugin; a name declared twice is an error
    naming both plugins."""
    declared: dict[str, DeclaredSettings] = {}

    def commit(plugin: str | None, args: tuple[Any, ...], options: dict[str, Any]) -> None:
        if options:
            raise TypeError(f"unexpected keyword arguments {sorted(options)}")
        name, model = args
        _check_declaration(name, model)
        taken = declared.get(name)
        if taken is not None:
            raise ConfigurationError(
                f"plugin settings {_table(name)} are declared by both plugin {taken.plugin!r} "
                f"and plugin {plugin!r}"
            )
        declared[name] = DeclaredSettings(name, model, plugin)

    hooks.collect("register_plugin_settings", commit)
    return declared
