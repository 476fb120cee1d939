"""``GeminiProvider``: Gemini ``streamGenerateContent`` (``google-generative-ai``) over httpx.

``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with the key in the
``x-goog-api-key`` header. The body is built by ``_request`` and the SSE response decoded by
``_stream``; the HTTP side is the shared ``DecodedStreamProvider`` (keys, timeouts, abort and
the error body of a non-2xx answer: Gemini's ``{"error": {"code", "message", "status",
"details": [RetryInfo]}}`` gives the status as the code and ``retryDelay`` as the
retry-after). ``stream_fn`` never raises.
"""

from __future__ import annotations

from typing import Any

from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.providers.decoded import ABORTED_ERROR, DecodedStreamProvider

from ._request import GOOGLE_GENERATIVE_AI_API, build_request_body, stream_url
from ._stream import GeminiStreamDecoder

__all__ = ["ABORTED_ERROR", "GeminiProvider"]


class GeminiProvider(DecodedStreamProvider):
    """The ``google-generative-ai`` API. One instance serves any number of models."""

    api = GOOGLE_GENERATIVE_AI_API

    def url(self, model: Model) -> str:
        """Where requests for ``model`` go (the key never goes in the URL)."""
        return stream_url(model.base_url, model.id)

    def auth_headers(
        self, model: Model, context: Context, options: StreamOptions, api_key: str | None
    ) -> dict[str, str]:
        """The key as ``x-goog-api-key``."""
        return {"x-goog-api-key": api_key} if api_key else {}

    def build_body(self, model: Model, context: Context, options: StreamOptions) -> Any:
        """The ``generateContent`` request body (its contents converted through the memo,
        unless a hook may rewrite the body: ``on_payload``)."""
        memo = self.request_memo if options.on_payload is None else None
        return build_request_body(model, context, options, memo=memo)

    def new_decoder(self, model: Model) -> GeminiStreamDecoder:
        """A decoder for one Gemini stream."""
        return GeminiStreamDecoder(model)

    def is_complete(self, decoder: Any) -> bool:
        """A candidate finished (``finishReason`` seen)."""
        return decoder.stop_reason is not None
