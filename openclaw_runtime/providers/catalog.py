"""The built-in model catalog of the first-party providers: OpenAI, Anthropic and Google.

So that ``run --model openai/gpt-4o-mini`` or ``fallbacks = ["anthropic/claude-sonnet-4"]`` work
without a ``[[models]]`` entry, the runtime ships what a run needs to know about the common
models: id, context window, output cap, reasoning, input kinds and prices (USD per million
tokens). This module is data plus the table of which distribution speaks each provider's API.

Who registers what (through the ordinary ``register_models`` hook):

- ``builtin.core`` registers the ``openai`` rows (the Chat Completions provider is in the core);
- ``openclaw-runtime-anthropic`` registers the ``anthropic`` rows, ``openclaw-runtime-google``
  the ``google`` rows, next to the provider that can call them;
- any plugin may register more models; a ``[[models]]`` entry of the config replaces a catalog
  row of the same ``provider/id``.

The core keeps the Anthropic and Google rows too, without registering them, so it can say which
plugin to install when one of those models is asked for on a core-only install.

Source of the values: the providers' published model and pricing pages as the maintainers knew
them when this file was written (OpenClaw's generated catalog, ``models.generated``, was not
searchable from here); they are defaults, and a ``[[models]]`` entry overrides any of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..llm import Model, ModelCost
from .api_names import OPENAI_COMPLETIONS_API

__all__ = [
    "CATALOG_PROVIDERS",
    "CatalogProvider",
    "catalog_aliases",
    "catalog_models",
    "catalog_provider",
    "catalog_provider_for_api",
]


@dataclass(frozen=True, slots=True)
class CatalogProvider:
    """A first-party provider: the API its models speak, its endpoint, and the distribution
    that ships the provider (``None``: the core itself)."""

    name: str
    api: str
    base_url: str
    distribution: str | None
    plugin: str


CATALOG_PROVIDERS: dict[str, CatalogProvider] = {
    "openai": CatalogProvider(
        "openai", OPENAI_COMPLETIONS_API, "https://api.openai.com/v1", None, "builtin.core"
    ),
    "anthropic": CatalogProvider(
        "anthropic",
        "anthropic-messages",
        "https://api.anthropic.com",
        "openclaw-runtime-anthropic",
        "anthropic",
    ),
    "google": CatalogProvider(
        "google",
        "google-generative-ai",
        "https://generativelanguage.googleapis.com",
        "openclaw-runtime-google",
        "google",
    ),
}

_TI = ("text", "image")
_T = ("text",)

#: provider, id, context window, max output tokens, reasoning, input kinds,
#: $/M input, $/M output, $/M cache read, $/M cache write
_ROWS: tuple[tuple[str, str, int, int, bool, tuple[str, ...], float, float, float, float], ...] = (
    ("openai", "gpt-4o-mini", 128_000, 16_384, False, _TI, 0.15, 0.60, 0.075, 0),
    ("openai", "gpt-4o", 128_000, 16_384, False, _TI, 2.50, 10.00, 1.25, 0),
    ("openai", "gpt-4.1", 1_047_576, 32_768, False, _TI, 2.00, 8.00, 0.50, 0),
    ("openai", "gpt-4.1-mini", 1_047_576, 32_768, False, _TI, 0.40, 1.60, 0.10, 0),
    ("openai", "gpt-4.1-nano", 1_047_576, 32_768, False, _TI, 0.10, 0.40, 0.025, 0),
    ("openai", "o3", 200_000, 100_000, True, _TI, 2.00, 8.00, 0.50, 0),
    ("openai", "o3-mini", 200_000, 100_000, True, _T, 1.10, 4.40, 0.55, 0),
    ("openai", "o4-mini", 200_000, 100_000, True, _TI, 1.10, 4.40, 0.275, 0),
    ("openai", "gpt-5", 400_000, 128_000, True, _TI, 1.25, 10.00, 0.125, 0),
    ("openai", "gpt-5-mini", 400_000, 128_000, True, _TI, 0.25, 2.00, 0.025, 0),
    ("openai", "gpt-5-nano", 400_000, 128_000, True, _TI, 0.05, 0.40, 0.005, 0),
    ("anthropic", "claude-3-5-haiku-latest", 200_000, 8_192, False, _TI, 0.80, 4.00, 0.08, 1.00),
    ("anthropic", "claude-3-7-sonnet-latest", 200_000, 64_000, True, _TI, 3.00, 15.00, 0.30, 3.75),
    ("anthropic", "claude-sonnet-4-0", 200_000, 64_000, True, _TI, 3.00, 15.00, 0.30, 3.75),
    ("anthropic", "claude-sonnet-4-5", 200_000, 64_000, True, _TI, 3.00, 15.00, 0.30, 3.75),
    ("anthropic", "claude-opus-4-0", 200_000, 32_000, True, _TI, 15.00, 75.00, 1.50, 18.75),
    ("anthropic", "claude-opus-4-1", 200_000, 32_000, True, _TI, 15.00, 75.00, 1.50, 18.75),
    ("anthropic", "claude-haiku-4-5", 200_000, 64_000, True, _TI, 1.00, 5.00, 0.10, 1.25),
    ("google", "gemini-2.0-flash", 1_048_576, 8_192, False, _TI, 0.10, 0.40, 0.025, 0),
    ("google", "gemini-2.0-flash-lite", 1_048_576, 8_192, False, _TI, 0.075, 0.30, 0, 0),
    ("google", "gemini-2.5-flash", 1_048_576, 65_536, True, _TI, 0.30, 2.50, 0.075, 0),
    ("google", "gemini-2.5-flash-lite", 1_048_576, 65_536, True, _TI, 0.10, 0.40, 0.025, 0),
    ("google", "gemini-2.5-pro", 1_048_576, 65_536, True, _TI, 1.25, 10.00, 0.31, 0),
)

#: Short names people write (the README's ``anthropic/claude-sonnet-4``) → catalog id.
_ALIASES: dict[str, tuple[str, ...]] = {
    "anthropic/claude-sonnet-4-0": ("anthropic/claude-sonnet-4", "claude-sonnet-4"),
    "anthropic/claude-opus-4-0": ("anthropic/claude-opus-4", "claude-opus-4"),
}


def _model(
    row: tuple[str, str, int, int, bool, tuple[str, ...], float, float, float, float],
) -> Model:
    provider, model_id, window, max_tokens, reasoning, kinds, cin, cout, cread, cwrite = row
    spec = CATALOG_PROVIDERS[provider]
    return Model.model_validate(
        {
            "id": model_id,
            "name": model_id,
            "api": spec.api,
            "provider": provider,
            "base_url": spec.base_url,
            "reasoning": reasoning,
            "input": list(kinds),
            "cost": ModelCost(input=cin, output=cout, cache_read=cread, cache_write=cwrite),
            "context_window": window,
            "max_tokens": max_tokens,
        }
    )


def catalog_models(provider: str | None = None) -> list[Model]:
    """Fresh ``Model`` objects of the catalog (one provider's, or all), in table order."""
    return [_model(row) for row in _ROWS if provider is None or row[0] == provider]


def catalog_aliases(ref: str) -> tuple[str, ...]:
    """The short names registered with the catalog model ``ref``."""
    return _ALIASES.get(ref, ())


def catalog_provider(name: str) -> CatalogProvider | None:
    """The first-party provider a model name belongs to: by its ``provider/`` prefix, else by
    a catalog id or alias; ``None`` when the name says nothing about one."""
    if "/" in name:
        prefix = name.split("/", 1)[0].strip().lower()
        return CATALOG_PROVIDERS.get(prefix)
    for row in _ROWS:
        if row[1] == name:
            return CATALOG_PROVIDERS[row[0]]
    for ref, aliases in _ALIASES.items():
        if name in aliases:
            return CATALOG_PROVIDERS[ref.split("/", 1)[0]]
    return None


def catalog_provider_for_api(api: str) -> CatalogProvider | None:
    """The first-party provider whose models speak ``api``."""
    for spec in CATALOG_PROVIDERS.values():
        if spec.api == api:
            return spec
    return None
