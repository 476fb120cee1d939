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
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import random
import re
import select
import socket
import socketserver
import sys
import threading
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import urlsplit

import orjson

from ..context.compaction import SUMMARY_SYSTEM_PROMPT

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

#: The context window of every model when the server is built without ``models``.
DEFAULT_CONTEXT_WINDOW = 128_000

#: Every ``Fault.kind``.
FAULT_KINDS = frozenset(
    {
        "status",
        "rate_limit",
        "overloaded",
        "server_error",
        "context_overflow",
        "cut_stream",
        "hang",
        "delay",
        "empty",
        "reasoning_only",
    }
)

#: Every ``overflow_style`` (how a prompt above the window is answered).
OVERFLOW_STYLES = ("openai", "llamacpp", "llamacpp_cut")

#: What ``chaos()`` injects unless told otherwise: the transient failures a client must
#: survive by retrying, rotating keys or falling back (no ``hang``: it needs an idle timeout).
DEFAULT_CHAOS_KINDS: tuple[str, ...] = ("rate_limit", "overloaded", "server_error", "cut_stream")

# The summarizer's system prompt is recognised by its first sentence, so a reworded tail (or
# a prompt that embeds it) still counts as a summarization request.
_SUMMARY_MARKER = SUMMARY_SYSTEM_PROMPT.split(". ")[0].strip().lower()
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")
_STOPWORDS = frozenset(
    {
        *("a", "an", "and", "about", "are", "as", "at", "be", "call", "can", "could", "do"),
        *("for", "from", "get", "give", "how", "i", "in", "is", "it", "me", "my", "of", "on"),
        *("or", "please", "run", "show", "tell", "that", "the", "this", "to", "tool", "use"),
        *("using", "what", "whats", "with", "you"),
    }
)
_POLL_S = 0.05


class KeyBehavior(StrEnum):
    """How the server treats requests made with one API key."""

    OK = "ok"
    RATE_LIMITED = "rate_limited"  # 429 rate_limit_exceeded with retry-after
    INVALID = "invalid"  # 401 invalid_api_key
    BILLING = "billing"  # 429 insufficient_quota
    OVERLOADED = "overloaded"  # 503 overloaded


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected failure, applied to the next ``times`` requests that match it.

    ``kind`` is one of ``FAULT_KINDS``; the other fields tune it: ``status`` / ``body`` /
    ``headers`` (any HTTP error for ``"status"``; overrides for the other error kinds),
    ``retry_after_s`` (the ``retry-after`` header of ``"rate_limit"``; ``None`` sends none),
    ``after_chunks`` (SSE events sent before ``"cut_stream"`` closes the connection),
    ``before_headers`` (``"hang"`` before the status line instead of after the headers),
    ``seconds`` (``"delay"``). Matchers: ``model`` and ``api_key`` (``None`` matches any).
    A ``"cut_stream"`` fault with a ``body`` sends it as one last SSE ``data:`` event (a
    provider's mid-stream error) before it closes the connection. ``echo_key``: every
    ``{api_key}`` in ``body`` becomes the request's full API key, as providers that repeat
    the key in their errors do (for redaction tests; the key is never recorded).
    """

    kind: str
    status: int | None = None
    body: Mapping[str, Any] | str | None = None
    headers: Mapping[str, str] | None = None
    retry_after_s: float | None = 1.0
    after_chunks: int = 2
    before_headers: bool = False
    seconds: float = 0.5
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never printed
    times: int = 1
    echo_key: bool = False

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {FAULT_KINDS}")
        if self.kind == "status" and (self.status is None or not 400 <= self.status < 600):
            raise ValueError("Fault('status') needs an HTTP error status (400-599)")
        if self.times < 1:
            raise ValueError("Fault.times must be at least 1")
        if self.after_chunks < 0 or self.seconds < 0:
            raise ValueError("Fault.after_chunks and Fault.seconds must not be negative")

    def matches(self, model: str | None, api_key: str | None) -> bool:
        """Does this fault apply to a request for ``model`` made with ``api_key``?"""
        return (self.model is None or self.model == model) and (
            self.api_key is None or self.api_key == api_key
        )


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted completion that replaces the brain for the next request that matches.

    ``tool_calls`` are ``(name, arguments)`` pairs; ``finish_reason`` defaults to
    ``"tool_calls"`` when there are tool calls and ``"stop"`` otherwise.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[tuple[str, Mapping[str, Any]]] = ()
    finish_reason: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """What one request asked for and what the server did with it.

    ``outcome`` is ``"ok"`` (a text answer), ``"tool_call"``, ``"summary"``, ``"reply"`` (a
    queued ``Reply``), ``"overflow"`` (the context-window check), a key behaviour
    (``"unauthorized"``, ``"rate_limited"``, ``"billing"``, ``"overloaded"``), a fault kind
    (``"rate_limit"``, ``"cut_stream"``, ``"hang"``, ...), ``"bad_request"``,
    ``"unknown_model"``, ``"models"`` (``GET /v1/models``) or ``"not_found"``. ``fault`` names
    the fault applied (also ``"delay"``, whose outcome is the answer that followed) and
    ``chaos`` says whether chaos picked it. ``disconnected``: the client went away before the
    response was complete.
    """

    method: str
    path: str
    model: str | None
    api_key_fingerprint: str | None
    message_count: int
    estimated_tokens: int
    stream: bool
    tools: tuple[str, ...]
    outcome: str
    status: int
    fault: str | None = None
    chaos: bool = False
    disconnected: bool = False
    body: Any = field(default=None, repr=False, compare=False)


def api_key_fingerprint(key: str | None) -> str | None:
    """A key's identity without the key: its first 4 characters (only for keys long enough
    that they reveal little) and the start of its SHA-256, e.g. ``sk-a...1f2e3d4c``."""
    if key is None:
        return None
    digest = hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:8]
    prefix = key[:4] if len(key) >= 12 else ""
    return f"{prefix}...{digest}"


def _echo_key(body: Any, api_key: str) -> Any:
    """``body`` with every ``{api_key}`` replaced by ``api_key`` (strings inside mappings too)."""
    if isinstance(body, str):
        return body.replace("{api_key}", api_key)
    if isinstance(body, Mapping):
        return {k: _echo_key(v, api_key) for k, v in body.items()}
    if isinstance(body, list):
        return [_echo_key(v, api_key) for v in body]
    return body


def estimate_prompt_tokens(messages: Sequence[Any], tools: Sequence[Any] = ()) -> int:
    """The server's prompt-size estimate: ``ceil(len(json(messages + tools)) / 4)``."""
    return math.ceil(len(orjson.dumps([*messages, *tools])) / 4)


