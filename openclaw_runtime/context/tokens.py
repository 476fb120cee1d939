"""Token estimation at the LLM boundary, behind one replaceable function.

OpenClaw never tokenizes before a request; it estimates pressure from characters
(``estimateLlmBoundaryTokenPressure``) and adds a 20 % safety margin. Everything in
``openclaw_runtime.context`` that needs a token count takes an optional ``estimator`` so a
tokenizer plugin can swap in exact counts without touching the policies that use them.

Character counts follow JavaScript's ``String.length`` (UTF-16 code units) so estimates equal
OpenClaw's for the same transcript: an emoji counts 2, a CJK ideograph counts 4.
"""

from __future__ import annotations

import json
import math
import re
import weakref
from collections.abc import Mapping, Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from ..messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "CHARS_PER_TOKEN_ESTIMATE",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "CONTENT_BLOCK_OVERHEAD_TOKENS",
    "DEFAULT_TOKEN_ESTIMATOR",
    "ESTIMATED_CHARS_PER_TOKEN",
    "IMAGE_BLOCK_TOKENS",
    "JSON_PAYLOAD_CHARS_PER_TOKEN",
    "MESSAGE_BOUNDARY_OVERHEAD_TOKENS",
    "SAFETY_MARGIN",
    "TOOL_RESULT_CHARS_PER_TOKEN",
    "TokenEstimator",
    "boundary_token_pressure",
    "estimate_llm_boundary_token_pressure",
    "estimate_message_token_pressure",
    "estimate_new_message_token_pressure",
    "estimate_rendered_llm_boundary_token_pressure",
    "estimate_string_chars",
    "estimate_tokens_from_chars",
    "resolve_token_estimator",
]

#: Latin text averages about four characters per token.
CHARS_PER_TOKEN_ESTIMATE = 4
ESTIMATED_CHARS_PER_TOKEN = 4
#: Tool output (logs, code, paths) tokenizes about twice as densely as prose.
TOOL_RESULT_CHARS_PER_TOKEN = 2
#: Serialized JSON and tool-call arguments sit in between.
JSON_PAYLOAD_CHARS_PER_TOKEN = 3
MESSAGE_BOUNDARY_OVERHEAD_TOKENS = 12
CONTENT_BLOCK_OVERHEAD_TOKENS = 6
IMAGE_BLOCK_TOKENS = 2_000
#: Estimates run before provider tokenization, so they are inflated by 20 %.
SAFETY_MARGIN = 1.2
#: What a non-serializable payload is assumed to cost.
_UNSERIALIZABLE_PAYLOAD_TOKENS = 256

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"

# CJK ideographs, kana, Hangul, Yi, compatibility ideographs, fullwidth forms and CJK
# Extension B+: scripts that tokenize at about one token per character (utils/cjk-chars.ts).
_NON_LATIN_RE = re.compile(
    "[\u2e80-\u9fff\ua000-\ua4ff\uac00-\ud7af\uf900-\ufaff\uff01-\uff60\uffe0-\uffe6"
    "\U00020000-\U0002fa1f]"
)
_ASTRAL_RE = re.compile("[\U00010000-\U0010ffff]")
_CJK_ASTRAL_RE = re.compile("[\U00020000-\U0002fa1f]")


def estimate_string_chars(text: str) -> int:
    """OpenClaw's ``estimateStringChars``: length with non-Latin characters weighted ×4.

    The base length is JavaScript's UTF-16 length, except that CJK Extension B+ characters
    count once before weighting, exactly as OpenClaw counts them.
    """
    if not text:
        return 0
    if text.isascii():
        return len(text)
    non_latin = len(_NON_LATIN_RE.findall(text))
    astral = len(_ASTRAL_RE.findall(text))
    utf16_length = len(text) + astral
    if non_latin == 0:
        return utf16_length
    cjk_astral = len(_CJK_ASTRAL_RE.findall(text))
    return utf16_length - cjk_astral + non_latin * (CHARS_PER_TOKEN_ESTIMATE - 1)


def estimate_tokens_from_chars(chars: float) -> int:
    """Tokens for a raw character count at four characters per token."""
    return math.ceil(max(0, chars) / CHARS_PER_TOKEN_ESTIMATE)


# --------------------------------------------------------------------------- the estimator


@runtime_checkable
class TokenEstimator(Protocol):
    """Estimates the prompt tokens a request would cost.

    The default is ``estimate_llm_boundary_token_pressure``; a tokenizer plugin implements
    the same call with exact counts. The result is what the budget is compared against, so
    it should already include whatever safety margin the implementation wants.
    """

    def __call__(
        self, messages: Sequence[Any], *, system_prompt: str | None = None, prompt: str = ""
    ) -> int: ...


