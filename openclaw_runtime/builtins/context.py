"""Built-in plugin ``builtin.context``: the ``legacy`` context engine."""

from __future__ import annotations

from .._markers import hookimpl
from .._types import RegisterComponent
from ..context.legacy import LegacyContextEngine


@hookimpl(trylast=True)
def register_context_engines(register: RegisterComponent) -> None:
    """``legacy``: the runtime's own assembly and summarization compaction."""
    register("legacy", LegacyContextEngine)
