"""Transcripts: the JSONL session store, file repair, replay hygiene and turn validation.

* :class:`SessionManager` (``store``) is the only writer of session files; it repairs a damaged
  file on open (:func:`repair_session_file_if_needed`) and never loses a line. It is built in
  layers: ``reader`` (state, reads), ``append``, ``rewrite``, with ``load`` (one-pass load and
  repair), ``tree`` (the entry index) and ``session_context`` (what a model call sees).
* The sanitizer pipeline (``sanitize``, :func:`run_transcript_sanitizers`) makes a stored
  history acceptable to a provider: image limits, thinking signatures, tool-call inputs,
  tool-use/result pairing (``pairing``)...
* ``replay`` holds the generic turn rules behind the ``validate_replay_turns`` hook; ``policy``
  the per-provider :class:`TranscriptPolicy`.

This face re-exports the names the runner and provider plugins use and the types the
``Session`` protocol's signatures name; everything else is imported from its module.
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .incremental import IncrementalSanitizer  # noqa: I001 (packed: face ≤ 100 lines)
    from .policy import (
        TranscriptPolicy, resolve_transcript_policy, should_merge_consecutive_user_turns,
    )
    from .repair import repair_session_file_if_needed
    from .replay import (
        sanitize_google_turn_ordering, validate_gemini_turns, validate_replay_turns,
        validate_strict_replay_turns, validate_strict_turns,
    )
    from .rewrite import TranscriptRewriteResult
    from .sanitize import run_transcript_sanitizers
    from .session_context import SessionContext
    from .session_ids import validate_session_id
    from .store import JsonlSessionStore, SessionManager
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "incremental": "IncrementalSanitizer",
    "policy": "TranscriptPolicy resolve_transcript_policy should_merge_consecutive_user_turns",
    "repair": "repair_session_file_if_needed",
    "replay": (
        "sanitize_google_turn_ordering validate_gemini_turns validate_replay_turns "
        "validate_strict_replay_turns validate_strict_turns"
    ),
    "rewrite": "TranscriptRewriteResult",
    "sanitize": "run_transcript_sanitizers",
    "session_context": "SessionContext",
    "session_ids": "validate_session_id",
    "store": "JsonlSessionStore SessionManager",
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "IncrementalSanitizer", "JsonlSessionStore", "SessionContext", "SessionManager",
    "TranscriptPolicy", "TranscriptRewriteResult", "repair_session_file_if_needed",
    "resolve_transcript_policy", "run_transcript_sanitizers", "sanitize_google_turn_ordering",
    "should_merge_consecutive_user_turns", "validate_gemini_turns", "validate_replay_turns",
    "validate_session_id", "validate_strict_replay_turns", "validate_strict_turns",
]  # fmt: skip
