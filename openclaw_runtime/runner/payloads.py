"""Reply payloads: what the user sees at the end of a run, and what the run cost.

``build_embedded_run_payloads`` turns one attempt's raw output (streamed assistant texts, the
final assistant message, tool metas, the last tool error) into ``ReplyPayload`` objects for a
channel, as OpenClaw's ``buildEmbeddedRunPayloads`` does:

1. a model error becomes one user-facing error payload (never the raw provider text — secrets
   and stack traces live there), and echoes of that raw error in the answer are dropped;
2. verbose mode can inline one summary line per tool call;
3. reasoning text is shown when reasoning is ``"on"`` (and thinking is not ``"off"``);
4. the answer: the final assistant message's visible text when there is one, else the
   streamed texts; reply directives are parsed and stripped (``[[reply_to_current]]``,
   ``[[reply_to:<id>]]``, ``[[audio_as_voice]]``, ``MEDIA:`` lines, ``[[silent]]``);
5. a failed tool call gets a ``⚠️ <tool> failed`` warning when the user would otherwise not
   learn about it (mutating tools unless the answer acknowledges the failure; other tools
   only when nothing else was said and the error is not a recoverable validation error);
6. silent replies (``NO_REPLY``, ``{"action": "NO_REPLY"}``) and empty payloads are dropped,
   and text a messaging tool already sent this turn is not sent again.

``UsageAccumulator`` sums token usage and cost over every model call of every attempt of a
run; the last call's usage is kept separately because it, not the sum, reflects the size of
the context.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .._json import untrusted_json_object
from ..failover.result_classifier import SILENT_REPLY_TOKEN, is_silent_reply_payload_text
from ..messages import AssistantMessage, Cost, TextContent, ThinkingContent, Usage
from ..redaction import redact, redact_diagnostic
from .failure_signal import ToolErrorSummary, is_exec_like_tool_name

__all__ = [
    "GENERIC_ASSISTANT_ERROR_TEXT",
    "GENERIC_ERROR_ECHO_TEXT",
    "HEARTBEAT_TOKEN",
    "SILENT_REPLY_TOKEN",
    "ReplyDirectives",
    "ReplyPayload",
    "ToolMeta",
    "UsageAccumulator",
    "build_embedded_run_payloads",
    "default_format_assistant_error",
    "filter_messaging_tool_duplicates",
    "filter_messaging_tool_media_duplicates",
    "format_tool_aggregate",
    "is_cron_session_key",
    "is_likely_mutating_tool_name",
    "is_messaging_tool_duplicate",
    "is_silent_reply_payload_text",
    "is_silent_reply_text",
    "normalize_text_for_comparison",
    "parse_reply_directives",
]

HEARTBEAT_TOKEN: Final = "HEARTBEAT_OK"
#: OpenClaw's user-facing text when a model call failed and nothing more specific applies.
GENERIC_ASSISTANT_ERROR_TEXT: Final = "LLM request failed."
#: A provider error text that models sometimes echo; never shown next to the real error.
GENERIC_ERROR_ECHO_TEXT: Final = "The AI service returned an error. Please try again."

MIN_DUPLICATE_TEXT_LENGTH: Final = 10
MIN_SUBSTRING_DUPLICATE_RATIO: Final = 0.5

VerboseLevel = Literal["off", "on", "full"]
ReasoningLevel = Literal["off", "on", "stream"]

# --------------------------------------------------------------------------- text helpers

# Extended_Pictographic ∪ Emoji_Presentation (Unicode emoji-data), as code point ranges:
# Python's ``re`` has no \p{...}, so OpenClaw's emoji stripping is spelled out here.
_EMOJI_RANGES: Final = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x2388, 0x2388), (0x23CF, 0x23CF),
    (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
    (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712),
    (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721),
    (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744), (0x2747, 0x2747),
    (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757),
    (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D),
    (0x3297, 0x3297), (0x3299, 0x3299), (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F), (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1FF), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F53D),
    (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F), (0x1F7D5, 0x1F7FF),
    (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F),
    (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945), (0x1F947, 0x1FAFF),
    (0x1FC00, 0x1FFFD),
)  # fmt: skip
_EMOJI_RE: Final = re.compile(
    "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _EMOJI_RANGES) + "]"
)
_WHITESPACE_RE: Final = re.compile(r"\s+")


def normalize_text_for_comparison(text: str) -> str:
    """Lowercase, emoji stripped, whitespace collapsed: what duplicate checks compare."""
    return _WHITESPACE_RE.sub(" ", _EMOJI_RE.sub("", text.strip().lower())).strip()


def _opt_str(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = value.strip()
    return trimmed or None


def is_silent_reply_text(text: str | None, token: str = SILENT_REPLY_TOKEN) -> bool:
    """Exactly the token, whitespace aside: a reply that merely *ends* in it is not silent."""
    return bool(text) and (text or "").strip() == token


# --------------------------------------------------------------------------- reply directives

_AUDIO_TAG_RE: Final = re.compile(r"\[\[\s*audio_as_voice\s*\]\]", re.IGNORECASE)
# ``[[`` only at the start, at a line start or after whitespace, never mid-word.
_REPLY_TAG_RE: Final = re.compile(
    r"(?:^|(?<=\s))\[\[\s*(?:reply_to_current|reply_to\s*:\s*([^\]\n]+))\s*\]\]", re.IGNORECASE
)
_SILENT_TAG_RE: Final = re.compile(r"\[\[\s*silent\s*\]\]", re.IGNORECASE)
_MEDIA_LINE_RE: Final = re.compile(r"^\s*MEDIA:\s*`?([^\n]+?)`?\s*$")
_FENCE_RE: Final = re.compile(r"^\s*(```|~~~)")
_SCHEME_RE: Final = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_WINDOWS_DRIVE_RE: Final = re.compile(r"^[a-zA-Z]:[\\/]")
_TRAVERSAL_RE: Final = re.compile(r"(?:^|[/\\])\.\.(?:[/\\]|$)")


@dataclass(frozen=True, slots=True)
class ReplyDirectives:
    """Reply text with its directives parsed out (OpenClaw's ``parseReplyDirectives``)."""

    text: str
    media_urls: tuple[str, ...] = ()
    reply_to_id: str | None = None
    reply_to_current: bool = False
    reply_to_tag: bool = False
    audio_as_voice: bool = False
    is_silent: bool = False


def _normalize_directive_whitespace(text: str) -> str:
    text = re.sub(r"[ \t]+", " ", text)
    return re.sub(r"[ \t]*\n[ \t]*", "\n", text).strip()


def _is_allowed_media_candidate(candidate: str) -> bool:
    if not candidate or len(candidate) > 4096 or re.search(r"\s", candidate):
        return False
    if re.match(r"^https?://", candidate, re.IGNORECASE):
        parsed = urllib.parse.urlsplit(candidate)
        host = (parsed.hostname or "").rstrip(".")
        return (
            parsed.scheme.lower() == "https"
            and not parsed.username
            and not parsed.password
            and "." in host
            and host != "localhost"
            and not host.endswith((".localhost", ".local", ".internal"))
            and not re.fullmatch(r"[\d.]+|\[?[0-9a-f:]+\]?", host)
        )
    if _TRAVERSAL_RE.search(candidate) or (
        candidate.startswith("~") and not candidate.startswith(("~/", "~\\"))
    ):
        return False
    return (
        candidate.startswith(("/", "./", "~/", "~\\", "\\\\"))
        or bool(_WINDOWS_DRIVE_RE.match(candidate))
        or (not _SCHEME_RE.match(candidate) and ("/" in candidate or "\\" in candidate))
    )


def _split_media_lines(raw: str) -> tuple[str, list[str]]:
    """Pull ``MEDIA: <url-or-path>`` lines out (never inside code fences)."""
    if "media:" not in raw.lower():
        return raw, []
    kept: list[str] = []
    media: list[str] = []
    in_fence = False
    for line in raw.split("\n"):
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            kept.append(line)
            continue
        match = None if in_fence else _MEDIA_LINE_RE.match(line)
        if match:
            candidate = match.group(1).strip().strip("`\"'")
            if candidate.startswith("file://"):
                candidate = candidate[len("file://") :]
            if _is_allowed_media_candidate(candidate):
                media.append(candidate)
                continue
        kept.append(line)
    return "\n".join(kept), media


@dataclass(frozen=True, slots=True)
class _InlineDirectives:
    text: str
    audio_as_voice: bool
    reply_to_id: str | None
    reply_to_current: bool
    has_reply_tag: bool


def _parse_inline_directives(
    text: str, *, strip_audio_tag: bool, current_message_id: str | None = None
) -> _InlineDirectives:
    """OpenClaw's ``parseInlineDirectives``: audio and reply tags out, whitespace tidied."""
    if "[[" not in text:
        return _InlineDirectives(_normalize_directive_whitespace(text), False, None, False, False)
    audio = bool(_AUDIO_TAG_RE.search(text))
    if strip_audio_tag:
        text = _AUDIO_TAG_RE.sub(" ", text)
    has_reply_tag = False
    saw_current = False
    explicit_id: str | None = None

    def replace(match: re.Match[str]) -> str:
        nonlocal has_reply_tag, saw_current, explicit_id
        has_reply_tag = True
        if match.group(1) is None:
            saw_current = True
        elif match.group(1).strip():
            explicit_id = match.group(1).strip()
        return " "

    text = _normalize_directive_whitespace(_REPLY_TAG_RE.sub(replace, text))
    reply_to_id = explicit_id
    if reply_to_id is None and saw_current:
        reply_to_id = (current_message_id or "").strip() or None
    return _InlineDirectives(text, audio, reply_to_id, saw_current, has_reply_tag)


def parse_reply_directives(
    raw: str, *, current_message_id: str | None = None, silent_token: str = SILENT_REPLY_TOKEN
) -> ReplyDirectives:
    """Parse and strip a reply's directives.

    * ``MEDIA: <https-url-or-local-path>`` lines (outside code fences) become ``media_urls``;
    * ``[[audio_as_voice]]`` sets ``audio_as_voice`` and is removed;
    * ``[[reply_to_current]]`` / ``[[reply_to:<id>]]`` (case-insensitive, only at a line start
      or after whitespace) are removed: the last explicit id wins, else
      ``current_message_id`` when ``reply_to_current``;
    * ``[[silent]]`` anywhere, or a text that is exactly the silent token (or its JSON
      envelope), makes the reply silent and empties its text.
    """
    text, media = _split_media_lines(raw.rstrip())
    audio_as_voice = bool(_AUDIO_TAG_RE.search(text))
    silent_tag = bool(_SILENT_TAG_RE.search(text))
    if audio_as_voice or silent_tag:
        text = _normalize_directive_whitespace(
            _SILENT_TAG_RE.sub(" ", _AUDIO_TAG_RE.sub(" ", text))
        )
    inline = _parse_inline_directives(
        text, strip_audio_tag=False, current_message_id=current_message_id
    )
    if inline.has_reply_tag:
        text = inline.text
    is_silent = silent_tag or is_silent_reply_payload_text(text, silent_token)
    return ReplyDirectives(
        text="" if is_silent else text,
        media_urls=tuple(media),
        reply_to_id=inline.reply_to_id,
        reply_to_current=inline.reply_to_current,
        reply_to_tag=inline.has_reply_tag,
        audio_as_voice=audio_as_voice,
        is_silent=is_silent,
    )


# --------------------------------------------------------------------------- payload model


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


# --------------------------------------------------------------------------- tool summaries

ToolDisplayResolver = Callable[[str | None], tuple[str, str]]


def _default_tool_display(tool_name: str | None) -> tuple[str, str]:
    name = (tool_name or "").strip() or "tool"
    label = " ".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-\s]+", name) if part)
    return "🧩", label or "Tool"


