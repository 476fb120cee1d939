"""The per-tool-call fast paths give what the full paths give.

* Argument validation: ``flat_valid_copy`` answers only when ``jsonschema`` would say valid,
  and ``validate_tool_arguments`` returns the same arguments (or raises the same error) with
  the fast path switched off, over a table of schemas and arguments.
* Quiet tools: a tool whose ``execute`` never calls ``on_update`` (``@tool`` without an
  ``on_update`` parameter) runs without the update pump and task group, with the same
  events and result messages as through the pump — results, errors, ``None``, aborts.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import anyio
import anyio.lowlevel
import jsonschema
import pytest

from openclaw_runtime.abort import AbortController, TurnHandoff
from openclaw_runtime.agent import AgentTool, flat_args, tool, tool_execution
from openclaw_runtime.agent.tool_execution import execute_tool_calls
from openclaw_runtime.agent.tools import (
    AgentToolResult,
    ToolArgumentError,
    reports_updates,
    validate_tool_arguments,
)
from openclaw_runtime.agent.types import AgentContext, AgentLoopConfig
from openclaw_runtime.events import to_jsonable
from openclaw_runtime.messages import AssistantMessage, TextContent, ToolCall
from openclaw_runtime.testing import fake_model

FLAT = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "where"},
        "count": {"type": "integer", "default": 1},
        "ratio": {"type": "number", "title": "Ratio"},
        "force": {"type": "boolean"},
        "note": {"type": "null"},
    },
    "required": ["path"],
}
CLOSED = {**FLAT, "additionalProperties": False}

SCHEMAS: list[dict[str, Any]] = [
    FLAT,
    CLOSED,
    {"type": "object", "properties": {}},
    {"type": "object"},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]},
    # keywords the fast path does not know: always the full path
    {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}},
    {"type": "object", "properties": {"a": {"type": "string", "minLength": 3}}},
    {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 2},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
    {"type": ["object"], "properties": {"a": {"type": "string"}}},
]

ARGUMENTS: list[Any] = [
    {},
    {"path": "a.txt"},
    {"path": "a.txt", "count": 3, "ratio": 0.5, "force": True, "note": None},
    {"path": "a.txt", "count": 3.0},
    {"path": "a.txt", "count": True},
    {"path": "a.txt", "ratio": False},
    {"path": "a.txt", "ratio": 2},
    {"path": "a.txt", "force": 1},
    {"path": "a.txt", "count": "3"},
    {"path": 7},
    {"path": "a.txt", "extra": "x"},
    {"path": "a.txt", "extra": [1, 2]},
    {"path": "a.txt", "note": "not null"},
    {"path": ["a"]},
    {"path": {"nested": "x"}},
    {"a": "xyz"},
    {"a": "x"},
    {"a": None},
    {"a": 1, "b": 2},
    {"a": ["x"]},
    {"count": 1},
]

# arguments the fast path must answer (and jsonschema accepts): it is really taken
CERTAIN = [
    (FLAT, {"path": "a.txt"}),
    (FLAT, {"path": "a.txt", "count": 3, "ratio": 0.5, "force": True, "note": None}),
    (FLAT, {"path": "a.txt", "ratio": 2}),
    (FLAT, {"path": "a.txt", "extra": "x"}),
    (CLOSED, {"path": "a.txt", "count": 3}),
    (SCHEMAS[2], {}),
    (SCHEMAS[3], {"anything": 1}),
]


def _untimed(value: Any) -> Any:
    """``value`` without its ``timestamp`` fields (the two runs happen at different times)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _call(arguments: Any) -> ToolCall:
    return ToolCall(id="c1", name="t", arguments=arguments)


def _tool(schema: dict[str, Any]) -> AgentTool:
    async def execute(*_: Any) -> str:
        return "ok"

    return AgentTool(name="t", description="t", parameters=schema, execute=execute)


