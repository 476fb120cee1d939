"""The one error hierarchy of openclaw-runtime.

Every exception the runtime raises on purpose derives from ``OpenClawRuntimeError``::

    OpenClawRuntimeError                       base; never raised directly
    ├── ConfigurationError                     bad runtime or plugin configuration
    ├── PluginError                            .plugin_name, .distribution
    │   ├── PluginLoadError                    an entry point failed to import; .entry_point
    │   ├── PluginValidationError              hookimpl does not match its hookspec
    │   └── PluginConflictError                duplicate entry-point or component name
    ├── ComponentNotFoundError (LookupError)   unknown engine/sanitizer/provider/... name
    │   ├── UnknownContextEngineError
    │   └── UnknownBackendError (also a ConfigurationError)   unknown ``[backends]`` name
    ├── HookError                              a hookimpl raised unexpectedly; .hook_name
    ├── RunBlockedError                        a ``before_agent_run`` hook vetoed the run
    ├── AgentBusyError                         the Agent is already running
    ├── TranscriptError
    │   └── TranscriptNotContinuableError      continue() from an assistant message
    ├── ProviderError                          plugins raise this for provider failures
    │   └── FailoverExhaustedError             .attempts
    └── StreamError
        └── StreamRepairError

Warnings: ``OpenClawRuntimeWarning`` → ``OpenClawRuntimeDeprecationWarning``.

Exceptions escaping a plugin are re-raised as ``HookError`` from the original, except
subclasses of ``OpenClawRuntimeError``, which pass through unchanged: plugins signal expected
conditions with these classes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .redaction import redact

__all__ = [
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


class OpenClawRuntimeError(Exception):
    """Base class of every error raised by openclaw-runtime on purpose.

    String arguments are redacted (``openclaw_runtime.redaction``), so neither ``str()`` nor
    ``repr()`` of any of these errors can carry a registered secret or a key-shaped value.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class ConfigurationError(OpenClawRuntimeError):
    """The runtime or a plugin was configured with values that cannot work."""


class PluginError(OpenClawRuntimeError):
    """A problem attributable to one plugin."""

    def __init__(
        self, message: str, *, plugin_name: str | None = None, distribution: str | None = None
    ) -> None:
        super().__init__(message)
        self.plugin_name = plugin_name
        self.distribution = distribution


class PluginLoadError(PluginError):
    """An entry point of the ``openclaw_runtime`` group failed to import."""

    def __init__(
        self,
        message: str,
        *,
        plugin_name: str | None = None,
        distribution: str | None = None,
        entry_point: str | None = None,
    ) -> None:
        super().__init__(message, plugin_name=plugin_name, distribution=distribution)
        self.entry_point = entry_point


class PluginValidationError(PluginError):
    """A hookimpl does not match its hookspec (wraps pluggy's error)."""


class PluginBackendError(PluginError):
    """A plugin's backend (lanes, auth store, session store) raised; the run cannot go on
    without it. The message names the plugin, the backend and the method; ``__cause__`` is
    the plugin's own exception."""


class PluginConflictError(PluginError):
    """Two plugins claim the same entry-point name or the same component name."""


class ComponentNotFoundError(OpenClawRuntimeError, LookupError):
    """No component of this kind is registered under the requested name."""

    def __init__(self, kind: str, name: str, available: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.available = sorted(available)
        listing = ", ".join(repr(n) for n in self.available) or "none"
        super().__init__(f"unknown {kind} {name!r}; registered: {listing}")

    def __str__(self) -> str:  # LookupError would otherwise repr() the message
        return str(self.args[0])


class UnknownContextEngineError(ComponentNotFoundError):
    """The configured context engine name is not registered."""

    def __init__(self, name: str, available: Iterable[str]) -> None:
        super().__init__("context engine", name, available)


class UnknownBackendError(ComponentNotFoundError, ConfigurationError):
    """``[backends]`` names a backend nothing registered; the message lists what is."""

    def __init__(
        self, kind: str, name: str, available: Iterable[str], *, key: str | None = None
    ) -> None:
        ComponentNotFoundError.__init__(self, f"{kind} backend", name, available)
        listing = ", ".join(repr(n) for n in self.available) or "none"
        self.args = (
            redact(
                f"[backends] {key or kind} = {name!r}: no {kind} backend of that name is "
                "registered; "
                f"registered: {listing}"
            ),
        )


class HookError(OpenClawRuntimeError):
    """A hookimpl raised an exception that was not one of ours."""

    def __init__(self, message: str, *, hook_name: str, plugin_name: str | None) -> None:
        super().__init__(message)
        self.hook_name = hook_name
        self.plugin_name = plugin_name


class RunBlockedError(OpenClawRuntimeError):
    """A ``before_agent_run`` hook vetoed the run before it started."""

    def __init__(self, reason: str, *, plugin_name: str | None = None) -> None:
        super().__init__(f"run blocked by plugin {plugin_name!r}: {reason}")
        self.reason = reason
        self.plugin_name = plugin_name


class AgentBusyError(OpenClawRuntimeError):
    """The Agent already runs a prompt; use steer() or follow_up() to queue messages."""


class TranscriptError(OpenClawRuntimeError):
    """A transcript is malformed or cannot be used the way it was asked to be."""


class TranscriptNotContinuableError(TranscriptError):
    """The transcript ends in a message the loop cannot continue from."""

    def __init__(self, role: str) -> None:
        super().__init__(f"Cannot continue from message role: {role}")
        self.role = role


class ProviderError(OpenClawRuntimeError):
    """A provider failed in a way a plugin wants to report as an exception."""


class FailoverExhaustedError(ProviderError):
    """Every candidate of a fallback chain failed; ``attempts`` says how and why."""

    def __init__(self, message: str, attempts: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.attempts = list(attempts)


class StreamError(OpenClawRuntimeError):
    """An event stream was used incorrectly or ended in an impossible state."""


class StreamRepairError(StreamError):
    """A stream repairer failed to transform a stream."""


class OpenClawRuntimeWarning(UserWarning):
    """Base class of warnings issued by openclaw-runtime."""


class OpenClawRuntimeDeprecationWarning(OpenClawRuntimeWarning, DeprecationWarning):
    """A hook argument, hook or API is deprecated."""