def _is_path_like(value: str) -> bool:
    if not value or any(mark in value for mark in (" ", "://", "·", "&&", "||")):
        return False
    return re.fullmatch(r"~?(/[^\s]+)+", value) is not None


def format_tool_aggregate(
    tool_name: str | None,
    metas: Sequence[str] | None = None,
    *,
    markdown: bool = False,
    resolve_display: ToolDisplayResolver = _default_tool_display,
) -> str:
    """``<emoji> <Label>: <metas>``; paths grouped per directory and brace-collapsed.

    ``exec``/``bash`` with metas render compactly as ``<emoji> <command>``. The emoji and
    label come from ``resolve_display`` (OpenClaw reads them from its tool display table;
    the default is ``🧩`` and the title-cased name).
    """
    filtered = [meta for meta in (metas or ()) if meta]
    emoji, label = resolve_display(tool_name)
    normalized = (tool_name or "").strip().lower()
    if not filtered:
        return f"{emoji} {label}"
    compact = normalized in ("exec", "bash")
    raw_segments: list[str] = []
    grouped: dict[str, list[str]] = {}
    for meta in filtered:
        if not _is_path_like(meta) or "→" in meta:
            raw_segments.append(meta)
            continue
        directory, _, base = meta.rpartition("/")
        grouped.setdefault(directory if "/" in meta else ".", []).append(base or meta)
    segments = []
    for directory, files in grouped.items():
        brace = f"{{{', '.join(files)}}}" if len(files) > 1 else files[0]
        segments.append(brace if directory == "." else f"{directory}/{brace}")
    joined = "; ".join([*raw_segments, *segments])
    shown = f"`{joined}`" if markdown else joined
    return f"{emoji} {shown}" if compact else f"{emoji} {label}: {shown}"