def _outcome(schema: dict[str, Any], arguments: Any) -> Any:
    try:
        return ("ok", validate_tool_arguments(_tool(schema), _call(arguments)))
    except ToolArgumentError as exc:
        return ("error", str(exc))


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_the_fast_path_answers_only_for_valid_arguments(schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    for arguments in ARGUMENTS:
        certain = flat_args.flat_valid_copy(schema, arguments)
        if certain is not None:
            assert validator.is_valid(arguments), (schema, arguments)
            assert certain == copy.deepcopy(arguments)
            assert certain is not arguments


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_validation_gives_the_same_with_the_fast_path_off(
    schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = [_outcome(schema, arguments) for arguments in ARGUMENTS]
    monkeypatch.setattr("openclaw_runtime.agent.tools.flat_valid_copy", lambda *_: None)
    slow = [_outcome(schema, arguments) for arguments in ARGUMENTS]
    assert fast == slow


@pytest.mark.parametrize(("schema", "arguments"), CERTAIN)
def test_flat_arguments_of_a_flat_schema_take_the_fast_path(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    assert flat_args.flat_valid_copy(schema, arguments) == arguments


def test_the_returned_arguments_are_a_copy() -> None:
    arguments = {"path": "a.txt"}
    checked = validate_tool_arguments(_tool(FLAT), _call(arguments))
    checked["path"] = "changed"
    assert arguments == {"path": "a.txt"}


def test_a_schema_changed_in_place_is_a_new_plan_only_as_a_new_object() -> None:
    # like the validator cache: a plan is kept per schema object
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert flat_args.flat_valid_copy(schema, {"a": "x"}) == {"a": "x"}
    other = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert flat_args.flat_valid_copy(other, {"a": "x"}) is None


# --------------------------------------------------------------------------- quiet tools


def test_tool_marks_a_function_without_on_update_as_quiet() -> None:
    @tool
    async def quiet(path: str) -> str:
        """Quiet."""
        return path

    @tool
    async def chatty(path: str, on_update: Any) -> str:
        """Chatty."""
        return path

    assert not reports_updates(quiet.execute)
    assert reports_updates(chatty.execute)

    async def plain(*_: Any) -> str:
        return ""

    assert reports_updates(plain)

    @functools.wraps(quiet.execute)
    async def wrapper(call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        on_update(AgentToolResult(content=[TextContent(text="wrapped progress")]))
        return await quiet.execute(call_id, args, signal, on_update)

    assert reports_updates(wrapper)  # attributes copied by ``wraps`` do not make it quiet


class _Gate:
    def __init__(self) -> None:
        self.started = anyio.Event()


def _behaviours(gate: _Gate) -> dict[str, Any]:
    async def text(path: str) -> str:
        return f"contents of {path}"

    async def result(path: str) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text=path)], details={"n": 1}, terminate=True)

    async def nothing(path: str) -> None:
        return None

    async def fails(path: str) -> str:
        raise RuntimeError(f"cannot read {path}")

    async def secret(path: str) -> str:
        return "key sk-abcdefghijklmnopqrstuvwxyz0123456789"

    async def waits(path: str) -> str:
        gate.started.set()
        await anyio.sleep_forever()
        return "unreachable"

    return {f.__name__: f for f in (text, result, nothing, fails, secret, waits)}


async def _run(func: Any, *, quiet: bool) -> tuple[list[Any], list[Any], bool]:
    built = tool(func, name="t")
    execute = built.execute
    if not quiet:
        # the same function, not marked: through the update pump and its task group
        async def unmarked(*args: Any) -> Any:
            return await execute(*args)

        built.execute = unmarked
    assert reports_updates(built.execute) is not quiet
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(_untimed(to_jsonable(event)))

    controller = AbortController()
    message = AssistantMessage(
        content=[ToolCall(id="c1", name="t", arguments={"path": "a.txt"})],
        api="fake",
        provider="fake",
        model="m",
        stop_reason="toolUse",
    )
    config = AgentLoopConfig(model=fake_model())
    context = AgentContext("", [message], [built])
    batch: list[Any] = []

    async def go() -> None:
        batch.append(await execute_tool_calls(context, message, config, controller.signal, emit))

    with anyio.fail_after(10):
        if func.__name__ != "waits":
            await go()
        else:
            async with anyio.create_task_group() as tg:
                tg.start_soon(go)
                await func.gate.started.wait()
                controller.abort()
    (done,) = batch
    return events, [_untimed(m.to_dict()) for m in done.messages], done.terminate


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["text", "result", "nothing", "fails", "secret", "waits"])
async def test_a_quiet_tool_gives_what_the_pump_gives(name: str) -> None:
    outcomes = []
    for quiet in (True, False):
        gate = _Gate()
        func = _behaviours(gate)[name]
        func.gate = gate
        outcomes.append(await _run(func, quiet=quiet))
    assert outcomes[0] == outcomes[1]
    events, messages, _ = outcomes[0]
    assert [e["type"] for e in events] == [
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
    ]
    if name == "waits":
        assert messages[0]["content"] == [{"type": "text", "text": "Operation aborted"}]
    if name == "secret":
        assert "sk-abcdefghijklmnopqrstuvwxyz0123456789" not in str(messages)


