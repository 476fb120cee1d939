"""The request side of Gemini ``streamGenerateContent``: transcript → request body.

Pure functions following OpenClaw's Google adapter:

* the transcript is first made replayable (``_replay.prepare_replay_messages``);
* ``contents`` alternate ``user`` / ``model``; parts are ``text``, ``inlineData`` (images),
  ``functionCall`` and ``functionResponse`` (``{"output": ...}`` or ``{"error": ...}``);
  consecutive tool results share one user turn; Gemini 3 (and non-Gemini models behind the
  API) take result images inside ``functionResponse.parts``, older Gemini as a separate user
  turn after the results;
* thinking from the same provider and model is replayed as ``thought: true`` parts;
  ``thoughtSignature`` is replayed on text, thought and function-call parts, but only to the
  model that produced it and only when it is valid base64; other models see thinking as text;
* tools are ``functionDeclarations`` whose ``parameters`` went through
  ``clean_schema_for_gemini`` (``compat["tool_schema"] = "json_schema"`` sends the raw schema
  as ``parametersJsonSchema`` instead);
* ``generationConfig.thinkingConfig`` comes from ``StreamOptions.reasoning``: a token budget
  (Gemini 2.5) or a ``thinkingLevel`` (Gemini 3), ``includeThoughts: true``; with reasoning
  off a reasoning model gets the lowest setting it accepts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

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
from openclaw_runtime.providers.request_memo import RequestMemo, Taken
from openclaw_runtime.transcript.tool_call_ids import normalize_tool_call_ids

from ._replay import prepare_replay_messages
from ._schema import clean_schema_for_gemini

__all__ = [
    "DEFAULT_GOOGLE_BASE_URL",
    "GOOGLE_GENERATIVE_AI_API",
    "ContentsConversion",
    "build_request_body",
    "convert_messages",
    "convert_tools",
    "is_valid_thought_signature",
    "requires_tool_call_id",
    "resolve_thinking_config",
    "stream_url",
]

GOOGLE_GENERATIVE_AI_API = "google-generative-ai"
DEFAULT_GOOGLE_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_API_VERSION = "v1beta"
SYSTEM_PROMPT_CACHE_BOUNDARY = "\n<!-- OPENCLAW_CACHE_BOUNDARY -->\n"
TOOL_IMAGE_ONLY_TEXT = "(see attached image)"
TOOL_RESULT_IMAGE_TEXT = "Tool result image:"

_VERSION_SUFFIX = re.compile(r"/v\d+(?:(?:alpha|beta)\d*)?$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_GEMINI_MAJOR = re.compile(r"^gemini(?:-live)?-(\d+)")
_GEMINI_3_PRO = re.compile(r"^(?:google/)?gemini-3(?:\.\d+)?-pro")
_GEMINI_3_FLASH = re.compile(r"^(?:google/)?gemini-3(?:\.\d+)?-flash")
_TOOL_CHOICE_MODES = {"auto": "AUTO", "none": "NONE", "any": "ANY"}
_BUDGETS_2_5_PRO = {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}
_BUDGETS_2_5_FLASH = {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}


# --------------------------------------------------------------------------- model facts


def stream_url(base_url: str, model_id: str) -> str:
    """``{base}/v1beta/models/{model}:streamGenerateContent?alt=sse`` (a base that already
    names an API version, like OpenClaw's ``.../v1beta``, keeps it)."""
    base = (base_url or DEFAULT_GOOGLE_BASE_URL).rstrip("/")
    if not _VERSION_SUFFIX.search(base):
        base = f"{base}/{DEFAULT_API_VERSION}"
    name = model_id.removeprefix("models/")
    return f"{base}/models/{quote(name, safe='-._~')}:streamGenerateContent?alt=sse"


def requires_tool_call_id(model_id: str) -> bool:
    """Models behind the Gemini API that need explicit ids on calls and responses."""
    return model_id.startswith(("claude-", "gpt-oss-"))


def _gemini_major(model_id: str) -> int | None:
    match = _GEMINI_MAJOR.match(model_id.lower())
    return int(match.group(1)) if match else None


def _multimodal_function_response(model_id: str) -> bool:
    major = _gemini_major(model_id)
    return major is None or major >= 3


def is_valid_thought_signature(signature: str | None) -> bool:
    """Signatures are bytes on Google's side: only well-formed base64 is replayed."""
    if not signature:
        return False
    return len(signature) % 4 == 0 and bool(_BASE64.match(signature))


# --------------------------------------------------------------------------- thinking


def resolve_thinking_config(
    model: Model, reasoning: str | None, budgets: Mapping[str, int] | None = None
) -> dict[str, Any] | None:
    """``generationConfig.thinkingConfig`` for a reasoning model (``None`` for others)."""
    if not model.reasoning:
        return None
    model_id = model.id.lower()
    pro3, flash3 = bool(_GEMINI_3_PRO.match(model_id)), bool(_GEMINI_3_FLASH.match(model_id))
    if not reasoning or reasoning == "off":
        if pro3:
            return {"thinkingLevel": "LOW"}
        if flash3:
            return {"thinkingLevel": "MINIMAL"}
        return {"thinkingBudget": 0}
    effort = "high" if reasoning in ("xhigh", "max") else reasoning
    if pro3:
        return {
            "includeThoughts": True,
            "thinkingLevel": "LOW" if effort in ("minimal", "low") else "HIGH",
        }
    if flash3:
        return {"includeThoughts": True, "thinkingLevel": effort.upper()}
    if budgets and effort in budgets:
        budget = int(budgets[effort])
    elif "gemini-2.5-pro" in model.id:
        budget = _BUDGETS_2_5_PRO[effort]
    elif "gemini-2.5-flash" in model.id:
        budget = _BUDGETS_2_5_FLASH[effort]
    else:
        budget = -1  # dynamic: the model decides
    return {"includeThoughts": True, "thinkingBudget": budget}


# --------------------------------------------------------------------------- tools


def convert_tools(tools: Sequence[Tool], *, json_schema: bool = False) -> list[dict[str, Any]]:
    """``[{"functionDeclarations": [...]}]`` with Gemini-clean ``parameters``."""
    if not tools:
        return []
    declarations: list[dict[str, Any]] = []
    for tool in tools:
        declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if json_schema:
            declaration["parametersJsonSchema"] = dict(tool.parameters)
        else:
            declaration["parameters"] = clean_schema_for_gemini(dict(tool.parameters))
        declarations.append(declaration)
    return [{"functionDeclarations": declarations}]


# --------------------------------------------------------------------------- contents


def _inline_data(image: ImageContent) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.mime_type, "data": image.data}}