# --------------------------------------------------------------------------- dedupe


def is_messaging_tool_duplicate(text: str, sent_texts: Iterable[str]) -> bool:
    """Did a messaging tool already send this text during the turn?

    Normalized comparison (``normalize_text_for_comparison``); texts shorter than 10
    characters never count. Equal texts are duplicates. A text that *starts with* a sent
    text is a duplicate only when the tail adds no letter or digit (``"done." == "done"``,
    but ``"<sent>. Actually it failed."`` is new). A text that contains a sent text later on
    (re-narration) is a duplicate when the sent text is at least half of it; a text contained
    in a sent text is a duplicate when it is at least half of the sent text.
    """
    normalized = normalize_text_for_comparison(text)
    if not normalized or len(normalized) < MIN_DUPLICATE_TEXT_LENGTH:
        return False
    for sent_text in sent_texts:
        sent = normalize_text_for_comparison(sent_text)
        if not sent or len(sent) < MIN_DUPLICATE_TEXT_LENGTH:
            continue
        if normalized == sent:
            return True
        if sent in normalized:
            if normalized.startswith(sent):
                if not any(ch.isalnum() for ch in normalized[len(sent) :]):
                    return True
                continue
            if len(sent) >= len(normalized) * MIN_SUBSTRING_DUPLICATE_RATIO:
                return True
            continue
        if normalized in sent and len(normalized) >= len(sent) * MIN_SUBSTRING_DUPLICATE_RATIO:
            return True
    return False


