"""The kernel's per-tool-call shortcuts (tool6), each against the code path it stands for.

* A batch of one tool call runs through ``_one``: the same steps in the same order as
  ``_sequential`` and ``_parallel`` take with one call, without their lists and closure, and
  without the mode check's loop. Every scenario runs through ``execute_tool_calls`` and
  through its previous body (kept here verbatim) and must give the same events (in order,
  every field), the same callback calls interleaved with them, the same result messages and
  the same ``terminate``.
* The loop reads the signal at its abort boundaries before awaiting ``stop_if_aborted``: an
  abort fired just before each boundary stops the run exactly there.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from typing import Any

import pytest

from openclaw_runtime.abort import AbortController
from openclaw_runtime.agent import tool_execution
from openclaw_runtime.agent.tool_execution import execute_tool_calls
from openclaw_runtime.agent.tools import AgentTool, AgentToolResult
from openclaw_runtime.agent.types import (
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    BeforeToolCallResult,
)
from openclaw_runtime.llm import Model
from openclaw_runtime.messages import AssistantMessage, TextContent, ToolCall

pytestmark = pytest.mark.anyio

MODEL = Model(id="m", name="m", api="fake", provider="fake")
SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def _plain(value: Any) -> Any:
    """A comparable form of an event or message (timestamps dropped: they are the clock's)."""
    if hasattr(value, "to_dict"):
        return ("model", type(value).__name__, _untimed(value.to_dict()))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            tuple((f.name, _plain(getattr(value, f.name))) for f in dataclasses.fields(value)),
        )
    if isinstance(value, list | tuple):
        return tuple(_plain(item) for item in value)
    if isinstance(value, dict):
        return tuple((key, _plain(item)) for key, item in value.items())
    return value


def _untimed(data: Any) -> Any:
    """``data`` without its ``timestamp`` keys, at any depth."""
    if isinstance(data, dict):
        return {key: _untimed(item) for key, item in data.items() if key != "timestamp"}
    if isinstance(data, list):
        return [_untimed(item) for item in data]
    return data


