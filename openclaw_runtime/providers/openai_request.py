"""The Chat Completions request body (``POST {base_url}/chat/completions``).

``build_request_body`` turns a model, a context and the stream options into OpenAI's wire
shape: ``convert_messages`` (system prompt, user text and images, assistant text and tool
calls, tool results), ``convert_tools`` (function tools), and the output-token field each
endpoint accepts (``max_tokens_field``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from ..llm import Context, Model, StreamOptions, Tool
from ..messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..transcript.tool_call_ids import (
    ToolCallIdMode,
    ToolCallIdRule,
    is_valid_tool_call_id,
    normalize_tool_call_ids,
    tool_call_id_mode,
)
from .request_memo import RequestMemo, Taken

__all__ = [
    "ChatConversion",
    "build_request_body",
    "convert_messages",
    "convert_tools",
    "max_tokens_field",
]


# --------------------------------------------------------------------------- request


def convert_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """Tools in Chat Completions' ``{"type": "function", "function": {...}}`` shape."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
            },
        }
        for tool in tools
    ]


def convert_messages(
    model: Model, context: Context, *, memo: RequestMemo | None = None
) -> list[dict[str, Any]]:
    """Transcript messages as Chat Completions messages.

    Failed or aborted assistant turns are not replayed (they are incomplete); thinking is not
    sent back; images go where the model accepts them and become a note where it does not.
    Tool-call ids are rewritten to the endpoint's id rules (``tool_call_id_mode``), calls
    and results alike, so ids minted by another API (Responses' ``call|fc`` ids) replay.

    With ``memo``, a request that resends the previous one's messages (or a part of them)
    converts only what it adds (``providers.request_memo``, rules in ``ChatConversion``).
    """
    images_ok = "image" in model.input
    system_role = (model.compat or {}).get("system_role", "system")
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        out.append({"role": system_role, "content": context.system_prompt})
    id_mode = tool_call_id_mode(model.provider, model.id, model.compat)
    if memo is not None:
        key = (model.provider, model.api, model.id, images_ok, id_mode)
        out.extend(memo.convert(context.messages, key, ChatConversion(id_mode, images_ok)))
    else:
        out.extend(_converted(context.messages, id_mode, images_ok))
    return out


class ChatConversion:
    """Chat Completions' conversion as the request memo needs it.

    Every message converts alone and nothing merges; only the id rule has state. A unit (a
    message that is not a tool result, then the results after it) converts alone as it
    would in place when the rule keeps its calls' ids as they are (valid, not taken before,
    not twice) and each result answers one call of the unit, a different one each (a result
    naming no call of its turn would take the id the rule gave an earlier call with that raw
    id). The ids taken before are every id the rule gave out, with the message it came from,
    failed turns' included (not replayed, but the rule saw them): a raw id it saw before is
    one of them, or is not valid as it is. With ids kept (``keep``), any unit.

    A request that goes on from an earlier request's end or last prompt needs no clean unit
    once the memo keeps the id rule's state there (``carried``, ``copied``): the state
    rewrites what follows as in place (``resume``), whatever the ids (servers that number
    calls afresh in every answer, ids the rule must rewrite).
    """

    __slots__ = ("_carried", "_id_mode", "_images_ok")

    def __init__(self, id_mode: ToolCallIdMode, images_ok: bool) -> None:
        self._id_mode = id_mode
        self._images_ok = images_ok
        #: the id rule's state after the last ``whole``
        self._carried: ToolCallIdRule | None = None

    def whole(self, messages: Sequence[Message]) -> tuple[list[dict[str, Any]], Taken]:
        """The messages and the ids the rule gave out, each with the first message it came
        from."""
        taken: dict[str, int] = {}
        rule = ToolCallIdRule(self._id_mode)
        params = _converted(messages, self._id_mode, self._images_ok, taken, rule)
        self._carried = rule
        return params, Taken({}, taken)

    def carried(self) -> ToolCallIdRule:
        """The id rule's state at the end of what ``whole`` converted."""
        if self._carried is None:  # nothing converted yet: the state at the start
            self._carried = ToolCallIdRule(self._id_mode)
        return self._carried

    def copied(self, carried: ToolCallIdRule) -> ToolCallIdRule:
        """A copy of the rule's state, going on apart."""
        return carried.copy()

    def resume(
        self, carried: ToolCallIdRule, units: Sequence[Message]
    ) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """The messages of ``units`` after those ``carried`` saw, as in place, and the ids
        the rule gave out for them (with the index of the unit message each came from);
        ``carried`` moves on past them."""
        taken: dict[str, int] = {}
        return _converted(units, self._id_mode, self._images_ok, taken, carried), taken

    def part(self, units: Sequence[Message]) -> list[dict[str, Any]]:
        """The units' messages."""
        return _converted(units, self._id_mode, self._images_ok)

    def clean(self, unit: Sequence[Message], taken: Callable[[str], bool]) -> bool:
        """The unit's ids kept by the rule, each result answering its own call."""
        if self._id_mode == "keep":
            return True
        turn = unit[0]
        calls: set[str] = set()
        content = turn.content if isinstance(turn, AssistantMessage) else ()
        for block in content:
            if not isinstance(block, ToolCall):
                continue
            call_id = block.id
            if call_id in calls or taken(call_id):
                return False
            if not is_valid_tool_call_id(call_id, self._id_mode):
                return False
            calls.add(call_id)
        for result in unit[1:]:
            assert isinstance(result, ToolResultMessage)
            if result.tool_call_id not in calls:
                return False  # no call of the turn, or one answered already
            calls.discard(result.tool_call_id)
        return True

    def joins(self, before: Any, after: Any) -> bool:
        """Messages never merge."""
        return False

    def settled(self, params: list[dict[str, Any]]) -> int:
        """Every one: a message converts the same whatever follows."""
        return len(params)