def filter_messaging_tool_duplicates(
    payloads: Sequence[ReplyPayload], sent_texts: Sequence[str]
) -> list[ReplyPayload]:
    """Drop text-only payloads whose text a messaging tool already sent (media is kept)."""
    if not sent_texts:
        return list(payloads)
    return [
        payload
        for payload in payloads
        if payload.media_urls or not is_messaging_tool_duplicate(payload.text or "", sent_texts)
    ]


def _normalize_media_for_dedupe(value: str) -> str:
    trimmed = value.strip()
    if not trimmed.lower().startswith("file://"):
        return trimmed
    return urllib.parse.unquote(urllib.parse.urlsplit(trimmed).path or "")


def filter_messaging_tool_media_duplicates(
    payloads: Sequence[ReplyPayload], sent_media_urls: Sequence[str]
) -> list[ReplyPayload]:
    """Remove media a messaging tool already sent; a payload left empty is dropped."""
    sent = {m for m in (_normalize_media_for_dedupe(u) for u in sent_media_urls) if m}
    if not sent:
        return list(payloads)
    out = []
    for payload in payloads:
        kept = tuple(u for u in payload.media_urls if _normalize_media_for_dedupe(u) not in sent)
        if kept == payload.media_urls:
            out.append(payload)
            continue
        trimmed = dataclasses.replace(payload, media_urls=kept)
        if trimmed.has_content():
            out.append(trimmed)
    return out


