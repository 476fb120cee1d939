"""All hook implementations of openclaw-runtime-hello (the entry-point target)."""

from __future__ import annotations

from openclaw_runtime import RunBlock, hookimpl
from openclaw_runtime.types import RegisterComponent, RegisterModel

from ._provider import FORBIDDEN_WORD, HELLO_MODEL, hello_stream_fn


@hookimpl
def register_providers(register: RegisterComponent) -> None:
    """The ``hello`` API."""
    register("hello", hello_stream_fn)


@hookimpl
def register_models(register: RegisterModel) -> None:
    """``hello/greeter``, also reachable as ``greeter-latest``."""
    register(HELLO_MODEL, aliases=("greeter-latest",))


@hookimpl
def before_agent_run(prompt: str, provider: str) -> RunBlock | None:
    """Refuse prompts with the forbidden word when the run targets our provider."""
    if provider == "hello" and FORBIDDEN_WORD in prompt.lower():
        return RunBlock(f"the hello plugin does not greet {FORBIDDEN_WORD!r} things")
    return None