def _converted(
    messages: Sequence[Message],
    id_mode: ToolCallIdMode,
    images_ok: bool,
    taken: dict[str, int] | None = None,
    rule: ToolCallIdRule | None = None,
) -> list[dict[str, Any]]:
    """The messages without the system prompt (``taken``, when given, gets every id the id
    rule gave out, failed turns' included, with the index of the message it came from;
    ``rule``, when given, rewrites the ids going on from its state)."""
    out: list[dict[str, Any]] = []
    if rule is None:
        normalized = normalize_tool_call_ids(messages, id_mode)
    else:
        normalized = rule.apply(messages)
    for index, message in enumerate(normalized):
        if taken is not None:
            _take_ids(taken, index, message)
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message.content, images_ok)})
        elif isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                continue
            converted = _assistant(message)
            if converted is not None:
                out.append(converted)
        elif isinstance(message, ToolResultMessage):
            text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
            images = [b for b in message.content if isinstance(b, ImageContent)]
            if images and not text:
                text = "(see attached image)" if images_ok else "(image omitted)"
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": text})
            if images and images_ok:
                parts: list[dict[str, Any]] = [
                    {"type": "text", "text": f"Images returned by tool {message.tool_name}:"}
                ]
                parts.extend(_image_part(i) for i in images)
                out.append({"role": "user", "content": parts})
    return out


def _take_ids(taken: dict[str, int], position: int, message: Message) -> None:
    """The ids the rule gave out (a raw id it saw before is among them or is not valid)."""
    if isinstance(message, ToolResultMessage):
        taken.setdefault(message.tool_call_id, position)
    elif isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, ToolCall):
                taken.setdefault(block.id, position)


def _user_content(content: str | list[Any], images_ok: bool) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if not any(isinstance(b, ImageContent) for b in content):
        return "\n".join(b.text for b in content if isinstance(b, TextContent))
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(
                _image_part(block) if images_ok else {"type": "text", "text": "(image omitted)"}
            )
    return parts


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"},
    }


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": orjson.dumps(b.arguments).decode()},
        }
        for b in message.content
        if isinstance(b, ToolCall)
    ]
    if not text and not calls:
        return None
    converted: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        converted["tool_calls"] = calls
    return converted


def build_request_body(
    model: Model, context: Context, options: StreamOptions, *, memo: RequestMemo | None = None
) -> dict[str, Any]:
    """The JSON body of one streaming request (``memo``: ``convert_messages``; its messages
    are shared with the memo, so a caller that changes them copies them first)."""
    compat = model.compat or {}
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context, memo=memo),
        "stream": True,
    }
    if compat.get("supports_usage_in_streaming", True):
        body["stream_options"] = {"include_usage": True}
    if context.tools:
        body["tools"] = convert_tools(context.tools)
    elif any(isinstance(m, ToolResultMessage) for m in context.messages):
        body["tools"] = []  # proxies to Anthropic insist on tools when history has tool calls
    if options.max_tokens:
        field = max_tokens_field(model)
        body[field] = (
            min(options.max_tokens, model.max_tokens) if model.max_tokens else options.max_tokens
        )
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.stop:
        body["stop"] = list(options.stop)
    if options.reasoning and model.reasoning:
        spelled = (model.thinking_level_map or {}).get(options.reasoning)  # the model's own name
        effort = spelled or ("xhigh" if options.reasoning == "max" else options.reasoning)
        if compat.get("reasoning_format") == "openrouter":
            body["reasoning"] = {"effort": effort}
        else:
            body["reasoning_effort"] = effort
    extra = options.extra.get("body")
    if isinstance(extra, Mapping):
        body.update(extra)
    return body


def max_tokens_field(model: Model) -> str:
    """The body field of the output cap: ``max_completion_tokens`` at OpenAI, ``max_tokens``
    elsewhere, or what ``compat.max_tokens_field`` says."""
    field = (model.compat or {}).get("max_tokens_field")
    if isinstance(field, str) and field:
        return field
    return "max_completion_tokens" if "api.openai.com" in model.base_url else "max_tokens"
