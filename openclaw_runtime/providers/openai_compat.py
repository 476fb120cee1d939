"""The OpenAI-compatible Chat Completions provider (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp).

``POST {base_url}/chat/completions`` with ``stream: true``, read as server-sent events. The
decoder is forgiving the way real servers need: comment pings, a missing ``[DONE]``, an empty
200 body, usage chunks or none, ``reasoning_content`` / ``reasoning`` as thinking, tool-call
deltas whose id/type/name repeat on every chunk (set, never concatenated) while arguments
arrive in pieces, ``{"error": ...}`` objects inside a 200 stream, and error bodies of any
shape. Every failure ends the stream as an error message with the facts to classify it.

The request body is built in ``openai_request``; one response's events are folded by
``openai_stream.ChatCompletionStreamState``; this module does the HTTP and the stream's end.

Hot path: one network read may hold many events; their data comes from one split of the read
(``SSEDecoder.feed_data``) and each costs one ``orjson.loads`` of bytes and a dict walk. The
plain content deltas of one read are delivered as ONE ``text_delta`` (their concatenation,
``ChatCompletionStreamState.fold``) unless ``StreamOptions.coalesce_deltas`` is off; a read
that is one event (``SSEDecoder.one_event``, what servers send when the reader keeps up) is one
``apply``. The body is iterated here, not through ``stream_chunks``, whenever its socket can
be watched (``OpenBody``): a generator hop less per read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, suppress
from typing import Any

import httpx
import orjson

from ..events import AssistantMessageEvent, AssistantMessageEventStream
from ..llm import Context, Model, StreamOptions
from ..redaction import register_header_secrets
from .api_names import OPENAI_COMPLETIONS_API
from .empty_stream import (
    DIAGNOSTIC_NOTE,
    EmptyStreamKind,
    diagnostic_request_body,
    estimate_payload_tokens,
    should_diagnose_empty_stream,
)
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
    OpenBody,
    Timeouts,
    guarded,
    read_body_capped,
    stream_chunks,
)
from .keys import is_local_base_url, resolve_env_api_key
from .openai_request import build_request_body, max_tokens_field
from .openai_stream import ChatCompletionStreamState
from .request_memo import RequestMemo, request_memo_of
from .sse import SSEDecoder

__all__ = [
    "DEFAULT_BASE_URLS",
    "OPENAI_COMPLETIONS_API",
    "OpenAICompatProvider",
]

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "groq": "https://api.groq.com/openai/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "xai": "https://api.x.ai/v1",
    "mistral": "https://api.mistral.ai/v1",
    "together": "https://api.together.xyz/v1",
    "ollama": "http://127.0.0.1:11434/v1",
    "vllm": "http://127.0.0.1:8000/v1",
    "llamacpp": "http://127.0.0.1:8080/v1",
}
_ABORTED = "Request was aborted"
#: Bytes of a body without any event kept to say what it was (or read as a plain completion);
#: a body that is not ``text/event-stream`` is not read past this without an event.
_SNIFF_LIMIT = 1 << 20
_NO_PAYLOADS: list[bytes] = []  # never appended to


class OpenAICompatProvider:
    """The ``openai-completions`` API over httpx. One instance serves any number of models."""

    api = OPENAI_COMPLETIONS_API

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

    def stream_fn(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        """Stream one completion; never raises — failures end the stream as ``error``."""
        return AssistantMessageEventStream(self._events(model, context, options))

    __call__ = stream_fn

    async def aclose(self) -> None:
        """Close this event loop's HTTP client."""
        await self.pool.aclose()

    @property
    def request_memo(self) -> RequestMemo:
        """The previous request's messages of each live conversation (``request_memo``): a
        tool loop's request converts only the groups it adds."""
        return request_memo_of(self)

    def build_body(self, model: Model, context: Context, options: StreamOptions) -> Any:
        """The request body (its messages converted through the memo, unless a hook may
        rewrite the body: ``on_payload``)."""
        memo = self.request_memo if options.on_payload is None else None
        return build_request_body(model, context, options, memo=memo)

    def url(self, model: Model) -> str:
        """Where requests for ``model`` go."""
        base = model.base_url or DEFAULT_BASE_URLS.get(model.provider, "")
        return base.rstrip("/") + "/chat/completions"

    def headers(self, model: Model, options: StreamOptions, api_key: str | None) -> dict[str, str]:
        """Request headers; the key travels only here."""
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        if model.headers:
            headers.update(model.headers)
        if options.headers:
            headers.update(options.headers)
        register_header_secrets(headers)  # whatever carries the key is masked from now on
        return headers

    async def _events(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        state = ChatCompletionStreamState(model)
        builder = state.builder
        signal = options.signal
        timeouts = Timeouts.from_options(options, self.timeouts)
        out: list[AssistantMessageEvent] = []
        url = self.url(model)
        if not url.startswith(("http://", "https://")):
            builder.fail(
                ProviderFailure(f"No base URL configured for provider: {model.provider}"), out
            )
            for event in out:
                yield event
            return
        api_key = options.api_key or resolve_env_api_key(model.provider, self.env)
        if not api_key and not is_local_base_url(url):
            builder.fail(ProviderFailure(f"No API key found for provider: {model.provider}"), out)
            for event in out:
                yield event
            return
        try:
            body_json: Any = self.build_body(model, context, options)
            if options.on_payload is not None:
                replaced = options.on_payload(body_json, model)
                if replaced is not None:
                    body_json = replaced
            payload = orjson.dumps(body_json)
            request = self.pool.stream(
                "POST",
                url,
                content=payload,
                headers=self.headers(model, options, api_key),
                timeout=timeouts.httpx(),
            )
            response = await guarded(request.__aenter__, signal, None)
        except Aborted:
            builder.fail(ProviderFailure(_ABORTED, aborted=True), out)
            for event in out:
                yield event
            return
        except Exception as exc:
            builder.fail(failure_from_exception(exc, idle_timeout=timeouts.idle), out)
            for event in out:
                yield event
            return
        empty_kind: EmptyStreamKind | None = None
        cut_failure: ProviderFailure | None = None
        sniffed = bytearray()
        received = 0
        try:
            if options.on_response is not None:
                options.on_response(
                    {"status": response.status_code, "headers": dict(response.headers)}, model
                )
            if response.status_code >= 400:
                raw = await read_body_capped(response, signal, timeouts.idle)
                builder.fail(failure_from_http(response.status_code, response.headers, raw), out)
                for event in out:
                    yield event
                return
            yield builder.start()
            decoder = SSEDecoder()
            content_type = response.headers.get("content-type", "")
            event_stream = "event-stream" in content_type.lower()
            sniffed = bytearray()  # the body while no event has come, to say what it is

            def finished() -> bool:
                return state.done

            body = OpenBody(response, signal, timeouts.idle)
            # with a socket to watch (the usual case) the body is read right here rather than
            # through ``stream_chunks``: one generator hop less per read, which is per event
            # when a server writes one event at a time; its per-read checks are at the end of
            # the loop, and ``stream_chunks`` drains what follows ``[DONE]``
            direct = body.watch is not None
            source = (
                body.raw
                if direct
                else stream_chunks(
                    response,
                    signal,
                    timeouts.idle,
                    complete=finished,
                    drain_s=self.drain_timeout,
                    body=body,
                )
            )
            apply, feed_data = state.apply, decoder.feed_data  # the per-read calls, bound once
            fold, apply_stopped = state.fold, state.apply_stopped
            one_event = decoder.one_event
            coalesce = options.coalesce_deltas
            ended = False
            try:
                async with aclosing(source) as chunks:
                    if direct and signal is not None and signal.aborted:
                        raise Aborted()
                    try:
                        async for chunk in chunks:
                            if state.done:
                                continue  # after [DONE]: drained, not decoded
                            if state.events_seen == 0 and len(sniffed) < _SNIFF_LIMIT:
                                sniffed += chunk[: _SNIFF_LIMIT - len(sniffed)]
                                received = len(sniffed)
                            data = one_event(chunk)
                            # a read per event (the shape providers stream), a plain text
                            # delta: one event, nothing else to test
                            delta = apply(data, out) if data is not None else None
                            if delta is not None:
                                yield delta
                            else:
                                if data is not None:
                                    for event in out:
                                        yield event
                                    out.clear()
                                    payloads = _NO_PAYLOADS
                                else:
                                    payloads = feed_data(chunk)
                                count = len(payloads)
                                if coalesce and count > 1:
                                    # the plain text deltas of this read as one event, handed
                                    # out before the next chunk that says anything else is
                                    # applied; nothing waits for a later read
                                    index = 0
                                    while index < count:
                                        delta = fold(payloads, index)
                                        if delta is not None:
                                            yield delta
                                        index = state.stop
                                        if index == count:
                                            break
                                        delta = apply_stopped(payloads[index], out)
                                        index += 1
                                        if delta is not None:
                                            yield delta
                                        for event in out:
                                            yield event
                                        out.clear()
                                        if state.done or state.failure is not None:
                                            break
                                else:
                                    for data in payloads:  # one event per chunk
                                        delta = apply(data, out)
                                        if delta is not None:  # the usual: one text delta
                                            yield delta
                                            continue
                                        for event in out:
                                            yield event
                                        out.clear()
                                        if state.done or state.failure is not None:
                                            break
                                if state.failure is not None:
                                    break
                                if (
                                    not event_stream
                                    and state.events_seen == 0
                                    and received >= _SNIFF_LIMIT
                                ):
                                    break  # megabytes of something else: enough to say what
                            if direct:  # ``stream_chunks``' checks before the next read
                                if state.done:
                                    break  # complete: the rest is drained below
                                if signal is not None and signal.aborted:
                                    raise Aborted()
                        else:
                            if direct:
                                await body.ended()
                                ended = True
                    except httpx.HTTPError as exc:
                        if direct:
                            body.failed(exc)  # raises when it was our abort or idle deadline
                        raise
                    if direct and state.done and not ended:
                        drain = stream_chunks(
                            response,
                            signal,
                            timeouts.idle,
                            complete=finished,
                            drain_s=self.drain_timeout,
                            body=body,
                        )
                        async with aclosing(drain) as rest:
                            async for _ in rest:
                                pass  # after [DONE]: drained, not decoded
            finally:
                body.close()
            if not state.done and state.failure is None:
                for sse in decoder.close():
                    if sse.data != b"[DONE]":
                        with suppress(orjson.JSONDecodeError):
                            state.chunk(orjson.loads(sse.data), out)
            if state.failure is None and state.events_seen == 0 and not state.done:
                if body_has_content(sniffed):
                    self._read_unexpected_body(state, content_type, url, bytes(sniffed), out)
                else:
                    empty_kind = "empty"
            if empty_kind is None:
                state.end(out)
        except Aborted:
            builder.fail(ProviderFailure(_ABORTED, aborted=True), out)
        except IdleTimeout as exc:
            builder.fail(failure_from_exception(exc, idle_timeout=timeouts.idle), out)
        except httpx.HTTPError as exc:
            failure = failure_from_exception(exc, idle_timeout=timeouts.idle)
            if (
                state.events_seen == 0
                and not sniffed
                and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError)
            ):
                empty_kind, cut_failure = "cut", failure  # closed right after the headers
            else:
                builder.fail(failure, out)
        except Exception as exc:
            builder.fail(ProviderFailure(f"{type(exc).__name__}: {exc}"), out)
        finally:
            await request.__aexit__(None, None, None)
        if empty_kind is not None:
            pending = cut_failure or ProviderFailure(EMPTY_STREAM_ERROR)
            if should_diagnose_empty_stream(
                empty_kind,
                estimated_prompt_tokens=estimate_payload_tokens(payload),
                context_window=model.context_window,
            ):
                found = await self._diagnose(model, url, options, api_key, body_json, timeouts)
                if found is not None:
                    pending = found
                elif signal is not None and signal.aborted:
                    pending = ProviderFailure(_ABORTED, aborted=True)
            builder.fail(pending, out)
        for event in out:
            yield event

    def _read_unexpected_body(
        self,
        state: ChatCompletionStreamState,
        content_type: str,
        url: str,
        body: bytes,
        out: list[AssistantMessageEvent],
    ) -> None:
        """A 200 body without any event: a whole ``chat.completion`` object (a server that
        ignores ``stream: true``) is read as the answer; anything else is one clear error."""
        with suppress(orjson.JSONDecodeError):
            parsed = orjson.loads(body)
            if isinstance(parsed, dict) and isinstance(parsed.get("choices"), list):
                state.chunk(parsed, out)
                return
        state.failure = failure_from_unexpected_body(content_type, url, body)

    async def _diagnose(
        self,
        model: Model,
        url: str,
        options: StreamOptions,
        api_key: str | None,
        body: Any,
        timeouts: Timeouts,
    ) -> ProviderFailure | None:
        """One non-streaming ``max_tokens: 1`` request: the error the stream did not carry
        (``None`` when it succeeds, fails to connect, or is aborted)."""
        if not isinstance(body, Mapping):
            return None
        headers = self.headers(model, options, api_key)
        headers["accept"] = "application/json"
        content = orjson.dumps(diagnostic_request_body(body, max_tokens_field(model)))
        # two tries: the pooled connection the empty stream came over may have been closed by
        # the server a moment ago (a stale keep-alive), which says nothing about the prompt
        for attempt in range(2):
            request = self.pool.stream(
                "POST", url, content=content, headers=headers, timeout=timeouts.httpx()
            )
            try:
                response = await guarded(request.__aenter__, options.signal, None)
            except httpx.TransportError:
                if attempt == 0 and not (options.signal is not None and options.signal.aborted):
                    continue
                return None
            except (Aborted, httpx.HTTPError):
                return None
            break
        try:
            if response.status_code < 400:
                return None
            raw = await read_body_capped(response, options.signal, timeouts.idle)
        except (Aborted, IdleTimeout, httpx.HTTPError):
            return None
        finally:
            await request.__aexit__(None, None, None)
        failure = failure_from_http(response.status_code, response.headers, raw)
        failure.message += DIAGNOSTIC_NOTE
        return failure
