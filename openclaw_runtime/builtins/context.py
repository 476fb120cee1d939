"""Built-in plugin ``builtin.context``: the ``legacy`` context engine.

The engine's module loads when the components are collected, not when the plugin registers
(start-up time).
"""

from __future__ import annotations

from .._markers import hookimpl
from .._types import RegisterComponent


@hookimpl(trylast=True)
def register_context_engines(register: RegisterComponent) -> None:
    """``legacy``: the runtime's own assembly and summarization compaction."""
    from ..context.legacy import LegacyContextEngine  # lazy: start-up time

    register("legacy", LegacyContextEngine)