def estimate_llm_boundary_token_pressure(
    messages: Sequence[Any] | Mapping[str, Any],
    *,
    system_prompt: str | None = None,
    prompt: str = "",
) -> int:
    """OpenClaw's ``estimateLlmBoundaryTokenPressure``: history + system prompt + prompt.

    ``messages`` are transcript messages (pydantic models or wire-format dicts). A mapping
    with OpenClaw's keys (``messages``, ``systemPrompt``, ``prompt``) is accepted too.
    """
    if isinstance(messages, Mapping):
        params = messages
        messages = _require_sequence(params.get("messages", []), "messages")
        system_prompt = params.get("systemPrompt", params.get("system_prompt", system_prompt))
        prompt = params.get("prompt", prompt)
    history = sum(estimate_message_token_pressure(message) for message in messages)
    return boundary_token_pressure(history, system_prompt=system_prompt, prompt=prompt)


def boundary_token_pressure(
    history_tokens: int, *, system_prompt: str | None = None, prompt: str = ""
) -> int:
    """``estimate_llm_boundary_token_pressure`` for a history whose per-message estimates
    (``estimate_message_token_pressure``) sum to ``history_tokens``: a caller that keeps a
    running sum over a growing history does not re-add every message."""
    # an empty prompt (a tool loop's every request) is the boundary overhead alone
    prompt_tokens = (
        MESSAGE_BOUNDARY_OVERHEAD_TOKENS
        if type(prompt) is str and not prompt
        else _prompt_tokens(prompt)
    )
    total = history_tokens + _system_tokens(system_prompt) + prompt_tokens
    return max(0, math.ceil(total * SAFETY_MARGIN))


def estimate_rendered_llm_boundary_token_pressure(
    *, system_prompt: str | None = None, prompt: str = ""
) -> int:
    """Only the system prompt and prompt, for when history was already accounted for."""
    return max(
        0, math.ceil((_system_tokens(system_prompt) + _prompt_tokens(prompt)) * SAFETY_MARGIN)
    )


#: The estimator used when a caller passes none.
DEFAULT_TOKEN_ESTIMATOR: TokenEstimator = estimate_llm_boundary_token_pressure


def resolve_token_estimator(estimator: TokenEstimator | None) -> TokenEstimator:
    """``estimator``, or the default character-based one."""
    return DEFAULT_TOKEN_ESTIMATOR if estimator is None else estimator


def _system_tokens(system_prompt: str | None) -> int:
    # every request of a tool loop sends the same system prompt object: its count (a regex
    # pass over a prompt with non-Latin text) is kept for the last one seen (one slot, read
    # as one tuple, so a racing thread cannot pair one prompt with another's count)
    last, tokens = _last_system[0]
    if system_prompt is last and type(last) is str:
        return tokens
    tokens = _system_tokens_slow(system_prompt)
    if type(system_prompt) is str:
        _last_system[0] = (system_prompt, tokens)
    return tokens


_last_system: list[tuple[Any, int]] = [(None, 0)]


def _system_tokens_slow(system_prompt: str | None) -> int:
    """What ``_system_tokens`` gives, counted every call (its reference in tests)."""
    if isinstance(system_prompt, str) and system_prompt.strip():
        return MESSAGE_BOUNDARY_OVERHEAD_TOKENS + _string_tokens(system_prompt)
    return 0


def _prompt_tokens(prompt: str) -> int:
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
    return MESSAGE_BOUNDARY_OVERHEAD_TOKENS + _string_tokens(prompt)


# --------------------------------------------------------------------------- per message


#: id(message) → (weak reference to the message, tokens) for models: a history is
#: re-estimated before every request, and messages are immutable once written, so each is
#: measured once. The reference is weak and its entry leaves with the message: the memo
#: never keeps a message alive (a strong one kept the messages of sessions long closed
#: alive, up to the limit: a heap that every full collection then scanned). Bounded.
_MEMO: dict[int, tuple[weakref.ref[Any], int]] = {}
#: id(reference) → id(message), for the reference's callback
_KEYS: dict[int, int] = {}
_MEMO_LIMIT = 100_000


def _forget(ref: weakref.ref[Any]) -> None:
    """A memoized message died: drop its entry (its id may be reused by a new object)."""
    key = _KEYS.pop(id(ref), None)
    if key is not None:
        hit = _MEMO.get(key)
        if hit is not None and hit[0] is ref:
            del _MEMO[key]


