"""The brain: a deterministic stand-in model that summarizes, quotes tool results, calls the
tools a prompt names (arguments drawn from their schemas) and otherwise echoes the user; and
the completion of a scripted ``Reply``, which replaces it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from ...context.compaction import SUMMARY_SYSTEM_PROMPT
from .plans import Completion
from .scripts import Reply

__all__ = ["brain", "from_reply", "reasoning_for", "tool_names"]

# The summarizer's system prompt is recognised by its first sentence, so a reworded tail (or
# a prompt that embeds it) still counts as a summarization request.
SUMMARY_MARKER = SUMMARY_SYSTEM_PROMPT.split(". ")[0].strip().lower()
WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")
STOPWORDS = frozenset(
    {
        *("a", "an", "and", "about", "are", "as", "at", "be", "call", "can", "could", "do"),
        *("for", "from", "get", "give", "how", "i", "in", "is", "it", "me", "my", "of", "on"),
        *("or", "please", "run", "show", "tell", "that", "the", "this", "to", "tool", "use"),
        *("using", "what", "whats", "with", "you"),
    }
)


def brain(
    model: str,
    messages: list[Any],
    tools: list[Any],
    *,
    tool_arguments: Mapping[str, Mapping[str, Any]],
    next_call_id: Callable[[], str],
) -> tuple[Completion, str]:
    """The deterministic stand-in model: summarize, quote tool results, call tools, echo."""
    if is_summary_request(messages):
        return Completion(model, summary_text(messages)), "summary"
    last = messages[-1] if messages else {}
    role = last.get("role") if isinstance(last, dict) else None
    if role == "tool":
        name = tool_name_for(messages, last.get("tool_call_id"))
        result = text_of(last.get("content"))[:200]
        return Completion(model, f"The {name} tool returned: {result}"), "ok"
    user_text = last_user_text(messages)
    if role == "user" and tools:
        chosen = mentioned_tool(user_text, tools)
        if chosen is not None:
            name, schema = chosen
            names = tool_names(tools)
            arguments = tool_arguments.get(name)
            if arguments is None:
                arguments = arguments_from_schema(schema, user_text, names)
            call = (next_call_id(), name, orjson.dumps(arguments).decode())
            completion = Completion(model, tool_calls=[call], finish_reason="tool_calls")
            return completion, "tool_call"
    if user_text:
        return Completion(model, f"You said: {user_text[:200]}"), "ok"
    return Completion(model, "Hello from the fault-injecting OpenAI server."), "ok"


def from_reply(model: str, reply: Reply, next_call_id: Callable[[], str]) -> Completion:
    """The completion a scripted ``Reply`` stands for (tool calls get fresh call ids)."""
    calls = [
        (next_call_id(), name, orjson.dumps(dict(arguments)).decode())
        for name, arguments in reply.tool_calls
    ]
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    return Completion(model, reply.text, reply.reasoning, calls, finish)


def text_of(content: Any) -> str:
    """Text of a message's ``content``: a string or a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def tool_names(tools: Iterable[Any]) -> tuple[str, ...]:
    names = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return tuple(names)


def is_summary_request(messages: list[Any]) -> bool:
    return any(
        isinstance(m, dict)
        and m.get("role") in ("system", "developer")
        and SUMMARY_MARKER in text_of(m.get("content")).lower()
        for m in messages
    )


def summary_text(messages: list[Any]) -> str:
    """A short, deterministic summary with the headings the summarizer asks for."""
    prompt = "\n".join(
        text_of(m.get("content"))
        for m in messages
        if isinstance(m, dict) and m.get("role") == "user"
    )
    start, end = prompt.find("<conversation>"), prompt.find("</conversation>")
    body = prompt[start + len("<conversation>") : end] if 0 <= start < end else prompt
    lines = [line for line in body.splitlines() if line.startswith("[")]
    users = [line for line in lines if line.startswith("[User]")]
    tools = sum(1 for line in lines if line.startswith("[Tool result"))
    assistant = sum(1 for line in lines if line.startswith("[Assistant"))
    goal = users[0].split(":", 1)[1].strip()[:120] if users else "continue the conversation"
    count = len(lines) or sum(1 for m in messages if isinstance(m, dict)) - 1
    return (
        f"Goal: {goal}\n"
        "Constraints and preferences: none stated.\n"
        f"Progress: summarized {count} earlier messages ({len(users)} from the user, "
        f"{assistant} from the assistant, {tools} tool results).\n"
        "Key decisions: none recorded.\n"
        "Open issues: none.\n"
        "Next steps: continue from the most recent messages."
    )


def tool_name_for(messages: list[Any], call_id: Any) -> str:
    """The name of the tool whose call ``call_id`` a tool message answers."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id") == call_id:
                function = call.get("function") or {}
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    return function["name"]
    return "tool"


def last_user_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return text_of(message.get("content")).strip()
    return ""


def mentioned_tool(text: str, tools: list[Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The offered tool the user names first (whole word, any case), with its schema."""
    best: tuple[int, str, Mapping[str, Any]] | None = None
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        name = function["name"]
        match = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE)
        if match and (best is None or match.start() < best[0]):
            schema = function.get("parameters")
            best = (match.start(), name, schema if isinstance(schema, Mapping) else {})
    return (best[1], best[2]) if best is not None else None


def argument_word(text: str, tool_names: Sequence[str]) -> str:
    """A plausible string argument from the prompt: its last capitalized word (a name, a
    city), else its last meaningful word, else ``"demo"``."""
    excluded = {name.lower() for name in tool_names}
    words = [
        (index, word)
        for index, word in enumerate(WORD_RE.findall(text))
        if word.lower() not in excluded and word.lower() not in STOPWORDS and len(word) > 1
    ]
    capitalized = [word for index, word in words if index > 0 and word[0].isupper()]
    if capitalized:
        return capitalized[-1]
    return words[-1][1] if words else "demo"


def arguments_from_schema(
    schema: Mapping[str, Any], text: str, tool_names: Sequence[str]
) -> dict[str, Any]:
    """Arguments for the schema's required properties, from their declared types."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    arguments: dict[str, Any] = {}
    for name in required if isinstance(required, list) else ():
        if isinstance(name, str):
            spec = properties.get(name)
            spec = spec if isinstance(spec, Mapping) else {}
            arguments[name] = value_for(spec, text, tool_names)
    return arguments


def value_for(spec: Mapping[str, Any], text: str, tool_names: Sequence[str]) -> Any:
    if "default" in spec:
        return spec["default"]
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return argument_word(text, tool_names)


def reasoning_for(messages: list[Any]) -> str:
    text = last_user_text(messages)[:100]
    return f"Thinking about the request: {text}" if text else "Thinking about the request."