def _error_body(
    message: str, error_type: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


# --------------------------------------------------------------------------- plans


@dataclass(slots=True)
class _Completion:
    """An answer to stream (or return whole): what it says and how it is delivered."""

    model: str
    text: str = ""
    reasoning: str = ""
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)  # id, name, json args
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    cut_after: int | None = None  # send this many SSE events, then drop the connection
    error_event: Any = None  # sent as the last event before a cut


@dataclass(slots=True)
class _Plan:
    """How to answer one request, decided under the lock and carried out outside it."""

    kind: Literal["error", "completion", "hang", "json", "empty_stream", "headers_only"]
    index: int  # the request's sequence number (see ``_record``)
    status: int = 200
    payload: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    completion: _Completion | None = None
    stream: bool = True
    include_usage: bool = False
    delay_s: float = 0.0
    before_headers: bool = False


class _Connection:
    """A live client connection: its socket and the thread serving it (for ``stop()``)."""

    __slots__ = ("sock", "thread")

    def __init__(self, sock: socket.socket, thread: threading.Thread) -> None:
        self.sock = sock
        self.thread = thread


# --------------------------------------------------------------------------- the server


class FaultInjectingOpenAIServer:
    """An OpenAI-compatible server on ``127.0.0.1:<free port>`` that fails on demand.

    ``models`` maps model ids to context windows (``None``: any model, 128k window); ``keys``
    maps API keys to a ``KeyBehavior`` (``None``: any key, or none, is accepted);
    ``chunk_chars`` is the size of streamed text deltas; ``tool_arguments`` fixes the
    arguments the brain calls a tool with; ``seed`` seeds ``chaos()`` by default. Use it as a
    context manager or ``start()`` / ``stop()``; point a model's ``baseUrl`` at ``base_url``.

    ``overflow_style`` says how a prompt above the window is answered: ``"openai"`` (a 400
    ``context_length_exceeded``), or like llama.cpp's server for a *streamed* request:
    ``"llamacpp"`` (a 200 with an empty body) or ``"llamacpp_cut"`` (the connection closes
    right after the headers); a non-streamed request still gets the 400 ("maximum context
    length is N tokens").
    """

    def __init__(
        self,
        *,
        models: Mapping[str, int] | None = None,
        keys: Mapping[str, KeyBehavior | str] | None = None,
        chunk_chars: int = 16,
        tool_arguments: Mapping[str, Mapping[str, Any]] | None = None,
        seed: int | None = None,
        overflow_style: str = "openai",
    ) -> None:
        if chunk_chars < 1:
            raise ValueError("chunk_chars must be at least 1")
        if overflow_style not in OVERFLOW_STYLES:
            raise ValueError(
                f"unknown overflow_style {overflow_style!r}; expected one of {OVERFLOW_STYLES}"
            )
        self.overflow_style = overflow_style
        self._models = dict(models) if models is not None else None
        self._initial_keys = (
            {k: KeyBehavior(v) for k, v in keys.items()} if keys is not None else None
        )
        self._any_key = keys is None
        self._keys: dict[str, KeyBehavior] = dict(self._initial_keys or {})
        self.chunk_chars = chunk_chars
        self._tool_arguments = {k: dict(v) for k, v in (tool_arguments or {}).items()}
        self._seed = seed
        self._lock = threading.Lock()
        self._disconnect_cond = threading.Condition(self._lock)
        self._faults: list[list[Any]] = []  # [fault, remaining]
        self._replies: list[Reply] = []
        self._chaos_rate = 0.0
        self._chaos_kinds: tuple[Fault, ...] = ()
        self._chaos_rng = random.Random(seed)
        self._requests: list[ServedRequest] = []
        self._sequence = 0  # requests recorded since construction
        self._reset_at = 0  # ... before the last reset()
        self._counter = 0
        self._call_counter = 0
        self._disconnects = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._connections: set[_Connection] = set()

    # lifecycle -------------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve in a background (daemon) thread."""
        with self._lock:
            if self._httpd is not None:
                return self
            self._stopping = threading.Event()
            httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
            httpd.owner = self
            self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": _POLL_S},
            name=f"openai-server-{httpd.server_port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every connection, hung ones included; safe to call twice.

        Takes at most about a second even when clients hang: handlers poll the stop flag and
        their sockets are shut down under them.
        """
        with self._lock:
            httpd, self._httpd = self._httpd, None
            thread, self._thread = self._thread, None
            self._stopping.set()
            connections = list(self._connections)
        if httpd is None:
            return
        if thread is not None and thread.is_alive():
            httpd.shutdown()
        httpd.server_close()
        for connection in connections:
            _shutdown_socket(connection.sock)
        deadline = time.monotonic() + 1.0
        for connection in connections:
            connection.thread.join(max(0.0, deadline - time.monotonic()))
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._connections.clear()
            self._disconnect_cond.notify_all()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` — what a model's ``baseUrl`` should be."""
        httpd = self._httpd
        if httpd is None:
            raise RuntimeError("the server is not running; call start() first")
        return f"http://127.0.0.1:{httpd.server_port}/v1"

    # scripting -------------------------------------------------------------------------------

    def inject(self, *faults: Fault) -> None:
        """Queue faults; each applies to the next ``times`` requests that match it."""
        for fault in faults:
            if not isinstance(fault, Fault):
                raise TypeError(f"inject() takes Fault objects, not {type(fault).__name__}")
        with self._lock:
            self._faults.extend([fault, fault.times] for fault in faults)

    def enqueue(self, *replies: Reply) -> None:
        """Queue scripted completions; each replaces the brain for the next matching request
        (after faults, chaos and the context-window check)."""
        for reply in replies:
            if not isinstance(reply, Reply):
                raise TypeError(f"enqueue() takes Reply objects, not {type(reply).__name__}")
        with self._lock:
            self._replies.extend(replies)

    def chaos(
        self,
        *,
        rate: float,
        kinds: Sequence[str | Fault] = DEFAULT_CHAOS_KINDS,
        seed: int | None = None,
    ) -> None:
        """Inject a random fault of ``kinds`` into that ``rate`` of requests (0 disables).

        The draws come from ``random.Random(seed)`` (default: the server's seed), restarted
        by every call, so the same requests in the same order meet the same faults.
        """
        if not 0.0 <= rate <= 1.0:
            raise ValueError("chaos rate must be between 0 and 1")
        chosen = tuple(kind if isinstance(kind, Fault) else Fault(kind) for kind in kinds)
        if rate > 0 and not chosen:
            raise ValueError("chaos needs at least one fault kind")
        with self._lock:
            self._chaos_rate = rate
            self._chaos_kinds = chosen
            self._chaos_rng = random.Random(seed if seed is not None else self._seed)

    def set_key(self, key: str, behavior: KeyBehavior | str) -> None:
        """Change how requests made with ``key`` are treated from now on."""
        value = KeyBehavior(behavior)
        with self._lock:
            self._keys[key] = value

    def reset(self) -> None:
        """Back to the state after construction: no faults, replies, chaos or recorded
        requests; keys as given to the constructor."""
        with self._lock:
            self._faults.clear()
            self._replies.clear()
            self._chaos_rate = 0.0
            self._chaos_kinds = ()
            self._chaos_rng = random.Random(self._seed)
            self._keys = dict(self._initial_keys or {})
            self._requests.clear()
            self._reset_at = self._sequence
            self._counter = 0
            self._call_counter = 0
            self._disconnects = 0

    # observation -----------------------------------------------------------------------------

    @property
    def requests(self) -> list[ServedRequest]:
        """A snapshot of every request served so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def disconnects(self) -> int:
        """How many clients went away before their response was complete."""
        with self._lock:
            return self._disconnects

    def wait_for_disconnects(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` clients disconnected mid-response; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._disconnect_cond:
            while self._disconnects < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._disconnect_cond.wait(remaining)
            return True

    # decisions (called by handler threads) ---------------------------------------------------

    def _window(self, model: str) -> int:
        if self._models is None:
            return DEFAULT_CONTEXT_WINDOW
        return self._models[model]

    def _record(self, request: ServedRequest) -> int:
        """Append (callers hold the lock); returns the request's sequence number, which
        stays unique across ``reset()`` so a late disconnect never marks a newer request."""
        self._requests.append(request)
        self._sequence += 1
        return self._sequence - 1

    def _mark_disconnected(self, sequence: int) -> None:
        with self._disconnect_cond:
            position = sequence - self._reset_at
            if 0 <= position < len(self._requests):
                self._requests[position] = replace(self._requests[position], disconnected=True)
            self._disconnects += 1
            self._disconnect_cond.notify_all()

    def _key_failure(
        self, api_key: str | None, fingerprint: str | None
    ) -> tuple[str, int, Any, dict[str, str]] | None:
        """(outcome, status, body, headers) when the key's behaviour refuses the request."""
        behavior = self._keys.get(api_key) if api_key is not None else None
        if behavior is None and not self._any_key:
            if api_key is None:
                message = (
                    "You didn't provide an API key. You need to provide your API key in an "
                    "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
                )
            else:
                message = f"Incorrect API key provided: {fingerprint}."
            return (
                "unauthorized",
                401,
                _error_body(message, "invalid_request_error", "invalid_api_key"),
                {},
            )
        if behavior is None or behavior is KeyBehavior.OK:
            return None
        if behavior is KeyBehavior.INVALID:
            return (
                "unauthorized",
                401,
                _error_body(
                    f"Incorrect API key provided: {fingerprint}.",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
                {},
            )
        if behavior is KeyBehavior.RATE_LIMITED:
            status, body, headers = _rate_limit_response(Fault("rate_limit"), "this model")
            return "rate_limited", status, body, headers
        if behavior is KeyBehavior.BILLING:
            return (
                "billing",
                429,
                _error_body(
                    "You exceeded your current quota, please check your plan and billing details.",
                    "insufficient_quota",
                    "insufficient_quota",
                ),
                {},
            )
        status, body, headers = _overloaded_response(Fault("overloaded"))
        return "overloaded", status, body, headers

    def _decide(self, method: str, path: str, api_key: str | None, raw: bytes) -> _Plan:
        """Everything about one chat-completions request, decided atomically."""
        fingerprint = api_key_fingerprint(api_key)
        body: Any = None
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        parsed = isinstance(body, dict)
        model = body.get("model") if parsed else None
        messages = body.get("messages") if parsed else None
        tools_raw = body.get("tools") if parsed else None
        tools = tools_raw if isinstance(tools_raw, list) else []
        stream = bool(body.get("stream")) if parsed else False
        options = body.get("stream_options") if parsed else None
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        message_list = messages if isinstance(messages, list) else []
        estimated = estimate_prompt_tokens(message_list, tools) if message_list else 0

        with self._lock:

            def record(
                outcome: str, status: int, *, fault: str | None = None, chaos: bool = False
            ) -> int:
                return self._record(
                    ServedRequest(
                        method=method,
                        path=path,
                        model=model if isinstance(model, str) else None,
                        api_key_fingerprint=fingerprint,
                        message_count=len(message_list),
                        estimated_tokens=estimated,
                        stream=stream,
                        tools=_tool_names(tools),
                        outcome=outcome,
                        status=status,
                        fault=fault,
                        chaos=chaos,
                        body=body,
                    )
                )

            def error(
                outcome: str,
                status: int,
                payload: Any,
                headers: Mapping[str, str] | None = None,
                *,
                fault: str | None = None,
                chaos: bool = False,
            ) -> _Plan:
                index = record(outcome, status, fault=fault, chaos=chaos)
                return _Plan("error", index, status, payload, dict(headers or {}))

            # 1. the body
            if not parsed:
                return error(
                    "bad_request",
                    400,
                    _error_body(
                        "We could not parse the JSON body of your request. (HINT: This likely "
                        "means you aren't using your HTTP library correctly. The OpenAI API "
                        "expects a JSON payload.)",
                        "invalid_request_error",
                    ),
                )
            if not isinstance(model, str) or not model:
                return error(
                    "bad_request",
                    400,
                    _error_body(
                        "You must provide a model parameter.",
                        "invalid_request_error",
                        "missing_required_parameter",
                        "model",
                    ),
                )
            if not isinstance(messages, list) or not messages:
                return error(
                    "bad_request",
                    400,
                    _error_body(
                        "Missing required parameter: 'messages'.",
                        "invalid_request_error",
                        "missing_required_parameter",
                        "messages",
                    ),
                )
            # 2. the model
            if self._models is not None and model not in self._models:
                return error(
                    "unknown_model",
                    404,
                    _error_body(
                        f"The model `{model}` does not exist or you do not have access to it.",
                        "invalid_request_error",
                        "model_not_found",
                    ),
                )
            # 3. the key
            refused = self._key_failure(api_key, fingerprint)
            if refused is not None:
                outcome, status, payload, headers = refused
                return error(outcome, status, payload, headers)
            # 4. queued faults, 5. chaos ("delay" only postpones: the pipeline goes on)
            fault = self._take_fault(model, api_key)
            if fault is not None and fault.echo_key:
                fault = replace(fault, body=_echo_key(fault.body, api_key or ""))
            from_chaos = False
            delay_s = 0.0
            applied: str | None = None
            if fault is not None and fault.kind == "delay":
                delay_s, applied, fault = fault.seconds, "delay", None
            if fault is None:
                picked = self._draw_chaos()
                if picked is not None:
                    from_chaos = True
                    if picked.kind == "delay":
                        delay_s, applied = delay_s + picked.seconds, "delay"
                    else:
                        fault = picked
            if fault is not None:
                applied = fault.kind
            window = self._window(model)
            if fault is not None and fault.kind not in ("empty", "reasoning_only"):
                plan = self._fault_plan(fault, model, window, estimated, stream, include_usage)
                if plan.completion is not None:  # cut_stream: the brain's answer, cut short
                    plan.completion = self._brain(model, message_list, tools)[0]
                    plan.completion.prompt_tokens = estimated
                    plan.completion.cut_after = fault.after_chunks
                    plan.completion.error_event = fault.body
                plan.index = record(fault.kind, plan.status, fault=fault.kind, chaos=from_chaos)
                plan.delay_s = delay_s
                return plan
            # 6. the context window
            if estimated > window and stream and self.overflow_style != "openai":
                index = record("overflow", 200, fault=applied, chaos=from_chaos)
                if self.overflow_style == "llamacpp":
                    return _Plan("empty_stream", index, delay_s=delay_s)
                return _Plan("headers_only", index, delay_s=delay_s)
            if estimated > window:
                plan = error(
                    "overflow",
                    400,
                    _overflow_body(window, estimated),
                    fault=applied,
                    chaos=from_chaos,
                )
                plan.delay_s = delay_s
                return plan
            # 7. a queued reply, 8. the brain
            if fault is not None and fault.kind == "empty":
                completion, outcome = _Completion(model), "empty"
            elif fault is not None and fault.kind == "reasoning_only":
                completion = _Completion(model, reasoning=_reasoning_for(message_list))
                outcome = "reasoning_only"
            else:
                reply = self._take_reply(model)
                if reply is not None:
                    completion, outcome = self._from_reply(model, reply), "reply"
                else:
                    completion, outcome = self._brain(model, message_list, tools)
            completion.prompt_tokens = estimated
            index = record(outcome, 200, fault=applied, chaos=from_chaos)
            return _Plan(
                "completion",
                index,
                completion=completion,
                stream=stream,
                include_usage=include_usage,
                delay_s=delay_s,
            )

    def _take_fault(self, model: str, api_key: str | None) -> Fault | None:
        for entry in self._faults:
            fault: Fault = entry[0]
            if fault.matches(model, api_key):
                entry[1] -= 1
                if entry[1] <= 0:
                    self._faults.remove(entry)
                return fault
        return None

    def _draw_chaos(self) -> Fault | None:
        if self._chaos_rate <= 0 or not self._chaos_kinds:
            return None
        if self._chaos_rng.random() >= self._chaos_rate:
            return None
        return self._chaos_rng.choice(self._chaos_kinds)

    def _take_reply(self, model: str) -> Reply | None:
        for reply in self._replies:
            if reply.model is None or reply.model == model:
                self._replies.remove(reply)
                return reply
        return None

    def _next_call_id(self) -> str:
        self._call_counter += 1
        return f"call_{self._call_counter}"

    def _next_id(self) -> int:
        self._counter += 1
        return self._counter

    def _fault_plan(
        self,
        fault: Fault,
        model: str,
        window: int,
        estimated: int,
        stream: bool,
        include_usage: bool,
    ) -> _Plan:
        """The plan of an error-ish fault (everything but delay / empty / reasoning_only)."""
        kind = fault.kind
        headers = dict(fault.headers or {})
        if kind == "rate_limit":
            status, payload, extra = _rate_limit_response(fault, model)
            return _Plan("error", -1, status, payload, {**extra, **headers})
        if kind == "overloaded":
            status, payload, extra = _overloaded_response(fault)
            return _Plan("error", -1, status, payload, {**extra, **headers})
        if kind == "server_error":
            payload = (
                fault.body
                if fault.body is not None
                else _error_body(
                    "The server had an error while processing your request. Sorry about that!",
                    "server_error",
                )
            )
            return _Plan("error", -1, fault.status or 500, payload, headers)
        if kind == "context_overflow":
            payload = (
                fault.body
                if fault.body is not None
                else _overflow_body(window, max(estimated, window + 1))
            )
            return _Plan("error", -1, fault.status or 400, payload, headers)
        if kind == "status":
            status = fault.status or 500
            payload = (
                fault.body
                if fault.body is not None
                else _error_body(
                    f"Injected HTTP {status} error.",
                    "invalid_request_error" if status < 500 else "server_error",
                )
            )
            return _Plan("error", -1, status, payload, headers)
        if kind == "hang":
            return _Plan("hang", -1, stream=stream, before_headers=fault.before_headers)
        # cut_stream: the caller puts the brain's answer in, to be cut short
        return _Plan(
            "completion",
            -1,
            completion=_Completion(model),
            stream=stream,
            include_usage=include_usage,
        )

    def _from_reply(self, model: str, reply: Reply) -> _Completion:
        calls = [
            (self._next_call_id(), name, orjson.dumps(dict(arguments)).decode())
            for name, arguments in reply.tool_calls
        ]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        return _Completion(model, reply.text, reply.reasoning, calls, finish)

    def _brain(self, model: str, messages: list[Any], tools: list[Any]) -> tuple[_Completion, str]:
        """The deterministic stand-in model: summarize, quote tool results, call tools, echo."""
        if _is_summary_request(messages):
            return _Completion(model, _summary_text(messages)), "summary"
        last = messages[-1] if messages else {}
        role = last.get("role") if isinstance(last, dict) else None
        if role == "tool":
            name = _tool_name_for(messages, last.get("tool_call_id"))
            result = _text_of(last.get("content"))[:200]
            return _Completion(model, f"The {name} tool returned: {result}"), "ok"
        user_text = _last_user_text(messages)
        if role == "user" and tools:
            chosen = _mentioned_tool(user_text, tools)
            if chosen is not None:
                name, schema = chosen
                names = _tool_names(tools)
                arguments = self._tool_arguments.get(name)
                if arguments is None:
                    arguments = _arguments_from_schema(schema, user_text, names)
                call = (self._next_call_id(), name, orjson.dumps(arguments).decode())
                completion = _Completion(model, tool_calls=[call], finish_reason="tool_calls")
                return completion, "tool_call"
        if user_text:
            return _Completion(model, f"You said: {user_text[:200]}"), "ok"
        return _Completion(model, "Hello from the fault-injecting OpenAI server."), "ok"

    def _models_payload(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {
                    "id": model,
                    "object": "model",
                    "created": 0,
                    "owned_by": "openclaw-testing",
                    "context_window": window,
                }
                for model, window in (self._models or {}).items()
            ],
        }

    def _decide_get(self, path: str, api_key: str | None) -> _Plan:
        fingerprint = api_key_fingerprint(api_key)
        with self._lock:
            refused = None
            behavior = self._keys.get(api_key) if api_key is not None else None
            if (behavior is None and not self._any_key) or behavior is KeyBehavior.INVALID:
                refused = self._key_failure(api_key, fingerprint)
            if refused is not None:
                outcome, status, payload, headers = refused
            elif _route(path) == "models":
                outcome, status, payload, headers = "models", 200, self._models_payload(), {}
            else:
                outcome, status, payload, headers = "not_found", 404, _not_found("GET", path), {}
            index = self._record_bare("GET", path, fingerprint, outcome, status)
        return _Plan("json" if status == 200 else "error", index, status, payload, headers)

    def _record_other(self, method: str, path: str, api_key: str | None) -> _Plan:
        with self._lock:
            index = self._record_bare(method, path, api_key_fingerprint(api_key), "not_found", 404)
        return _Plan("error", index, 404, _not_found(method, path))

    def _record_bare(
        self, method: str, path: str, fingerprint: str | None, outcome: str, status: int
    ) -> int:
        """Record a request that is not a chat completion (callers hold the lock)."""
        return self._record(
            ServedRequest(
                method=method,
                path=path,
                model=None,
                api_key_fingerprint=fingerprint,
                message_count=0,
                estimated_tokens=0,
                stream=False,
                tools=(),
                outcome=outcome,
                status=status,
            )
        )

    def _track(self, connection: _Connection) -> bool:
        """Register a live connection; False when the server is stopping."""
        with self._lock:
            if self._stopping.is_set():
                return False
            self._connections.add(connection)
            return True

    def _untrack(self, connection: _Connection) -> None:
        with self._lock:
            self._connections.discard(connection)