# --------------------------------------------------------------------------- the builder

AssistantErrorFormatter = Callable[[AssistantMessage], "str | None"]

_RECOVERABLE_TOOL_ERROR_KEYWORDS: Final = (
    "required", "missing", "invalid", "must be", "must have", "needs", "requires",
)  # fmt: skip
_ACTION: Final = (
    r"(?:write|edit|update|save|create|delete|remove|modify|change|apply|patch|move|rename|"
    r"send|reply|message|run|execute|execution|command|script|shell|bash|exec|tool|action|"
    r"operation)"
)
_INABILITY_RE: Final = re.compile(
    r"\b(?:couldn't|could not|can't|cannot|unable to|am unable to|wasn't able to|"
    rf"was not able to|were unable to)\b.{{0,100}}\b{_ACTION}\b"
)
_ACTION_THEN_FAILURE_RE: Final = re.compile(
    rf"\b{_ACTION}\b.{{0,100}}\b(?:failed|failure|errored)\b"
)
_FAILURE_THEN_ACTION_RE: Final = re.compile(rf"\b(?:failed|failure)\b.{{0,100}}\b{_ACTION}\b")
_ERROR_WHILE_ACTION_RE: Final = re.compile(
    r"\b(?:hit|encountered|ran into)\b.{0,60}\berror\b.{0,100}\b(?:while|trying to|when)\b"
    rf".{{0,100}}\b{_ACTION}\b"
)
_MARKER_FAILURE_RE: Final = re.compile(r"\b[A-Z0-9]+(?:_[A-Z0-9]+)*_FAIL(?:\b|_)")
_DID_NOT_FAIL_RE: Final = re.compile(r"\b(?:did not|didn't)\s+fail\b")
_NEGATED_FAILURE_RE: Final = re.compile(r"\b(?:no|not|without)\s+(?:failures?|errors?)\b")


def _acknowledges_mutating_failure(text: str) -> bool:
    if _MARKER_FAILURE_RE.search(text):
        return True
    normalized = normalize_text_for_comparison(text)
    if not normalized or _DID_NOT_FAIL_RE.search(normalized):
        return False
    if _INABILITY_RE.search(normalized):
        return True
    if _NEGATED_FAILURE_RE.search(normalized):
        return False
    return bool(
        _ACTION_THEN_FAILURE_RE.search(normalized)
        or _FAILURE_THEN_ACTION_RE.search(normalized)
        or _ERROR_WHILE_ACTION_RE.search(normalized)
    )


def default_format_assistant_error(message: AssistantMessage) -> str | None:
    """User-facing error text for a failed assistant turn; never the raw provider text.

    OpenClaw renders reason-specific copy here (billing, auth, context overflow...); the
    runtime's default is the generic ``LLM request failed.``. An aborted turn without an
    error message gets no error payload.
    """
    if message.stop_reason == "error" or _opt_str(message.error_message):
        return GENERIC_ASSISTANT_ERROR_TEXT
    return None


def _looks_like_raw_api_error_payload(text: str) -> bool:
    candidate = re.sub(r"^\s*(?:HTTP\s*)?\d{3}\s*[:\-]?\s*", "", text.strip())
    if not (candidate.startswith("{") and candidate.endswith("}")):
        return False
    parsed = untrusted_json_object(candidate)
    return parsed is not None and ("error" in parsed or parsed.get("type") == "error")


