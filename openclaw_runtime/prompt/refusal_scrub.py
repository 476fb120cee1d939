"""The Anthropic refusal-magic scrub (seed 001): keep Anthropic's refusal test string out.

Anthropic's API treats one literal string as a trigger that makes the model refuse; it exists
for testing refusals. Pasted into a prompt (a log, a test file, a chat about it), it would make
every later turn of the session refuse, because the transcript replays it. OpenClaw therefore
replaces it, only when the attempt goes to the ``anthropic`` provider, before the prompt is sent
and persisted. The replacement is neutral on purpose: naming the trigger could itself prompt a
refusal. The same scrub is applied to the system prompt rendered for an Anthropic attempt (a
workspace file may carry the string too).
"""

from __future__ import annotations

__all__ = [
    "ANTHROPIC_MAGIC_STRING_REPLACEMENT",
    "ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL",
    "resolve_attempt_base_prompt",
    "scrub_anthropic_refusal_magic",
]

ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL = "ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL"
ANTHROPIC_MAGIC_STRING_REPLACEMENT = "[redacted]"


def scrub_anthropic_refusal_magic(prompt: str) -> str:
    """``prompt`` with every occurrence of the refusal trigger replaced (same object when
    there is none)."""
    if ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL not in prompt:
        return prompt
    return prompt.replace(
        ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL, ANTHROPIC_MAGIC_STRING_REPLACEMENT
    )


def resolve_attempt_base_prompt(provider: str, prompt: str) -> str:
    """The prompt an attempt sends to ``provider``: scrubbed for ``anthropic`` only."""
    if provider != "anthropic":
        return prompt
    return scrub_anthropic_refusal_magic(prompt)
