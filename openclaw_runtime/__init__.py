"""openclaw-runtime: an async agent runtime that recovers by itself.

Build a ``Runtime``, create an ``Agent`` with tools, send a prompt and consume its live event
stream. Plugins extend the runtime through the hooks in ``openclaw_runtime.hookspecs``; write
them with ``from openclaw_runtime import hookimpl``.

The names below load on first use (``__getattr__``), so ``import openclaw_runtime`` stays
cheap: a command that only prints its version or a plugin that only needs ``hookimpl`` does
not pay for the runtime, httpx, jsonschema and the plugin machinery.
"""

import typing as _typing

from ._lazy_face import lazy_getattr as _lazy_getattr
from ._version import __version__

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from ._markers import hookimpl  # noqa: I001 (kept compact: the face has 100 lines)
    from ._public_errors import (
        AbortError, AgentBusyError, ComponentNotFoundError, ConfigurationError,
        FailoverExhaustedError, HookError, OpenClawRuntimeDeprecationWarning,
        OpenClawRuntimeError, OpenClawRuntimeWarning, PluginBackendError, PluginConflictError,
        PluginError, PluginLoadError, PluginValidationError, ProviderError, RunBlockedError,
        StreamError, StreamRepairError, TranscriptError, TranscriptNotContinuableError,
        UnknownBackendError, UnknownContextEngineError,
    )
    from ._runtime import Runtime
    from ._types import RunBlock
    from .abort import AbortController, AbortSignal, TurnHandoff
    from .agent import Agent, AgentContext, AgentLoopConfig, AgentTool, AgentToolResult, tool
    from .config import RuntimeConfig
    from .events import AgentEventStream, AssistantMessageEventStream, EventStream
    from .llm import Context, Model, StreamOptions, Tool
    from .messages import (
        AssistantMessage, CustomMessage, ImageContent, TextContent, ThinkingContent, ToolCall,
        ToolResultMessage, Usage, UserMessage,
    )
    from .redaction import redact, register_secret
    # fmt: on

#: module -> the public names it provides, each loaded on first use
_LAZY = {
    "_markers": "hookimpl",
    "_public_errors": (
        "AbortError AgentBusyError ComponentNotFoundError ConfigurationError "
        "FailoverExhaustedError HookError OpenClawRuntimeDeprecationWarning "
        "OpenClawRuntimeError OpenClawRuntimeWarning PluginBackendError PluginConflictError "
        "PluginError PluginLoadError PluginValidationError ProviderError RunBlockedError "
        "StreamError StreamRepairError TranscriptError TranscriptNotContinuableError "
        "UnknownBackendError UnknownContextEngineError"
    ),
    "_runtime": "Runtime",
    "_types": "RunBlock",
    "abort": "AbortController AbortSignal TurnHandoff",
    "agent": "Agent AgentContext AgentLoopConfig AgentTool AgentToolResult tool",
    "config": "RuntimeConfig",
    "events": "AgentEventStream AssistantMessageEventStream EventStream",
    "llm": "Context Model StreamOptions Tool",
    "messages": (
        "AssistantMessage CustomMessage ImageContent TextContent ThinkingContent ToolCall "
        "ToolResultMessage Usage UserMessage"
    ),
    "redaction": "redact register_secret",
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "AbortController", "AbortError", "AbortSignal", "Agent", "AgentBusyError", "AgentContext",
    "AgentEventStream", "AgentLoopConfig", "AgentTool", "AgentToolResult", "AssistantMessage",
    "AssistantMessageEventStream", "ComponentNotFoundError", "ConfigurationError", "Context",
    "CustomMessage", "EventStream", "FailoverExhaustedError", "HookError", "ImageContent",
    "Model", "OpenClawRuntimeDeprecationWarning", "OpenClawRuntimeError",
    "OpenClawRuntimeWarning", "PluginBackendError", "PluginConflictError", "PluginError",
    "PluginLoadError", "PluginValidationError", "ProviderError", "RunBlock", "RunBlockedError",
    "Runtime", "RuntimeConfig", "StreamError", "StreamOptions", "StreamRepairError",
    "TextContent", "ThinkingContent", "Tool", "ToolCall", "ToolResultMessage",
    "TranscriptError", "TranscriptNotContinuableError", "TurnHandoff", "UnknownBackendError",
    "UnknownContextEngineError", "Usage", "UserMessage", "__version__", "hookimpl", "redact",
    "register_secret", "tool",
]  # fmt: skip
