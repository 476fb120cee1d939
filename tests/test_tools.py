"""Tool definitions, the ``@tool`` decorator, argument coercion and validation."""

from __future__ import annotations

import threading

import pytest

from openclaw_runtime.abort import AbortController
from openclaw_runtime.agent import (
    AgentTool,
    AgentToolResult,
    ToolArgumentError,
    tool,
    validate_tool_arguments,
)
from openclaw_runtime.agent.tools import coerce_tool_result
from openclaw_runtime.messages import ImageContent, TextContent, ToolCall


def schema(**properties):
    return {"type": "object", "properties": properties, "required": sorted(properties)}


def noop_tool(parameters) -> AgentTool:
    async def execute(*args):
        return None

    return AgentTool(name="t", description="", parameters=parameters, execute=execute)


def call(**arguments) -> ToolCall:
    return ToolCall(id="c", name="t", arguments=arguments)


@pytest.mark.parametrize(
    ("prop", "given", "expected"),
    [
        ({"type": "integer"}, "42", 42),
        ({"type": "integer"}, " -7 ", -7),
        ({"type": "integer"}, True, 1),
        ({"type": "integer"}, None, 0),
        ({"type": "integer"}, 3.0, 3.0),
        ({"type": "number"}, "2.5", 2.5),
        ({"type": "number"}, "1e3", 1000.0),
        ({"type": "number"}, "12", 12),
        ({"type": "boolean"}, "true", True),
        ({"type": "boolean"}, "false", False),
        ({"type": "boolean"}, 0, False),
        ({"type": "string"}, 12, "12"),
        ({"type": "string"}, False, "false"),
        ({"type": "string"}, None, ""),
        ({"type": "array", "items": {"type": "integer"}}, '[1, "2"]', [1, 2]),
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, '{"n": "5"}', {"n": 5}),
        ({"type": ["integer", "null"]}, None, None),
        ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, "7", 7),
        ({"type": "string"}, "already fine", "already fine"),
    ],
)
def test_coercion_of_almost_right_arguments(prop, given, expected):
    args = validate_tool_arguments(noop_tool(schema(x=prop)), call(x=given))
    assert args == {"x": expected}
    assert type(args["x"]) is type(expected)


@pytest.mark.parametrize(
    ("prop", "given"),
    [
        ({"type": "integer"}, "4.5"),
        ({"type": "integer"}, "forty"),
        ({"type": "number"}, "nan"),
        ({"type": "boolean"}, "yes"),
        ({"type": "array"}, "[not json"),
        ({"type": "string", "enum": ["a", "b"]}, "c"),
    ],
)
def test_uncoercible_arguments_are_rejected(prop, given):
    with pytest.raises(ToolArgumentError, match='Validation failed for tool "t"'):
        validate_tool_arguments(noop_tool(schema(x=prop)), call(x=given))


def test_validation_message_lists_every_violation_by_path():
    parameters = {
        "type": "object",
        "properties": {
            "user": {
                "type": "object",
                "properties": {"age": {"type": "integer", "minimum": 0}},
                "required": ["age", "name"],
            }
        },
        "required": ["user", "mode"],
    }
    with pytest.raises(ToolArgumentError) as info:
        validate_tool_arguments(noop_tool(parameters), call(user={"age": -3}))
    message = str(info.value)
    assert message.splitlines()[0] == 'Validation failed for tool "t":'
    assert "  - mode: 'mode' is a required property" in message
    assert "  - user.name: 'name' is a required property" in message
    assert "  - user.age: -3 is less than the minimum of 0" in message
    assert message.endswith('Received arguments:\n{\n  "user": {\n    "age": -3\n  }\n}')


def test_validation_never_mutates_the_tool_call():
    original = call(x="5")
    validate_tool_arguments(noop_tool(schema(x={"type": "integer"})), original)
    assert original.arguments == {"x": "5"}


def test_tool_names_are_validated():
    with pytest.raises(ValueError, match="invalid tool name 'has space'"):
        noop_tool({}).__class__(name="has space", description="", execute=lambda *a: None)
    with pytest.raises(ValueError, match="no execute function"):
        AgentTool(name="ok", description="")


@pytest.mark.anyio
async def test_tool_decorator_builds_schema_and_runs_sync_and_async():
    threads = []

    @tool
    def multiply(a: int, b: float = 2.0) -> float:
        """Multiply two numbers."""
        threads.append(threading.current_thread())
        return a * b

    @tool(name="fetch_page", execution_mode="sequential")
    async def fetch(url: str, signal=None) -> str:
        return f"{url} aborted={signal.aborted}"

    assert multiply.name == "multiply"
    assert multiply.description == "Multiply two numbers."
    assert multiply.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "number", "default": 2.0}},
        "required": ["a"],
    }
    assert await multiply.execute("c1", {"a": 3}, None, lambda r: None) == 6.0
    assert threads and threads[0] is not threading.main_thread()  # sync tools run off the loop

    controller = AbortController()
    assert fetch.name == "fetch_page"
    assert fetch.execution_mode == "sequential"
    assert "signal" not in fetch.parameters["properties"]
    assert (
        await fetch.execute("c2", {"url": "u"}, controller.signal, lambda r: None)
        == "u aborted=False"
    )


@pytest.mark.parametrize(
    ("value", "text", "details"),
    [
        ("plain", "plain", None),
        (None, "", None),
        ({"a": 1}, '{"a": 1}', {"a": 1}),
        ([1, 2], "[1, 2]", [1, 2]),
        (AgentToolResult(content=[TextContent(text="x")], details=7), "x", 7),
        ([TextContent(text="a"), ImageContent(data="d", mime_type="image/png")], "a", None),
    ],
)
def test_coerce_tool_result(value, text, details):
    result = coerce_tool_result(value)
    assert result.text() == text
    assert result.details == details
