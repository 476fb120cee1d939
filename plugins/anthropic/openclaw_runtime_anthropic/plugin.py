"""All hook implementations of openclaw-runtime-anthropic (the entry-point target)."""

from __future__ import annotations

from typing import Any

from openclaw_runtime import hookimpl
from openclaw_runtime.failover import FailoverClassification, FailoverSignal
from openclaw_runtime.providers.catalog import catalog_aliases, catalog_models
from openclaw_runtime.providers.deferred import DeferredProvider, ProviderLike
from openclaw_runtime.transcript import TranscriptPolicy
from openclaw_runtime.types import RegisterComponent, RegisterModel

from ._failover import ANTHROPIC_FAILOVER_OWNER
from ._request import ANTHROPIC_MESSAGES_API
from ._turns import validate_anthropic_replay_turns

__all__ = ["classify_failover", "register_models", "register_providers", "validate_replay_turns"]


def _provider() -> ProviderLike:
    """A new ``AnthropicProvider``, built on the first request (it imports httpx: start-up time)."""
    from ._provider import AnthropicProvider  # lazy: start-up time

    return AnthropicProvider()


@hookimpl
def classify_failover(signal: FailoverSignal) -> FailoverClassification | None:
    """Classify failures of ``anthropic`` and ``claude-cli``; no opinion on other providers."""
    return ANTHROPIC_FAILOVER_OWNER.classify(signal)


@hookimpl
def register_providers(register: RegisterComponent) -> None:
    """``anthropic-messages``: the Anthropic Messages API over httpx (one instance per runtime)."""
    register(ANTHROPIC_MESSAGES_API, DeferredProvider(_provider).stream_fn)


@hookimpl
def register_models(register: RegisterModel) -> None:
    """The ``anthropic`` rows of the core's catalog (``openclaw_runtime.providers.catalog``)."""
    for model in catalog_models("anthropic"):
        register(model, aliases=catalog_aliases(model.ref))


@hookimpl
def validate_replay_turns(messages: list[Any], policy: TranscriptPolicy) -> list[Any] | None:
    """Anthropic Messages / Bedrock: strict alternation, no dangling tool use, no empty tail."""
    return validate_anthropic_replay_turns(messages, policy)
