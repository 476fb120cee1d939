"""Lower the thinking level when the context is too full (seed 004 §二 stage 4, strategy 3).

The overflow chain of the attempt loop tries, in order: compaction (up to three times),
truncating oversized tool results, **lowering the thinking level**, rotating the auth
profile, and handing over to the next model. Strategy 3 is the seed's: "if the run is in an
extended thinking mode (which takes a lot of context), step down to ``low`` or ``off``".
Reasoning is not free room: a thinking budget is reserved out of the same window as the
prompt (Anthropic adds it to ``max_tokens``, and refuses a request whose input plus
``max_tokens`` exceeds the window), so a smaller level can make a prompt fit that no
compaction could shrink further.

The rule (``resolve_context_pressure_thinking_level``), one step per overflow:

| current level                      | next  |
| ---------------------------------- | ----- |
| ``max``, ``xhigh``, ``high``, ``medium`` (extended) | ``low`` |
| ``low``, ``minimal``               | ``off`` |
| ``off``                            | none: the chain goes on (surface or hand over) |

This is independent of the downgrade on a provider that *rejects* a level
(``recovery.downgrade_thinking_level``, one level at a time): under pressure the goal is
room, so the step is large.
"""

from __future__ import annotations

from typing import Final

from ..llm import ThinkingLevel

__all__ = ["CONTEXT_PRESSURE_THINKING_STEPS", "resolve_context_pressure_thinking_level"]

#: The next level under context pressure; a level that is not a key cannot go lower.
CONTEXT_PRESSURE_THINKING_STEPS: Final[dict[str, ThinkingLevel]] = {
    "max": "low",
    "xhigh": "low",
    "high": "low",
    "medium": "low",
    "low": "off",
    "minimal": "off",
}


def resolve_context_pressure_thinking_level(level: ThinkingLevel | str) -> ThinkingLevel | None:
    """The thinking level to retry with after an overflow that compaction and truncation
    could not fix; None when thinking is already off (see the module table)."""
    return CONTEXT_PRESSURE_THINKING_STEPS.get(str(level).strip().lower())
