"""Built-in plugin ``builtin.core``: the offline ``echo`` provider and model, and the catalog's
OpenAI models (``providers.catalog``: the Chat Completions provider they need is in the core)."""

from __future__ import annotations

from .._markers import hookimpl
from .._types import RegisterComponent, RegisterModel
from ..providers.catalog import catalog_aliases, catalog_models
from ..providers.echo import ECHO_MODEL, echo_stream_fn


@hookimpl(trylast=True)
def register_providers(register: RegisterComponent) -> None:
    """The ``echo`` API."""
    register("echo", echo_stream_fn)


@hookimpl(trylast=True)
def register_models(register: RegisterModel) -> None:
    """The ``echo/echo`` model and the OpenAI rows of the catalog."""
    register(ECHO_MODEL, aliases=())
    for model in catalog_models("openai"):
        register(model, aliases=catalog_aliases(model.ref))