def _visible_text(message: AssistantMessage) -> str:
    parts = [b.text.strip() for b in message.content if isinstance(b, TextContent)]
    return "\n".join(part for part in parts if part).strip()


def _thinking_text(message: AssistantMessage) -> str:
    parts = [b.thinking.strip() for b in message.content if isinstance(b, ThinkingContent)]
    return "\n".join(part for part in parts if part).strip()


@dataclass(slots=True)
class _Item:
    text: str
    media: tuple[str, ...] = ()
    is_error: bool | None = None
    is_reasoning: bool = False
    audio_as_voice: bool = False
    reply_to_id: str | None = None
    reply_to_tag: bool | None = None
    reply_to_current: bool | None = None
    silent: bool = False
    non_terminal_warning: bool = False


def _tool_warning_policy(
    error: ToolErrorSummary,
    *,
    has_reply: bool,
    has_error_reply: bool,
    acknowledged: bool,
    suppress_tool_errors: bool,
    suppress_tool_error_warnings: bool | Callable[[], bool | None] | None,
    is_cron_trigger: bool,
    session_key: str,
    verbose_level: str | None,
) -> tuple[bool, bool]:
    override = (
        suppress_tool_error_warnings()
        if callable(suppress_tool_error_warnings)
        else suppress_tool_error_warnings
    )
    dynamic_disabled = callable(suppress_tool_error_warnings) and override is False
    include_details = (not dynamic_disabled and verbose_level == "full") or (
        is_exec_like_tool_name(error.tool_name)
        and error.timed_out
        and (is_cron_trigger or is_cron_session_key(session_key))
    )
    if override is True or suppress_tool_errors:
        return False, include_details
    if error.tool_name.strip().lower() == "sessions_send":
        return False, include_details
    mutating = (
        error.mutating_action
        if error.mutating_action is not None
        else is_likely_mutating_tool_name(error.tool_name)
    )
    if mutating:
        return not has_error_reply and not acknowledged, include_details
    if is_exec_like_tool_name(error.tool_name) and not include_details:
        return False, include_details
    recoverable = any(k in (error.error or "").lower() for k in _RECOVERABLE_TOOL_ERROR_KEYWORDS)
    return not has_reply and not recoverable, include_details