def estimate_message_token_pressure(message: Any) -> int:
    """Tokens one transcript message adds before the safety margin."""
    if type(message) is dict:
        return _estimate_message(message)
    key = id(message)
    hit = _MEMO.get(key)
    if hit is not None and hit[0]() is message:
        return hit[1]
    tokens = _estimate_message(message)
    try:
        ref = weakref.ref(message, _forget)
    except TypeError:  # not weakly referenceable: measured every time
        return tokens
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
        _KEYS.clear()
    _MEMO[key] = (ref, tokens)
    _KEYS[id(ref)] = key
    return tokens


def estimate_new_message_token_pressure(message: Any) -> int:
    """``estimate_message_token_pressure`` for a message the caller measures once (each
    message a tool loop adds, summed into a running total): read from the memo when it is
    there, not written to it — a weak reference and two entries per message nobody asks for
    again."""
    if type(message) is not dict:
        hit = _MEMO.get(id(message))
        if hit is not None and hit[0]() is message:
            return hit[1]
    return _estimate_message(message)


def _estimate_message(message: Any) -> int:
    typed = _TYPED.get(type(message))
    if typed is not None:
        tokens = typed(message)
        if tokens is not None:
            return tokens
    return _estimate_record(message)


def _estimate_record(message: Any) -> int:
    """The estimate of any message: a model (through ``_get``) or a wire-format dict."""
    role = _get(message, "role")
    tokens = MESSAGE_BOUNDARY_OVERHEAD_TOKENS
    if role in ("toolResult", "tool") or _get(message, "type") == "toolResult":
        tokens += _tool_result_content_tokens(_get(message, "content"))
        tokens += _identifier_tokens(_get(message, "tool_name", "toolName"))
        return tokens
    if role == "bashExecution":
        if _get(message, "exclude_from_context", "excludeFromContext") is True:
            return 0
        return tokens + _string_tokens(_bash_execution_text(message))
    if role == "branchSummary":
        summary = _get(message, "summary")
        summary = summary if isinstance(summary, str) else ""
        return tokens + _string_tokens(BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX)
    if role == "compactionSummary":
        summary = _get(message, "summary")
        summary = summary if isinstance(summary, str) else ""
        return tokens + _string_tokens(
            COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX
        )
    if role == "assistant":
        content = _get(message, "content")
        if isinstance(content, list):
            for block in content:
                if _is_record(block) and _get(block, "type") in ("toolCall", "tool_use"):
                    tokens += _tool_call_tokens(block)
                else:
                    tokens += _block_tokens(block)
        else:
            tokens += _content_tokens(content)
        tool_calls = _get(message, "tool_calls", "toolCalls")
        if isinstance(tool_calls, list):
            for call in tool_calls:
                tokens += _tool_call_tokens(call) if _is_record(call) else _json_tokens(call)
        return tokens
    return tokens + _content_tokens(_get(message, "content"))


# The runtime's own message models, read through their ``__dict__``: what ``_estimate_record``
# works out for them through ``_get`` field by field, without its per-field look-ups (a tool
# loop estimates every new assistant turn and tool result before the next request). Each
# returns ``None`` for a model whose values are not the plain types its class declares (a
# model changed after it was built), and the record path answers. tests/test_token_typed.py
# compares both on every shape.


def _typed_assistant(message: Any) -> int | None:
    fields = message.__dict__
    content = fields.get("content")
    if fields.get("role") != "assistant" or type(content) is not list or _typed_as_result(message):
        return None
    # ``tool_calls`` is a method of the class, so the record path never counts a
    # ``toolCalls`` extra of a model: nothing to add for it here either (unless a list was
    # put in the instance's own ``__dict__`` under that name, which the record path reads)
    if "tool_calls" in fields:
        return None
    tokens = MESSAGE_BOUNDARY_OVERHEAD_TOKENS
    for block in content:
        kind = type(block)
        if kind is ToolCall:
            values = block.__dict__
            name, args = values.get("name"), values.get("arguments")
            if values.get("type") == "toolCall" and type(name) is str and args is not None:
                tokens += (
                    CONTENT_BLOCK_OVERHEAD_TOKENS
                    + _string_tokens(name, JSON_PAYLOAD_CHARS_PER_TOKEN)
                    + _json_tokens(args, JSON_PAYLOAD_CHARS_PER_TOKEN)
                )
                continue
        elif kind is TextContent or kind is ThinkingContent:
            text = _typed_text(block)
            if text is not None:
                tokens += CONTENT_BLOCK_OVERHEAD_TOKENS + _string_tokens(text)
                continue
        if _is_record(block) and _get(block, "type") in ("toolCall", "tool_use"):
            tokens += _tool_call_tokens(block)
        else:
            tokens += _block_tokens(block)
    return tokens


