"""``Components``: the registries a ``Runtime`` fills from its plugins' registration hooks.

One registry per slot (providers, models, context engines, transcript sanitizers, stream
repairers, tool-call formats, and one per backend kind), plus ``component_clashes``, which
lists every name two plugins registered. ``Hooks.collect_components`` fills them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._exceptions import UnknownContextEngineError
from ._registry import ComponentClash, ComponentRegistry
from .backends import BACKEND_KINDS
from .llm import StreamFn
from .providers.registry import ModelRegistry

__all__ = ["Components", "component_clashes", "registries"]


def _engine_registry() -> ComponentRegistry[Callable[..., Any]]:
    return ComponentRegistry("context engine", not_found=UnknownContextEngineError)


@dataclass
class Components:
    """Everything plugins registered, by slot."""

    providers: ComponentRegistry[StreamFn] = field(
        default_factory=lambda: ComponentRegistry("provider API")
    )
    models: ModelRegistry = field(default_factory=ModelRegistry)
    context_engines: ComponentRegistry[Callable[..., Any]] = field(default_factory=_engine_registry)
    transcript_sanitizers: ComponentRegistry[Callable[..., Any]] = field(
        default_factory=lambda: ComponentRegistry("transcript sanitizer")
    )
    stream_repairers: ComponentRegistry[Callable[..., Any]] = field(
        default_factory=lambda: ComponentRegistry("stream repairer")
    )
    tool_call_formats: ComponentRegistry[Any] = field(
        default_factory=lambda: ComponentRegistry("tool-call format")
    )
    prompt_sections: ComponentRegistry[Callable[..., Any]] = field(
        default_factory=lambda: ComponentRegistry("prompt section")
    )
    backends: dict[str, ComponentRegistry[Callable[..., Any]]] = field(
        default_factory=lambda: {
            kind: ComponentRegistry(f"{kind} backend") for kind in BACKEND_KINDS
        }
    )


def registries(components: Components) -> list[ComponentRegistry[Any]]:
    """Every named-component registry (all slots but models), in slot order."""
    return [
        components.providers,
        components.context_engines,
        components.transcript_sanitizers,
        components.stream_repairers,
        components.tool_call_formats,
        components.prompt_sections,
        *components.backends.values(),
    ]


def component_clashes(components: Components) -> list[ComponentClash]:
    """Every component-name clash, models included, in slot order."""
    out: list[ComponentClash] = []
    for registry in registries(components):
        out.extend(registry.clashes)
    out.extend(components.models.clashes)
    return out
