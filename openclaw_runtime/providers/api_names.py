"""The ``api`` names of the providers in the core, in a module that imports nothing.

The catalog, the CLI and the built-in plugin name the Chat Completions API without importing
its provider (``openai_compat``, which loads httpx): start-up time.
"""

from __future__ import annotations

__all__ = ["OPENAI_COMPLETIONS_API"]

#: Chat Completions (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp): ``OpenAICompatProvider``.
OPENAI_COMPLETIONS_API = "openai-completions"
