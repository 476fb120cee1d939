"""Built-in plugin ``builtin.repair``: the plain-text tool-call repairer and its formats.

Binding the registered formats into the repairer is the host's job: every registered
repairer that has ``with_formats`` gets every registered format, in registry order::

    formats = {r.name: r.component for r in components.tool_call_formats.ordered()}
    repairers = [r.component for r in components.stream_repairers.ordered()]
    stream_fn = apply_stream_repairers(stream_fn, bind_tool_call_formats(repairers, formats))

The repair modules load when the components are collected, not when the plugin registers
(start-up time).
"""

from __future__ import annotations

from .._markers import hookimpl
from .._types import RegisterComponent, RegisterOrdered

__all__ = ["register_stream_repairers", "register_tool_call_formats"]


@hookimpl(trylast=True)
def register_tool_call_formats(register: RegisterComponent) -> None:
    """The syntaxes of openclaw-spec §9.1: ``json_object``, ``bracket``, ``harmony``, ``xmlish``."""
    from ..repair.formats import BUILTIN_TOOL_CALL_FORMATS  # lazy: start-up time

    for name, fmt in BUILTIN_TOOL_CALL_FORMATS.items():
        register(name, fmt)


@hookimpl(trylast=True)
def register_stream_repairers(register: RegisterOrdered) -> None:
    """``plain_text_tool_calls``: promote tool calls a model wrote as plain text."""
    # lazy: start-up time
    from ..repair.normalizer import PLAIN_TEXT_TOOL_CALL_REPAIRER, PlainTextToolCallRepairer

    register(PLAIN_TEXT_TOOL_CALL_REPAIRER, PlainTextToolCallRepairer())
