"""The reply payload model: what a run hands a channel, and the tool calls it reports on.

``ReplyPayload`` is one message for a channel (text, media, reply threading, error and
reasoning flags); ``ToolMeta`` is one tool call of an attempt as the subscriber recorded it,
with ``is_likely_mutating_tool_name`` deciding from a tool's name whether its failure may have
left the world half-changed. ``payloads.build_embedded_run_payloads`` builds the payloads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..redaction import redact, redact_diagnostic

__all__ = [
    "ReplyPayload",
    "ToolMeta",
    "is_cron_session_key",
    "is_likely_mutating_tool_name",
]


@dataclass(frozen=True, slots=True)
class ReplyPayload:
    """One message for a channel (OpenClaw's ``ReplyPayload``).

    ``silent`` marks a payload whose text was a silent reply but which carries media;
    ``is_reasoning`` marks reasoning text; ``non_terminal_tool_error_warning`` marks a
    tool warning a channel may show as a fallback only.
    """

    text: str | None = None
    media_urls: tuple[str, ...] = ()
    is_error: bool | None = None
    reply_to_id: str | None = None
    reply_to_tag: bool | None = None
    reply_to_current: bool | None = None
    audio_as_voice: bool = False
    is_reasoning: bool = False
    silent: bool = False
    non_terminal_tool_error_warning: bool = False

    def __post_init__(self) -> None:
        if self.text:  # what a channel shows never holds a credential
            masked = redact_diagnostic(self.text) if self.is_error else redact(self.text)
            object.__setattr__(self, "text", masked)

    @property
    def media_url(self) -> str | None:
        """The first media URL (OpenClaw keeps ``mediaUrl`` for old channels)."""
        return self.media_urls[0] if self.media_urls else None

    def has_content(self) -> bool:
        """Non-blank text or any media."""
        return bool((self.text and self.text.strip()) or self.media_urls)

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's wire shape: camelCase keys, absent values omitted."""
        out: dict[str, Any] = {}
        if self.text is not None:
            out["text"] = self.text
        if self.media_urls:
            out["mediaUrl"] = self.media_urls[0]
            out["mediaUrls"] = list(self.media_urls)
        for key, value in (
            ("isError", self.is_error),
            ("replyToId", self.reply_to_id),
            ("replyToTag", self.reply_to_tag),
            ("replyToCurrent", self.reply_to_current),
        ):
            if value is not None:
                out[key] = value
        for key, flag in (
            ("audioAsVoice", self.audio_as_voice),
            ("isReasoning", self.is_reasoning),
            ("silent", self.silent),
            ("nonTerminalToolErrorWarning", self.non_terminal_tool_error_warning),
        ):
            if flag:
                out[key] = True
        return out


@dataclass(frozen=True, slots=True)
class ToolMeta:
    """One tool call of an attempt, as the subscriber recorded it (OpenClaw's tool metas).

    ``meta`` is the short human summary (a path, a command); ``mutating_action`` None means
    unknown (decided from the tool name).
    """

    tool_name: str
    meta: str | None = None
    tool_call_id: str | None = None
    mutating_action: bool | None = None
    async_started: bool = False
    is_error: bool = False

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ToolMeta:
        """From OpenClaw's camelCase keys (``toolName``, ``mutatingAction``...)."""
        name = data.get("toolName", data.get("tool_name"))
        if not isinstance(name, str):
            raise ValueError(f"a tool meta needs a string toolName, got {name!r}")
        mutating = data.get("mutatingAction", data.get("mutating_action"))
        meta = data.get("meta")
        call_id = data.get("toolCallId", data.get("tool_call_id"))
        return cls(
            tool_name=name,
            meta=meta if isinstance(meta, str) else None,
            tool_call_id=call_id if isinstance(call_id, str) else None,
            mutating_action=mutating if isinstance(mutating, bool) else None,
            async_started=data.get("asyncStarted", data.get("async_started")) is True,
            is_error=data.get("isError", data.get("is_error")) is True,
        )


_MUTATING_TOOL_NAMES: Final = frozenset(
    {
        "write", "edit", "apply_patch", "exec", "bash", "process", "message", "sessions",
        "sessions_spawn", "sessions_send", "cron", "gateway", "canvas", "computer", "nodes",
        "session_status", "create_goal", "update_goal",
    }
)  # fmt: skip


def is_likely_mutating_tool_name(tool_name: str | None) -> bool:
    """Tools whose failure may leave the world half-changed (write, exec, send...)."""
    normalized = (tool_name or "").strip().lower()
    return bool(normalized) and (
        normalized in _MUTATING_TOOL_NAMES
        or normalized.endswith("_actions")
        or normalized.startswith("message_")
        or "send" in normalized
    )


def is_cron_session_key(session_key: str | None) -> bool:
    """``cron:...`` or ``agent:<id>:cron:...`` (case-insensitive)."""
    normalized = (session_key or "").strip().lower()
    if normalized.startswith("cron:"):
        return True
    parts = [part for part in normalized.split(":") if part]
    return len(parts) >= 3 and parts[0] == "agent" and ":".join(parts[2:]).startswith("cron:")
