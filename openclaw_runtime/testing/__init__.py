"""Test helpers for openclaw-runtime and its plugins.

Opt in from a ``conftest.py``::

    pytest_plugins = ["openclaw_runtime.testing"]

Fixtures (docs/testing-plugins.md has the full table): ``anyio_backend`` (asyncio *and*
trio; trio skipped with a reason when not installed), ``plugin_manager``, ``register_plugin``,
``hook_recorder``, ``runtime_factory``, ``fake_provider``, ``local_http_server``,
``openai_server``. The ``pytest11`` plugin (``pytest_plugin``, loaded automatically) adds
``openclaw_state_dir``, ``fault_server`` and ``openclaw_runtime_fake`` (a ``FakeRuntime``: the
fake provider registered on a real ``Runtime``, so runs take the whole pipeline).

Fixtures and contract mixins need pytest; everything else imports without it.

Contract mixins, one per pluggable kind: ``ContextEngineContract``,
``TranscriptSanitizerContract``, ``StreamRepairerContract``, ``ToolCallFormatContract``,
``FailoverClassifierContract``, ``ProviderContract``, and one per backend protocol
(``LaneBackendContract``, ``AuthStoreContract``, ``SteeringStoreContract``,
``SessionIndexContract``, ``SessionStoreContract``; see docs/backends.md).
``registered_component`` fetches a plugin's component from a real runtime for a fixture.
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
from ._contract_support import registered_component
from .fake_runtime import FakeProviderPlugin, FakeRuntime
from .fakes import fake_model, scripted_stream
from .openai_server import Fault, FaultInjectingOpenAIServer, KeyBehavior, Reply, ServedRequest
from .plugin_set import PluginSet
from .recorders import EventRecorder, HookRecorder, event_label
from .server import HANG, LocalHTTPServer, Pause, RecordedRequest, ScriptedReply, sse_body

__all__ = [
    "HANG", "EventRecorder", "FakeError", "FakeProvider", "FakeProviderPlugin", "FakeRequest",
    "FakeResponse", "FakeRuntime", "Fault", "FaultInjectingOpenAIServer", "HookRecorder",
    "KeyBehavior", "LocalHTTPServer",
    "Pause", "PluginSet", "RecordedRequest", "Reply", "ScriptedReply", "ServedRequest",
    "delay", "event_label", "fake_model", "gate", "registered_component", "scripted_stream",
    "sse_body", "text", "thinking", "tool_call",
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
    from .failover_contract import FailoverClassifierContract
    from .format_contract import ToolCallFormatContract
    from .provider_contract import ProviderContract

    __all__ += [
        "AuthStoreContract", "ContextEngineContract", "FailoverClassifierContract",
        "LaneBackendContract", "ProviderContract", "SessionIndexContract",
        "SessionStoreContract", "SteeringStoreContract", "StreamRepairerContract",
        "ToolCallFormatContract", "TranscriptSanitizerContract", "anyio_backend",
        "fake_provider", "hook_recorder", "local_http_server", "openai_server",
        "plugin_manager", "register_plugin", "runtime_factory", "sample_transcript",
    ]  # fmt: skip
