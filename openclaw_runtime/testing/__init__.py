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
* ``local_http_server`` — a real HTTP server on 127.0.0.1 answering from a script
  (``ScriptedReply``, ``Pause``, ``HANG``), counting client disconnects;
* ``openai_server`` — a ``FaultInjectingOpenAIServer``: an OpenAI-compatible endpoint with a
  deterministic brain (answers, tool calls, summaries) that fails on demand (``Fault``: rate
  limits, overloads, context overflow, cut streams, hangs...), scripted ``Reply``-s, key
  behaviours and seeded chaos; every request recorded as a ``ServedRequest``.

Fixtures and contract mixins need pytest; everything else imports without it.

Contract mixins: ``ContextEngineContract``, ``TranscriptSanitizerContract`` and
``StreamRepairerContract`` (inherit, provide a ``context_engine`` / ``sanitizer`` /
``stream_repairer`` fixture). Backend contracts, one per protocol of
``openclaw_runtime.backends``: ``LaneBackendContract``, ``AuthStoreContract``,
``SteeringStoreContract``, ``SessionIndexContract``, ``SessionStoreContract`` (provide a
``lane_backend`` / ``auth_store`` / ``steering_store`` / ``session_index`` /
``session_store`` fixture; see docs/backends.md).

Also: the recorders ``EventRecorder`` / ``HookRecorder`` and the fakes of
``openclaw_runtime.providers.fake`` (docs/testing-plugins.md lists them all).
"""

from __future__ import annotations

import importlib.util

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
from .fakes import fake_model, scripted_stream
from .openai_server import Fault, FaultInjectingOpenAIServer, KeyBehavior, Reply, ServedRequest
from .plugin_set import PluginSet
from .recorders import EventRecorder, HookRecorder, event_label
from .server import HANG, LocalHTTPServer, Pause, RecordedRequest, ScriptedReply, sse_body

__all__ = [
    "HANG", "EventRecorder", "FakeError", "FakeProvider", "FakeRequest", "FakeResponse",
    "Fault", "FaultInjectingOpenAIServer", "HookRecorder", "KeyBehavior", "LocalHTTPServer",
    "Pause", "PluginSet", "RecordedRequest", "Reply", "ScriptedReply", "ServedRequest",
    "delay", "event_label", "fake_model", "gate", "scripted_stream", "sse_body", "text",
    "thinking", "tool_call",
]  # fmt: skip

# The fixtures and contract mixins import pytest: re-export them only where pytest exists, so
# this package (and ``openai_server``) stays importable on a bare install.
if importlib.util.find_spec("pytest") is not None:
    from ._fixtures import _local_http_server_session as _local_http_server_session
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
        "AuthStoreContract", "ContextEngineContract", "LaneBackendContract",
        "SessionIndexContract", "SessionStoreContract", "SteeringStoreContract",
        "StreamRepairerContract", "TranscriptSanitizerContract", "anyio_backend",
        "fake_provider", "hook_recorder", "local_http_server", "openai_server",
        "plugin_manager", "register_plugin", "runtime_factory", "sample_transcript",
    ]  # fmt: skip
