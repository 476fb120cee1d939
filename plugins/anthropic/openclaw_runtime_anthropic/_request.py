"""The request side of the Anthropic Messages API: transcript → ``POST /v1/messages`` body.

Pure functions, tested by tables. They follow OpenClaw's Anthropic adapter:

* the transcript is first made replayable (``_replay.prepare_replay_messages``);
* consecutive tool results travel in one user turn, consecutive same-role turns are merged;
* prompt caching puts ``cache_control`` on the system prompt (split at OpenClaw's cache
  boundary marker), the last tool, and the deepest user turn — at most four markers;
* thinking (``_thinking``) uses a token budget or an adaptive effort; signed thinking is
  replayed with its signature, redacted thinking as ``redacted_thinking``, and with thinking
  off only the active tool turn keeps its thinking.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from openclaw_runtime.llm import Context, Model, StreamOptions, Tool
from openclaw_runtime.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.providers.request_memo import RequestMemo
from openclaw_runtime.transcript.tool_call_ids import normalize_tool_call_ids

from ._body_memo import MessagesConversion
from ._replay import (
    active_tool_turn_index,
    prepare_replay_messages,
)
from ._thinking import (
    resolve_thinking_plan,
    supports_adaptive_thinking,
    supports_native_xhigh_effort,
)

__all__ = [
    "ANTHROPIC_CACHE_CONTROL_LIMIT",
    "ANTHROPIC_MESSAGES_API",
    "ANTHROPIC_VERSION",
    "DEFAULT_ANTHROPIC_BASE_URL",
    "EMPTY_ERROR_TOOL_RESULT_TEXT",
    "FINE_GRAINED_TOOL_STREAMING_BETA",
    "INTERLEAVED_THINKING_BETA",
    "OMITTED_REASONING_TEXT",
    "SYSTEM_PROMPT_CACHE_BOUNDARY",
    "apply_cache_control_to_messages",
    "build_beta_header",
    "build_request_body",
    "build_system_blocks",
    "convert_messages",
    "convert_tools",
    "is_anthropic_public_endpoint",
    "resolve_cache_control",
    "with_cache_control",
]

ANTHROPIC_MESSAGES_API = "anthropic-messages"
DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
ANTHROPIC_CACHE_CONTROL_LIMIT = 4
SYSTEM_PROMPT_CACHE_BOUNDARY = "\n<!-- OPENCLAW_CACHE_BOUNDARY -->\n"
OMITTED_REASONING_TEXT = "[assistant reasoning omitted]"
EMPTY_ERROR_TOOL_RESULT_TEXT = "[tool error with no output]"
TOOL_IMAGE_ONLY_TEXT = "(see attached image)"
#: Field names the OpenAI-compatible provider stores as "signatures"; never native ones.
_NON_NATIVE_SIGNATURES = frozenset({"reasoning_content", "reasoning", "reasoning_text"})


# --------------------------------------------------------------------------- model facts


def is_anthropic_public_endpoint(base_url: str) -> bool:
    """True for ``api.anthropic.com`` (and for no base URL, which means it)."""
    if not base_url:
        return True
    return (urlsplit(base_url).hostname or "").lower() == "api.anthropic.com"


def _compat_flag(model: Model, key: str, default: bool) -> bool:
    value = (model.compat or {}).get(key)
    return value if isinstance(value, bool) else default


def _eager_tool_input_streaming(model: Model) -> bool:
    return _compat_flag(model, "supports_eager_tool_input_streaming", model.provider != "fireworks")


# --------------------------------------------------------------------------- caching


def resolve_cache_control(
    model: Model, retention: str | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """The ``cache_control`` marker: ephemeral (5 min), ``ttl: 1h`` for ``long`` retention,
    none for ``none``. ``OPENCLAW_CACHE_RETENTION=long`` sets the default."""
    source = os.environ if env is None else env
    resolved = retention or (
        "long" if source.get("OPENCLAW_CACHE_RETENTION") == "long" else "short"
    )
    if resolved == "none":
        return None
    if resolved == "long" and _compat_flag(
        model, "supports_long_cache_retention", model.provider != "fireworks"
    ):
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def build_system_blocks(
    system_prompt: str, cache_control: Mapping[str, str] | None
) -> list[dict[str, Any]] | None:
    """System prompt as text blocks; with caching, the stable prefix before OpenClaw's cache
    boundary marker carries ``cache_control`` and the dynamic suffix does not."""
    if not system_prompt:
        return None
    if cache_control is None:
        text = system_prompt.replace(SYSTEM_PROMPT_CACHE_BOUNDARY, "\n")
        return [{"type": "text", "text": text}]
    index = system_prompt.find(SYSTEM_PROMPT_CACHE_BOUNDARY)
    if index < 0:
        return [{"type": "text", "text": system_prompt, "cache_control": dict(cache_control)}]
    stable = system_prompt[:index].rstrip()
    dynamic = system_prompt[index + len(SYSTEM_PROMPT_CACHE_BOUNDARY) :].lstrip()
    blocks: list[dict[str, Any]] = []
    if stable:
        blocks.append({"type": "text", "text": stable, "cache_control": dict(cache_control)})
    if dynamic:
        blocks.append({"type": "text", "text": dynamic})
    return blocks or [{"type": "text", "text": ""}]


def apply_cache_control_to_messages(
    messages: list[dict[str, Any]], cache_control: Mapping[str, str], limit: int
) -> None:
    """Mark the deepest user turn's last text/image block (and the latest tool result when
    a marker is left for it); with a single marker left the tool result wins."""
    if not messages or limit <= 0:
        return
    fallback: dict[str, Any] | None = None
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            if fallback is not None and limit == 1:
                fallback["cache_control"] = dict(cache_control)
                return
            message["content"] = [
                {"type": "text", "text": content, "cache_control": dict(cache_control)}
            ]
            if fallback is not None:
                fallback["cache_control"] = dict(cache_control)
            return
        if not isinstance(content, list):
            continue
        for block in reversed(content):
            kind = block.get("type")
            if kind in ("text", "image"):
                if fallback is not None and limit == 1:
                    fallback["cache_control"] = dict(cache_control)
                    return
                block["cache_control"] = dict(cache_control)
                if fallback is not None:
                    fallback["cache_control"] = dict(cache_control)
                return
            if kind == "tool_result" and fallback is None:
                fallback = block
    if fallback is not None:
        fallback["cache_control"] = dict(cache_control)


def with_cache_control(
    messages: list[dict[str, Any]], cache_control: Mapping[str, str], limit: int
) -> list[dict[str, Any]]:
    """``apply_cache_control_to_messages`` on a copy: the params and blocks it marks are
    copied, the others shared (params a memo keeps must not change)."""
    out = list(messages)
    if not out or limit <= 0:
        return out
    fallback: tuple[int, int] | None = None
    for position in range(len(out) - 1, -1, -1):
        message = out[position]
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            if fallback is not None and limit == 1:
                _mark(out, *fallback, cache_control)
                return out
            block = {"type": "text", "text": content, "cache_control": dict(cache_control)}
            out[position] = {**message, "content": [block]}
            if fallback is not None:
                _mark(out, *fallback, cache_control)
            return out
        if not isinstance(content, list):
            continue
        for index in range(len(content) - 1, -1, -1):
            kind = content[index].get("type")
            if kind in ("text", "image"):
                if fallback is not None and limit == 1:
                    _mark(out, *fallback, cache_control)
                    return out
                _mark(out, position, index, cache_control)
                if fallback is not None:
                    _mark(out, *fallback, cache_control)
                return out
            if kind == "tool_result" and fallback is None:
                fallback = (position, index)
    if fallback is not None:
        _mark(out, *fallback, cache_control)
    return out


def _mark(
    out: list[dict[str, Any]], position: int, index: int, cache_control: Mapping[str, str]
) -> None:
    message = out[position]
    content = list(message["content"])
    content[index] = {**content[index], "cache_control": dict(cache_control)}
    out[position] = {**message, "content": content}


def _count_markers(blocks: Sequence[Mapping[str, Any]] | None) -> int:
    return sum(1 for block in blocks or () if "cache_control" in block)


# --------------------------------------------------------------------------- tools


def convert_tools(
    tools: Sequence[Tool],
    cache_control: Mapping[str, str] | None = None,
    *,
    eager_input_streaming: bool = True,
) -> list[dict[str, Any]]:
    """Tools as ``{name, description, input_schema: {type: object, properties, required}}``;
    the last one carries the cache marker."""
    converted: list[dict[str, Any]] = []
    for tool in tools:
        schema = dict(tool.parameters)
        properties = schema.get("properties")
        required = schema.get("required")
        input_schema: dict[str, Any] = {
            "type": "object",
            "properties": dict(properties) if isinstance(properties, Mapping) else {},
            "required": [r for r in required if isinstance(r, str)]
            if isinstance(required, list)
            else [],
        }
        for defs_key in ("$defs", "definitions"):  # keep local $ref targets resolvable
            if isinstance(schema.get(defs_key), Mapping):
                input_schema[defs_key] = schema[defs_key]
        entry: dict[str, Any] = {"name": tool.name}
        if tool.description:
            entry["description"] = tool.description
        entry["input_schema"] = input_schema
        if eager_input_streaming:
            entry["eager_input_streaming"] = True
        converted.append(entry)
    if converted and cache_control is not None:
        converted[-1]["cache_control"] = dict(cache_control)
    return converted


# --------------------------------------------------------------------------- messages


def _image_block(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
    }


def _user_param(message: UserMessage) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        if not message.content.strip():
            return None
        return {"role": "user", "content": message.content}
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            blocks.append(_image_block(block))
    return {"role": "user", "content": blocks} if blocks else None


def _tool_result_content(message: ToolResultMessage) -> str | list[dict[str, Any]]:
    images = [b for b in message.content if isinstance(b, ImageContent)]
    if not images:
        text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
        if text.strip():
            return text
        return EMPTY_ERROR_TOOL_RESULT_TEXT if message.is_error else ""
    blocks: list[dict[str, Any]] = []
    has_text = False
    for block in message.content:
        if isinstance(block, TextContent) and block.text:
            blocks.append({"type": "text", "text": block.text})
            has_text = True
        elif isinstance(block, ImageContent):
            blocks.append(_image_block(block))
    if not has_text:
        blocks.insert(0, {"type": "text", "text": TOOL_IMAGE_ONLY_TEXT})
    return blocks


def _assistant_param(
    message: AssistantMessage, *, replay_thinking: bool, allow_empty_signature: bool
) -> dict[str, Any] | None:
    blocks: list[dict[str, Any]] = []
    omitted = False
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if not replay_thinking:
                omitted = True
                continue
            signature = (block.thinking_signature or "").strip()
            if block.redacted:
                if signature:
                    blocks.append({"type": "redacted_thinking", "data": signature})
                continue
            native = bool(signature) and signature not in _NON_NATIVE_SIGNATURES
            if not block.thinking.strip() and not native:
                continue
            if not signature and not allow_empty_signature:
                blocks.append({"type": "text", "text": block.thinking})
            elif signature in _NON_NATIVE_SIGNATURES:
                continue
            else:
                blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": signature}
                )
        elif isinstance(block, ToolCall):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block.id,
                    "name": block.name,
                    "input": block.arguments or {},
                }
            )
    if not blocks and omitted:
        blocks.append({"type": "text", "text": OMITTED_REASONING_TEXT})
    return {"role": "assistant", "content": blocks} if blocks else None


def _merge_same_role(params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for param in params:
        if merged and merged[-1]["role"] == param["role"]:
            previous = merged[-1]
            previous["content"] = _as_blocks(previous["content"]) + _as_blocks(param["content"])
        else:
            merged.append(param)
    return merged


def _as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def convert_messages(
    messages: Sequence[Message],
    model: Model,
    *,
    replay_thinking: bool = True,
    cache_control: Mapping[str, str] | None = None,
    cache_marker_limit: int = ANTHROPIC_CACHE_CONTROL_LIMIT,
    memo: RequestMemo | None = None,
) -> list[dict[str, Any]]:
    """Transcript messages as Messages API ``messages`` (user/assistant turns only).

    Tool-call ids follow OpenClaw's Anthropic replay rule (``anthropic`` mode of
    ``transcript.tool_call_ids``): Anthropic's own ``toolu_…`` ids unchanged, any other id
    (an OpenAI Responses ``call_…|fc_…`` of ~90 characters, say) reduced to at most 40
    alphanumerics, collision-free and identical for a call and its result.

    With ``memo``, a request that resends the previous one's messages (or a part of them)
    converts only what it adds (``providers.request_memo``, with the rules of
    ``_body_memo``); the params may then be shared with the memo, so the markers go on
    copies.
    """
    allow_empty = _compat_flag(model, "allow_empty_signature", False)

    def full(history: Sequence[Message]) -> tuple[list[dict[str, Any]], bool]:
        return _converted(history, model, replay_thinking, allow_empty)

    if memo is not None:
        key = (
            model.provider,
            model.api,
            model.id,
            tuple(sorted(model.input)),
            allow_empty,
            replay_thinking,
        )
        conversion = MessagesConversion(full, replay_thinking=replay_thinking)
        shared = memo.convert(messages, key, conversion)
        params = list(shared)
        if cache_control is not None:
            params = with_cache_control(params, cache_control, cache_marker_limit)
        return params
    params = full(messages)[0]
    if cache_control is not None:
        apply_cache_control_to_messages(params, cache_control, cache_marker_limit)
    return params


def _converted(
    messages: Sequence[Message], model: Model, replay_thinking: bool, allow_empty: bool
) -> tuple[list[dict[str, Any]], bool]:
    """The params of ``messages``, merged, without cache markers; and whether, with thinking
    off, they have an active tool turn with no thinking to keep (its param is the same once
    another turn follows: ``MessagesConversion.settled``)."""
    replayable = normalize_tool_call_ids(prepare_replay_messages(messages, model), "anthropic")
    active = -1 if replay_thinking else active_tool_turn_index(replayable)
    plain_active = active >= 0 and not any(
        isinstance(block, ThinkingContent) for block in replayable[active].content
    )
    params: list[dict[str, Any]] = []
    index = 0
    while index < len(replayable):
        message = replayable[index]
        if isinstance(message, UserMessage):
            param = _user_param(message)
        elif isinstance(message, AssistantMessage):
            param = _assistant_param(
                message,
                replay_thinking=replay_thinking or index == active,
                allow_empty_signature=allow_empty,
            )
        else:
            results: list[dict[str, Any]] = []
            while index < len(replayable) and isinstance(replayable[index], ToolResultMessage):
                result = replayable[index]
                assert isinstance(result, ToolResultMessage)
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": result.tool_call_id,
                        "content": _tool_result_content(result),
                        "is_error": result.is_error,
                    }
                )
                index += 1
            params.append({"role": "user", "content": results})
            continue
        if param is not None:
            params.append(param)
        index += 1
    return _merge_same_role(params), plain_active


# --------------------------------------------------------------------------- request


def build_beta_header(model: Model, context: Context, options: StreamOptions) -> str | None:
    """``anthropic-beta``: fine-grained tool streaming where tools cannot stream eagerly,
    interleaved thinking for budget-thinking models (adaptive ones have it built in)."""
    betas: list[str] = []
    if context.tools and not _eager_tool_input_streaming(model):
        betas.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    interleaved = options.extra.get("interleaved_thinking", True)
    if interleaved is not False and not supports_adaptive_thinking(model):
        betas.append(INTERLEAVED_THINKING_BETA)
    return ",".join(betas) if betas else None


def build_request_body(
    model: Model,
    context: Context,
    options: StreamOptions,
    *,
    env: Mapping[str, str] | None = None,
    memo: RequestMemo | None = None,
) -> dict[str, Any]:
    """The JSON body of one streaming Messages request (``memo``: ``convert_messages``)."""
    plan = resolve_thinking_plan(
        model, options.reasoning, options.max_tokens, options.thinking_budgets
    )
    retention = options.extra.get("cache_retention")
    cache_control = resolve_cache_control(
        model, retention if isinstance(retention, str) else None, env
    )
    system = build_system_blocks(context.system_prompt, cache_control)
    tools_cache = (
        cache_control
        if _compat_flag(model, "supports_cache_control_on_tools", model.provider != "fireworks")
        else None
    )
    tools = convert_tools(
        context.tools, tools_cache, eager_input_streaming=_eager_tool_input_streaming(model)
    )
    marker_limit = max(
        0, ANTHROPIC_CACHE_CONTROL_LIMIT - _count_markers(system) - _count_markers(tools)
    )
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(
            context.messages,
            model,
            replay_thinking=plan.enabled,
            cache_control=cache_control,
            cache_marker_limit=marker_limit,
            memo=memo,
        ),
        "max_tokens": plan.max_tokens,
        "stream": True,
    }
    if system:
        body["system"] = system
    if (
        options.temperature is not None
        and not plan.enabled
        and not supports_native_xhigh_effort(model)
    ):
        body["temperature"] = options.temperature
    if options.stop:
        body["stop_sequences"] = list(options.stop)
    if tools:
        body["tools"] = tools
    if model.reasoning or supports_adaptive_thinking(model):
        if plan.adaptive:
            body["thinking"] = {"type": "adaptive", "display": "summarized"}
            body["output_config"] = {"effort": plan.effort}
        elif plan.enabled:
            body["thinking"] = {"type": "enabled", "budget_tokens": plan.budget_tokens}
        else:
            body["thinking"] = {"type": "disabled"}
    user_id = (options.metadata or {}).get("user_id")
    if isinstance(user_id, str):
        body["metadata"] = {"user_id": user_id}
    extra = options.extra.get("body")
    if isinstance(extra, Mapping):
        body.update(extra)
    return body
