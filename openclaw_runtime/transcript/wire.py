"""Read and copy transcript messages the same way whether they are pydantic models or dicts.

Transcript hygiene is written against OpenClaw's wire format (``stopReason``, ``toolCallId``,
``partialJson``...). Messages reach it either as the pydantic models of
``openclaw_runtime.messages`` or as plain dicts read from a session file, and sometimes as
:class:`~openclaw_runtime.messages.OpaqueMessage` whose content is still raw dicts. These
helpers give one vocabulary over all three so the rules stay one implementation:

* :func:`wget` reads a wire key (camelCase field alias, or an unknown key kept as extra);
* :func:`wset` / :func:`wdel` return a *copy* with keys set or removed, never mutating;
* :func:`text_block` / :func:`coerce_blocks` build content blocks of the right kind for the
  message they go into (a model message gets block models, a dict gets dicts).

Plugin sanitizers can use the same helpers to handle both representations.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter

from ..messages import (
    ContentBlock,
    OpaqueMessage,
    TextContent,
    ToolResultMessage,
)

__all__ = [
    "coerce_blocks",
    "content_list",
    "is_typed_model",
    "make_tool_result",
    "role_of",
    "text_block",
    "wdel",
    "wget",
    "whas",
    "wset",
]

_MISSING: Any = object()
_BLOCK_ADAPTER: TypeAdapter[Any] = TypeAdapter(ContentBlock)
#: Model class → its wire-key map (:func:`_alias_map`), filled by :func:`wget`.
_MODEL_ALIASES: dict[type, dict[str, str]] = {}


@cache
def _alias_map(cls: type[BaseModel]) -> dict[str, str]:
    """Wire key → attribute name for one model class (both spellings accepted)."""
    mapping: dict[str, str] = {}
    for name, field in cls.model_fields.items():
        mapping[name] = name
        if field.alias:
            mapping[field.alias] = name
    return mapping


def wget(obj: Any, key: str, default: Any = None) -> Any:
    """The value of wire key ``key`` (e.g. ``"stopReason"``), or ``default``."""
    cls = type(obj)
    if cls is dict:
        return obj.get(key, default)
    # the hottest read of the sanitizer pipeline (hundreds per request): one dict look-up
    # per model class instead of a cached call and pydantic's ``model_fields_set`` property
    mapping = _MODEL_ALIASES.get(cls)
    if mapping is None:
        if not isinstance(obj, BaseModel):
            return default
        mapping = _MODEL_ALIASES[cls] = _alias_map(type(obj))
    attr = mapping.get(key)
    if attr is not None:
        value = getattr(obj, attr)
        if value is None and attr not in obj.__pydantic_fields_set__:
            return default
        return value
    extra = obj.__pydantic_extra__
    if extra:
        return extra.get(key, default)
    return default


def whas(obj: Any, key: str) -> bool:
    """Whether wire key ``key`` is present (set), like ``key in obj`` for a dict."""
    if type(obj) is dict:
        return key in obj
    if isinstance(obj, BaseModel):
        attr = _alias_map(type(obj)).get(key)
        if attr is not None:
            return attr in obj.model_fields_set
        extra = obj.__pydantic_extra__
        return extra is not None and key in extra
    return False


def role_of(message: Any) -> Any:
    """``message.role`` for dicts and models alike."""
    if type(message) is dict:
        return message.get("role")
    return getattr(message, "role", None)


def content_list(message: Any) -> list[Any] | None:
    """The content of a message when it is a list of blocks, else ``None``."""
    content = wget(message, "content")
    return content if isinstance(content, list) else None


def wset(obj: Any, **updates: Any) -> Any:
    """A copy of ``obj`` with wire keys set (``wset(m, stopReason="stop")``)."""
    if type(obj) is dict:
        return {**obj, **updates}
    if isinstance(obj, BaseModel):
        mapping = _alias_map(type(obj))
        copied = obj.model_copy()
        extra = copied.__pydantic_extra__
        for key, value in updates.items():
            attr = mapping.get(key)
            if attr is not None:
                if attr == "content" and is_typed_model(copied) and isinstance(value, list):
                    value = coerce_blocks(copied, value)
                copied.__dict__[attr] = value
                copied.__pydantic_fields_set__.add(attr)
            elif extra is not None:
                extra[key] = value
            else:
                raise TypeError(f"{type(obj).__name__} does not accept extra key {key!r}")
        return copied
    raise TypeError(f"cannot update a {type(obj).__name__}; expected a dict or a message model")


def wdel(obj: Any, *keys: str) -> Any:
    """A copy of ``obj`` without the given wire keys (absent keys are ignored)."""
    if type(obj) is dict:
        if not any(key in obj for key in keys):
            return obj
        return {k: v for k, v in obj.items() if k not in keys}
    if isinstance(obj, BaseModel):
        if not any(whas(obj, key) for key in keys):
            return obj
        mapping = _alias_map(type(obj))
        copied = obj.model_copy()
        for key in keys:
            attr = mapping.get(key)
            if attr is not None:
                field = type(obj).model_fields[attr]
                if field.is_required() or attr in type(obj)._always_written:  # type: ignore[attr-defined]
                    raise ValueError(f"cannot remove required field {key!r}")
                copied.__dict__[attr] = None
                copied.__pydantic_fields_set__.discard(attr)
            elif copied.__pydantic_extra__ is not None:
                copied.__pydantic_extra__.pop(key, None)
        return copied
    raise TypeError(f"cannot update a {type(obj).__name__}; expected a dict or a message model")


def is_typed_model(message: Any) -> bool:
    """A pydantic message of a known role (its content must hold block models)."""
    return isinstance(message, BaseModel) and not isinstance(message, OpaqueMessage)


def text_block(like: Any, text: str) -> Any:
    """A text block suited to the message ``like`` it will be placed in."""
    if is_typed_model(like):
        return TextContent(text=text)
    return {"type": "text", "text": text}


def coerce_blocks(like: Any, blocks: list[Any]) -> list[Any]:
    """Blocks converted to models when they go into a typed model message."""
    if not is_typed_model(like):
        return blocks
    if all(isinstance(block, BaseModel) for block in blocks):
        return blocks
    return [
        block if isinstance(block, BaseModel) else _BLOCK_ADAPTER.validate_python(block)
        for block in blocks
    ]


def make_tool_result(
    like: Any,
    *,
    tool_call_id: str,
    tool_name: str,
    text: str,
    details: Any,
    is_error: bool,
    timestamp: Any,
) -> Any:
    """A tool-result message of the same kind (model or dict) as ``like``."""
    if isinstance(like, BaseModel):
        return ToolResultMessage(
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            content=[TextContent(text=text)],
            details=details,
            is_error=is_error,
            timestamp=timestamp,
        )
    return {
        "role": "toolResult",
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "content": [{"type": "text", "text": text}],
        "details": details,
        "isError": is_error,
        "timestamp": timestamp,
    }
