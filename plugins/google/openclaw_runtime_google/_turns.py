"""Gemini turn rules: no two model turns in a row, and never a model turn first.

* :func:`validate_gemini_turns` merges consecutive assistant (model) turns — content joined,
  the later ``usage``/``stopReason``/``errorMessage`` kept (OpenClaw ``validateGeminiTurns``);
* :func:`sanitize_google_turn_ordering` puts a ``(session bootstrap)`` user turn before a
  history that starts with the assistant (Google's chat APIs reject it otherwise); it is
  idempotent.

Both are the core's generic primitives, named here where users of the Google plugin look for
them; :func:`validate_google_replay_turns` is the plugin's ``validate_replay_turns`` answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openclaw_runtime.transcript import (
    TranscriptPolicy,
    sanitize_google_turn_ordering,
    should_merge_consecutive_user_turns,
    validate_gemini_turns,
    validate_strict_turns,
)
from openclaw_runtime.transcript.policy import GOOGLE_APIS

__all__ = [
    "GOOGLE_PROVIDERS",
    "handles_policy",
    "sanitize_google_turn_ordering",
    "validate_gemini_turns",
    "validate_google_replay_turns",
]

#: Provider ids served by Google's Gemini APIs.
GOOGLE_PROVIDERS = frozenset({"google", "google-vertex", "google-gemini-cli", "google-antigravity"})


def handles_policy(policy: TranscriptPolicy) -> bool:
    """A Gemini API or a Google provider."""
    return policy.api in GOOGLE_APIS or policy.provider in GOOGLE_PROVIDERS


def validate_google_replay_turns(
    messages: Sequence[Any], policy: TranscriptPolicy
) -> list[Any] | None:
    """The ``validate_replay_turns`` answer for Gemini models, ``None`` for others.

    Merges consecutive model turns, applies strict alternation when the policy also asks for
    it, and makes sure the history starts with a user turn.
    """
    if not handles_policy(policy):
        return None
    memo = getattr(messages, "turn_memo", None)  # the session's (``transcript.turn_memo``)
    if memo is not None and policy.validate_gemini_turns:
        # the core's generic rule is these same two passes: reusing the previous request's
        # answer inside a tool loop (else a pass over the whole history at every request)
        validated = memo(messages, policy)
    else:
        validated = validate_gemini_turns(messages)
        if policy.validate_anthropic_turns:
            validated = validate_strict_turns(
                validated,
                merge_consecutive_user_turns=should_merge_consecutive_user_turns(policy),
            )
    return sanitize_google_turn_ordering(validated)
