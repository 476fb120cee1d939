"""What each plugin registered, by kind: the ``components`` of ``openclaw-runtime plugins``.

The registries (``Components``) are keyed by slot and remember the plugin of every entry;
a plugin author asks the other way round — "what did *my* plugin register?" — so this module
inverts them, in pure functions, with the kind names the CLI filters on (``--kind engine``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._components import Components

__all__ = ["COMPONENT_KINDS", "components_by_plugin", "normalize_kind"]

#: The kinds ``plugins`` lists, in display order. ``classifiers`` are plugins implementing
#: ``classify_failover`` (a hook, not a registry).
COMPONENT_KINDS = (
    "providers",
    "models",
    "engines",
    "sanitizers",
    "repairers",
    "formats",
    "prompt_sections",
    "backends",
    "classifiers",
)

_KIND_ALIASES = {
    "provider": "providers",
    "model": "models",
    "engine": "engines",
    "context_engine": "engines",
    "context_engines": "engines",
    "sanitizer": "sanitizers",
    "transcript_sanitizer": "sanitizers",
    "transcript_sanitizers": "sanitizers",
    "repairer": "repairers",
    "stream_repairer": "repairers",
    "stream_repairers": "repairers",
    "format": "formats",
    "tool_call_format": "formats",
    "tool_call_formats": "formats",
    "prompt_section": "prompt_sections",
    "backend": "backends",
    "classifier": "classifiers",
}


def normalize_kind(kind: str) -> str:
    """``engine``, ``engines``, ``context_engine``... → ``engines``; anything else is a
    ``ValueError`` listing the kinds."""
    key = kind.strip().lower().replace("-", "_")
    if key in COMPONENT_KINDS:
        return key
    if key in _KIND_ALIASES:
        return _KIND_ALIASES[key]
    raise ValueError(f"unknown component kind {kind!r}; kinds: {', '.join(COMPONENT_KINDS)}")


def components_by_plugin(
    components: Components, hooks_by_plugin: Mapping[str, Iterable[str]] = {}
) -> dict[str | None, dict[str, list[str]]]:
    """plugin → kind → sorted component names (only kinds it registered). Backends are
    ``<kind>:<name>``; models ``provider/id``; ``classifiers`` come from ``hooks_by_plugin``
    (plugin → the hooks it implements). ``None`` collects the config's own ``[[models]]``."""
    out: dict[str | None, dict[str, list[str]]] = {}

    def add(plugin: str | None, kind: str, name: str) -> None:
        out.setdefault(plugin, {}).setdefault(kind, []).append(name)

    slots: list[tuple[str, Any]] = [
        ("providers", components.providers),
        ("engines", components.context_engines),
        ("sanitizers", components.transcript_sanitizers),
        ("repairers", components.stream_repairers),
        ("formats", components.tool_call_formats),
        ("prompt_sections", components.prompt_sections),
    ]
    for kind, registry in slots:
        for registration in registry.registrations():
            add(registration.plugin, kind, registration.name)
    for backend_kind, registry in components.backends.items():
        for registration in registry.registrations():
            add(registration.plugin, "backends", f"{backend_kind}:{registration.name}")
    for model in components.models:
        add(components.models.owner(model.ref), "models", model.ref)
    for plugin, hooks in hooks_by_plugin.items():
        if "classify_failover" in hooks:
            add(plugin, "classifiers", "classify_failover")
    return {
        plugin: {kind: sorted(kinds[kind]) for kind in COMPONENT_KINDS if kind in kinds}
        for plugin, kinds in out.items()
    }
