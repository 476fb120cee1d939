"""All hook implementations of openclaw-runtime-google (the entry-point target)."""

from __future__ import annotations

from typing import Any

from openclaw_runtime import hookimpl
from openclaw_runtime.failover import FailoverClassification, FailoverSignal
from openclaw_runtime.providers.catalog import catalog_aliases, catalog_models
from openclaw_runtime.providers.deferred import DeferredProvider, ProviderLike
from openclaw_runtime.transcript import TranscriptPolicy
from openclaw_runtime.types import RegisterComponent, RegisterModel

from ._failover import GOOGLE_FAILOVER_OWNER
from ._request import GOOGLE_GENERATIVE_AI_API
from ._turns import validate_google_replay_turns

__all__ = ["classify_failover", "register_models", "register_providers", "validate_replay_turns"]


def _provider() -> ProviderLike:
    """A new ``GeminiProvider``, built on the first request (it imports httpx: start-up time)."""
    from ._provider import GeminiProvider  # lazy: start-up time

    return GeminiProvider()


@hookimpl
def classify_failover(signal: FailoverSignal) -> FailoverClassification | None:
    """Classify failures of the Gemini providers; no opinion on other providers."""
    return GOOGLE_FAILOVER_OWNER.classify(signal)


@hookimpl
def register_providers(register: RegisterComponent) -> None:
    """``google-generative-ai``: Gemini streamGenerateContent over httpx (one per runtime)."""
    register(GOOGLE_GENERATIVE_AI_API, DeferredProvider(_provider).stream_fn)


@hookimpl
def register_models(register: RegisterModel) -> None:
    """The ``google`` rows of the core's catalog (``openclaw_runtime.providers.catalog``)."""
    for model in catalog_models("google"):
        register(model, aliases=catalog_aliases(model.ref))


@hookimpl
def validate_replay_turns(messages: list[Any], policy: TranscriptPolicy) -> list[Any] | None:
    """Gemini: merged model turns, user-first history."""
    return validate_google_replay_turns(messages, policy)
