"""A thinking signature the provider rejected: strip the thinking, retry once (issue 15 §3).

Anthropic (and Bedrock, and Gemini's thought signatures) sign the reasoning blocks they
return and check the signature when a block is replayed. A signature made for another key or
model, an expired one, or a block that was altered is refused with a 400 (``messages.1.
content.0: Invalid `signature` in `thinking` block``), which classifies as ``format``. The
block is in the transcript, so every later turn resends it: without recovery the session is
stuck for good.

The recovery, as OpenClaw's stream recovery does it: the failed turn is set aside, the
thinking blocks of the active branch are stripped **in the session** (a branch rewrite: the
originals stay in the file on the old branch, as after a tool-result truncation), and the
attempt is retried once. Because the rewrite is persisted, no later turn resends the
rejected block either, even when the retry fails for another reason. Reasoning text is lost
from the replayed context (the reply and the tool calls stay), which is what every client
that recovers this way accepts.

``is_thinking_signature_rejection`` and ``strip_thinking_from_messages`` are pure;
``strip_thinking_in_run_session`` applies them to the run's session and keeps the run's own
bookkeeping (its entries, the leaf it started from) pointing at the rewritten branch.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from ..redaction import package_logger
from ..transcript.thinking import is_assistant_message_with_content
from ..transcript.thinking import strip_thinking_blocks_from_message as _strip_message
from ..transcript.update_events import SessionTranscriptUpdate, emit_session_transcript_update
from .checkin import flush_session
from .run_state import RunState
from .session_ops import branch_messages_with_entries

__all__ = [
    "THINKING_SIGNATURE_UPDATE_REASON",
    "has_thinking_blocks",
    "is_thinking_signature_rejection",
    "strip_thinking_from_messages",
    "strip_thinking_in_run_session",
]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))

#: The ``reason`` of the transcript-update event the rewrite emits.
THINKING_SIGNATURE_UPDATE_REASON = "thinking_signature_recovery"

_REASONING_RE = re.compile(r"\b(?:thinking|redacted_thinking|thought|reasoning)\b", re.I)
_BAD_SIGNATURE_RE = re.compile(
    r"\b(?:invalid|expired|corrupt(?:ed)?|not valid|mismatch(?:ed)?)\b.{0,80}\bsignatures?\b"
    r"|\bsignatures?\b.{0,80}\b(?:invalid|expired|corrupt(?:ed)?|not valid|mismatch(?:ed)?)\b",
    re.I | re.S,
)
_MODIFIED_BLOCK_RE = re.compile(
    r"\b(?:thinking|redacted_thinking)\b.{0,40}\bblocks?\b.{0,120}\bcannot be modified\b",
    re.I | re.S,
)
_THINKING_BLOCK_TYPES = frozenset({"thinking", "redacted_thinking"})


def is_thinking_signature_rejection(error_text: str | None) -> bool:
    """The provider refused a replayed reasoning block: a bad (invalid, expired, altered)
    signature on a thinking/thought block, or "thinking blocks ... cannot be modified"."""
    if not error_text:
        return False
    if _MODIFIED_BLOCK_RE.search(error_text):
        return True
    return bool(_REASONING_RE.search(error_text) and _BAD_SIGNATURE_RE.search(error_text))


def _has_thinking(message: Any) -> bool:
    if not is_assistant_message_with_content(message):
        return False
    content = message["content"] if isinstance(message, dict) else message.content
    return any(
        (block.get("type") if isinstance(block, dict) else getattr(block, "type", None))
        in _THINKING_BLOCK_TYPES
        for block in content
    )


def has_thinking_blocks(messages: Sequence[Any]) -> bool:
    """Does any assistant message hold a thinking block (something to strip)?"""
    return any(_has_thinking(message) for message in messages)


def strip_thinking_from_messages(messages: Sequence[Any]) -> list[Any]:
    """Every assistant message without its thinking blocks (a message left empty says
    ``[assistant reasoning omitted]``); unchanged messages are the same objects."""
    return [_strip_message(message) if _has_thinking(message) else message for message in messages]


async def strip_thinking_in_run_session(run: RunState) -> int:
    """Strip the thinking blocks of the run's active branch, persisted; how many messages
    were rewritten (0: there was nothing to strip)."""
    session = run.session
    assert session is not None
    pairs = branch_messages_with_entries(session)
    stripped = strip_thinking_from_messages([message for _, message in pairs])
    replacements = {
        str(entry["id"]): new
        for (entry, old), new in zip(pairs, stripped, strict=True)
        if new is not old and entry.get("type") == "message"
    }
    if not replacements:
        return 0
    before = [str(entry["id"]) for entry in session.get_branch()]
    own = _own_tail_length(before, run.start_leaf_id)
    result = await session.rewrite_transcript_entries(replacements)
    await flush_session(run, session, "thinking-strip")
    if not result.changed:
        return 0
    after = [str(entry["id"]) for entry in session.get_branch()]
    # the rewrite re-grew the branch with new ids: the run's entries are still its tail
    if own is not None:
        own = min(own, len(after))
        if own:
            run.run_entry_ids.update(after[len(after) - own :])
        if run.start_leaf_id is not None:
            run.start_leaf_id = after[len(after) - own - 1] if len(after) > own else None
    emit_session_transcript_update(
        SessionTranscriptUpdate(
            str(session.path),
            session.session_id,
            THINKING_SIGNATURE_UPDATE_REASON,
            result.rewritten_entries,
        )
    )
    logger.warning(
        "run %s: the provider rejected a thinking signature; stripped the thinking of %d "
        "message(s) from session %s",
        run.run_id,
        result.rewritten_entries,
        session.session_id,
    )
    return result.rewritten_entries


def _own_tail_length(branch_ids: Sequence[str], start_leaf_id: str | None) -> int | None:
    """How many entries at the end of the branch came after ``start_leaf_id`` (None: it is
    not on the branch, the run's bookkeeping is left as it is)."""
    if start_leaf_id is None:
        return len(branch_ids)
    for index in range(len(branch_ids) - 1, -1, -1):
        if branch_ids[index] == start_leaf_id:
            return len(branch_ids) - index - 1
    return None
