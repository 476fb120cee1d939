"""Agent tools: the definition, results, the ``@tool`` decorator and argument validation.

Models emit arguments that are almost right (numbers as strings, arrays serialized as JSON
text). Validation first applies the same conservative coercions OpenClaw does, then checks the
JSON schema; a failure becomes an error tool result the model can read and correct, with every
violation listed by path.
"""

from __future__ import annotations

import copy
import inspect
import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_type_hints

import anyio.to_thread
from pydantic import TypeAdapter, create_model

from .._json import MAX_UNTRUSTED_JSON_DEPTH, json_depth_exceeds, loads_untrusted
from ..abort import AbortSignal
from ..llm import Tool
from ..messages import ContentBlock, ImageContent, TextContent, ToolCall, built_unvalidated
from ..redaction import redact, redact_data
from .flat_args import flat_valid_copy

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "ToolArgumentError",
    "ToolExecutionMode",
    "ToolUpdateCallback",
    "coerce_tool_result",
    "error_tool_result",
    "redact_tool_result",
    "reports_updates",
    "tool",
    "validate_tool_arguments",
]

ToolExecutionMode: TypeAlias = Literal["parallel", "sequential"]


@dataclass(slots=True)
class AgentToolResult:
    """What a tool returns: content for the model, details for logs and UIs."""

    content: list[ContentBlock] = field(default_factory=list)
    details: Any = None
    terminate: bool | None = None

    def text(self) -> str:
        """The text content joined by newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


ToolUpdateCallback: TypeAlias = Callable[[AgentToolResult], None]
ToolExecuteFn: TypeAlias = Callable[
    [str, dict[str, Any], AbortSignal | None, ToolUpdateCallback], Awaitable[Any]
]

#: Set on an ``execute`` function that never calls its ``on_update``, to the function itself
#: (so a wrapper made with ``functools.wraps``, which copies attributes, is not taken for
#: quiet); ``@tool`` sets it when the decorated function takes no ``on_update``. The loop runs
#: such a tool without the machinery that forwards progress updates while it runs (a task
#: group and a pump task: event-loop round trips on every call).
QUIET_EXECUTE_ATTR = "_openclaw_never_updates"


def reports_updates(execute: Any) -> bool:
    """May ``execute`` call its ``on_update``? (Yes unless it is marked as never doing so.)"""
    return getattr(execute, QUIET_EXECUTE_ATTR, None) is not execute


@dataclass(slots=True)
class AgentTool(Tool):
    """A tool the agent can run.

    ``execute(tool_call_id, args, signal, on_update)`` is awaited with validated arguments and
    may return an ``AgentToolResult``, a string, or content blocks. Raise to report failure:
    the message becomes an error tool result. The loop cancels a running tool when the run is
    aborted (a turn handoff excepted).
    """

    execute: ToolExecuteFn | None = None
    label: str = ""
    execution_mode: ToolExecutionMode | None = None
    prepare_arguments: Callable[[Any], dict[str, Any]] | None = None
    hide_from_channel_progress: bool = False
    #: offered only when the run's sender is the owner (``openclaw_runtime.toolpolicy``)
    owner_only: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.name):
            raise ValueError(
                f"invalid tool name {self.name!r}: use 1-64 characters of [A-Za-z0-9_-]"
            )
        if self.execute is None:
            raise ValueError(f"tool {self.name!r} has no execute function")
        if not self.label:
            self.label = self.name


def error_tool_result(message: str) -> AgentToolResult:
    """The result the loop records when a tool call could not run or failed."""
    return AgentToolResult(content=[TextContent(text=message)], details={})


def redact_tool_result(result: AgentToolResult) -> AgentToolResult:
    """``result`` with secrets masked in its text and details (itself when nothing matched).

    Tools print environments and config files; what they print goes to the model, the
    transcript and events, so credentials are masked once, here (``openclaw_runtime.redaction``).
    """
    content: list[ContentBlock] = []
    changed = False
    for block in result.content:
        if isinstance(block, TextContent):
            text = redact(block.text)
            if text is not block.text:
                block = block.model_copy(update={"text": text})
                changed = True
        content.append(block)
    details = redact_data(result.details)
    if not changed and details is result.details:
        return result
    return AgentToolResult(content=content, details=details, terminate=result.terminate)


def _text_block(text: str) -> TextContent:
    """``TextContent(text=text)`` for an exact ``str``, built without validating it again."""
    return built_unvalidated(
        TextContent, {"type": "text", "text": text, "text_signature": None}, {"type", "text"}
    )


def coerce_tool_result(value: Any) -> AgentToolResult:
    """Normalize what a tool returned into an ``AgentToolResult``."""
    if isinstance(value, AgentToolResult):
        return value
    if value is None:
        return AgentToolResult(content=[], details=None)
    if type(value) is str:  # the usual return: validating a ``str`` as ``str`` changes nothing
        return AgentToolResult(content=[_text_block(value)])
    if isinstance(value, str):
        return AgentToolResult(content=[TextContent(text=value)])
    if isinstance(value, TextContent | ImageContent):
        return AgentToolResult(content=[value])
    if isinstance(value, list) and all(isinstance(v, TextContent | ImageContent) for v in value):
        return AgentToolResult(content=list(value))
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return AgentToolResult(content=[TextContent(text=text)], details=value)


# --------------------------------------------------------------------------- @tool decorator


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
    owner_only: bool = False,
) -> Any:
    """Turn a typed Python function into an ``AgentTool``.

    The JSON schema comes from the signature (via pydantic), the description from the
    docstring. Parameters named ``signal`` and ``on_update`` are injected, not exposed to the
    model. Sync functions run in a worker thread so they cannot stall the event loop.
    ``owner_only=True``: the tool policy offers it only when the sender is the owner.
    """

    def build(func: Callable[..., Any]) -> AgentTool:
        hints = get_type_hints(func)
        params = inspect.signature(func).parameters
        injected = {"signal", "on_update"}
        fields: dict[str, Any] = {}
        for pname, param in params.items():
            if pname in injected:
                continue
            annotation = hints.get(pname, Any)
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, default)
        args_model = create_model(f"{func.__name__}_args", **fields)
        schema = args_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        adapter = TypeAdapter(args_model)
        is_async = inspect.iscoroutinefunction(func)
        wants_signal = "signal" in params
        wants_update = "on_update" in params

        async def execute(
            tool_call_id: str,
            args: dict[str, Any],
            signal: AbortSignal | None,
            on_update: ToolUpdateCallback,
        ) -> Any:
            parsed = adapter.validate_python(args)
            kwargs = {k: getattr(parsed, k) for k in fields}
            if wants_signal:
                kwargs["signal"] = signal
            if wants_update:
                kwargs["on_update"] = on_update
            if is_async:
                return await func(**kwargs)
            return await anyio.to_thread.run_sync(lambda: func(**kwargs))

        if not wants_update:  # nothing can call ``on_update``: no progress to forward
            setattr(execute, QUIET_EXECUTE_ATTR, execute)
        doc = inspect.getdoc(func) or ""
        return AgentTool(
            name=name or func.__name__,
            description=description if description is not None else doc,
            parameters=schema,
            execute=execute,
            execution_mode=execution_mode,
            owner_only=owner_only,
        )

    return build(fn) if fn is not None else build


# --------------------------------------------------------------------------- validation


class ToolArgumentError(ValueError):
    """The model's arguments do not satisfy the tool's schema; the text is model-readable."""


_validator_cache: dict[int, tuple[Mapping[str, Any], Any]] = {}
_INTEGER_RE = re.compile(r"^[+-]?\d+$")
_NUMBER_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$", re.IGNORECASE)


def validate_tool_arguments(tool_def: Tool, tool_call: ToolCall) -> dict[str, Any]:
    """Coerce and validate ``tool_call.arguments`` against ``tool_def.parameters``.

    Returns the (coerced) arguments; raises ``ToolArgumentError`` listing every violation.
    The tool call itself is never modified.
    """
    schema = tool_def.parameters
    certain = flat_valid_copy(schema, tool_call.arguments)
    if certain is not None:  # flat arguments of a flat schema: valid without jsonschema
        return certain
    if json_depth_exceeds(tool_call.arguments, MAX_UNTRUSTED_JSON_DEPTH):
        # the model's JSON: deeper than this, copying and validating it would recurse too far
        raise ToolArgumentError(
            f'Validation failed for tool "{tool_call.name}": the arguments are nested deeper '
            f"than {MAX_UNTRUSTED_JSON_DEPTH} levels"
        )
    args = copy.deepcopy(tool_call.arguments)
    validator = _validator_for(schema)
    if validator.is_valid(args):
        return args
    coerced = _coerce(args, schema)
    errors = sorted(validator.iter_errors(coerced), key=lambda e: list(e.absolute_path))
    if not errors:
        return coerced
    lines = "\n".join(f"  - {_error_path(e)}: {e.message}" for e in errors)
    received = json.dumps(tool_call.arguments, indent=2, ensure_ascii=False, default=str)
    raise ToolArgumentError(
        f'Validation failed for tool "{tool_call.name}":\n{lines}\n\n'
        f"Received arguments:\n{received}"
    )


def _validator_for(schema: Mapping[str, Any]) -> Any:
    cached = _validator_cache.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    import jsonschema  # lazy: start-up time (≈ 25 ms; only a tool call with a schema needs it)

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = cls(schema)
    if len(_validator_cache) > 1024:
        _validator_cache.clear()
    _validator_cache[id(schema)] = (schema, validator)
    return validator


def _error_path(error: Any) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        match = re.match(r"'([^']+)' is a required property", error.message)
        if match:
            return f"{path}.{match.group(1)}" if path else match.group(1)
    return path or "root"


def _schema_types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    return []


def _matches_type(value: Any, kind: str) -> bool:
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return False


def _parse_number(text: str) -> float | None:
    stripped = text.strip()
    if not stripped or not _NUMBER_RE.match(stripped):
        return None
    number = float(stripped)
    return number if math.isfinite(number) else None


def _coerce_primitive(value: Any, kind: str) -> Any:
    if kind in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, bool):
            return 1 if value else 0
        if isinstance(value, str):
            number = _parse_number(value)
            if number is not None:
                if kind == "integer":
                    return int(number) if number.is_integer() else value
                return int(number) if _INTEGER_RE.match(value.strip()) else number
        return value
    if kind == "boolean":
        if value is None:
            return False
        if value in ("true", "false"):
            return value == "true"
        if isinstance(value, int | float) and not isinstance(value, bool) and value in (0, 1):
            return value == 1
        return value
    if kind == "string":
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        return value
    if kind == "null":
        return None if value in ("", 0) or value is False else value
    if kind in ("array", "object") and isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("[" if kind == "array" else "{"):
            try:
                parsed = loads_untrusted(stripped)  # the model's text: bounded, never raises
            except ValueError:
                return value
            if _matches_type(parsed, kind):
                return parsed
    return value


def _coerce(value: Any, schema: Mapping[str, Any]) -> Any:
    if not isinstance(schema, Mapping):
        return value
    for nested in schema.get("allOf", ()) or ():
        value = _coerce(value, nested)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                candidate = _coerce(copy.deepcopy(value), option)
                if isinstance(option, Mapping) and _validator_for(option).is_valid(candidate):
                    value = candidate
                    break
    kinds = _schema_types(schema)
    if kinds and not any(_matches_type(value, kind) for kind in kinds):
        for kind in kinds:
            candidate = _coerce_primitive(value, kind)
            if candidate is not value:
                value = candidate
                break
    if isinstance(value, dict) and (not kinds or "object" in kinds):
        properties = schema.get("properties") or {}
        extra_schema = schema.get("additionalProperties")
        for key, item in list(value.items()):
            if key in properties:
                value[key] = _coerce(item, properties[key])
            elif isinstance(extra_schema, Mapping):
                value[key] = _coerce(item, extra_schema)
    if isinstance(value, list) and (not kinds or "array" in kinds):
        items = schema.get("items")
        if isinstance(items, list):
            for i, item_schema in enumerate(items[: len(value)]):
                value[i] = _coerce(value[i], item_schema)
        elif isinstance(items, Mapping):
            for i, item in enumerate(value):
                value[i] = _coerce(item, items)
    return value
