"""The kernel's ``EventGate`` (issue 13, ev10): an optional event the gate does not need is
neither built nor emitted, and the gate's ``heartbeat`` stands in its place; everything else is
what the loop without a gate does.

Each scenario (tool loops, parallel calls, tool updates, stream failures before and after
content, aborts at every boundary, steering, follow-ups, a listener that raises, a continued
run) runs once without a gate — the old path — and once per subset of ``OPTIONAL_KINDS``
(all 16) with one. The gated log must be the old log with every optional event the gate did
not name replaced by ``beat``, and the run's messages must be the same. A gate whose answer
changes on every read checks that it is asked before each optional event, not once.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

import pytest

from openclaw_runtime.abort import AbortController
from openclaw_runtime.agent import (
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    run_agent_loop,
)
from openclaw_runtime.agent.loop import OPTIONAL_KINDS, run_agent_loop_continue
from openclaw_runtime.messages import TextContent, ToolCall, UserMessage
from openclaw_runtime.testing import (
    FakeProvider,
    FakeResponse,
    event_label,
    fake_model,
    text,
    thinking,
    tool_call,
)

pytestmark = pytest.mark.anyio

MODEL = fake_model()
SUBSETS = [
    frozenset(combo)
    for size in range(len(OPTIONAL_KINDS) + 1)
    for combo in itertools.combinations(sorted(OPTIONAL_KINDS), size)
]


def test_the_optional_kinds_are_the_four_the_loop_keeps_no_state_in() -> None:
    assert {"agent_start", "turn_start", "message_start", "message_update"} == OPTIONAL_KINDS
    assert len(SUBSETS) == 16


class _Gate:
    """A gate that logs its beats into the run's log; ``decide`` (if given) answers each read."""

    def __init__(
        self, log: list[str], kinds: frozenset[str], decide: Callable[[], bool] | None = None
    ) -> None:
        self.log = log
        self.kinds = kinds
        self.decide = decide
        self.reads: list[bool] = []

    @property
    def needed_kinds(self) -> Container[str]:
        if self.decide is None:
            return self.kinds
        answer = self.decide()
        self.reads.append(answer)
        return OPTIONAL_KINDS if answer else self.kinds

    def heartbeat(self) -> None:
        self.log.append("beat")


def _label(event: Any) -> str:
    if event.type == "message_update":
        return f"message_update:{event.assistant_message_event.type}"
    return event_label(event)


@dataclass
class _Setup:
    """One run of a scenario: what it calls and what it logs."""

    provider: FakeProvider = field(default_factory=FakeProvider)
    controller: AbortController = field(default_factory=AbortController)
    tools: list[AgentTool] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    prompts: list[Any] | None = field(default_factory=lambda: [UserMessage(content="go")])
    history: list[Any] = field(default_factory=list)
    on_failure: str = "close"
    #: raise from the emitter on this label (a listener breaking its contract)
    raise_on: str | None = None


def _tool(name: str, body: Callable[..., Any]) -> AgentTool:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return await body(args, signal, on_update)

    return AgentTool(
        name=name,
        description=f"{name} tool",
        parameters={"type": "object", "properties": {}},
        execute=execute,
    )


async def _echo(args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=f"echo {sorted(args)}")])


def _tool_loop(s: _Setup) -> None:
    s.tools = [_tool("echo", _echo)]
    s.provider.reply(tool_call("echo", {"a": 1}))
    s.provider.reply(text("checking once more"), tool_call("echo", {"b": 2}))
    s.provider.reply(thinking("so it is"), text("all done here"))


def _parallel(s: _Setup) -> None:
    s.tools = [_tool("echo", _echo)]
    s.provider.reply(tool_call("echo", {"a": 1}), tool_call("echo", {"b": 2}))
    s.provider.reply("done")


def _sequential(s: _Setup) -> None:
    _parallel(s)
    s.config = {"tool_execution": "sequential"}