def _typed_as_result(message: Any) -> bool:
    """An extra ``type: "toolResult"`` makes the record path count any message as a result."""
    fields = message.__dict__
    if "type" in fields:
        return bool(fields["type"] == "toolResult")
    extra = message.__pydantic_extra__
    return bool(extra) and extra.get("type") == "toolResult"


def _typed_tool_result(message: Any) -> int | None:
    fields = message.__dict__
    content, name = fields.get("content"), fields.get("tool_name")
    if fields.get("role") != "toolResult" or type(content) is not list or type(name) is not str:
        return None
    tokens = MESSAGE_BOUNDARY_OVERHEAD_TOKENS + _string_tokens(name, JSON_PAYLOAD_CHARS_PER_TOKEN)
    for block in content:
        text = _typed_text(block) if type(block) is TextContent else None
        if text is not None:
            tokens += CONTENT_BLOCK_OVERHEAD_TOKENS + _string_tokens(
                text, TOOL_RESULT_CHARS_PER_TOKEN
            )
        else:
            tokens += _block_tokens(block, TOOL_RESULT_CHARS_PER_TOKEN)
    return tokens


def _typed_text(block: Any) -> str | None:
    """The text of a ``TextContent`` / ``ThinkingContent`` the record path counts as text."""
    values = block.__dict__
    if type(block) is TextContent:
        text = values.get("text") if values.get("type") == "text" else None
    else:
        text = values.get("thinking") if values.get("type") == "thinking" else None
    return text if type(text) is str else None


_TYPED: dict[type, Any] = {
    AssistantMessage: _typed_assistant,
    ToolResultMessage: _typed_tool_result,
}


def _string_tokens(text: str, chars_per_token: int = ESTIMATED_CHARS_PER_TOKEN) -> int:
    if type(text) is str and text.isascii():  # ``estimate_string_chars`` is its length
        return math.ceil(len(text) / chars_per_token)
    return math.ceil(estimate_string_chars(text) / chars_per_token)


def _json_tokens(value: Any, chars_per_token: int = JSON_PAYLOAD_CHARS_PER_TOKEN) -> int:
    serialized = _json_text(value)
    if serialized is None:
        return _UNSERIALIZABLE_PAYLOAD_TOKENS
    return math.ceil(estimate_string_chars(serialized) / chars_per_token)


def _identifier_tokens(value: Any, chars_per_token: int = JSON_PAYLOAD_CHARS_PER_TOKEN) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        return _string_tokens("true" if value else "false", chars_per_token)
    if isinstance(value, str | int | float):
        return _string_tokens(str(value), chars_per_token)
    return _json_tokens(value, chars_per_token)


def _block_tokens(block: Any, chars_per_token: int = ESTIMATED_CHARS_PER_TOKEN) -> int:
    if isinstance(block, str):
        return _string_tokens(block, chars_per_token)
    if not _is_record(block):
        return _json_tokens(block, chars_per_token)
    kind = _get(block, "type")
    if kind == "text":
        text = _get(block, "text")
        if isinstance(text, str):
            return CONTENT_BLOCK_OVERHEAD_TOKENS + _string_tokens(text, chars_per_token)
    elif kind == "thinking":
        thinking = _get(block, "thinking")
        if isinstance(thinking, str):
            return CONTENT_BLOCK_OVERHEAD_TOKENS + _string_tokens(thinking, chars_per_token)
    elif kind == "image":
        return IMAGE_BLOCK_TOKENS
    return CONTENT_BLOCK_OVERHEAD_TOKENS + _json_tokens(block, chars_per_token)


def _content_tokens(content: Any, chars_per_token: int = ESTIMATED_CHARS_PER_TOKEN) -> int:
    if isinstance(content, str):
        return _string_tokens(content, chars_per_token)
    if isinstance(content, list):
        return sum(_block_tokens(block, chars_per_token) for block in content)
    if content is not None:
        return _json_tokens(content, chars_per_token)
    return 0


def _tool_result_content_tokens(content: Any) -> int:
    return _content_tokens(content, TOOL_RESULT_CHARS_PER_TOKEN)


