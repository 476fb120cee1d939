"""Built-in plugin ``builtin.core``: the offline ``echo`` provider and model."""

from __future__ import annotations

from .._markers import hookimpl
from .._types import RegisterComponent, RegisterModel
from ..providers.echo import ECHO_MODEL, echo_stream_fn


@hookimpl(trylast=True)
def register_providers(register: RegisterComponent) -> None:
    """The ``echo`` API."""
    register("echo", echo_stream_fn)


@hookimpl(trylast=True)
def register_models(register: RegisterModel) -> None:
    """The ``echo/echo`` model."""
    register(ECHO_MODEL, aliases=())