def _updates(s: _Setup) -> None:
    async def progress(args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="half")]))
        on_update(AgentToolResult(content=[TextContent(text="most")]))
        return AgentToolResult(content=[TextContent(text="all")])

    s.tools = [_tool("progress", progress)]
    s.provider.reply(tool_call("progress", {}))
    s.provider.reply("done")


def _fails_after_content(s: _Setup) -> None:
    s.provider.enqueue(FakeResponse([text("some words first")], raise_exception=RuntimeError("x")))


def _fails_before_content(s: _Setup) -> None:
    s.provider.enqueue(FakeResponse([], raise_exception=RuntimeError("nothing streamed")))


def _fails_in_the_second_turn(s: _Setup) -> None:
    s.tools = [_tool("echo", _echo)]
    s.provider.reply(tool_call("echo", {"a": 1}))
    s.provider.enqueue(FakeResponse([], raise_exception=RuntimeError("second turn")))


def _rejects(s: _Setup) -> None:
    _fails_in_the_second_turn(s)
    s.on_failure = "reject"


def _provider_error(s: _Setup) -> None:
    s.provider.reply(tool_call("echo", {"a": 1}))
    s.provider.fail("overloaded", status=529)
    s.tools = [_tool("echo", _echo)]


def _abort_in_a_tool(s: _Setup) -> None:
    async def stop(args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        s.controller.abort()
        return AgentToolResult(content=[TextContent(text="stopped")])

    s.tools = [_tool("stop", stop)]
    s.provider.reply(tool_call("stop", {}))
    s.provider.reply("never")


def _aborted_before_start(s: _Setup) -> None:
    s.controller.abort()
    s.provider.reply("never")


def _abort_mid_stream(s: _Setup) -> None:
    def respond(request: Any) -> FakeResponse:
        s.controller.abort()
        return FakeResponse([text("cut short")])

    s.provider.reply(tool_call("echo", {}))
    s.provider.enqueue(respond)
    s.tools = [_tool("echo", _echo)]


def _steering(s: _Setup) -> None:
    queue = [[], [UserMessage(content="steer one")], [], []]
    follow = [[UserMessage(content="follow up")], []]

    def steer() -> list[Any]:
        return queue.pop(0) if queue else []

    def follow_up() -> list[Any]:
        return follow.pop(0) if follow else []

    s.tools = [_tool("echo", _echo)]
    s.provider.reply(tool_call("echo", {}))
    s.provider.reply("after steering")
    s.provider.reply("after the follow-up")
    s.config = {"get_steering_messages": steer, "get_follow_up_messages": follow_up}


def _listener_raises(s: _Setup) -> None:
    s.tools = [_tool("echo", _echo)]
    s.provider.reply(tool_call("echo", {}))
    s.provider.reply("done")
    s.raise_on = "tool_execution_end"


def _listener_raises_on_an_update(s: _Setup) -> None:
    s.provider.reply(text("several words streamed here"))
    s.raise_on = "message_update:text_delta"


def _stop_after_turn(s: _Setup) -> None:
    s.tools = [_tool("echo", _echo)]
    s.provider.reply(tool_call("echo", {}))
    s.provider.reply("never")
    s.config = {"should_stop_after_turn": lambda turn: True}


def _continued(s: _Setup) -> None:
    s.prompts = None
    s.history = [UserMessage(content="earlier")]
    s.tools = [_tool("echo", _echo)]
    s.provider.reply(tool_call("echo", {}))
    s.provider.reply("continued")


#: what a scenario's emitter needs whatever else it is asked (a listener that raises on a kind
#: gets that kind: one that does not get it cannot raise on it)
NEEDS: dict[str, frozenset[str]] = {"listener_raises_on_an_update": frozenset({"message_update"})}

SCENARIOS: dict[str, Callable[[_Setup], None]] = {
    "tool_loop": _tool_loop,
    "parallel": _parallel,
    "sequential": _sequential,
    "updates": _updates,
    "fails_after_content": _fails_after_content,
    "fails_before_content": _fails_before_content,
    "fails_in_the_second_turn": _fails_in_the_second_turn,
    "rejects": _rejects,
    "provider_error": _provider_error,
    "abort_in_a_tool": _abort_in_a_tool,
    "aborted_before_start": _aborted_before_start,
    "abort_mid_stream": _abort_mid_stream,
    "steering": _steering,
    "listener_raises": _listener_raises,
    "listener_raises_on_an_update": _listener_raises_on_an_update,
    "stop_after_turn": _stop_after_turn,
    "continued": _continued,
}


def _summary(message: Any) -> tuple[Any, ...]:
    content = message.content
    if not isinstance(content, str):
        content = [
            getattr(b, "text", None) or getattr(b, "thinking", None) or getattr(b, "name", None)
            for b in content
            if isinstance(b, TextContent | ToolCall) or hasattr(b, "thinking")
        ]
    return (message.role, getattr(message, "stop_reason", None), repr(content))


async def _run(
    scenario: str, make_gate: Callable[[list[str]], _Gate | None]
) -> tuple[list[str], Any, _Gate | None]:
    setup = _Setup()
    SCENARIOS[scenario](setup)
    log: list[str] = []
    gate = make_gate(log)

    async def emit(event: Any) -> None:
        label = _label(event)
        log.append(label)
        if label == setup.raise_on:
            raise RuntimeError(f"listener broke on {label}")

    config = AgentLoopConfig(model=MODEL, **setup.config)
    context = AgentContext("sys", list(setup.history), list(setup.tools))
    options: dict[str, Any] = {
        "stream_fn": setup.provider,
        "signal": setup.controller.signal,
        "on_failure": setup.on_failure,
    }
    if gate is not None:
        options["gate"] = gate
    try:
        if setup.prompts is None:
            result: Any = await run_agent_loop_continue(context, config, emit, **options)
        else:
            result = await run_agent_loop(setup.prompts, context, config, emit, **options)
        outcome: Any = [_summary(m) for m in result]
    except Exception as exc:  # "reject": the run fails as it did
        outcome = ("raised", type(exc).__name__, str(exc))
    return log, outcome, gate


def _expected(old: list[str], needed: Callable[[str], bool]) -> list[str]:
    """The old log with each optional event ``needed`` declines replaced by a beat."""
    out = []
    for label in old:
        kind = label.split(":", 1)[0]
        out.append(label if kind not in OPTIONAL_KINDS or needed(kind) else "beat")
    return out


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_a_gated_loop_emits_what_the_gate_needs_and_beats_for_the_rest(
    scenario: str,
) -> None:
    old, old_outcome, _ = await _run(scenario, lambda log: None)
    assert any(label.startswith("turn_start") for label in old)  # the scenario ran
    for subset in SUBSETS:
        kinds = subset | NEEDS.get(scenario, frozenset())
        new, outcome, _ = await _run(scenario, lambda log, kinds=kinds: _Gate(log, kinds))
        assert new == _expected(old, kinds.__contains__), (scenario, sorted(kinds))
        assert outcome == old_outcome, (scenario, sorted(kinds))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_the_gate_is_asked_before_each_optional_event(scenario: str, seed: int) -> None:
    old, old_outcome, _ = await _run(scenario, lambda log: None)
    rng = random.Random(f"{scenario}-{seed}")
    forced = NEEDS.get(scenario, frozenset())
    new, outcome, gate = await _run(
        scenario, lambda log: _Gate(log, forced, lambda: rng.random() < 0.5)
    )
    assert gate is not None
    optional = [label for label in old if label.split(":", 1)[0] in OPTIONAL_KINDS]
    assert len(gate.reads) == len(optional)  # one read per optional event, none cached
    answers = iter(gate.reads)
    assert new == _expected(old, lambda kind: next(answers) or kind in forced)
    assert outcome == old_outcome


async def test_a_gate_that_needs_everything_is_the_old_path() -> None:
    for scenario in SCENARIOS:
        old, old_outcome, _ = await _run(scenario, lambda log: None)
        new, outcome, _ = await _run(scenario, lambda log: _Gate(log, OPTIONAL_KINDS))
        assert (new, outcome) == (old, old_outcome), scenario
        assert "beat" not in new
