"""``AnthropicProvider``: the Anthropic Messages API (``anthropic-messages``) over httpx.

``POST {base_url}/v1/messages`` with ``stream: true``, headers ``x-api-key``,
``anthropic-version: 2023-06-01`` and ``anthropic-beta`` where needed. The request body is
built by ``_request`` and the SSE response decoded by ``_stream``; the HTTP side (keys,
timeouts, abort, the error body of a non-2xx answer) is the shared
``DecodedStreamProvider``. ``stream_fn`` never raises — every failure ends the stream as an
``error`` (or ``aborted``) assistant message with its facts.
"""

from __future__ import annotations

from typing import Any

from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.providers.decoded import ABORTED_ERROR, DecodedStreamProvider

from ._request import (
    ANTHROPIC_MESSAGES_API,
    ANTHROPIC_VERSION,
    DEFAULT_ANTHROPIC_BASE_URL,
    build_beta_header,
    build_request_body,
)
from ._stream import AnthropicStreamDecoder

__all__ = ["ABORTED_ERROR", "AnthropicProvider", "messages_url"]


def messages_url(base_url: str) -> str:
    """``{base}/v1/messages``; a base that already ends in ``/v1`` is not doubled."""
    base = (base_url or DEFAULT_ANTHROPIC_BASE_URL).rstrip("/")
    return base + ("/messages" if base.endswith("/v1") else "/v1/messages")


class AnthropicProvider(DecodedStreamProvider):
    """The ``anthropic-messages`` API. One instance serves any number of models."""

    api = ANTHROPIC_MESSAGES_API
    require_http_url = True

    def url(self, model: Model) -> str:
        """Where requests for ``model`` go."""
        return messages_url(model.base_url)

    def auth_headers(
        self, model: Model, context: Context, options: StreamOptions, api_key: str | None
    ) -> dict[str, str]:
        """``anthropic-version``, the key as ``x-api-key``, ``anthropic-beta`` if needed."""
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        beta = build_beta_header(model, context, options)
        if beta:
            headers["anthropic-beta"] = beta
        return headers

    def build_body(self, model: Model, context: Context, options: StreamOptions) -> Any:
        """The Messages request body (its messages converted through the memo, unless a hook
        may rewrite the body: ``on_payload``)."""
        memo = self.request_memo if options.on_payload is None else None
        return build_request_body(model, context, options, env=self.env, memo=memo)

    def require_message_stop(self, model: Model) -> bool:
        """A stream counts as complete only with ``message_stop`` unless the model opts out."""
        value = (model.compat or {}).get("require_message_stop")
        return value if isinstance(value, bool) else True

    def new_decoder(self, model: Model) -> AnthropicStreamDecoder:
        """A decoder for one Messages stream."""
        return AnthropicStreamDecoder(model, require_message_stop=self.require_message_stop(model))

    def is_complete(self, decoder: Any) -> bool:
        """``message_stop`` was seen."""
        return bool(decoder.saw_message_stop)
