"""What to tell someone whose model name the catalog does not know.

Three answers, each a pure function over the names the registry knows:

- the model belongs to a first-party provider whose plugin is not loaded: name the
  distribution to install (``pip install openclaw-runtime-anthropic``), or say it is disabled;
- the model is a newer member of a family the catalog knows (``claude-sonnet-4-7`` when
  ``claude-sonnet-4-5`` is known): see ``forward_compat``;
- otherwise: the closest known ids, and the two ways to declare a model (``--base-url`` for an
  OpenAI-compatible endpoint, or a ``[[models]]`` entry).

The errors are ``ComponentNotFoundError`` (unknown) and ``ConfigurationError`` (plugin missing),
so the CLI prints them as one line and exits 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from .._exceptions import ComponentNotFoundError, ConfigurationError, OpenClawRuntimeError
from .catalog import catalog_provider, catalog_provider_for_api

__all__ = [
    "MissingProviderPluginError",
    "UnknownModelError",
    "closest_model_names",
    "missing_plugin_message",
    "missing_provider_plugin",
    "unknown_model_hint",
]


def closest_model_names(name: str, known: Iterable[str], *, limit: int = 3) -> list[str]:
    """Up to ``limit`` known names nearest to ``name`` (by ref and by bare id), best first."""
    refs = sorted(set(known))
    by_id: dict[str, list[str]] = {}
    for ref in refs:
        by_id.setdefault(ref.split("/", 1)[-1], []).append(ref)
    wanted = name.strip().lower()
    bare = wanted.split("/", 1)[-1]
    scored: dict[str, float] = {}
    for ref in refs:
        ratio = difflib.SequenceMatcher(None, wanted, ref.lower()).ratio()
        scored[ref] = max(scored.get(ref, 0.0), ratio)
    for model_id, owners in by_id.items():
        ratio = difflib.SequenceMatcher(None, bare, model_id.lower()).ratio()
        for ref in owners:
            scored[ref] = max(scored[ref], ratio)
    ranked = sorted((r for r in scored if scored[r] >= 0.6), key=lambda r: (-scored[r], r))
    return ranked[:limit]


def unknown_model_hint(name: str, known: Iterable[str]) -> str:
    """The hint after ``unknown model 'x'``: the closest ids, then how to declare it."""
    close = closest_model_names(name, known)
    bare = name.split("/", 1)[-1]
    nearest = f"closest known: {', '.join(close)}; " if close else ""
    return (
        f"{nearest}declare it with --base-url URL --model {bare} (any OpenAI-compatible "
        "endpoint) or a [[models]] entry in the config; `openclaw-runtime models` lists the "
        "catalog"
    )


def missing_plugin_message(
    name: str, provider: str, distribution: str, *, disabled: bool = False
) -> str:
    """One line: which distribution serves ``provider``, and what to do about it."""
    if disabled:
        return (
            f"model {name!r} needs the {provider} provider of the plugin {distribution}, "
            "which is installed but disabled (OPENCLAW_RUNTIME_DISABLE_PLUGINS or "
            "[plugins] disable)"
        )
    return f"model {name!r} needs the {provider} provider plugin: pip install {distribution}"


class UnknownModelError(ComponentNotFoundError):
    """No model of that name, and no family to resolve it from; the message has the hint."""

    def __init__(self, name: str, available: Iterable[str]) -> None:
        names = sorted(available)
        super().__init__("model", name, names)
        OpenClawRuntimeError.__init__(
            self, f"unknown model {name!r}; {unknown_model_hint(name, names)}"
        )


class MissingProviderPluginError(ConfigurationError):
    """The model's provider ships in a plugin distribution that is not loaded."""

    def __init__(self, message: str, *, distribution: str, provider: str) -> None:
        super().__init__(message)
        self.distribution = distribution
        self.provider = provider


def missing_provider_plugin(
    name: str,
    registered_apis: Iterable[str],
    plugin_status: Mapping[str, str],
    *,
    api: str | None = None,
) -> MissingProviderPluginError | None:
    """The error for ``name`` when it belongs to a first-party provider (by its ``provider/``
    prefix, its catalog id, or ``api``) whose API no loaded plugin registered; else ``None``.

    ``plugin_status``: plugin name → ``loaded``/``failed``/``blocked`` (the host's records).
    """
    spec = catalog_provider_for_api(api) if api is not None else catalog_provider(name)
    if spec is None or spec.distribution is None or spec.api in set(registered_apis):
        return None
    disabled = plugin_status.get(spec.plugin) == "blocked"
    return MissingProviderPluginError(
        missing_plugin_message(name, spec.name, spec.distribution, disabled=disabled),
        distribution=spec.distribution,
        provider=spec.name,
    )
