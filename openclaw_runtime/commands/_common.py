"""What every subcommand shares: error handling and exit codes, the config, ad-hoc models,
and finding a session by id or key.

Exit codes: 0 success, 1 a run (or another operation) failed, 2 the invocation or the
configuration is wrong — so scripts can tell "fix your setup" from "try again later".
Error text goes through ``redact_secret_text``: provider errors sometimes echo keys.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from .._exceptions import (
    ComponentNotFoundError,
    ConfigurationError,
    OpenClawRuntimeError,
    PluginError,
)
from .._plugins import parse_bool_env
from .._runtime import Runtime
from ..auth.json_file import open_auth_profile_store
from ..config import RuntimeConfig
from ..failover.events import redact_secret_text
from ..llm import Model
from ..providers.api_names import OPENAI_COMPLETIONS_API
from ..providers.keys import api_key_env_names, is_local_base_url, resolve_env_api_key
from ..redaction import redact_data
from ..transcript.session_ids import InvalidSessionIdError, validate_session_id

__all__ = [
    "ADHOC_DEFAULT_MAX_TOKENS",
    "ENV_RAISE",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "adhoc_model_config",
    "command_errors",
    "fail",
    "find_session",
    "load_config",
    "safe",
    "safe_json",
]

F = TypeVar("F", bound=Callable[..., Any])
ENV_RAISE = "OPENCLAW_RUNTIME_RAISE_ERRORS"
EXIT_FAILED = 1
EXIT_USAGE = 2
#: Raised on purpose for bad input or setup: exit code 2.
USAGE_ERRORS: tuple[type[BaseException], ...] = (
    ConfigurationError,
    ComponentNotFoundError,
    InvalidSessionIdError,
    PluginError,
)


def safe(text: object) -> str:
    """``text`` with key-shaped values masked (for anything printed from an error)."""
    return redact_secret_text(str(text), limit=4_000)


def safe_json(value: Any, **options: Any) -> str:
    """``json.dumps(value)`` with every string in it redacted (for ``--json`` output)."""
    return json.dumps(redact_data(value, diagnostic=True), **options)


def fail(message: str, code: int = EXIT_FAILED) -> None:
    """Print ``error: message`` on stderr and exit with ``code``."""
    click.echo(f"error: {safe(message)}", err=True)
    sys.exit(code)


def command_errors(fn: F | None = None, *, usage_exit: int = EXIT_USAGE) -> Any:
    """One-line errors instead of tracebacks: ``usage_exit`` (2) for usage/config errors,
    1 otherwise. Use bare (``@command_errors``) or with ``usage_exit=`` for commands whose
    documented contract predates exit code 2.

    ``OPENCLAW_RUNTIME_RAISE_ERRORS=1`` re-raises instead (tracebacks while debugging).
    """

    def decorate(func: F) -> F:
        @wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except OpenClawRuntimeError as exc:
                if parse_bool_env(ENV_RAISE, os.environ.get(ENV_RAISE, "")):
                    raise
                fail(str(exc), usage_exit if isinstance(exc, USAGE_ERRORS) else EXIT_FAILED)
            except KeyboardInterrupt:
                click.echo("interrupted", err=True)
                sys.exit(130)

        return wrapper  # type: ignore[return-value]

    return decorate(fn) if fn is not None else decorate


def load_config(ctx: click.Context) -> RuntimeConfig:
    """The config named by the group's ``--config`` (or the usual places), env overrides in."""
    obj = ctx.find_root().obj or {}
    return RuntimeConfig.load(obj.get("config_path"))


#: The output cap of an ad-hoc ``--base-url`` model when neither ``--max-tokens`` nor
#: ``[agent] max_tokens`` says: the catalog's default for a model it knows nothing about
#: (``Model.max_tokens``), so a call never generates until the window is full.
ADHOC_DEFAULT_MAX_TOKENS = 8_192


def adhoc_model_config(
    config: RuntimeConfig,
    *,
    base_url: str,
    model: str | None,
    provider: str | None,
    max_tokens: int | None = None,
) -> tuple[RuntimeConfig, str]:
    """``config`` plus an OpenAI-compatible model served at ``base_url``, and its ref.

    This is what ``--base-url`` means: no catalog entry needed to talk to any
    OpenAI-compatible endpoint (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp...). Its output
    cap is ``max_tokens``, else ``ADHOC_DEFAULT_MAX_TOKENS``.
    """
    if not model:
        raise click.UsageError("--base-url needs --model (the model id the server expects)")
    url = base_url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise click.BadParameter(f"{base_url!r} is not an http(s) URL", param_hint="'--base-url'")
    entry = Model(
        id=model,
        name=model,
        api=OPENAI_COMPLETIONS_API,
        provider=(provider or "openai").strip(),
        base_url=url,
        max_tokens=max_tokens or ADHOC_DEFAULT_MAX_TOKENS,
    )
    models = [m for m in config.models if m.ref != entry.ref]
    updated = config.model_copy(update={"models": [*models, entry]})
    if not is_local_base_url(url) and not _has_key(config, entry.provider):
        names = " or ".join(api_key_env_names(entry.provider))
        raise ConfigurationError(
            f"no API key for provider {entry.provider!r}: set {names} or configure an "
            "[[auth.profiles]] entry for it"
        )
    return updated, entry.ref


def _has_key(config: RuntimeConfig, provider: str) -> bool:
    """An env key or an auth profile (configured or stored) exists for ``provider``."""
    if resolve_env_api_key(provider) is not None:
        return True
    if any(p.provider == provider for p in config.auth.profiles):
        return True
    try:
        stored = open_auth_profile_store(config).load_sync().profiles.values()
    except OpenClawRuntimeError:
        return True  # a broken ledger is reported by the run itself, not guessed at here
    return any(p.provider == provider for p in stored)


async def find_session(runtime: Runtime, id_or_key: str) -> tuple[str, str | None]:
    """``(session id, session key)`` of a stored session named by its id or its key."""
    store, index = runtime.session_store, runtime.session_index
    try:
        session_id: str | None = validate_session_id(id_or_key)
    except InvalidSessionIdError:
        session_id = None
    if session_id is not None and await store.exists(session_id):
        return session_id, await index.lookup_key(session_id)
    by_key = await index.lookup_id(id_or_key)
    if by_key is not None and await store.exists(by_key):
        return by_key, id_or_key
    raise ConfigurationError(
        f"no session with id or key {id_or_key!r} in {runtime.sessions_dir} "
        "(see: openclaw-runtime sessions list)"
    )
