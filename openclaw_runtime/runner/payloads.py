"""Reply payloads: what the user sees at the end of a run.

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

The payload model is ``reply_payload``, the directives parser ``reply_directives``, the
messaging-tool dedupe ``messaging_dedupe``; what the run cost is ``run_usage``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from .._json import untrusted_json_object
from ..failover.result_classifier import SILENT_REPLY_TOKEN, is_silent_reply_payload_text
from ..messages import AssistantMessage, TextContent, ThinkingContent
from .failure_signal import ToolErrorSummary, is_exec_like_tool_name
from .messaging_dedupe import (
    filter_messaging_tool_duplicates,
    filter_messaging_tool_media_duplicates,
    has_comparable_text,
    normalize_text_for_comparison,
)
from .reply_directives import parse_inline_directives, parse_reply_directives
from .reply_payload import ReplyPayload, ToolMeta, is_cron_session_key, is_likely_mutating_tool_name

__all__ = [
    "GENERIC_ASSISTANT_ERROR_TEXT",
    "GENERIC_ERROR_ECHO_TEXT",
    "HEARTBEAT_TOKEN",
    "SILENT_REPLY_TOKEN",
    "build_embedded_run_payloads",
    "default_format_assistant_error",
    "format_tool_aggregate",
    "is_silent_reply_payload_text",
    "is_silent_reply_text",
]

HEARTBEAT_TOKEN: Final = "HEARTBEAT_OK"
#: OpenClaw's user-facing text when a model call failed and nothing more specific applies.
GENERIC_ASSISTANT_ERROR_TEXT: Final = "LLM request failed."
#: A provider error text that models sometimes echo; never shown next to the real error.
GENERIC_ERROR_ECHO_TEXT: Final = "The AI service returned an error. Please try again."

VerboseLevel = Literal["off", "on", "full"]
ReasoningLevel = Literal["off", "on", "stream"]


# --------------------------------------------------------------------------- text helpers


def _opt_str(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = value.strip()
    return trimmed or None


def is_silent_reply_text(text: str | None, token: str = SILENT_REPLY_TOKEN) -> bool:
    """Exactly the token, whitespace aside: a reply that merely *ends* in it is not silent."""
    return bool(text) and (text or "").strip() == token


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
            inline = parse_inline_directives(summary, strip_audio_tag=True)
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
    # parsed once: the answer below is most often this same text (parse_reply_directives is
    # pure; without a current message id both parses are the same call)
    fallback_parsed = (
        parse_reply_directives(fallback) if not needs_error_surface and fallback else None
    )
    use_final_answer = fallback_parsed is not None and has_comparable_text(fallback_parsed.text)
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
        parsed = (
            fallback_parsed
            if fallback_parsed is not None and current_message_id is None and text == fallback
            else parse_reply_directives(text, current_message_id=current_message_id)
        )
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
        # read only by the tool-error warning below: not asked without a tool error
        if last_tool_error is not None and parsed.text and not acknowledged:
            acknowledged = _acknowledges_mutating_failure(parsed.text)

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
