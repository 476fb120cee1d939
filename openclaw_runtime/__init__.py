"""openclaw-runtime: an async agent runtime that recovers by itself.

Build a ``Runtime``, create an ``Agent`` with tools, send a prompt and consume its live event
stream. Plugins extend the runtime through the hooks in ``openclaw_runtime.hookspecs``; write
them with ``from openclaw_runtime import hookimpl``.
"""

from ._markers import hookimpl
from ._public_errors import (
    AbortError,
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
from ._runtime import Runtime
from ._types import RunBlock
from ._version import __version__
from .abort import AbortController, AbortSignal, TurnHandoff
from .agent import Agent, AgentContext, AgentLoopConfig, AgentTool, AgentToolResult, tool
from .config import RuntimeConfig
from .events import AgentEventStream, AssistantMessageEventStream, EventStream
from .llm import Context, Model, StreamOptions, Tool
from .messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .redaction import redact, register_secret

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