def _rate_limit_response(fault: Fault, model: str) -> tuple[int, Any, dict[str, str]]:
    retry = fault.retry_after_s
    headers = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0"}
    wait = ""
    if retry is not None:
        headers["retry-after"] = f"{retry:g}"
        headers["x-ratelimit-reset-requests"] = f"{retry:g}s"
        wait = f" Please try again in {retry:g}s."
    payload = (
        fault.body
        if fault.body is not None
        else _error_body(
            f"Rate limit reached for requests per min (RPM) on {model}: Limit 60, Used 60, "
            f"Requested 1.{wait}",
            "requests",
            "rate_limit_exceeded",
        )
    )
    return fault.status or 429, payload, headers


def _overloaded_response(fault: Fault) -> tuple[int, Any, dict[str, str]]:
    payload = (
        fault.body
        if fault.body is not None
        else _error_body(
            "The server is overloaded with other requests. Please retry your request later.",
            "overloaded_error",
            "overloaded",
        )
    )
    return fault.status or 503, payload, {}


def _overflow_body(window: int, tokens: int) -> dict[str, Any]:
    return _error_body(
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
    )


def _not_found(method: str, path: str) -> dict[str, Any]:
    return _error_body(f"Invalid URL ({method} {path})", "invalid_request_error")


def _route(path: str) -> str | None:
    """``chat`` / ``models`` for the endpoints served, with or without the ``/v1`` prefix."""
    clean = urlsplit(path).path.rstrip("/")
    if clean.startswith("/v1/"):
        clean = clean[3:]
    if clean == "/chat/completions":
        return "chat"
    if clean == "/models":
        return "models"
    return None


