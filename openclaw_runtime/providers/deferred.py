"""A provider built on its first request, so registering one imports nothing heavy.

The built-in plugin registers the Chat Completions provider in every ``Runtime``; building it
imports httpx and the provider's stream machinery, a large share of start-up for a program
that never calls that API (an offline ``echo`` run, a plugin's own provider). A
``DeferredProvider`` stands in for it in the registry: its ``stream_fn`` builds the provider
on the first call and hands every call on to it, and ``aclose`` closes the provider only if
it was built (``Runtime.aclose`` finds it through ``stream_fn.__self__``, as before).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from ..events import AssistantMessageEventStream
from ..llm import Context, Model, StreamOptions

__all__ = ["DeferredProvider", "ProviderLike"]


class ProviderLike(Protocol):
    """What a deferred provider builds: a ``stream_fn`` and an ``aclose``."""

    def stream_fn(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream: ...

    async def aclose(self) -> None: ...


class DeferredProvider:
    """Builds its provider with ``factory()`` on the first ``stream_fn`` call (once)."""

    def __init__(self, factory: Callable[[], ProviderLike]) -> None:
        self._factory = factory
        self._provider: ProviderLike | None = None
        self._lock = threading.Lock()  # runtimes on several threads' event loops share it

    @property
    def built(self) -> bool:
        """Whether the provider exists yet (no request has been made while it does not)."""
        return self._provider is not None

    @property
    def provider(self) -> ProviderLike:
        """The provider, built now if no request built it yet."""
        provider = self._provider
        if provider is None:
            with self._lock:
                if self._provider is None:
                    self._provider = self._factory()
                provider = self._provider
        return provider

    def stream_fn(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        """The provider's ``stream_fn`` (built on the first call)."""
        return self.provider.stream_fn(model, context, options)

    __call__ = stream_fn

    async def aclose(self) -> None:
        """Close the provider's clients if it was built; nothing to do otherwise."""
        if self._provider is not None:
            await self._provider.aclose()