@pytest.mark.anyio
async def test_a_quiet_tool_runs_without_a_task_group(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_task_group() -> Any:
        raise AssertionError("a quiet tool needs no task group")

    monkeypatch.setattr(tool_execution.anyio, "create_task_group", no_task_group)
    gate = _Gate()
    func = _behaviours(gate)["text"]
    _events, messages, _ = await _run(func, quiet=True)
    assert messages[0]["content"] == [{"type": "text", "text": "contents of a.txt"}]


@pytest.mark.anyio
async def test_updates_of_a_tool_that_reports_them_still_arrive() -> None:
    async def chatty(path: str, on_update: Any) -> str:
        """Chatty."""
        on_update(AgentToolResult(content=[TextContent(text="half")]))
        await anyio.lowlevel.checkpoint()
        on_update(AgentToolResult(content=[TextContent(text="all")]))
        return path

    events, _, _ = await _run(chatty, quiet=False)
    assert [e["type"] for e in events][:4] == [
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_update",
        "tool_execution_end",
    ]


# --------------------------------------------------------------------------- linked scopes


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("reason", "ignore_handoff", "cancelled"),
    [
        (None, False, True),
        (TurnHandoff(), False, True),
        (TurnHandoff(), True, False),
        ({"turnHandoff": True}, True, False),
        ("stop", True, True),
    ],
)
@pytest.mark.parametrize("already", [False, True])
async def test_a_linked_scope_is_cancelled_by_the_abort(
    reason: Any, ignore_handoff: bool, cancelled: bool, already: bool
) -> None:
    controller = AbortController()
    if already:
        controller.abort(reason)
    reached: list[str] = []
    with anyio.fail_after(10):
        with controller.signal.linked_cancel_scope(ignore_handoff=ignore_handoff) as scope:
            assert isinstance(scope, anyio.CancelScope)
            if not already:
                controller.abort(reason)
            await anyio.lowlevel.checkpoint()
            reached.append("after the abort")
    assert scope.cancelled_caught is cancelled
    assert reached == ([] if cancelled else ["after the abort"])


@pytest.mark.anyio
async def test_a_linked_scope_lets_errors_through_and_unlinks_on_exit() -> None:
    controller = AbortController()
    with (
        pytest.raises(RuntimeError, match="inside"),
        controller.signal.linked_cancel_scope() as scope,
    ):
        raise RuntimeError("inside")
    controller.abort()  # after the exit: the scope is no longer linked
    assert not scope.cancel_called
    with controller.signal.linked_cancel_scope() as later:
        await anyio.lowlevel.checkpoint()  # already aborted: cancelled at once
    assert later.cancelled_caught