# --------------------------------------------------------------------------- the brain's parts


def _text_of(content: Any) -> str:
    """Text of a message's ``content``: a string or a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _tool_names(tools: Iterable[Any]) -> tuple[str, ...]:
    names = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return tuple(names)


def _is_summary_request(messages: list[Any]) -> bool:
    return any(
        isinstance(m, dict)
        and m.get("role") in ("system", "developer")
        and _SUMMARY_MARKER in _text_of(m.get("content")).lower()
        for m in messages
    )


def _summary_text(messages: list[Any]) -> str:
    """A short, deterministic summary with the headings the summarizer asks for."""
    prompt = "\n".join(
        _text_of(m.get("content"))
        for m in messages
        if isinstance(m, dict) and m.get("role") == "user"
    )
    start, end = prompt.find("<conversation>"), prompt.find("</conversation>")
    body = prompt[start + len("<conversation>") : end] if 0 <= start < end else prompt
    lines = [line for line in body.splitlines() if line.startswith("[")]
    users = [line for line in lines if line.startswith("[User]")]
    tools = sum(1 for line in lines if line.startswith("[Tool result"))
    assistant = sum(1 for line in lines if line.startswith("[Assistant"))
    goal = users[0].split(":", 1)[1].strip()[:120] if users else "continue the conversation"
    count = len(lines) or sum(1 for m in messages if isinstance(m, dict)) - 1
    return (
        f"Goal: {goal}\n"
        "Constraints and preferences: none stated.\n"
        f"Progress: summarized {count} earlier messages ({len(users)} from the user, "
        f"{assistant} from the assistant, {tools} tool results).\n"
        "Key decisions: none recorded.\n"
        "Open issues: none.\n"
        "Next steps: continue from the most recent messages."
    )


def _tool_name_for(messages: list[Any], call_id: Any) -> str:
    """The name of the tool whose call ``call_id`` a tool message answers."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id") == call_id:
                function = call.get("function") or {}
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    return function["name"]
    return "tool"


