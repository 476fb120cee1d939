"""Built-in plugin ``builtin.providers``: the OpenAI-compatible Chat Completions provider."""

from __future__ import annotations

from .._markers import hookimpl
from .._types import RegisterComponent
from ..providers.openai_compat import OPENAI_COMPLETIONS_API, OpenAICompatProvider


@hookimpl(trylast=True)
def register_providers(register: RegisterComponent) -> None:
    """``openai-completions`` (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp); one per runtime."""
    register(OPENAI_COMPLETIONS_API, OpenAICompatProvider().stream_fn)
