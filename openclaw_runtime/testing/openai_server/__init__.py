"""A fault-injecting, OpenAI-compatible Chat Completions server on 127.0.0.1.

End-to-end tests and ``openclaw-runtime demo`` need a *real* model endpoint that behaves like
OpenAI's — including every way OpenAI fails — without network access or extra packages. This
server is the standard library's ``ThreadingHTTPServer`` in a background thread; it needs
nothing beyond the runtime's core dependencies (no uvicorn, no pytest).

Each ``POST /v1/chat/completions`` goes through these decisions, in order:

1. the body: malformed JSON or no ``model`` / ``messages`` → 400 ``invalid_request_error``;
2. the model: not in ``models`` → 404 ``model_not_found``;
3. the API key's behaviour (``keys``): 401 ``invalid_api_key``, 429 ``rate_limit_exceeded``,
   429 ``insufficient_quota``, 503 overloaded;
4. the first queued ``Fault`` that matches (``inject``);
5. chaos: random faults on a fraction of requests (``chaos``), deterministic for a seed;
6. the context window: more estimated prompt tokens than the model's window → 400
   ``context_length_exceeded`` (or, with ``overflow_style="llamacpp"`` / ``"llamacpp_cut"``,
   llama.cpp's answer to a streamed request: an empty 200, or a cut after the headers);
7. the first queued ``Reply`` that matches (``enqueue``);
8. the brain: a deterministic stand-in model (summaries, tool calls, answers).

Replies stream exactly like OpenAI's SSE (role chunk, content / ``reasoning_content`` /
``tool_calls`` deltas, a ``finish_reason`` chunk, a usage chunk, ``[DONE]``), or come back as
one ``chat.completion`` object with ``stream: false``. Every request is recorded as a
``ServedRequest`` — with a fingerprint of its API key, never the key itself.

Modules: ``scripts`` (what tests script and what is recorded), ``server`` (state, lifecycle,
the decision pipeline), ``faults`` (error answers), ``brain`` (the stand-in model), ``wire``
(SSE and JSON rendering), ``handler`` (HTTP plumbing), ``plans`` (parsed requests, plans).
"""

from .scripts import (
    DEFAULT_CHAOS_KINDS,
    DEFAULT_CONTEXT_WINDOW,
    FAULT_KINDS,
    OVERFLOW_STYLES,
    Fault,
    KeyBehavior,
    Reply,
    ServedRequest,
    api_key_fingerprint,
    estimate_prompt_tokens,
)
from .server import FaultInjectingOpenAIServer

__all__ = [
    "DEFAULT_CHAOS_KINDS",
    "DEFAULT_CONTEXT_WINDOW",
    "FAULT_KINDS",
    "OVERFLOW_STYLES",
    "Fault",
    "FaultInjectingOpenAIServer",
    "KeyBehavior",
    "Reply",
    "ServedRequest",
    "api_key_fingerprint",
    "estimate_prompt_tokens",
]
