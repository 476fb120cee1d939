"""Where a tool batch reads the abort signal (``_Batch.aborted``), each read point pinned.

One case per read point, each with the outcome the signal decides there: the mode check's
resolution loop, ``prepare`` (a resolver's error, after ``before_tool_call``, before the call
is prepared), ``run`` (a call prepared before a later call's gate aborted), and the
sequential and parallel loops' breaks. Asyncio and trio.
"""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.abort import AbortController
from openclaw_runtime.agent.tool_execution import execute_tool_calls
from openclaw_runtime.agent.tools import AgentTool
from openclaw_runtime.agent.types import AgentContext, AgentLoopConfig, BeforeToolCallResult
from openclaw_runtime.llm import Model
from openclaw_runtime.messages import AssistantMessage, ToolCall

pytestmark = pytest.mark.anyio

MODEL = Model(id="m", name="m", api="fake", provider="fake")
SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}}


async def _batch(
    calls: int,
    *,
    mode: str = "parallel",
    abort_in: str | None = None,
    at: int = 1,
    pre_aborted: bool = False,
    deferred: str | None = None,
    hide: bool = False,
) -> tuple[list[Any], list[str]]:
    """Run ``calls`` calls of one tool; abort in ``abort_in`` (``execute``, ``before``,
    ``resolve``) of call number ``at``. Returns the log and the result texts."""
    log: list[Any] = []
    controller = AbortController()

    async def execute(call_id: str, args: dict[str, Any], sig: Any, on_update: Any) -> Any:
        log.append(("execute", call_id))
        if abort_in == "execute" and call_id == f"c{at}":
            controller.abort("stop")
        return f"ran {call_id}"

    tool = AgentTool(
        name="work",
        description="work",
        parameters=SCHEMA,
        execute=execute,
        hide_from_channel_progress=hide,
    )

    async def before(gate: Any, sig: Any) -> Any:
        log.append(("before", gate.tool_call.id))
        if abort_in in ("before", "before-block") and gate.tool_call.id == f"c{at}":
            controller.abort("gate")
        return BeforeToolCallResult(block=True, reason="no") if abort_in == "before-block" else None

    async def resolve(context: Any, sig: Any) -> Any:
        log.append(("resolve", context.tool_call.id))
        if abort_in == "resolve" and context.tool_call.id == f"c{at}":
            controller.abort("resolver")
        if deferred == "raise":
            raise LookupError("no such tool")
        return tool if deferred == "ok" else None

    config = AgentLoopConfig(
        model=MODEL,
        tool_execution=mode,  # type: ignore[arg-type]
        before_tool_call=before,
        resolve_deferred_tool=resolve if deferred else None,
    )
    message = AssistantMessage(
        content=[
            ToolCall(id=f"c{n}", name="work", arguments={"x": n}) for n in range(1, calls + 1)
        ],
        stop_reason="toolUse",
        timestamp=1,
    )
    context = AgentContext("", [message], [] if deferred else [tool])
    if pre_aborted:
        controller.abort("early")

    async def emit(event: Any) -> None:
        hidden = getattr(event, "hide_from_channel_progress", None)
        log.append((event.type, getattr(event, "tool_call_id", None), hidden))

    batch = await execute_tool_calls(context, message, config, controller.signal, emit)
    texts = [m.content[0].text for m in batch.messages]  # type: ignore[union-attr]
    return log, texts


async def test_the_resolution_loop_stops_at_an_abort() -> None:
    log, texts = await _batch(3, abort_in="resolve", at=1, deferred="none")
    assert [e for e in log if e[0] == "resolve"] == [("resolve", "c1")]
    assert texts == ["Tool work not found"]  # and the parallel loop broke after it


async def test_a_resolver_error_after_an_abort_reads_as_the_abort() -> None:
    _, texts = await _batch(1, deferred="raise", pre_aborted=True)
    assert texts == ["Operation aborted"]
    _, texts = await _batch(1, deferred="raise")
    assert texts != ["Operation aborted"]


async def test_prepare_refuses_after_the_gate_aborts() -> None:
    log, texts = await _batch(1, abort_in="before", hide=True)
    assert ("execute", "c1") not in log
    assert texts == ["Operation aborted"]
    assert ("tool_execution_end", "c1", True) in log  # refused by ``prepare``: hide kept


async def test_an_abort_outranks_the_gate_s_block() -> None:
    _, texts = await _batch(1, abort_in="before-block")
    assert texts == ["Operation aborted"]


async def test_prepare_refuses_when_already_aborted() -> None:
    log, texts = await _batch(1, pre_aborted=True, hide=True)
    assert ("execute", "c1") not in log
    assert ("tool_execution_end", "c1", True) in log  # ``prepare``'s refusal, not ``run``'s
    assert texts == ["Operation aborted"]


async def test_a_prepared_call_does_not_run_after_a_later_gate_aborts() -> None:
    log, texts = await _batch(2, abort_in="before", at=2)
    assert [e for e in log if e[0] == "execute"] == []
    assert texts == ["Operation aborted"] * 2  # the first by ``run``, the second by ``prepare``
    assert [e[1] for e in log if e[0] == "tool_execution_start"] == ["c1", "c2"]


async def test_the_sequential_loop_breaks_after_an_abort() -> None:
    log, texts = await _batch(3, mode="sequential", abort_in="execute", at=1)
    assert [e[1] for e in log if e[0] == "tool_execution_start"] == ["c1"]
    assert texts == ["ran c1"]


async def test_the_parallel_loop_breaks_after_an_abort() -> None:
    log, texts = await _batch(3, abort_in="before", at=1)
    assert [e[1] for e in log if e[0] == "tool_execution_start"] == ["c1"]
    assert texts == ["Operation aborted"]