def build_embedded_run_payloads(
    *,
    assistant_texts: Sequence[str],
    tool_metas: Sequence[ToolMeta] = (),
    last_assistant: AssistantMessage | None = None,
    current_assistant: AssistantMessage | None = None,
    last_tool_error: ToolErrorSummary | None = None,
    session_key: str = "",
    is_cron_trigger: bool = False,
    verbose_level: VerboseLevel | None = None,
    reasoning_level: ReasoningLevel | None = None,
    thinking_level: str | None = None,
    tool_result_format: Literal["markdown", "plain"] | None = None,
    inline_tool_results_allowed: bool = False,
    suppress_tool_errors: bool = False,
    suppress_tool_error_warnings: bool | Callable[[], bool | None] | None = None,
    run_aborted: bool = False,
    did_send_deterministic_approval_prompt: bool = False,
    has_visible_block_reply_after_last_tool_execution: bool = False,
    messaging_tool_sent_texts: Sequence[str] = (),
    messaging_tool_sent_media_urls: Sequence[str] = (),
    current_message_id: str | None = None,
    format_assistant_error: AssistantErrorFormatter = default_format_assistant_error,
    resolve_tool_display: ToolDisplayResolver = _default_tool_display,
) -> list[ReplyPayload]:
    """Reply payloads for one finished attempt (see the module docstring for the order).

    ``current_assistant`` is the final assistant message of *this* attempt;
    ``last_assistant`` the session's last one (used unless exactly one streamed text
    exists). Error text comes from ``format_assistant_error`` (inject OpenClaw-grade copy
    there); tool labels from ``resolve_tool_display``.
    """
    items: list[_Item] = []
    markdown = tool_result_format == "markdown"
    suppress_artifacts = did_send_deterministic_approval_prompt
    non_empty_texts = [text for text in assistant_texts if text.strip()]
    assistant = current_assistant or (None if len(non_empty_texts) == 1 else last_assistant)
    stop_reason = assistant.stop_reason if assistant is not None else None
    aborted = run_aborted or stop_reason == "aborted"
    needs_error_surface = stop_reason in ("error", "aborted")
    raw_error = _opt_str(assistant.error_message) if assistant and needs_error_surface else None
    error_text = (
        format_assistant_error(assistant)
        if assistant is not None and needs_error_surface and not suppress_artifacts
        else None
    )
    if error_text:
        items.append(_Item(text=error_text, is_error=True))

    if inline_tool_results_allowed and verbose_level != "off" and tool_metas:
        for tool_meta in tool_metas:
            summary = format_tool_aggregate(
                tool_meta.tool_name,
                [tool_meta.meta] if tool_meta.meta else [],
                markdown=markdown,
                resolve_display=resolve_tool_display,
            )
            inline = _parse_inline_directives(summary, strip_audio_tag=True)
            if inline.text:
                items.append(
                    _Item(
                        text=inline.text,
                        audio_as_voice=inline.audio_as_voice,
                        reply_to_id=inline.reply_to_id,
                        reply_to_tag=inline.has_reply_tag,
                        reply_to_current=inline.reply_to_current,
                    )
                )

    if (
        not suppress_artifacts
        and not aborted
        and assistant is not None
        and reasoning_level == "on"
        and thinking_level != "off"
    ):
        reasoning = _thinking_text(assistant)
        if reasoning:
            items.append(_Item(text=reasoning, is_reasoning=True))

    normalized_error = normalize_text_for_comparison(error_text) if error_text else None
    normalized_raw = normalize_text_for_comparison(raw_error) if raw_error else None

    def echoes_error(text: str) -> bool:
        if not needs_error_surface:
            return False
        trimmed = text.strip()
        if not trimmed:
            return False
        normalized = normalize_text_for_comparison(trimmed)
        if error_text and (normalized == normalized_error or trimmed == GENERIC_ERROR_ECHO_TEXT):
            return True
        if raw_error and (trimmed == raw_error or normalized == normalized_raw):
            return True
        return _looks_like_raw_api_error_payload(trimmed)

    fallback = _visible_text(assistant) if assistant is not None else ""
    use_final_answer = (
        not needs_error_surface
        and bool(fallback)
        and bool(normalize_text_for_comparison(parse_reply_directives(fallback).text))
    )
    if suppress_artifacts or aborted:
        answers: list[str] = []
    elif use_final_answer:
        answers = [fallback]
    else:
        answers = non_empty_texts or ([fallback] if fallback else [])
    answers = [text for text in answers if not echoes_error(text)]

    has_reply = has_visible_block_reply_after_last_tool_execution
    has_error_reply = any(item.is_error for item in items)
    acknowledged = False
    for text in answers:
        parsed = parse_reply_directives(text, current_message_id=current_message_id)
        if not parsed.text and not parsed.media_urls and not parsed.audio_as_voice:
            continue
        items.append(
            _Item(
                text=parsed.text,
                media=parsed.media_urls,
                audio_as_voice=parsed.audio_as_voice,
                reply_to_id=parsed.reply_to_id,
                reply_to_tag=parsed.reply_to_tag,
                reply_to_current=parsed.reply_to_current,
                silent=parsed.is_silent,
            )
        )
        has_reply = True
        if parsed.text and _acknowledges_mutating_failure(parsed.text):
            acknowledged = True

    if last_tool_error is not None:
        show, include_details = _tool_warning_policy(
            last_tool_error,
            has_reply=has_reply,
            has_error_reply=has_error_reply,
            acknowledged=acknowledged,
            suppress_tool_errors=suppress_tool_errors,
            suppress_tool_error_warnings=suppress_tool_error_warnings,
            is_cron_trigger=is_cron_trigger,
            session_key=session_key,
            verbose_level=verbose_level,
        )
        if show:
            summary = format_tool_aggregate(
                last_tool_error.tool_name,
                [last_tool_error.meta] if last_tool_error.meta else None,
                markdown=markdown,
                resolve_display=resolve_tool_display,
            )
            suffix = (
                f": {last_tool_error.error}" if include_details and last_tool_error.error else ""
            )
            warning = f"⚠️ {summary} failed{suffix}"
            normalized_warning = normalize_text_for_comparison(warning)
            duplicate = any(
                item.text and normalize_text_for_comparison(item.text) == normalized_warning
                for item in items
            )
            if not duplicate:
                items.append(
                    _Item(
                        text=warning,
                        is_error=True,
                        non_terminal_warning=has_reply and last_tool_error.middleware_error,
                    )
                )

    any_audio_tag = any(item.audio_as_voice for item in items)
    payloads: list[ReplyPayload] = []
    for item in items:
        payload_text = _opt_str(item.text)
        silent = item.silent
        if payload_text is not None and is_silent_reply_payload_text(payload_text):
            payload_text, silent = None, True
        payload = ReplyPayload(
            text=payload_text,
            media_urls=item.media,
            is_error=item.is_error,
            reply_to_id=item.reply_to_id,
            reply_to_tag=item.reply_to_tag,
            reply_to_current=item.reply_to_current,
            audio_as_voice=item.audio_as_voice or (any_audio_tag and bool(item.media)),
            is_reasoning=item.is_reasoning,
            silent=silent and bool(item.media),
            non_terminal_tool_error_warning=item.non_terminal_warning,
        )
        if payload.has_content():
            payloads.append(payload)
    payloads = filter_messaging_tool_duplicates(payloads, messaging_tool_sent_texts)
    return filter_messaging_tool_media_duplicates(payloads, messaging_tool_sent_media_urls)