def _tool_call_tokens(block: Any) -> int:
    args = _get(block, "arguments")
    if args is None:
        args = _get(block, "input")
    if args is None:
        args = _get(block, "args")
    if args is None:
        args = {}
    return (
        CONTENT_BLOCK_OVERHEAD_TOKENS
        + _identifier_tokens(_get(block, "name"))
        + _json_tokens(args, JSON_PAYLOAD_CHARS_PER_TOKEN)
    )


def _bash_execution_text(message: Any) -> str:
    output = _get(message, "output")
    text = f"Ran `{_get(message, 'command')}`\n"
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = _get(message, "exit_code", "exitCode")
    if _get(message, "cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    full_output_path = _get(message, "full_output_path", "fullOutputPath")
    if _get(message, "truncated") and full_output_path:
        text += f"\n\n[Output truncated. Full output: {full_output_path}]"
    return text


# --------------------------------------------------------------------------- record access


def _is_record(value: Any) -> bool:
    return type(value) is dict or isinstance(value, (BaseModel, Mapping))


#: Per class: is it a ``Mapping`` (an ABC check, slow enough to matter over a history)?
_MAPPING_CLASSES: dict[type, bool] = {}
#: Per (model class, name): does the class itself define the name (property, method)?
_CLASS_NAMES: dict[tuple[type, str], bool] = {}
_CLASS_CACHE_LIMIT = 4_096


def _is_mapping(record: Any) -> bool:
    cls = type(record)
    if cls is dict:
        return True
    hit = _MAPPING_CLASSES.get(cls)
    if hit is None:
        if len(_MAPPING_CLASSES) >= _CLASS_CACHE_LIMIT:
            _MAPPING_CLASSES.clear()
        hit = _MAPPING_CLASSES[cls] = isinstance(record, Mapping)
    return hit


def _model_attr(record: BaseModel, name: str) -> Any:
    """``getattr(record, name, None)`` for a public name, without pydantic's slow
    ``__getattr__`` for names that are not fields (field values live in ``__dict__``,
    extras in ``__pydantic_extra__``)."""
    cls = type(record)
    key = (cls, name)
    defined = _CLASS_NAMES.get(key)
    if defined is None:
        if len(_CLASS_NAMES) >= _CLASS_CACHE_LIMIT:
            _CLASS_NAMES.clear()
        defined = _CLASS_NAMES[key] = name.startswith("_") or hasattr(cls, name)
    if defined:
        return getattr(record, name, None)
    fields = record.__dict__
    if name in fields:
        return fields[name]
    extra = record.__pydantic_extra__
    return extra.get(name) if extra else None


def _get(record: Any, name: str, wire_name: str | None = None) -> Any:
    """A field of a model (snake_case attribute or extra) or of a wire-format dict."""
    if _is_mapping(record):
        if wire_name is not None and wire_name in record:
            return record[wire_name]
        return record.get(name)
    if isinstance(record, BaseModel):
        value = _model_attr(record, name)
        if value is None and wire_name is not None:
            extra = record.__pydantic_extra__
            if extra:
                value = extra.get(wire_name)
        return value
    value = getattr(record, name, None)
    if value is None and wire_name is not None:
        extra = getattr(record, "model_extra", None)
        if extra:
            value = extra.get(wire_name)
    return value


#: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` is this encoder's
#: ``encode`` (``dumps`` builds the same encoder on every call that passes options)
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
#: the C encoder ``_JSON.encode`` makes on every call (with a fresh dict of the containers it
#: is inside, to find a cycle), made once without that dict: a cycle then overflows the
#: stack instead, and ``_json_text`` asks ``_JSON.encode`` again for its own answer
_C_JSON = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, _JSON.default, encode_basestring, None, ":", ",", False, False, True)
)


def _json_text(value: Any) -> str | None:
    """Compact JSON the way ``JSON.stringify`` writes it, or None when it cannot.

    The text of ``_JSON.encode(value)`` (one estimate per tool call's arguments: its Python
    layers were half the cost); a value it cannot encode gives ``None``, as there."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    try:
        if _C_JSON is not None and type(value) is not str:
            try:
                return "".join(_C_JSON(value, 0))
            except RecursionError:
                pass  # a cycle, or a value nested deeper than the stack: as ``encode`` says
        return _JSON.encode(value)
    except (TypeError, ValueError):
        return None


def _require_sequence(value: Any, name: str) -> Sequence[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of messages, got {type(value).__name__}")
    return value
