"""Built-in plugin ``builtin.providers``: the OpenAI-compatible Chat Completions provider.

Registered as a ``DeferredProvider``: the provider (and httpx with it) is built on its first
request, so a runtime that never calls this API does not import it.
"""

from __future__ import annotations

from .._markers import hookimpl
from .._types import RegisterComponent
from ..providers.api_names import OPENAI_COMPLETIONS_API
from ..providers.deferred import DeferredProvider, ProviderLike


def chat_completions_provider() -> ProviderLike:
    """A new ``OpenAICompatProvider`` (imports httpx: called on the first request)."""
    from ..providers.openai_compat import OpenAICompatProvider  # lazy: start-up time

    return OpenAICompatProvider()


@hookimpl(trylast=True)
def register_providers(register: RegisterComponent) -> None:
    """``openai-completions`` (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp); one per runtime."""
    register(OPENAI_COMPLETIONS_API, DeferredProvider(chat_completions_provider).stream_fn)
