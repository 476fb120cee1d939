"""Small shared types of the plugin contract: registration callbacks, hook answers and the
view of the ``Runtime`` that lifecycle hooks receive."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .config import RuntimeConfig

__all__ = [
    "RegisterBackend",
    "RegisterComponent",
    "RegisterModel",
    "RegisterOrdered",
    "RegisterPromptSection",
    "RegisterSettings",
    "RunBlock",
    "RuntimeView",
]


@dataclass(frozen=True, slots=True)
class RunBlock:
    """A ``before_agent_run`` veto: the run does not start; ``reason`` says why."""

    reason: str


class RegisterComponent(Protocol):
    """``register(name, component)``: contribute a named component to a slot."""

    def __call__(self, name: str, component: Any, /) -> None: ...


class RegisterOrdered(Protocol):
    """``register(name, component, *, order=100)``: contribute a pipeline stage."""

    def __call__(self, name: str, component: Any, /, *, order: int = 100) -> None: ...


class RegisterModel(Protocol):
    """``register(model, *, aliases=())``: contribute a model and its short names."""

    def __call__(self, model: Any, /, *, aliases: tuple[str, ...] | list[str] = ()) -> None: ...


class RegisterPromptSection(Protocol):
    """``register(name, render, *, minimal=None)``: contribute or replace a system-prompt
    section; ``render(context)`` returns its text, its lines, or None."""

    def __call__(
        self, name: str, render: Callable[[Any], Any], /, *, minimal: bool | None = None
    ) -> None: ...


class RegisterBackend(Protocol):
    """``register(kind, name, factory)``: contribute a backend of one of the five kinds
    (``openclaw_runtime.backends.BACKEND_KINDS``)."""

    def __call__(self, kind: str, name: str, factory: Callable[..., Any], /) -> None: ...


class RegisterSettings(Protocol):
    """``register(name, model)``: declare the pydantic model of ``[plugins.settings.<name>]``."""

    def __call__(self, name: str, model: type[Any], /) -> None: ...


class RuntimeView(Protocol):
    """The ``Runtime`` as the lifecycle hooks name it (``runtime_configured``,
    ``runtime_shutdown``): typed by this protocol so the plugin contract never imports the
    host, which imports the contract."""

    @property
    def config(self) -> RuntimeConfig: ...

    def plugin_settings(self, name: str) -> Any:
        """The validated ``[plugins.settings.<name>]`` of a plugin that declared it."""
        ...
