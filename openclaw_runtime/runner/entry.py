"""Run entry: turning loose input into settled facts before anything runs (seed 000 §4.1).

Pure functions, tested by tables:

* ``resolve_initial_run_model_ref`` — which model: explicit provider+model as given, a model
  alone through the alias index, else the agent default, else the built-in default;
* ``resolve_initial_thinking_level`` — the requested level, else the default for this model
  (a model without reasoning gets ``off``: the same default means different things);
* ``resolve_context_window_info`` / ``evaluate_context_window_guard`` — the window the run
  plans with (model, capped by ``[agent] context_tokens``) and whether it is too small to try
  (below 16 000 tokens: blocked with a failover error) or worth a warning (below 32 000);
* ``resolve_output_token_cap`` — the ``max_tokens`` every model call carries: the run's,
  else ``[agent] max_tokens``, else the model's own cap, so no call generates until the
  window is full.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ..llm import ThinkingLevel

__all__ = [
    "BUILTIN_DEFAULT_MODEL",
    "CONTEXT_WINDOW_HARD_MIN_TOKENS",
    "CONTEXT_WINDOW_WARN_BELOW_TOKENS",
    "DEFAULT_CONTEXT_TOKENS",
    "ContextWindowGuard",
    "ContextWindowInfo",
    "evaluate_context_window_guard",
    "resolve_context_window_info",
    "resolve_initial_run_model_ref",
    "resolve_initial_thinking_level",
    "resolve_output_token_cap",
]

#: OpenClaw's ``CONTEXT_WINDOW_HARD_MIN_TOKENS``: below this a model is not worth a call.
CONTEXT_WINDOW_HARD_MIN_TOKENS = 16_000
#: OpenClaw's ``CONTEXT_WINDOW_WARN_BELOW_TOKENS``.
CONTEXT_WINDOW_WARN_BELOW_TOKENS = 32_000
#: The window assumed when neither the model nor the config says.
DEFAULT_CONTEXT_TOKENS = 200_000
#: The model used when nothing is configured: the offline echo model.
BUILTIN_DEFAULT_MODEL = "echo/echo"

ContextWindowSource = Literal["model", "agentContextTokens", "default"]


def resolve_initial_run_model_ref(
    *,
    provider: str | None,
    model: str | None,
    aliases: Mapping[str, str],
    agent_default: str | None,
    builtin_default: str = BUILTIN_DEFAULT_MODEL,
) -> str:
    """The model reference the run starts with (``provider/model`` or a catalog name).

    | given            | result                                                   |
    | ---------------- | -------------------------------------------------------- |
    | provider + model | ``provider/model`` as given                              |
    | model only       | its alias target, else the string itself                 |
    | neither          | the agent default (through aliases), else built-in       |
    """
    provider = (provider or "").strip() or None
    model = (model or "").strip() or None
    index = {key.strip().lower(): value.strip() for key, value in aliases.items()}
    if provider and model:
        return f"{provider}/{model}"
    if model:
        return index.get(model.lower(), model)
    if provider:
        raise ValueError(f"a provider ({provider!r}) was given without a model")
    default = (agent_default or "").strip()
    if default:
        return index.get(default.lower(), default)
    return builtin_default


def resolve_initial_thinking_level(
    requested: ThinkingLevel | None, *, default: ThinkingLevel, model_reasoning: bool
) -> ThinkingLevel:
    """An explicit request wins; otherwise the default, which is ``off`` for a model that
    cannot reason."""
    if requested is not None:
        return requested
    return default if model_reasoning else "off"


@dataclass(frozen=True, slots=True)
class ContextWindowInfo:
    """The context window a run plans with and where the number came from."""

    tokens: int
    source: ContextWindowSource


@dataclass(frozen=True, slots=True)
class ContextWindowGuard:
    """``ContextWindowInfo`` plus the verdict."""

    tokens: int
    source: ContextWindowSource
    should_warn: bool
    should_block: bool


def resolve_context_window_info(
    *,
    model_context_window: float | None,
    agent_context_tokens: float | None = None,
    default_tokens: int = DEFAULT_CONTEXT_TOKENS,
) -> ContextWindowInfo:
    """The model's window (or the default), capped by ``[agent] context_tokens``."""
    info: ContextWindowInfo
    if _positive(model_context_window):
        info = ContextWindowInfo(int(model_context_window), "model")  # type: ignore[arg-type]
    else:
        info = ContextWindowInfo(default_tokens, "default")
    if _positive(agent_context_tokens) and agent_context_tokens < info.tokens:  # type: ignore[operator]
        info = ContextWindowInfo(int(agent_context_tokens), "agentContextTokens")  # type: ignore[arg-type]
    return info


def evaluate_context_window_guard(
    info: ContextWindowInfo,
    *,
    warn_below_tokens: int = CONTEXT_WINDOW_WARN_BELOW_TOKENS,
    hard_min_tokens: int = CONTEXT_WINDOW_HARD_MIN_TOKENS,
) -> ContextWindowGuard:
    """Warn below ``warn_below_tokens``, block below ``hard_min_tokens`` (0 means unknown:
    neither)."""
    tokens = max(0, math.floor(info.tokens))
    return ContextWindowGuard(
        tokens=tokens,
        source=info.source,
        should_warn=0 < tokens < warn_below_tokens,
        should_block=0 < tokens < hard_min_tokens,
    )


def resolve_output_token_cap(
    requested: int | None, configured: int | None, model_max_tokens: int | None
) -> int | None:
    """The output cap of a run's model calls: ``requested`` (``--max-tokens``,
    ``RunRequest.max_tokens``), else ``configured`` (``[agent] max_tokens``), else the
    model's ``max_tokens`` (8 192 for a model the catalog says nothing about). The provider
    still clamps it to the model's cap. Non-positive values count as unset."""
    for value in (requested, configured, model_max_tokens):
        if value is not None and not isinstance(value, bool) and value > 0:
            return int(value)
    return None


def _positive(value: float | None) -> bool:
    return value is not None and not isinstance(value, bool) and math.isfinite(value) and value > 0
