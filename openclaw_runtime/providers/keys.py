"""API keys from the environment, by provider name. Keys are never logged or echoed: a key
found here is registered with ``openclaw_runtime.redaction``."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from ..redaction import register_secret

__all__ = ["ENV_API_KEYS", "api_key_env_names", "is_local_base_url", "resolve_env_api_key"]

#: Well-known variable names; any other provider uses ``<PROVIDER>_API_KEY``.
ENV_API_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
}


def api_key_env_names(provider: str) -> tuple[str, ...]:
    """Environment variables that may hold ``provider``'s key, most specific first."""
    known = ENV_API_KEYS.get(provider.lower())
    if known is not None:
        return known
    return (re.sub(r"[^A-Za-z0-9]+", "_", provider).upper().strip("_") + "_API_KEY",)


def resolve_env_api_key(provider: str, env: Mapping[str, str] | None = None) -> str | None:
    """The first non-empty key for ``provider`` in the environment."""
    source = os.environ if env is None else env
    for name in api_key_env_names(provider):
        value = source.get(name, "").strip()
        if value:
            register_secret(value)  # masked in everything the process writes from now on
            return value
    return None


def is_local_base_url(base_url: str) -> bool:
    """Local servers (Ollama, vLLM, llama.cpp on this machine) need no key."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host in {"localhost", "127.0.0.1", "::1", "0.0.0.0"} or host.endswith(".localhost")
