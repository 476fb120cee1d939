"""``DecodedStreamProvider``: the HTTP side of a provider whose response a decoder turns into
events (the Anthropic Messages and Gemini providers share it).

A subclass says where the request goes (``url``), how the key travels (``auth_headers``),
what the body is (``build_body``) and which decoder reads the answer (``new_decoder``,
``is_complete``). This class does the rest the same way for every such provider: the key
lookup, ``on_payload``/``on_response``, timeouts and abort, the error body of a non-2xx
answer, draining after the end of the stream, and mapping every failure onto the message.
``stream_fn`` never raises.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any, Protocol

import httpx
import orjson

from ..events import AssistantMessageEvent, AssistantMessageEventStream
from ..llm import Context, Model, StreamOptions
from ..redaction import register_header_secrets
from .builder import MessageBuilder
from .errors import (
    EMPTY_STREAM_ERROR,
    ProviderFailure,
    body_has_content,
    failure_from_exception,
    failure_from_http,
    failure_from_unexpected_body,
)
from .http import (
    Aborted,
    HTTPClientPool,
    IdleTimeout,
    Timeouts,
    guarded,
    read_body_capped,
    stream_chunks,
)
from .keys import is_local_base_url, resolve_env_api_key
from .request_memo import RequestMemo, request_memo_of

__all__ = ["ABORTED_ERROR", "DecodedStreamProvider", "StreamDecoder"]

ABORTED_ERROR = "Request was aborted"
#: Bytes of a body kept until its first event, to name what came back when none did.
_SNIFF_LIMIT = 64 * 1024


class StreamDecoder(Protocol):
    """Turns response bytes into events on ``out``; records a ``failure`` it reads."""

    builder: MessageBuilder
    failure: ProviderFailure | None

    def feed(self, chunk: bytes, out: list[AssistantMessageEvent]) -> None: ...

    def close(self, out: list[AssistantMessageEvent]) -> None: ...


class DecodedStreamProvider:
    """One instance serves any number of models of its ``api``."""

    api: str = ""
    #: Refuse a model without an ``http(s)://`` URL instead of sending the request.
    require_http_url = False

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
        return f"{type(self).__name__}(timeouts={self.timeouts!r})"

    @property
    def request_memo(self) -> RequestMemo:
        """The previous request's params of each live conversation (``providers.request_memo``),
        made on first use: one per provider, so per runtime and event loop. A subclass's
        ``build_body`` converts a tool loop's messages through it."""
        return request_memo_of(self)

    def stream_fn(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        """Stream one response; never raises — failures end the stream as ``error``."""
        return AssistantMessageEventStream(self._events(model, context, options))

    __call__ = stream_fn

    async def aclose(self) -> None:
        """Close this event loop's HTTP client."""
        await self.pool.aclose()

    # what a subclass provides ---------------------------------------------------------------

    def url(self, model: Model) -> str:
        """Where requests for ``model`` go."""
        raise NotImplementedError

    def auth_headers(
        self, model: Model, context: Context, options: StreamOptions, api_key: str | None
    ) -> dict[str, str]:
        """The provider's own headers, the key among them (the only place it travels)."""
        raise NotImplementedError

    def build_body(self, model: Model, context: Context, options: StreamOptions) -> Any:
        """The JSON request body."""
        raise NotImplementedError

    def new_decoder(self, model: Model) -> Any:
        """A fresh ``StreamDecoder`` for one response."""
        raise NotImplementedError

    def is_complete(self, decoder: Any) -> bool:
        """The decoder saw the end of the answer (the rest of the body is only drained)."""
        raise NotImplementedError

    # the shared part ------------------------------------------------------------------------

    def headers(
        self, model: Model, context: Context, options: StreamOptions, api_key: str | None
    ) -> dict[str, str]:
        """Request headers: JSON in, SSE out, the provider's own, then model and call extras."""
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        headers.update(self.auth_headers(model, context, options, api_key))
        if model.headers:
            headers.update(model.headers)
        if options.headers:
            headers.update(options.headers)
        register_header_secrets(headers)  # whatever carries the key is masked from now on
        return headers

    async def _events(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        decoder = self.new_decoder(model)
        builder: MessageBuilder = decoder.builder
        signal = options.signal
        timeouts = Timeouts.from_options(options, self.timeouts)
        out: list[AssistantMessageEvent] = []
        url = self.url(model)
        if self.require_http_url and not url.startswith(("http://", "https://")):
            failure = ProviderFailure(f"No base URL configured for provider: {model.provider}")
            for event in _failed(builder, failure):
                yield event
            return
        api_key = options.api_key or resolve_env_api_key(model.provider, self.env)
        if not api_key and not is_local_base_url(url):
            failure = ProviderFailure(f"No API key found for provider: {model.provider}")
            for event in _failed(builder, failure):
                yield event
            return
        try:
            body: Any = self.build_body(model, context, options)
            if options.on_payload is not None:
                replaced = options.on_payload(body, model)
                if replaced is not None:
                    body = replaced
            request = self.pool.stream(
                "POST",
                url,
                content=orjson.dumps(body),
                headers=self.headers(model, context, options, api_key),
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
                    complete=lambda: self.is_complete(decoder),
                    drain_s=self.drain_timeout,
                )
                sniffed = bytearray()  # the body until the first event, to say what it was
                async with aclosing(source) as chunks:
                    async for chunk in chunks:
                        if not builder.output_started and len(sniffed) < _SNIFF_LIMIT:
                            sniffed += chunk[: _SNIFF_LIMIT - len(sniffed)]
                        decoder.feed(chunk, out)
                        if out:
                            for event in out:
                                yield event
                            out.clear()
                        if decoder.failure is not None:
                            break
                decoder.close(out)
                _name_unexpected_body(builder, response.headers.get("content-type"), url, sniffed)
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


def _name_unexpected_body(
    builder: MessageBuilder, content_type: str | None, url: str, body: bytearray
) -> None:
    """The decoder found no event in a body that was not empty (an HTML page from a proxy,
    some JSON): say what came back instead of "empty response" (the error event holds the
    same message object, so it says it too)."""
    message = builder.message
    if message.error_message != EMPTY_STREAM_ERROR or not body_has_content(body):
        return
    failure = failure_from_unexpected_body(content_type, url, bytes(body))
    message.error_message = failure.message
    failure.apply_to(message)


def _failed(builder: MessageBuilder, failure: ProviderFailure) -> list[AssistantMessageEvent]:
    out: list[AssistantMessageEvent] = []
    builder.fail(failure, out)
    return out
