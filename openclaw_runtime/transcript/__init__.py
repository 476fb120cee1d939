"""Transcripts: the JSONL session store, file repair, replay hygiene and turn validation.

* :class:`SessionManager` (``store``) is the only writer of session files; it repairs a damaged
  file on open (:func:`repair_session_file_if_needed`) and never loses a line.
* The sanitizer pipeline (``sanitize``) makes a stored history acceptable to a provider:
  image limits, thinking signatures, tool-call inputs, tool-use/result pairing...
* ``replay`` holds the generic turn rules behind the ``validate_replay_turns`` hook.
"""

from __future__ import annotations

from .entries import CURRENT_SESSION_VERSION, SessionPathError, generate_entry_id, make_header
from .images import sanitize_session_messages_images
from .jsonl import Durability, SessionLockTimeout, invalid_lines_path, parse_session_bytes
from .pairing import (
    DEFAULT_MISSING_TOOL_RESULT_TEXT,
    SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY,
    ToolCallInputRepairReport,
    ToolUseRepairReport,
    extract_tool_calls_from_assistant,
    extract_tool_result_id,
    is_synthetic_missing_tool_result,
    make_missing_tool_result,
    repair_tool_call_inputs,
    repair_tool_use_result_pairing,
    sanitize_tool_call_inputs,
    sanitize_tool_use_result_pairing,
    strip_tool_result_details,
)
from .policy import (
    TranscriptPolicy,
    provider_requires_signed_thinking,
    resolve_transcript_policy,
    should_allow_provider_owned_thinking_replay,
    should_merge_consecutive_user_turns,
)
from .repair import (
    BLANK_USER_FALLBACK_TEXT,
    STREAM_ERROR_FALLBACK_TEXT,
    RepairReport,
    repair_session_file,
    repair_session_file_if_needed,
)
from .replay import (
    GOOGLE_TURN_ORDER_BOOTSTRAP_TEXT,
    TOOL_CALLS_OMITTED_TEXT,
    merge_consecutive_user_messages,
    sanitize_google_turn_ordering,
    strip_dangling_tool_uses,
    validate_gemini_turns,
    validate_replay_turns,
    validate_strict_turns,
)
from .rewrite import TranscriptRewriteResult
from .sanitize import (
    BUILTIN_SANITIZERS,
    SanitizerSpec,
    run_transcript_sanitizers,
    sanitize_session_history,
    strip_stale_assistant_usage_before_latest_compaction,
)
from .session_context import ModelRef, SessionContext, build_session_context
from .session_ids import InvalidSessionIdError, session_file_path, validate_session_id
from .snapshot import (
    SnapshotSelection,
    capture_pre_compaction_snapshot,
    select_compaction_timeout_snapshot,
    should_flag_compaction_timeout,
)
from .store import JsonlSessionStore, SessionManager
from .thinking import (
    OMITTED_ASSISTANT_REASONING_TEXT,
    assess_last_assistant_message,
    drop_reasoning_from_history,
    drop_thinking_blocks,
    strip_invalid_thinking_signatures,
    strip_stale_thinking_signatures_for_compaction_replay,
)

__all__ = [
    "BLANK_USER_FALLBACK_TEXT",
    "BUILTIN_SANITIZERS",
    "CURRENT_SESSION_VERSION",
    "DEFAULT_MISSING_TOOL_RESULT_TEXT",
    "GOOGLE_TURN_ORDER_BOOTSTRAP_TEXT",
    "OMITTED_ASSISTANT_REASONING_TEXT",
    "STREAM_ERROR_FALLBACK_TEXT",
    "SYNTHETIC_MISSING_TOOL_RESULT_DETAIL_KEY",
    "TOOL_CALLS_OMITTED_TEXT",
    "Durability",
    "InvalidSessionIdError",
    "JsonlSessionStore",
    "ModelRef",
    "RepairReport",
    "SanitizerSpec",
    "SessionContext",
    "SessionLockTimeout",
    "SessionManager",
    "SessionPathError",
    "SnapshotSelection",
    "ToolCallInputRepairReport",
    "ToolUseRepairReport",
    "TranscriptPolicy",
    "TranscriptRewriteResult",
    "assess_last_assistant_message",
    "build_session_context",
    "capture_pre_compaction_snapshot",
    "drop_reasoning_from_history",
    "drop_thinking_blocks",
    "extract_tool_calls_from_assistant",
    "extract_tool_result_id",
    "generate_entry_id",
    "invalid_lines_path",
    "is_synthetic_missing_tool_result",
    "make_header",
    "make_missing_tool_result",
    "merge_consecutive_user_messages",
    "parse_session_bytes",
    "provider_requires_signed_thinking",
    "repair_session_file",
    "repair_session_file_if_needed",
    "repair_tool_call_inputs",
    "repair_tool_use_result_pairing",
    "resolve_transcript_policy",
    "run_transcript_sanitizers",
    "sanitize_google_turn_ordering",
    "sanitize_session_history",
    "sanitize_session_messages_images",
    "sanitize_tool_call_inputs",
    "sanitize_tool_use_result_pairing",
    "select_compaction_timeout_snapshot",
    "session_file_path",
    "should_allow_provider_owned_thinking_replay",
    "should_flag_compaction_timeout",
    "should_merge_consecutive_user_turns",
    "strip_dangling_tool_uses",
    "strip_invalid_thinking_signatures",
    "strip_stale_assistant_usage_before_latest_compaction",
    "strip_stale_thinking_signatures_for_compaction_replay",
    "strip_tool_result_details",
    "validate_gemini_turns",
    "validate_replay_turns",
    "validate_session_id",
    "validate_strict_turns",
]
