"""Test helpers for openclaw-runtime and its plugins.

Opt in from a ``conftest.py``::

    pytest_plugins = ["openclaw_runtime.testing"]

Fixtures:

* ``anyio_backend`` — every ``@pytest.mark.anyio`` test runs on asyncio *and* trio;
* ``plugin_manager`` — a fresh manager with hookspecs and built-ins, no entry points;
* ``register_plugin`` — register a plugin for one test (on ``plugin_manager`` and on every
  runtime built by ``runtime_factory``); unregistered at teardown;
* ``hook_recorder`` — records every hook call the host makes;
* ``runtime_factory`` — builds a ``Runtime`` from an in-memory config, without entry points;
* ``fake_provider`` — a scripted ``FakeProvider``;
* ``local_http_server`` — a real HTTP server on 127.0.0.1 that answers from a script
  (``ScriptedReply``: status, headers, body chunks, ``Pause``, ``HANG``) and counts client
  disconnects, for testing providers over real sockets;
* ``openai_server`` — a ``FaultInjectingOpenAIServer``: an OpenAI-compatible endpoint with a
  deterministic brain (answers, tool calls, summaries) that fails on demand (``Fault``: rate
  limits, overloads, context overflow, cut streams, hangs...), scripted ``Reply``-s, key
  behaviours and seeded chaos; every request recorded as a ``ServedRequest``.

The fixtures and the contract mixins need pytest; everything else here imports without it
(``openclaw_runtime.testing.openai_server`` runs the ``openclaw-runtime demo``).

Contract mixins: ``ContextEngineContract``, ``TranscriptSanitizerContract`` and
``StreamRepairerContract`` (inherit, provide a ``context_engine`` / ``sanitizer`` /
``stream_repairer`` fixture). Backend contracts, one per protocol of
``openclaw_runtime.backends``: ``LaneBackendContract``, ``AuthStoreContract``,
``SteeringStoreContract``, ``SessionIndexContract``, ``SessionStoreContract`` (provide a
``lane_backend`` / ``auth_store`` / ``steering_store`` / ``session_index`` /
``session_store`` fixture; see docs/backends.md).

Recorders: ``EventRecorder`` (an emit sink / agent listener with ``labels()``) and
``HookRecorder``.

Fakes (importable without pytest from ``openclaw_runtime.providers.fake``): ``FakeProvider``
with ``enqueue()``-d responses and a recorded ``history``, step builders ``text``,
``thinking``, ``tool_call``, ``delay``, ``gate``, and ``scripted_stream`` for hand-written
event sequences.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from .._plugins import HookCall, OpenClawPluginManager
from ..events import AssistantMessageEvent, AssistantMessageEventStream, Event
from ..llm import Model
from ..providers.fake import (
    FakeError,
    FakeProvider,
    FakeRequest,
    FakeResponse,
    delay,
    gate,
    text,
    thinking,
    tool_call,
)
from .openai_server import (
    Fault,
    FaultInjectingOpenAIServer,
    KeyBehavior,
    Reply,
    ServedRequest,
)
from .server import HANG, LocalHTTPServer, Pause, RecordedRequest, ScriptedReply, sse_body

__all__ = [
    "HANG",
    "EventRecorder",
    "FakeError",
    "FakeProvider",
    "FakeRequest",
    "FakeResponse",
    "Fault",
    "FaultInjectingOpenAIServer",
    "HookRecorder",
    "KeyBehavior",
    "LocalHTTPServer",
    "Pause",
    "PluginSet",
    "RecordedRequest",
    "Reply",
    "ScriptedReply",
    "ServedRequest",
    "delay",
    "event_label",
    "fake_model",
    "gate",
    "scripted_stream",
    "sse_body",
    "text",
    "thinking",
    "tool_call",
]


def fake_model(**overrides: Any) -> Model:
    """A model served by a ``FakeProvider`` (api ``fake``)."""
    fields: dict[str, Any] = {"id": "fake-model", "api": "fake", "provider": "fake"}
    fields.update(overrides)
    return Model(**fields)


def scripted_stream(events: Iterable[AssistantMessageEvent]) -> AssistantMessageEventStream:
    """An assistant-message stream that replays ``events`` (like httpx's MockTransport)."""

    async def replay() -> AsyncIterator[AssistantMessageEvent]:
        for event in events:
            yield event

    return AssistantMessageEventStream(replay())


def event_label(event: Event) -> str:
    """``type`` plus the role of the message it carries, e.g. ``message_start:user``."""
    message = getattr(event, "message", None)
    if message is not None and event.type != "message_update":
        return f"{event.type}:{message.role}"
    return event.type


class EventRecorder:
    """An emit sink and ``Agent`` listener that keeps every event it is given."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event, *_signal: Any) -> None:
        self.events.append(event)

    def labels(self, *, updates: bool = False) -> list[str]:
        """Event labels in order (``message_update`` left out unless ``updates``)."""
        return [event_label(e) for e in self.events if updates or e.type != "message_update"]

    def of(self, kind: str) -> list[Any]:
        """Events of one type."""
        return [e for e in self.events if e.type == kind]


@dataclass
class HookRecorder:
    """Every hook call the host made, in order."""

    calls: list[HookCall] = field(default_factory=list)

    def __call__(self, call: HookCall) -> None:
        self.calls.append(call)

    def getcalls(self, name: str) -> list[HookCall]:
        """Calls of the hook ``name``."""
        return [c for c in self.calls if c.hook == name]

    def assert_called(self, name: str, **kwargs: Any) -> HookCall:
        """The first call of ``name`` whose kwargs include ``kwargs``; fails otherwise."""
        for call in self.getcalls(name):
            if all(call.kwargs.get(k) == v for k, v in kwargs.items()):
                return call
        seen = [dict(c.kwargs) for c in self.getcalls(name)]
        raise AssertionError(f"hook {name!r} was not called with {kwargs!r}; calls: {seen!r}")


class PluginSet:
    """Plugins registered for one test; ``runtime_factory`` passes them to each runtime."""

    def __init__(self, pm: OpenClawPluginManager) -> None:
        self.pm = pm
        self.items: list[tuple[str, Any]] = []

    def __call__(self, plugin: Any, name: str | None = None) -> str:
        registered = self.pm.register(plugin, name=name)
        assert registered is not None, f"plugin {name or plugin!r} is blocked or already registered"
        self.pm.check_pending()
        self.items.append((registered, plugin))
        return registered

    def unregister_all(self) -> None:
        for name, _plugin in reversed(self.items):
            self.pm.unregister(name=name)
        self.items.clear()


# The fixtures and contract mixins import pytest at module level: load them only where pytest
# exists, so this package (and ``openai_server``) stays importable on a bare install.
if importlib.util.find_spec("pytest") is not None:
    from ._fixtures import (
        _local_http_server_session as _local_http_server_session,
    )
    from ._fixtures import (
        anyio_backend,
        fake_provider,
        hook_recorder,
        local_http_server,
        openai_server,
        plugin_manager,
        register_plugin,
        runtime_factory,
    )
    from .backend_contracts import (
        AuthStoreContract,
        LaneBackendContract,
        SessionIndexContract,
        SessionStoreContract,
        SteeringStoreContract,
    )
    from .contracts import (
        ContextEngineContract,
        StreamRepairerContract,
        TranscriptSanitizerContract,
        sample_transcript,
    )

    __all__ += [
        "AuthStoreContract",
        "ContextEngineContract",
        "LaneBackendContract",
        "SessionIndexContract",
        "SessionStoreContract",
        "SteeringStoreContract",
        "StreamRepairerContract",
        "TranscriptSanitizerContract",
        "anyio_backend",
        "fake_provider",
        "hook_recorder",
        "local_http_server",
        "openai_server",
        "plugin_manager",
        "register_plugin",
        "runtime_factory",
        "sample_transcript",
    ]
