"""Tool-call ids a provider will accept on replay (OpenClaw ``normalizeToolCallId``).

A session may hold ids another API minted: OpenAI's Responses API writes
``call_<id>|fc_<item>`` ids of ~90 characters, Bedrock writes ``tooluse_…``. Chat Completions
rejects ids over 40 characters, Mistral accepts exactly 9 alphanumerics, and OpenClaw replays
to Anthropic and Gemini with alphanumeric ids of at most 40 characters (keeping Anthropic's own
``toolu_…`` ids), so a replay to such a provider must rewrite them — deterministically,
without two different ids collapsing to one, and identically for a call and the result that
answers it (the APIs pair them by id).

* :func:`tool_call_id_mode` — which id rules an OpenAI-compatible endpoint follows (``openai``,
  ``strict9`` or ``keep``); the Anthropic and Gemini request builders use ``anthropic`` and
  ``strict`` (OpenClaw's ``toolCallIdMode: "strict"``, with ``preserveNativeAnthropicToolUseIds``
  for Anthropic);
* :func:`normalize_tool_call_id` — the preferred replacement for one id, alone;
* :func:`normalize_tool_call_ids` — the whole transcript rewritten, collision-free, calls
  and results kept paired (inputs are never mutated).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..messages import AssistantMessage, Message, ToolCall, ToolResultMessage

__all__ = [
    "OPENAI_TOOL_CALL_ID_MAX_CHARS",
    "STRICT9_TOOL_CALL_ID_CHARS",
    "STRICT_TOOL_CALL_ID_MAX_CHARS",
    "ToolCallIdMode",
    "ToolCallIdRule",
    "is_valid_tool_call_id",
    "normalize_tool_call_id",
    "normalize_tool_call_ids",
    "tool_call_id_mode",
]

ToolCallIdMode = Literal["openai", "strict", "strict9", "anthropic", "keep"]
TOOL_CALL_ID_MODES: frozenset[str] = frozenset({"openai", "strict", "strict9", "anthropic", "keep"})

OPENAI_TOOL_CALL_ID_MAX_CHARS = 40
#: ``strict`` ids (Anthropic, Gemini): alphanumerics only, at most this many.
STRICT_TOOL_CALL_ID_MAX_CHARS = 40
STRICT9_TOOL_CALL_ID_CHARS = 9
_HASH_CHARS = 8
_UNSAFE_CHARS_RE = re.compile(r"[^A-Za-z0-9_-]")
_NON_ALNUM_RE = re.compile(r"[^A-Za-z0-9]")
_STRICT9_RE = re.compile(r"^[A-Za-z0-9]{9}\Z")
_STRICT_RE = re.compile(r"^[A-Za-z0-9]{1,40}\Z")
#: An id Anthropic minted itself; replayed to Anthropic unchanged (OpenClaw keeps them too).
_NATIVE_ANTHROPIC_RE = re.compile(r"^toolu_[A-Za-z0-9_]+\Z")


def tool_call_id_mode(
    provider: str | None, model_id: str | None, compat: Mapping[str, Any] | None = None
) -> ToolCallIdMode:
    """The id rules of an OpenAI-compatible endpoint.

    ``compat["tool_call_id_mode"]`` wins; Mistral (provider ``mistral`` or a ``mistral`` /
    ``mixtral`` model) takes ``strict9``; every other Chat Completions endpoint ``openai``.
    """
    override = (compat or {}).get("tool_call_id_mode")
    if override is not None:
        if override not in TOOL_CALL_ID_MODES:
            raise ValueError(
                f"compat.tool_call_id_mode must be one of {sorted(TOOL_CALL_ID_MODES)}, "
                f"got {override!r}"
            )
        mode: ToolCallIdMode = override
        return mode
    provider_name = (provider or "").strip().lower()
    model = (model_id or "").strip().lower()
    if provider_name == "mistral" or "mistral" in model or "mixtral" in model:
        return "strict9"
    return "openai"


def _short_hash(text: str, length: int = _HASH_CHARS) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def _openai_id(raw: str) -> str:
    limit = OPENAI_TOOL_CALL_ID_MAX_CHARS
    call_part, pipe, item_part = raw.partition("|")
    call_id = _UNSAFE_CHARS_RE.sub("_", call_part)
    if pipe:
        item_id = _UNSAFE_CHARS_RE.sub("_", item_part)
        combined = f"{call_id}_{item_id}" if item_id else call_id
    else:
        combined = call_id
    if not combined:
        return "call_" + _short_hash(raw)
    if len(combined) <= limit:
        return combined
    # Too long: keep the readable call id's start, end with a hash of the whole raw id so
    # two calls sharing a call id (different Responses items) stay distinct.
    prefix = call_id[: limit - _HASH_CHARS - 1] or "call"
    return f"{prefix}_{_short_hash(raw)}"


def _strict9_id(raw: str) -> str:
    if _STRICT9_RE.match(raw):
        return raw
    alphanumeric = _NON_ALNUM_RE.sub("", raw)
    if len(alphanumeric) >= STRICT9_TOOL_CALL_ID_CHARS:
        return alphanumeric[:STRICT9_TOOL_CALL_ID_CHARS]
    return _short_hash(alphanumeric or "sanitized", STRICT9_TOOL_CALL_ID_CHARS)


def _strict_id(raw: str) -> str:
    alphanumeric = _NON_ALNUM_RE.sub("", raw)
    return alphanumeric[:STRICT_TOOL_CALL_ID_MAX_CHARS] or "sanitizedtoolid"


def normalize_tool_call_id(raw: str, mode: ToolCallIdMode) -> str:
    """The preferred provider-safe form of one id (before collision handling).

    ``openai``: a Responses ``call|item`` id becomes ``call_item`` with characters outside
    ``[A-Za-z0-9_-]`` replaced by ``_``; anything over 40 characters becomes its first
    characters plus ``_`` and an 8-hex hash of the raw id. ``strict``: the id's alphanumerics,
    at most 40 (``call|item:123`` → ``callitem123``). ``anthropic``: an id Anthropic minted
    (``toolu_…``) unchanged, any other as ``strict``. ``strict9``: exactly 9 alphanumerics.
    ``keep``: unchanged.
    """
    if mode == "keep":
        return raw
    if mode == "strict9":
        return _strict9_id(raw)
    if mode == "anthropic" and _NATIVE_ANTHROPIC_RE.match(raw):
        return raw
    if mode in ("strict", "anthropic"):
        return _strict_id(raw)
    return _openai_id(raw)


def is_valid_tool_call_id(candidate: str, mode: ToolCallIdMode) -> bool:
    """Whether ``normalize_tool_call_ids`` keeps ``candidate`` as it is, the first time it
    sees it and when no earlier call took it."""
    return _is_valid(candidate, mode)


def _is_valid(candidate: str, mode: ToolCallIdMode) -> bool:
    if mode == "strict9":
        return bool(_STRICT9_RE.match(candidate))
    if mode == "anthropic" and _NATIVE_ANTHROPIC_RE.match(candidate):
        return True
    if mode in ("strict", "anthropic"):
        return bool(_STRICT_RE.match(candidate))
    return 0 < len(candidate) <= OPENAI_TOOL_CALL_ID_MAX_CHARS and not _UNSAFE_CHARS_RE.search(
        candidate
    )


def _unique(seed: str, mode: ToolCallIdMode, used: set[str]) -> str:
    candidate = normalize_tool_call_id(seed, mode)
    attempt = 0
    while candidate in used:
        attempt += 1
        digest = _short_hash(f"{seed}:{attempt}")
        if mode == "strict9":
            candidate = _short_hash(f"{seed}:{attempt}", STRICT9_TOOL_CALL_ID_CHARS)
        elif mode in ("strict", "anthropic"):
            # no separator: the result must stay alphanumeric
            base = _strict_id(seed)[: STRICT_TOOL_CALL_ID_MAX_CHARS - _HASH_CHARS]
            candidate = f"{base}{digest}"
        else:
            base = candidate[: OPENAI_TOOL_CALL_ID_MAX_CHARS - _HASH_CHARS - 1]
            candidate = f"{base}_{digest}"
    used.add(candidate)
    return candidate


def normalize_tool_call_ids(messages: Sequence[Message], mode: ToolCallIdMode) -> list[Message]:
    """The transcript with every tool-call id valid for ``mode``, calls and results paired.

    Ids already valid keep their form (when not taken); each call occurrence gets its own id
    (a repeated raw id gets a fresh one), and a tool result takes the id given to the
    earliest unanswered call with its raw id. Deterministic: the same transcript always
    yields the same ids. ``keep`` returns the messages unchanged.
    """
    return ToolCallIdRule(mode).apply(messages)


class ToolCallIdRule:
    """``normalize_tool_call_ids`` kept going: its state after the messages it rewrote (the
    ids given out, the unanswered calls' ids by raw id, how often each raw id came), so
    what follows them is rewritten as it would be in the whole transcript. A provider's
    request memo goes on from the previous request's end with it, where servers that number
    their calls afresh in every answer (``call_0``, ``functions.read:0``) make every later
    call's id depend on all the earlier ones. With ``keep`` it rewrites nothing."""

    __slots__ = ("_mode", "_occurrences", "_pending", "_used")

    def __init__(self, mode: ToolCallIdMode) -> None:
        self._mode = mode
        self._used: set[str] = set()
        self._pending: dict[str, list[str]] = {}
        self._occurrences: dict[str, int] = {}

    def copy(self) -> ToolCallIdRule:
        """The same state, going on apart (the unanswered calls' queues copied)."""
        other = ToolCallIdRule(self._mode)
        other._used = self._used.copy()
        other._pending = {raw: list(queue) for raw, queue in self._pending.items() if queue}
        other._occurrences = self._occurrences.copy()
        return other

    def apply(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` rewritten as they would be after those already seen (module
        docstring), the state moved on past them."""
        if self._mode == "keep":
            return list(messages)
        return _rewritten(messages, self._mode, self._used, self._pending, self._occurrences)


def _rewritten(
    messages: Sequence[Message],
    mode: ToolCallIdMode,
    used: set[str],
    pending: dict[str, list[str]],
    occurrences: dict[str, int],
) -> list[Message]:
    """The rule over ``messages`` from the state given (updated in place): the ids given
    out, the unanswered calls' ids by raw id, how often each raw id came."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            content: list[Any] = []
            changed = False
            for block in message.content:
                if isinstance(block, ToolCall):
                    seen = occurrences.get(block.id, 0) + 1
                    occurrences[block.id] = seen
                    if seen == 1 and _is_valid(block.id, mode) and block.id not in used:
                        new_id = block.id
                        used.add(new_id)
                    else:
                        new_id = _unique(
                            block.id if seen == 1 else f"{block.id}:{seen}", mode, used
                        )
                    pending.setdefault(block.id, []).append(new_id)
                    if new_id != block.id:
                        block = block.model_copy(update={"id": new_id})
                        changed = True
                content.append(block)
            out.append(message.model_copy(update={"content": content}) if changed else message)
        elif isinstance(message, ToolResultMessage):
            raw = message.tool_call_id
            queue = pending.get(raw)
            if queue:
                new_id = queue.pop(0)
            elif _is_valid(raw, mode) and raw not in used:
                new_id = raw
                used.add(raw)
            else:
                new_id = _unique(f"{raw}:tool_result", mode, used)
            out.append(
                message if new_id == raw else message.model_copy(update={"tool_call_id": new_id})
            )
        else:
            out.append(message)
    return out
