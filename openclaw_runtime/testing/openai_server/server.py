"""``FaultInjectingOpenAIServer``: the scripted state (faults, replies, chaos, keys, recorded
requests), its lifecycle on 127.0.0.1, and the decision pipeline that turns each request into
a ``Plan`` (the numbered steps in the package docstring).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, Self

from .brain import brain, from_reply, reasoning_for, tool_names
from .faults import fault_plan, key_refusal, not_found, overflow_body, request_error
from .handler import POLL_S, Connection, Handler, HTTPServer, shutdown_socket
from .plans import ChatRequest, Completion, Plan, route
from .scripts import (
    DEFAULT_CHAOS_KINDS,
    DEFAULT_CONTEXT_WINDOW,
    OVERFLOW_STYLES,
    Fault,
    KeyBehavior,
    Reply,
    ServedRequest,
    api_key_fingerprint,
    echo_key,
)
from .wire import models_payload

__all__ = ["FaultInjectingOpenAIServer"]


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
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._connections: set[Connection] = set()
        self._holds = 0  # streams that reached a "hold" fault's pause, ever
        self._hold_generation = 0  # bumped by release_holds()

    # lifecycle -------------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve in a background (daemon) thread."""
        with self._lock:
            if self._httpd is not None:
                return self
            self._stopping = threading.Event()
            httpd = HTTPServer(("127.0.0.1", 0), Handler)
            httpd.owner = self
            self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": POLL_S},
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
            shutdown_socket(connection.sock)
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

    def wait_for_held(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block until ``count`` streams (ever) paused at a ``"hold"`` fault; False on
        timeout. From async code: ``await anyio.to_thread.run_sync(server.wait_for_held)``."""
        deadline = time.monotonic() + timeout
        with self._disconnect_cond:
            while self._holds < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._disconnect_cond.wait(remaining)
            return True

    def release_holds(self) -> None:
        """Let every stream paused at a ``"hold"`` fault finish."""
        with self._disconnect_cond:
            self._hold_generation += 1
            self._disconnect_cond.notify_all()

    def _begin_hold(self) -> int:
        """A stream pauses (handler threads): count it; the generation it waits past."""
        with self._disconnect_cond:
            self._holds += 1
            self._disconnect_cond.notify_all()
            return self._hold_generation

    def _hold_released(self, generation: int) -> bool:
        with self._lock:
            return self._hold_generation != generation

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

    def _decide(self, method: str, path: str, api_key: str | None, raw: bytes) -> Plan:
        """Everything about one chat-completions request, decided atomically."""
        fingerprint = api_key_fingerprint(api_key)
        request = ChatRequest.parse(raw)
        body, model, tools, stream = request.body, request.model, request.tools, request.stream
        include_usage, estimated = request.include_usage, request.estimated_tokens
        message_list = request.messages

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
                        tools=tool_names(tools),
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
            ) -> Plan:
                index = record(outcome, status, fault=fault, chaos=chaos)
                return Plan("error", index, status, payload, dict(headers or {}))

            # 1. the body, 2. the model
            invalid = request_error(request, self._models)
            if invalid is not None:
                return error(*invalid)
            # 3. the key
            refused = self._refusal(api_key, fingerprint)
            if refused is not None:
                outcome, status, payload, headers = refused
                return error(outcome, status, payload, headers)
            # 4. queued faults, 5. chaos ("delay" only postpones: the pipeline goes on)
            fault = self._take_fault(model, api_key)
            if fault is not None and fault.echo_key:
                fault = replace(fault, body=echo_key(fault.body, api_key or ""))
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
            if fault is not None and fault.kind == "hold":
                reply = self._take_reply(model)
                if reply is not None:
                    completion = from_reply(model, reply, self._next_call_id)
                else:
                    completion = self._brain(model, message_list, tools)[0]
                completion.prompt_tokens = estimated
                completion.hold_after = fault.after_chunks
                index = record("hold", 200, fault="hold", chaos=from_chaos)
                return Plan(
                    "completion",
                    index,
                    completion=completion,
                    stream=stream,
                    include_usage=include_usage,
                    delay_s=delay_s,
                )
            if fault is not None and fault.kind not in ("empty", "reasoning_only"):
                plan = fault_plan(fault, model, window, estimated, stream, include_usage)
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
                    return Plan("empty_stream", index, delay_s=delay_s)
                return Plan("headers_only", index, delay_s=delay_s)
            if estimated > window:
                plan = error(
                    "overflow",
                    400,
                    overflow_body(window, estimated),
                    fault=applied,
                    chaos=from_chaos,
                )
                plan.delay_s = delay_s
                return plan
            # 7. a queued reply, 8. the brain
            if fault is not None and fault.kind == "empty":
                completion, outcome = Completion(model), "empty"
            elif fault is not None and fault.kind == "reasoning_only":
                completion = Completion(model, reasoning=reasoning_for(message_list))
                outcome = "reasoning_only"
            else:
                reply = self._take_reply(model)
                if reply is not None:
                    completion, outcome = from_reply(model, reply, self._next_call_id), "reply"
                else:
                    completion, outcome = self._brain(model, message_list, tools)
            completion.prompt_tokens = estimated
            index = record(outcome, 200, fault=applied, chaos=from_chaos)
            return Plan(
                "completion",
                index,
                completion=completion,
                stream=stream,
                include_usage=include_usage,
                delay_s=delay_s,
            )

    def _refusal(
        self, api_key: str | None, fingerprint: str | None
    ) -> tuple[str, int, Any, dict[str, str]] | None:
        behavior = self._keys.get(api_key) if api_key is not None else None
        return key_refusal(
            behavior, any_key=self._any_key, api_key=api_key, fingerprint=fingerprint
        )

    def _brain(self, model: str, messages: list[Any], tools: list[Any]) -> tuple[Completion, str]:
        return brain(
            model,
            messages,
            tools,
            tool_arguments=self._tool_arguments,
            next_call_id=self._next_call_id,
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

    def _decide_get(self, path: str, api_key: str | None) -> Plan:
        fingerprint = api_key_fingerprint(api_key)
        with self._lock:
            refused = None
            behavior = self._keys.get(api_key) if api_key is not None else None
            if (behavior is None and not self._any_key) or behavior is KeyBehavior.INVALID:
                refused = self._refusal(api_key, fingerprint)
            if refused is not None:
                outcome, status, payload, headers = refused
            elif route(path) == "models":
                payload = models_payload(self._models or {})
                outcome, status, headers = "models", 200, {}
            else:
                outcome, status, payload, headers = "not_found", 404, not_found("GET", path), {}
            index = self._record_bare("GET", path, fingerprint, outcome, status)
        return Plan("json" if status == 200 else "error", index, status, payload, headers)

    def _record_other(self, method: str, path: str, api_key: str | None) -> Plan:
        with self._lock:
            index = self._record_bare(method, path, api_key_fingerprint(api_key), "not_found", 404)
        return Plan("error", index, 404, not_found(method, path))

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

    def _track(self, connection: Connection) -> bool:
        """Register a live connection; False when the server is stopping."""
        with self._lock:
            if self._stopping.is_set():
                return False
            self._connections.add(connection)
            return True

    def _untrack(self, connection: Connection) -> None:
        with self._lock:
            self._connections.discard(connection)
