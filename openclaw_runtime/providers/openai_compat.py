"""The OpenAI-compatible Chat Completions provider (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp).

``POST {base_url}/chat/completions`` with ``stream: true``, read as server-sent events. The
decoder is forgiving the way real servers need: comment pings, a missing ``[DONE]``, an empty
200 body, usage chunks or none, ``reasoning_content`` / ``reasoning`` as thinking, tool-call
deltas whose id/type/name repeat on every chunk (set, never concatenated) while arguments
arrive in pieces, ``{"error": ...}`` objects inside a 200 stream, and error bodies of any
shape. Every failure ends the stream as an error message with the facts to classify it.

Hot path: one network read may hold many events; each event costs one ``orjson.loads`` of
bytes, a dict walk and one appended delta — no per-chunk objects beyond the event itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, suppress
from typing import Any

import httpx
import orjson

from ..events import AssistantMessageEvent, AssistantMessageEventStream
from ..llm import Context, Model, StreamOptions, Tool
from ..messages import (
    AssistantMessage,
    Cost,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..redaction import register_header_secrets
from .builder import MessageBuilder
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
    failure_from_payload,
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
from .sse import SSEDecoder

__all__ = [
    "DEFAULT_BASE_URLS",
    "OPENAI_COMPLETIONS_API",
    "OpenAICompatProvider",
    "build_request_body",
    "convert_messages",
    "convert_tools",
    "map_finish_reason",
    "max_tokens_field",
    "parse_usage",
]

OPENAI_COMPLETIONS_API = "openai-completions"
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
_NO_FINISH = "Stream ended without finish_reason"
_EMPTY = EMPTY_STREAM_ERROR
_MALFORMED = "Provider sent a malformed stream chunk (finish_reason: malformed_response)"
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
#: Bytes of a body without any event kept to say what it was (or read as a plain completion);
#: a body that is not ``text/event-stream`` is not read past this without an event.
_SNIFF_LIMIT = 1 << 20


# --------------------------------------------------------------------------- request


def convert_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """Tools in Chat Completions' ``{"type": "function", "function": {...}}`` shape."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
            },
        }
        for tool in tools
    ]


def convert_messages(model: Model, context: Context) -> list[dict[str, Any]]:
    """Transcript messages as Chat Completions messages.

    Failed or aborted assistant turns are not replayed (they are incomplete); thinking is not
    sent back; images go where the model accepts them and become a note where it does not.
    """
    images_ok = "image" in model.input
    system_role = (model.compat or {}).get("system_role", "system")
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        out.append({"role": system_role, "content": context.system_prompt})
    for message in context.messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message.content, images_ok)})
        elif isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                continue
            converted = _assistant(message)
            if converted is not None:
                out.append(converted)
        elif isinstance(message, ToolResultMessage):
            text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
            images = [b for b in message.content if isinstance(b, ImageContent)]
            if images and not text:
                text = "(see attached image)" if images_ok else "(image omitted)"
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": text})
            if images and images_ok:
                parts: list[dict[str, Any]] = [
                    {"type": "text", "text": f"Images returned by tool {message.tool_name}:"}
                ]
                parts.extend(_image_part(i) for i in images)
                out.append({"role": "user", "content": parts})
    return out