def _user_content(message: UserMessage) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        if not message.content.strip():
            return None  # Gemini rejects empty text parts
        return {"role": "user", "parts": [{"text": message.content}]}
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                parts.append({"text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(_inline_data(block))
    return {"role": "user", "parts": parts} if parts else None


def _model_content(message: AssistantMessage, model: Model) -> dict[str, Any] | None:
    same = message.provider == model.provider and message.model == model.id
    include_id = requires_tool_call_id(model.id)

    def signed(part: dict[str, Any], signature: str | None) -> dict[str, Any]:
        if same and is_valid_thought_signature(signature):
            part["thoughtSignature"] = signature
        return part

    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                parts.append(signed({"text": block.text}, block.text_signature))
        elif isinstance(block, ThinkingContent):
            if not block.thinking.strip():
                continue
            if same:
                parts.append(
                    signed({"thought": True, "text": block.thinking}, block.thinking_signature)
                )
            else:
                parts.append({"text": block.thinking})
        elif isinstance(block, ToolCall):
            call: dict[str, Any] = {"name": block.name, "args": block.arguments or {}}
            if include_id:
                call["id"] = block.id
            parts.append(signed({"functionCall": call}, block.thought_signature))
    return {"role": "model", "parts": parts} if parts else None


def _function_response(
    message: ToolResultMessage, model: Model
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``functionResponse`` part and the image parts that go beside or inside it."""
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    images = (
        [b for b in message.content if isinstance(b, ImageContent)]
        if "image" in model.input
        else []
    )
    value = text if text else (TOOL_IMAGE_ONLY_TEXT if images else "")
    response: dict[str, Any] = {
        "name": message.tool_name,
        "response": {"error": value} if message.is_error else {"output": value},
    }
    image_parts = [_inline_data(image) for image in images]
    if image_parts and _multimodal_function_response(model.id):
        response["parts"] = image_parts
        image_parts = []
    if requires_tool_call_id(model.id):
        response["id"] = message.tool_call_id
    return {"functionResponse": response}, image_parts


def convert_messages(
    messages: Sequence[Message], model: Model, *, memo: RequestMemo | None = None
) -> list[dict[str, Any]]:
    """Transcript messages as Gemini ``contents``.

    Where the model pairs calls and responses by id (``requires_tool_call_id``), the ids
    follow OpenClaw's Gemini replay rule (``toolCallIdMode: "strict"``): at most 40
    alphanumerics, collision-free, identical for a call and its response.

    With ``memo``, a request that resends the previous one's messages (or a part of them)
    converts only what it adds (``providers.request_memo``; ``ContentsConversion`` says why
    any unit converts alone). Models that take ids convert everything (the id rule's state
    spans the history).
    """
    if memo is not None and not requires_tool_call_id(model.id):
        key = (model.provider, model.api, model.id, tuple(sorted(model.input)))
        return list(memo.convert(messages, key, ContentsConversion(model)))
    return _converted(messages, model)


class ContentsConversion:
    """Gemini's conversion as the request memo needs it, for models that take no ids.

    Every unit (a message that is not a tool result, then the results after it) converts
    alone as it would in place: the replay transform starts over at every assistant turn
    and prompt (``providers.replay``), a run of results (and the image turns an older Gemini
    gets after it) ends at the next one, contents never merge, and no id is rewritten, so
    none is taken.
    """

    __slots__ = ("_model",)

    def __init__(self, model: Model) -> None:
        self._model = model

    def whole(self, messages: Sequence[Any]) -> tuple[list[dict[str, Any]], Taken]:
        """All contents; no id taken."""
        return _converted(messages, self._model), Taken({}, {})

    def part(self, units: Sequence[Any]) -> list[dict[str, Any]]:
        """The units' contents."""
        return _converted(units, self._model)

    def clean(self, unit: Sequence[Any], taken: Callable[[str], bool]) -> bool:
        """Any unit converts alone."""
        return True

    def joins(self, before: Any, after: Any) -> bool:
        """Contents never merge."""
        return False

    def settled(self, params: list[dict[str, Any]]) -> int:
        """Every one: a message converts the same whatever follows."""
        return len(params)


def _converted(messages: Sequence[Message], model: Model) -> list[dict[str, Any]]:
    """The contents of ``messages``, converted whole."""
    replayable = prepare_replay_messages(messages, model)
    if requires_tool_call_id(model.id):
        replayable = normalize_tool_call_ids(replayable, "strict")
    contents: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None
    image_turns: list[dict[str, Any]] = []

    def end_result_run() -> None:
        nonlocal results
        contents.extend(image_turns)
        image_turns.clear()
        results = None

    for message in replayable:
        if not isinstance(message, ToolResultMessage):
            end_result_run()
        if isinstance(message, UserMessage):
            content = _user_content(message)
            if content is not None:
                contents.append(content)
        elif isinstance(message, AssistantMessage):
            content = _model_content(message, model)
            if content is not None:
                contents.append(content)
        else:
            part, images = _function_response(message, model)
            if results is None:
                results = [part]
                contents.append({"role": "user", "parts": results})
            else:
                results.append(part)
            if images:
                image_turns.append(
                    {"role": "user", "parts": [{"text": TOOL_RESULT_IMAGE_TEXT}, *images]}
                )
    end_result_run()
    return contents


# --------------------------------------------------------------------------- request


def build_request_body(
    model: Model, context: Context, options: StreamOptions, *, memo: RequestMemo | None = None
) -> dict[str, Any]:
    """The JSON body of one ``streamGenerateContent`` request (``memo``: ``convert_messages``;
    its contents are shared, so a caller that changes the body copies them first)."""
    body: dict[str, Any] = {"contents": convert_messages(context.messages, model, memo=memo)}
    if context.system_prompt:
        text = context.system_prompt.replace(SYSTEM_PROMPT_CACHE_BOUNDARY, "\n")
        body["systemInstruction"] = {"parts": [{"text": text}]}
    if context.tools:
        json_schema = (model.compat or {}).get("tool_schema") == "json_schema"
        body["tools"] = convert_tools(context.tools, json_schema=json_schema)
        choice = options.extra.get("tool_choice")
        if isinstance(choice, str) and choice in _TOOL_CHOICE_MODES:
            body["toolConfig"] = {"functionCallingConfig": {"mode": _TOOL_CHOICE_MODES[choice]}}
    generation: dict[str, Any] = {}
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    if options.max_tokens is not None:
        generation["maxOutputTokens"] = options.max_tokens
    if options.stop:
        generation["stopSequences"] = list(options.stop)
    thinking = resolve_thinking_config(model, options.reasoning, options.thinking_budgets)
    if thinking is not None:
        generation["thinkingConfig"] = thinking
    if generation:
        body["generationConfig"] = generation
    extra = options.extra.get("body")
    if isinstance(extra, Mapping):
        body.update(extra)
    return body