def _last_user_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content")).strip()
    return ""


def _mentioned_tool(text: str, tools: list[Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The offered tool the user names first (whole word, any case), with its schema."""
    best: tuple[int, str, Mapping[str, Any]] | None = None
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        name = function["name"]
        match = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE)
        if match and (best is None or match.start() < best[0]):
            schema = function.get("parameters")
            best = (match.start(), name, schema if isinstance(schema, Mapping) else {})
    return (best[1], best[2]) if best is not None else None


def _argument_word(text: str, tool_names: Sequence[str]) -> str:
    """A plausible string argument from the prompt: its last capitalized word (a name, a
    city), else its last meaningful word, else ``"demo"``."""
    excluded = {name.lower() for name in tool_names}
    words = [
        (index, word)
        for index, word in enumerate(_WORD_RE.findall(text))
        if word.lower() not in excluded and word.lower() not in _STOPWORDS and len(word) > 1
    ]
    capitalized = [word for index, word in words if index > 0 and word[0].isupper()]
    if capitalized:
        return capitalized[-1]
    return words[-1][1] if words else "demo"


def _arguments_from_schema(
    schema: Mapping[str, Any], text: str, tool_names: Sequence[str]
) -> dict[str, Any]:
    """Arguments for the schema's required properties, from their declared types."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    arguments: dict[str, Any] = {}
    for name in required if isinstance(required, list) else ():
        if isinstance(name, str):
            spec = properties.get(name)
            spec = spec if isinstance(spec, Mapping) else {}
            arguments[name] = _value_for(spec, text, tool_names)
    return arguments


def _value_for(spec: Mapping[str, Any], text: str, tool_names: Sequence[str]) -> Any:
    if "default" in spec:
        return spec["default"]
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return _argument_word(text, tool_names)


def _reasoning_for(messages: list[Any]) -> str:
    text = _last_user_text(messages)[:100]
    return f"Thinking about the request: {text}" if text else "Thinking about the request."


# --------------------------------------------------------------------------- the wire


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage(completion: _Completion) -> dict[str, int]:
    produced = completion.text + completion.reasoning
    produced += "".join(name + args for _, name, args in completion.tool_calls)
    output = max(1, math.ceil(len(produced) / 4))
    prompt = completion.prompt_tokens
    return {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}


def _sse_events(
    completion: _Completion, response_id: str, chunk_chars: int, include_usage: bool
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of one streamed answer, in order."""
    base = {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": completion.model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"reasoning_content": p}) for p in _split(completion.reasoning, chunk_chars)]
    events += [chunk({"content": p}) for p in _split(completion.text, chunk_chars)]
    for index, (call_id, name, arguments) in enumerate(completion.tool_calls):
        opening = {"index": index, "id": call_id, "type": "function"}
        opening["function"] = {"name": name, "arguments": ""}
        events.append(chunk({"tool_calls": [opening]}))
        # arguments always arrive in two pieces or more, as they do from OpenAI
        size = max(1, min(chunk_chars, math.ceil(len(arguments) / 2)))
        for piece in _split(arguments, size):
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    events.append(chunk({}, completion.finish_reason))
    if include_usage:
        events.append({**base, "choices": [], "usage": _usage(completion)})
    return events


def _completion_object(completion: _Completion, response_id: str) -> dict[str, Any]:
    """The ``chat.completion`` object of a non-streamed answer."""
    message: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
    if completion.reasoning:
        message["reasoning_content"] = completion.reasoning
    if completion.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in completion.tool_calls
        ]
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": completion.finish_reason,
    }
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": completion.model,
        "choices": [choice],
        "usage": _usage(completion),
    }


def _shutdown_socket(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _ClientGone(Exception):
    """The client closed its connection while we were writing or waiting."""


class _HTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with daemon threads, no DNS lookup at bind, quiet errors."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64
    owner: FaultInjectingOpenAIServer

    def server_bind(self) -> None:
        # small writes go out at once (Nagle + delayed ACK would add ~40 ms per write);
        # accepted sockets inherit it on Linux, and the handler sets it again elsewhere
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socketserver.TCPServer.server_bind(self)  # skips HTTPServer's getfqdn()
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client went away: nothing to report
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """One connection: keep-alive requests, answered from the owner's decisions."""

    protocol_version = "HTTP/1.1"
    server_version = "openclaw-fault-server/1"
    server: _HTTPServer
    _connection: _Connection | None = None

    def version_string(self) -> str:
        """The ``server`` header: this server's name, without the Python version."""
        return self.server_version

    # plumbing --------------------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._connection = _Connection(self.connection, threading.current_thread())
        if not self.server.owner._track(self._connection):
            _shutdown_socket(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            if self._connection is not None:
                self.server.owner._untrack(self._connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests and the demo read ``requests`` instead (and keys never leak)."""

    @property
    def _owner(self) -> FaultInjectingOpenAIServer:
        return self.server.owner

    def _api_key(self) -> str | None:
        auth = self.headers.get("authorization") or ""
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        other = self.headers.get("api-key") or self.headers.get("x-api-key")
        return other.strip() if other and other.strip() else None

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            parts: list[bytes] = []
            while True:
                size_line = self.rfile.readline(1024)
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
        except OSError as exc:
            raise _ClientGone() from exc

    def _write_chunk(self, data: bytes) -> None:
        self._write(b"%X\r\n%s\r\n" % (len(data), data))

    def _start(self, status: int, headers: Mapping[str, str]) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
        except OSError as exc:
            raise _ClientGone() from exc

    def _wait_for_disconnect(self) -> bool:
        """Block until the client closes the connection (True) or the server stops."""
        stopping = self._owner._stopping
        sock = self.connection
        while not stopping.is_set():
            try:
                readable, _, _ = select.select([sock], [], [], _POLL_S)
            except (OSError, ValueError):
                return True
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        return True
                except OSError:
                    return True
                stopping.wait(_POLL_S)  # bytes are waiting (a pipelined request): no spin
        return False

    # requests --------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._serve(self._owner._decide_get(self.path, self._api_key()))

    def do_POST(self) -> None:
        try:
            raw = self._read_body()
        except (OSError, ValueError):
            self.close_connection = True
            return
        owner = self._owner
        if _route(self.path) != "chat":
            self._serve(owner._record_other("POST", self.path, self._api_key()))
            return
        try:
            plan = owner._decide("POST", self.path, self._api_key(), raw)
        except Exception:  # a bug here must not look like a network failure to the client
            traceback.print_exc()
            message = "The fault-injecting server failed on this request (see its stderr)."
            plan = _Plan("error", -1, 500, _error_body(message, "server_error"))
        self._serve(plan)

    def _serve(self, plan: _Plan) -> None:
        owner = self._owner
        try:
            if plan.delay_s > 0 and owner._stopping.wait(plan.delay_s):
                self.close_connection = True
                return
            if plan.kind == "hang":
                self._hang(plan)
            elif plan.kind in ("empty_stream", "headers_only"):
                self._quiet_stream(plan.kind == "empty_stream")
            elif plan.kind == "completion":
                self._completion(plan)
            else:
                self._json(plan, plan.status, plan.payload, plan.headers)
        except _ClientGone:
            self.close_connection = True
            owner._mark_disconnected(plan.index)

    def _json(self, plan: _Plan, status: int, payload: Any, headers: Mapping[str, str]) -> None:
        """A whole response: JSON (dict, or bytes already encoded) or text (str bodies)."""
        if isinstance(payload, str):
            data = payload.encode()
            kind = "text/html" if payload.lstrip().startswith("<") else "text/plain"
        else:
            data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
            kind = "application/json"
        base = {
            "content-type": kind,
            "content-length": str(len(data)),
            "x-request-id": f"req_{plan.index + 1:06d}",
        }
        overrides = {k.lower(): v for k, v in headers.items() if k.lower() != "content-length"}
        self._start(status, {**base, **overrides})
        self._write(data)

    def _quiet_stream(self, complete: bool) -> None:
        """llama.cpp's answer to a streamed prompt it cannot fit: a 200 whose body is empty,
        or whose connection closes right after the headers (``complete=False``)."""
        self._start(200, {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
        self.close_connection = True
        if complete:
            self._write(b"0\r\n\r\n")
        else:
            _shutdown_socket(self.connection)

    def _hang(self, plan: _Plan) -> None:
        if not plan.before_headers:
            kind = "text/event-stream" if plan.stream else "application/json"
            self._start(200, {"content-type": kind, "transfer-encoding": "chunked"})
        self.close_connection = True
        if self._wait_for_disconnect():
            raise _ClientGone()

    def _completion(self, plan: _Plan) -> None:
        completion = plan.completion
        assert completion is not None
        owner = self._owner
        with owner._lock:
            response_id = f"chatcmpl-{owner._next_id():06d}"
        if not plan.stream:
            data = orjson.dumps(_completion_object(completion, response_id))
            if completion.cut_after is not None:
                # promise the whole body, send half of it, hang up
                self._start(
                    200, {"content-type": "application/json", "content-length": str(len(data))}
                )
                self._write(data[: len(data) // 2])
                self.close_connection = True
                return
            self._json(plan, 200, data, {})
            return
        events = _sse_events(completion, response_id, owner.chunk_chars, plan.include_usage)
        self._start(
            200,
            {
                "content-type": "text/event-stream; charset=utf-8",
                "cache-control": "no-cache",
                "transfer-encoding": "chunked",
            },
        )
        if completion.cut_after is not None:
            content_events = len(events) - (2 if plan.include_usage else 1)
            for event in events[: min(completion.cut_after, content_events)]:
                self._write_chunk(b"data: " + orjson.dumps(event) + b"\n\n")
            if completion.error_event is not None:
                error = completion.error_event
                data = error.encode() if isinstance(error, str) else orjson.dumps(error)
                self._write_chunk(b"data: " + data + b"\n\n")
            self.close_connection = True  # no terminating chunk: the body is cut
            _shutdown_socket(self.connection)
            return
        for event in events:
            self._write_chunk(b"data: " + orjson.dumps(event) + b"\n\n")
        self._write_chunk(b"data: [DONE]\n\n")
        self._write(b"0\r\n\r\n")
