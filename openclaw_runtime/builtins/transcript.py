"""Built-in plugin ``builtin.transcript``: the core sanitizers and the generic replay validator.

Their modules load when the components are collected or a history is first validated, not
when the plugin registers (start-up time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._markers import hookimpl
from .._types import RegisterOrdered

if TYPE_CHECKING:
    from ..transcript.policy import TranscriptPolicy

__all__ = ["register_transcript_sanitizers", "validate_replay_turns"]


@hookimpl(trylast=True)
def register_transcript_sanitizers(register: RegisterOrdered) -> None:
    """The core pipeline: blank user turns 10, images 20, thinking signatures 30, reasoning
    40/45, tool-call inputs 50, pairing 60, tool-result details 70, stale usage 80, Google turn
    ordering 90."""
    from ..transcript.sanitize import BUILTIN_SANITIZERS  # lazy: start-up time

    for spec in BUILTIN_SANITIZERS:
        register(spec.name, spec.fn, order=spec.order)


@hookimpl(trylast=True)
def validate_replay_turns(messages: list[Any], policy: TranscriptPolicy) -> list[Any] | None:
    """Generic turn validation (Gemini merge, strict alternation) as the policy asks.

    Abstains (``None``) when the policy asks for no turn validation, so the history is used
    as it is and any other plugin may still answer.
    """
    if not (policy.validate_gemini_turns or policy.validate_anthropic_turns):
        return None
    memo = getattr(messages, "turn_memo", None)  # the session's memo (transcript.turn_memo)
    if memo is not None:
        return memo(messages, policy)
    from ..transcript.replay import validate_replay_turns as generic  # lazy: start-up time

    return generic(messages, policy)