# --------------------------------------------------------------------------- usage


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value


@dataclass
class UsageAccumulator:
    """Token usage and cost summed over every model call of a run (all attempts).

    ``add`` takes a ``Usage`` or an OpenClaw usage dict (``input``, ``output``,
    ``cacheRead``, ``cacheWrite``, ``totalTokens``/``total``, ``cost``). ``last_call`` keeps
    the most recent call's usage: cache reads repeat the whole context on every call, so
    only the last call — not the sum — says how big the context is.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = field(default_factory=Cost)
    calls: int = 0
    last_call: Usage | None = None

    def add(self, usage: Usage | Mapping[str, Any] | None) -> None:
        """Count one call's usage (None is ignored)."""
        if usage is None:
            return
        if not isinstance(usage, Usage):
            if not isinstance(usage, Mapping):
                raise TypeError(f"usage must be a Usage or a mapping, got {type(usage).__name__}")
            data = dict(usage)
            if "total" in data and "totalTokens" not in data:
                data["totalTokens"] = data.pop("total")
            usage = Usage.model_validate({k: v for k, v in data.items() if not isinstance(v, bool)})
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.total_tokens += usage.total_tokens or (
            usage.input + usage.output + usage.cache_read + usage.cache_write
        )
        self.cost = Cost(
            input=self.cost.input + _number(usage.cost.input),
            output=self.cost.output + _number(usage.cost.output),
            cache_read=self.cost.cache_read + _number(usage.cost.cache_read),
            cache_write=self.cost.cache_write + _number(usage.cost.cache_write),
            total=self.cost.total + _number(usage.cost.total),
        )
        self.calls += 1
        self.last_call = usage

    def add_message(self, message: AssistantMessage) -> None:
        """Count the usage of one assistant message."""
        self.add(message.usage)

    def to_usage(self) -> Usage:
        """The sum as a ``Usage`` (what ``agentMeta.usage`` reports)."""
        return Usage(
            input=self.input,
            output=self.output,
            cache_read=self.cache_read,
            cache_write=self.cache_write,
            total_tokens=self.total_tokens,
            cost=self.cost,
        )