def _scenario(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    return {
        "outcome": rng.choice(["text", "result", "terminate", "raise", "none", "abort", "update"]),
        "lookup": rng.choice(
            ["found", "found", "missing", "deferred", "deferred-wrong", "deferred-raise"]
        ),
        "args": rng.choice([{"x": 1}, {"x": "2"}, {"x": "no"}, {}]),
        "prepare": rng.choice([None, "identity", "raise"]),
        "before": rng.choice([None, "allow", "block", "block-no-reason", "raise", "abort"]),
        "after": rng.choice([None, "keep", "override", "raise"]),
        "hide": rng.random() < 0.3,
        "mode": rng.choice([None, "sequential", "parallel"]),
        "config_mode": rng.choice(["parallel", "sequential"]),
        "pre_aborted": rng.random() < 0.1,
        "with_signal": rng.random() < 0.9,
    }


async def _run(case: dict[str, Any], run: Any = execute_tool_calls) -> tuple[list[Any], Any]:
    log: list[Any] = []
    controller = AbortController()
    signal = controller.signal if case["with_signal"] else None

    async def execute(call_id: str, args: dict[str, Any], sig: Any, on_update: Any) -> Any:
        log.append(("execute", call_id, dict(args)))
        outcome = case["outcome"]
        if outcome == "raise":
            raise RuntimeError("tool broke")
        if outcome == "none":
            return None
        if outcome == "abort":
            controller.abort("stop")
            return "after abort"
        if outcome == "update":
            on_update(AgentToolResult(content=[TextContent(text="half")]))
            return "updated"
        if outcome == "result":
            return AgentToolResult(content=[TextContent(text="r")], details={"k": [1, 2]})
        if outcome == "terminate":
            return AgentToolResult(content=[TextContent(text="t")], terminate=True)
        return f"ran {args}"

    prepare = None
    if case["prepare"] == "identity":
        prepare = lambda args: dict(args)  # noqa: E731
    elif case["prepare"] == "raise":

        def prepare(args: Any) -> dict[str, Any]:
            raise ValueError("bad prepare")

    tool = AgentTool(
        name="work",
        description="work",
        parameters=SCHEMA,
        execute=execute,
        execution_mode=case["mode"],
        prepare_arguments=prepare,
        hide_from_channel_progress=case["hide"],
    )
    tools = [tool] if case["lookup"] == "found" else []

    async def resolve(deferred: Any, sig: Any) -> Any:
        log.append(("resolve", deferred.tool_call.name))
        if case["lookup"] == "deferred-raise":
            raise LookupError("no such tool")
        if case["lookup"] == "deferred-wrong":
            return dataclasses.replace(tool, name="other")
        return tool if case["lookup"] == "deferred" else None

    async def before(gate: Any, sig: Any) -> Any:
        log.append(("before", gate.tool_call.id, dict(gate.args)))
        mode = case["before"]
        if mode == "raise":
            raise RuntimeError("gate broke")
        if mode == "abort":
            controller.abort("gate")
        if mode in ("block", "block-no-reason"):
            return BeforeToolCallResult(block=True, reason="no" if mode == "block" else None)
        return None

    async def after(done: Any, sig: Any) -> Any:
        log.append(("after", done.tool_call.id, done.is_error))
        mode = case["after"]
        if mode == "raise":
            raise RuntimeError("after broke")
        if mode == "override":
            return AfterToolCallResult(content=[TextContent(text="overridden")], is_error=False)
        return None

    config = AgentLoopConfig(
        model=MODEL,
        tool_execution=case["config_mode"],
        before_tool_call=before if case["before"] else None,
        after_tool_call=after if case["after"] else None,
        resolve_deferred_tool=resolve if case["lookup"].startswith("deferred") else None,
    )
    call = ToolCall(id="call_1", name="work", arguments=case["args"])
    message = AssistantMessage(content=[call], stop_reason="toolUse", timestamp=1)
    context = AgentContext("", [message], tools)
    if case["pre_aborted"]:
        controller.abort("early")

    async def emit(event: Any) -> None:
        log.append(("event", _plain(event)))

    batch = await run(context, message, config, signal, emit)
    return log, (_plain(batch.messages), batch.terminate, [t.name for t in context.tools])


async def _old_execute_tool_calls(
    context: AgentContext,
    message: AssistantMessage,
    config: AgentLoopConfig,
    signal: Any,
    emit: Any,
) -> Any:
    """``execute_tool_calls`` before tool6, verbatim."""
    batch = tool_execution._Batch(context, message, config, signal, emit)
    calls = message.tool_calls()
    sequential = config.tool_execution == "sequential"
    if not sequential:
        for call in calls:
            resolution = await batch.resolve(call)
            if resolution.tool is not None and resolution.tool.execution_mode == "sequential":
                sequential = True
                break
            if batch.aborted:
                break
    run_batch = tool_execution._sequential if sequential else tool_execution._parallel
    finalized, messages = await run_batch(batch, calls)
    terminate = bool(finalized) and all(done.result.terminate is True for done in finalized)
    return tool_execution.ToolBatchResult(messages, terminate)


CASES = [_scenario(seed) for seed in range(160)]


@pytest.mark.parametrize("case", CASES, ids=[f"seed{n}" for n in range(len(CASES))])
async def test_one_call_batch_matches_the_previous_code(
    case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await _run(case) == await _run(case, _old_execute_tool_calls)
    for general in (tool_execution._sequential, tool_execution._parallel):
        with monkeypatch.context() as patch:  # each general path with one call: the same
            patch.setattr(tool_execution, "_one", general)
            assert await _run(case) == await _run(case, _old_execute_tool_calls), general


async def test_every_outcome_and_lookup_is_covered() -> None:
    """The random table reaches every branch it is meant to compare."""
    for key in ("outcome", "lookup", "before", "after", "prepare"):
        seen = {case[key] for case in CASES}
        assert len(seen) >= 3, (key, seen)
    assert any(case["pre_aborted"] for case in CASES)
    assert any(not case["with_signal"] for case in CASES)


async def test_a_single_call_takes_the_one_call_path(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[str] = []
    original = tool_execution._one

    async def spy(batch: Any, calls: Any) -> Any:
        taken.append("one")
        return await original(batch, calls)

    monkeypatch.setattr(tool_execution, "_one", spy)
    for mode, config_mode in itertools.product([None, "sequential"], ["parallel", "sequential"]):
        case = {**_scenario(0), "outcome": "text", "lookup": "found", "args": {"x": 1}}
        case.update(mode=mode, config_mode=config_mode, before=None, after=None, prepare=None)
        case.update(pre_aborted=False, with_signal=True)
        log, (_messages, terminate, _) = await _run(case)
        assert ("execute", "call_1", {"x": 1}) in log and terminate is False
    assert taken == ["one"] * 4


# --------------------------------------------------------------------------- the loop's boundaries
# ``_LoopRun.run`` reads the signal at each of its five abort boundaries and only then awaits
# ``stop_if_aborted`` (tool6: no coroutine per boundary while the run is not aborted). An abort
# fired just before each boundary must stop the run exactly there.

from openclaw_runtime.agent.loop import run_agent_loop  # noqa: E402
from openclaw_runtime.agent.types import TurnUpdate  # noqa: E402
from openclaw_runtime.events import AssistantMessageEventStream, Done  # noqa: E402
from openclaw_runtime.messages import UserMessage  # noqa: E402


def _call_or_answer(context: Any) -> AssistantMessage:
    results = sum(1 for m in context.messages if getattr(m, "role", None) == "toolResult")
    if results:
        return AssistantMessage(content=[TextContent(text="done")], stop_reason="stop")
    call = ToolCall(id="call_1", name="work", arguments={"x": 1})
    return AssistantMessage(content=[call], stop_reason="toolUse")


_TURNS = ["poll", "model", "tool", "prepare", "stop?", "poll", "model", "prepare", "stop?", "poll"]

#: where the abort fires → the steps the run takes (callbacks and events), ending at the
#: boundary that must stop it (with that boundary skipped, the next step differs)
BOUNDARIES = {
    # a follow-up message arrived: stopped before its events (``while`` loop's top)
    "follow-up": [*_TURNS, "follow-poll", "abort"],
    # a steering message was injected: stopped before the model call
    "steer-message-end": ["poll", "steer-end", "abort"],
    # the turn ended: stopped before ``prepare_next_turn``
    "turn-end": ["poll", "model", "tool", "abort"],
    # ``prepare_next_turn`` ran: stopped before ``should_stop_after_turn``
    "prepare": ["poll", "model", "tool", "prepare", "abort"],
    # the poll after the last turn: stopped before the follow-up poll
    "last-poll": [*_TURNS, "abort"],
}


async def _aborted_at(where: str) -> list[str]:
    steps: list[str] = []
    controller = AbortController()
    polls = 0

    def fire(name: str) -> None:
        if name == where and not controller.signal.aborted:
            steps.append("abort")
            controller.abort("stop")

    async def execute(call_id: str, args: dict[str, Any], sig: Any, on_update: Any) -> Any:
        steps.append("tool")
        return "ok"

    async def steering() -> list[Any]:
        nonlocal polls
        polls += 1
        steps.append("poll")
        if polls == 1 and where == "steer-message-end":
            return [UserMessage(content="steer")]
        if polls == 3:
            fire("last-poll")
        return []

    async def follow_ups() -> list[Any]:
        steps.append("follow-poll")
        fire("follow-up")
        return [UserMessage(content="more")] if where == "follow-up" else []

    def prepare(turn: Any) -> TurnUpdate | None:
        steps.append("prepare")
        fire("prepare")
        return None

    def stop(turn: Any) -> bool:
        steps.append("stop?")
        return False

    def stream(model: Any, context: Any, options: Any) -> Any:
        steps.append("model")
        out = AssistantMessageEventStream()
        message = _call_or_answer(context)
        out.push(Done(message.stop_reason, message))  # type: ignore[arg-type]
        return out

    async def emit(event: Any) -> None:
        content = getattr(getattr(event, "message", None), "content", None)
        if event.type == "message_end" and content in ("steer", "more"):
            steps.append(f"{content}-end")
            fire("steer-message-end")
        if event.type == "turn_end":
            fire("turn-end")

    tool = AgentTool(name="work", description="w", parameters=SCHEMA, execute=execute)
    config = AgentLoopConfig(
        model=MODEL,
        get_steering_messages=steering,
        get_follow_up_messages=follow_ups,
        prepare_next_turn=prepare,
        should_stop_after_turn=stop,
    )
    new = await run_agent_loop(
        [UserMessage(content="go")],
        AgentContext("", [], [tool]),
        config,
        emit,
        stream_fn=stream,
        signal=controller.signal,
    )
    assert any(getattr(m, "stop_reason", None) == "aborted" for m in new[-2:])
    return steps


@pytest.mark.parametrize("where", list(BOUNDARIES))
async def test_an_abort_stops_the_loop_at_the_next_boundary(where: str) -> None:
    assert await _aborted_at(where) == BOUNDARIES[where]
