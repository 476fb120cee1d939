"""The public errors, re-homed: each reports ``openclaw_runtime`` as its module in tracebacks
and reprs, as httpx's errors do. The package face re-exports them from here."""

from __future__ import annotations

from ._exceptions import (
    AgentBusyError,
    ComponentNotFoundError,
    ConfigurationError,
    FailoverExhaustedError,
    HookError,
    OpenClawRuntimeDeprecationWarning,
    OpenClawRuntimeError,
    OpenClawRuntimeWarning,
    PluginBackendError,
    PluginConflictError,
    PluginError,
    PluginLoadError,
    PluginValidationError,
    ProviderError,
    RunBlockedError,
    StreamError,
    StreamRepairError,
    TranscriptError,
    TranscriptNotContinuableError,
    UnknownBackendError,
    UnknownContextEngineError,
)
from .abort import AbortError

__all__ = [
    "AbortError",
    "AgentBusyError",
    "ComponentNotFoundError",
    "ConfigurationError",
    "FailoverExhaustedError",
    "HookError",
    "OpenClawRuntimeDeprecationWarning",
    "OpenClawRuntimeError",
    "OpenClawRuntimeWarning",
    "PluginBackendError",
    "PluginConflictError",
    "PluginError",
    "PluginLoadError",
    "PluginValidationError",
    "ProviderError",
    "RunBlockedError",
    "StreamError",
    "StreamRepairError",
    "TranscriptError",
    "TranscriptNotContinuableError",
    "UnknownBackendError",
    "UnknownContextEngineError",
]

for _name in __all__:
    globals()[_name].__module__ = "openclaw_runtime"
del _name