def _user_content(content: str | list[Any], images_ok: bool) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if not any(isinstance(b, ImageContent) for b in content):
        return "\n".join(b.text for b in content if isinstance(b, TextContent))
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(
                _image_part(block) if images_ok else {"type": "text", "text": "(image omitted)"}
            )
    return parts


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"},
    }


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": orjson.dumps(b.arguments).decode()},
        }
        for b in message.content
        if isinstance(b, ToolCall)
    ]
    if not text and not calls:
        return None
    converted: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        converted["tool_calls"] = calls
    return converted


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body of one streaming request."""
    compat = model.compat or {}
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context),
        "stream": True,
    }
    if compat.get("supports_usage_in_streaming", True):
        body["stream_options"] = {"include_usage": True}
    if context.tools:
        body["tools"] = convert_tools(context.tools)
    elif any(isinstance(m, ToolResultMessage) for m in context.messages):
        body["tools"] = []  # proxies to Anthropic insist on tools when history has tool calls
    if options.max_tokens:
        field = max_tokens_field(model)
        body[field] = (
            min(options.max_tokens, model.max_tokens) if model.max_tokens else options.max_tokens
        )
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.stop:
        body["stop"] = list(options.stop)
    if options.reasoning and model.reasoning:
        spelled = (model.thinking_level_map or {}).get(options.reasoning)  # the model's own name
        effort = spelled or ("xhigh" if options.reasoning == "max" else options.reasoning)
        if compat.get("reasoning_format") == "openrouter":
            body["reasoning"] = {"effort": effort}
        else:
            body["reasoning_effort"] = effort
    extra = options.extra.get("body")
    if isinstance(extra, Mapping):
        body.update(extra)
    return body


def max_tokens_field(model: Model) -> str:
    """The body field of the output cap: ``max_completion_tokens`` at OpenAI, ``max_tokens``
    elsewhere, or what ``compat.max_tokens_field`` says."""
    field = (model.compat or {}).get("max_tokens_field")
    if isinstance(field, str) and field:
        return field
    return "max_completion_tokens" if "api.openai.com" in model.base_url else "max_tokens"


# --------------------------------------------------------------------------- response


def map_finish_reason(reason: str) -> tuple[str, str | None]:
    """``finish_reason`` → (stop reason, error text or None)."""
    if reason == "stop":
        return "stop", None
    if reason == "length":
        return "length", None
    if reason in ("tool_calls", "function_call"):
        return "toolUse", None
    return "error", f"Provider finish_reason: {reason}"


def parse_usage(raw: Mapping[str, Any], model: Model) -> Usage:
    """OpenAI usage (prompt tokens include cached ones) → our usage, priced by the model."""
    prompt = int(raw.get("prompt_tokens") or 0)
    output = int(raw.get("completion_tokens") or 0)
    details = raw.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, Mapping) else 0
    cache_write = int(details.get("cache_write_tokens") or 0) if isinstance(details, Mapping) else 0
    fresh = max(0, prompt - cached - cache_write)
    price = model.cost
    cost = Cost(
        input=fresh * price.input / 1e6,
        output=output * price.output / 1e6,
        cache_read=cached * price.cache_read / 1e6,
        cache_write=cache_write * price.cache_write / 1e6,
    )
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    total = int(raw.get("total_tokens") or (prompt + output))
    return Usage(
        input=fresh,
        output=output,
        cache_read=cached,
        cache_write=cache_write,
        total_tokens=total,
        cost=cost,
    )


class _StreamState:
    """What one response has said so far."""

    __slots__ = (
        "builder",
        "events_seen",
        "failure",
        "finish_reason",
        "last_tool_key",
        "model",
        "usage",
    )

    def __init__(self, model: Model) -> None:
        self.model = model
        self.builder = MessageBuilder(model)
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.failure: ProviderFailure | None = None
        self.events_seen = 0
        self.last_tool_key: object | None = None

    def chunk(self, chunk: Any, out: list[AssistantMessageEvent]) -> None:
        """Apply one decoded ``chat.completion.chunk``."""
        self.events_seen += 1
        if type(chunk) is not dict:
            return
        # hot path: a plain content delta, nothing else in the chunk
        choices = chunk.get("choices")
        if choices and "usage" not in chunk and "error" not in chunk:
            choice = choices[0]
            delta = choice.get("delta")
            if (
                delta
                and choice.get("finish_reason") is None
                and "usage" not in choice
                and "tool_calls" not in delta
                and type(delta.get("content")) is str
                and "reasoning_content" not in delta
                and "reasoning" not in delta
                and "reasoning_text" not in delta
                and not delta.get("refusal")
                and self.builder.message.response_id is not None
            ):
                self.builder.text(delta["content"], out)
                return
        self._chunk(chunk, out)

    def _chunk(self, chunk: dict[str, Any], out: list[AssistantMessageEvent]) -> None:
        error = chunk.get("error")
        if error:
            status = error.get("code") if isinstance(error, dict) else None
            self.failure = failure_from_payload(
                chunk, status=status if isinstance(status, int) and 400 <= status < 600 else None
            )
            return
        builder = self.builder
        message = builder.message
        if message.response_id is None and chunk.get("id"):
            message.response_id = chunk["id"]
        usage = chunk.get("usage")
        choices = chunk.get("choices")
        if not choices:
            if usage:
                self.usage = parse_usage(usage, self.model)
            return
        choice = choices[0]
        if usage or choice.get("usage"):
            self.usage = parse_usage(usage or choice["usage"], self.model)
        delta = choice.get("delta") or choice.get("message")
        if delta:
            for field in _REASONING_FIELDS:
                reasoning = delta.get(field)
                if isinstance(reasoning, str) and reasoning:
                    builder.thinking(reasoning, out, signature=field)
                    break
            content = delta.get("content")
            if content:
                if isinstance(content, str):
                    builder.text(content, out)
                elif isinstance(content, list):
                    for part in content:
                        if isinstance(part, dict) and isinstance(part.get("text"), str):
                            builder.text(part["text"], out)
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                builder.text(refusal, out)
            tool_calls = delta.get("tool_calls")
            if tool_calls:
                for call in tool_calls:
                    self._tool_call(call, out)
        finish = choice.get("finish_reason")
        if finish:
            self.finish_reason = finish

    def _tool_call(self, call: Any, out: list[AssistantMessageEvent]) -> None:
        if not isinstance(call, dict):
            return
        builder = self.builder
        index = call.get("index")
        call_id = call.get("id") or ""
        function = call.get("function") or {}
        name = function.get("name") or ""
        if isinstance(index, int):
            key: object = ("index", index)
        elif call_id:
            key = ("id", call_id)
        elif self.last_tool_key is not None:
            key = self.last_tool_key
        else:
            key = ("index", 0)
        if not builder.has_tool_call(key) and call_id:
            # an id-keyed continuation of a call first seen by index (or vice versa)
            key = builder.key_for_tool_call_id(call_id) or key
        if builder.has_tool_call(key):
            builder.tool_call_meta(key, call_id, name)
        else:
            builder.tool_call_start(key, call_id, name, out)
        self.last_tool_key = key
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            builder.tool_call_args(key, arguments, out)
        elif isinstance(arguments, dict):
            builder.tool_call_arguments(key, arguments)

    def end(self, out: list[AssistantMessageEvent]) -> None:
        """The body ended: finish, or fail with the reason it could not finish."""
        builder = self.builder
        if self.failure is not None:
            builder.fail(self.failure, out)
            return
        if self.finish_reason is None:
            builder.fail(ProviderFailure(_EMPTY if self.events_seen == 0 else _NO_FINISH), out)
            return
        stop_reason, error = map_finish_reason(self.finish_reason)
        if error is not None:
            builder.fail(ProviderFailure(error), out)
            return
        builder.finish(stop_reason, out, usage=self.usage)  # type: ignore[arg-type]


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
        state = _StreamState(model)
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
            body_json: Any = build_request_body(model, context, options)
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
            done = False
            content_type = response.headers.get("content-type", "")
            event_stream = "event-stream" in content_type.lower()
            sniffed = bytearray()  # the body while no event has come, to say what it is

            def finished() -> bool:
                return done

            source = stream_chunks(
                response, signal, timeouts.idle, complete=finished, drain_s=self.drain_timeout
            )
            async with aclosing(source) as chunks:
                async for chunk in chunks:
                    if done:
                        continue  # after [DONE]: drained, not decoded
                    if state.events_seen == 0 and len(sniffed) < _SNIFF_LIMIT:
                        sniffed += chunk[: _SNIFF_LIMIT - len(sniffed)]
                        received = len(sniffed)
                    for sse in decoder.feed(chunk):
                        if sse.data == b"[DONE]":
                            done = True
                            break
                        try:
                            decoded = orjson.loads(sse.data)
                        except orjson.JSONDecodeError:
                            state.failure = ProviderFailure(f"{_MALFORMED}: {sse.text[:200]}")
                            break
                        state.chunk(decoded, out)
                        if out:
                            for event in out:
                                yield event
                            out.clear()
                        if state.failure is not None:
                            break
                    if state.failure is not None:
                        break
                    if not event_stream and state.events_seen == 0 and received >= _SNIFF_LIMIT:
                        break  # megabytes of something else: enough to say what it is
            if not done and state.failure is None:
                for sse in decoder.close():
                    if sse.data != b"[DONE]":
                        with suppress(orjson.JSONDecodeError):
                            state.chunk(orjson.loads(sse.data), out)
            if state.failure is None and state.events_seen == 0 and not done:
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
            pending = cut_failure or ProviderFailure(_EMPTY)
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
        state: _StreamState,
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
