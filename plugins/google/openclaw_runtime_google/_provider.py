"""``GeminiProvider``: Gemini ``streamGenerateContent`` (``google-generative-ai``) over httpx.

``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with the key in the
``x-goog-api-key`` header. The body is built by ``_request`` and the SSE response decoded by
``_stream``; this module wires HTTP: keys, timeouts, abort and the error body of a non-2xx
answer (Gemini's ``{"error": {"code", "message", "status", "details": [RetryInfo]}}`` gives
the status as the code and ``retryDelay`` as the retry-after). ``stream_fn`` never raises.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

import httpx
import orjson

from openclaw_runtime.events import AssistantMessageEvent, AssistantMessageEventStream
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.providers.builder import MessageBuilder
from openclaw_runtime.providers.errors import (
    ProviderFailure,
    failure_from_exception,
    failure_from_http,
)
from openclaw_runtime.providers.http import (
    Aborted,
    HTTPClientPool,
    IdleTimeout,
    Timeouts,
    guarded,
    read_body_capped,
    stream_chunks,
)
from openclaw_runtime.providers.keys import is_local_base_url, resolve_env_api_key

from ._request import GOOGLE_GENERATIVE_AI_API, build_request_body, stream_url
from ._stream import GeminiStreamDecoder

__all__ = ["ABORTED_ERROR", "GeminiProvider"]

ABORTED_ERROR = "Request was aborted"


class GeminiProvider:
    """The ``google-generative-ai`` API. One instance serves any number of models."""

    api = GOOGLE_GENERATIVE_AI_API

    def __init__(
        self,
        *,
        timeouts: Timeouts | None = None,
        pool: HTTPClientPool | None = None,
        env: Mapping[str, str] | None = None,
        drain_timeout: float = 1.0,
    ) -> None:
        self.timeouts = timeouts or Timeouts()
        self.drain_timeout = drain_timeout
        self.pool = pool or HTTPClientPool(follow_redirects=False)
        self.env = env

    def __repr__(self) -> str:
        return f"GeminiProvider(timeouts={self.timeouts!r})"

    def stream_fn(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        """Stream one response; never raises — failures end the stream as ``error``."""
        return AssistantMessageEventStream(self._events(model, context, options))

    __call__ = stream_fn

    async def aclose(self) -> None:
        """Close this event loop's HTTP client."""
        await self.pool.aclose()

    def url(self, model: Model) -> str:
        """Where requests for ``model`` go."""
        return stream_url(model.base_url, model.id)

    def headers(self, model: Model, options: StreamOptions, api_key: str | None) -> dict[str, str]:
        """Request headers; the key travels only here."""
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if api_key:
            headers["x-goog-api-key"] = api_key
        if model.headers:
            headers.update(model.headers)
        if options.headers:
            headers.update(options.headers)
        return headers

    async def _events(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        decoder = GeminiStreamDecoder(model)
        builder = decoder.builder
        signal = options.signal
        timeouts = Timeouts.from_options(options, self.timeouts)
        out: list[AssistantMessageEvent] = []
        url = self.url(model)
        api_key = options.api_key or resolve_env_api_key(model.provider, self.env)
        if not api_key and not is_local_base_url(url):
            failure = ProviderFailure(f"No API key found for provider: {model.provider}")
            for event in _failed(builder, failure):
                yield event
            return
        try:
            body: Any = build_request_body(model, context, options)
            if options.on_payload is not None:
                replaced = options.on_payload(body, model)
                if replaced is not None:
                    body = replaced
            request = self.pool.stream(
                "POST",
                url,
                content=orjson.dumps(body),
                headers=self.headers(model, options, api_key),
                timeout=timeouts.httpx(),
            )
            response = await guarded(request.__aenter__, signal, None)
        except Aborted:
            for event in _failed(builder, ProviderFailure(ABORTED_ERROR, aborted=True)):
                yield event
            return
        except Exception as exc:
            failure = failure_from_exception(exc, idle_timeout=timeouts.idle)
            for event in _failed(builder, failure):
                yield event
            return
        try:
            if options.on_response is not None:
                options.on_response(
                    {"status": response.status_code, "headers": dict(response.headers)}, model
                )
            if response.status_code >= 400:
                raw = await read_body_capped(response, signal, timeouts.idle)
                builder.fail(failure_from_http(response.status_code, response.headers, raw), out)
            else:
                source: Any = stream_chunks(
                    response,
                    signal,
                    timeouts.idle,
                    complete=lambda: decoder.stop_reason is not None,
                    drain_s=self.drain_timeout,
                )
                async with aclosing(source) as chunks:
                    async for chunk in chunks:
                        decoder.feed(chunk, out)
                        if out:
                            for event in out:
                                yield event
                            out.clear()
                        if decoder.failure is not None:
                            break
                decoder.close(out)
        except Aborted:
            builder.fail(ProviderFailure(ABORTED_ERROR, aborted=True), out)
        except (IdleTimeout, httpx.HTTPError) as exc:
            builder.fail(failure_from_exception(exc, idle_timeout=timeouts.idle), out)
        except Exception as exc:
            builder.fail(ProviderFailure(f"{type(exc).__name__}: {exc}"), out)
        finally:
            await request.__aexit__(None, None, None)
        for event in out:
            yield event


def _failed(builder: MessageBuilder, failure: ProviderFailure) -> list[AssistantMessageEvent]:
    out: list[AssistantMessageEvent] = []
    builder.fail(failure, out)
    return out
