"""The kernel loop against OpenClaw's agent-loop rules (openclaw-spec §8, issue 15 §4):

* a ``stream_fn`` that throws rejects the kernel run; the ``Agent`` turns it into one failure
  message, which is the whole result of the prompt run (not the prompt plus the failure);
* a stream that fails before streaming anything rejects; one that fails after streaming
  something keeps it as an error message;
* a text delta that arrives without a partial snapshot is applied to the live message;
* reasoning is recomputed from the new model's ``thinking_level_map`` when a turn swaps it.
"""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.agent import Agent, AgentContext, AgentLoopConfig, TurnUpdate
from openclaw_runtime.agent.deltas import apply_stream_delta
from openclaw_runtime.agent.loop import run_agent_loop
from openclaw_runtime.agent.thinking_levels import (
    clamp_thinking_level,
    supported_thinking_levels,
)
from openclaw_runtime.agent.tools import tool
from openclaw_runtime.agent.types import resolve_reasoning
from openclaw_runtime.events import (
    AgentEnd,
    AssistantMessageEventStream,
    Done,
    MessageUpdate,
    Start,
    TextDelta,
    TextStart,
    ThinkingDelta,
)
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from openclaw_runtime.testing import (
    EventRecorder,
    FakeProvider,
    FakeResponse,
    fake_model,
    text,
    tool_call,
)

pytestmark = pytest.mark.anyio

MODEL = fake_model()


def prompt(value: str = "go") -> UserMessage:
    return UserMessage(content=[TextContent(text=value)])


def throwing(model: Any, context: Any, options: Any) -> Any:
    raise RuntimeError("stream exploded")


# --------------------------------------------------------------------------- failures


async def test_a_throwing_stream_fn_rejects_the_kernel_run():
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    with pytest.raises(RuntimeError, match="stream exploded"):
        await run_agent_loop(
            [prompt()], AgentContext(), AgentLoopConfig(model=MODEL), emit, stream_fn=throwing
        )
    assert not any(isinstance(e, AgentEnd) for e in events)


async def test_the_agent_returns_only_the_failure_message_of_a_throwing_stream_fn():
    agent = Agent(model=MODEL, stream_fn=throwing)
    recorder = EventRecorder()
    agent.subscribe(recorder)
    result = await agent.prompt("hello")
    (failure,) = result
    assert isinstance(failure, AssistantMessage)
    assert (failure.stop_reason, failure.error_message) == ("error", "stream exploded")
    (end,) = recorder.of("agent_end")
    assert end.messages == [failure]
    # the prompt is still in the transcript: it was committed by its own events
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    assert agent.state.error_message == "stream exploded"
    assert not agent.is_running


async def test_close_mode_reports_only_the_failure_of_a_prompt_run():
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    result = await run_agent_loop(
        [prompt()],
        AgentContext(),
        AgentLoopConfig(model=MODEL),
        emit,
        stream_fn=throwing,
        on_failure="close",
    )
    (failure,) = result
    assert failure.stop_reason == "error" and failure.error_message == "stream exploded"
    assert events[-1] == AgentEnd([failure])
    assert [type(e).__name__ for e in events][-4:] == [
        "MessageStart",
        "MessageEnd",
        "TurnEnd",
        "AgentEnd",
    ]


async def test_close_mode_keeps_earlier_turns_of_a_failing_run(fake_provider: FakeProvider):
    @tool
    async def shout(value: str) -> str:
        """Upper-case."""
        return value.upper()

    fake_provider.reply(tool_call("shout", {"value": "x"}))
    calls = {"n": 0}

    def second_call_throws(model: Any, context: Any, options: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("second call exploded")
        return fake_provider(model, context, options)

    async def emit(event: Any) -> None:
        pass

    result = await run_agent_loop(
        [prompt()],
        AgentContext(tools=[shout]),
        AgentLoopConfig(model=MODEL),
        emit,
        stream_fn=second_call_throws,
        on_failure="close",
    )
    assert [m.role for m in result] == ["user", "assistant", "toolResult", "assistant"]
    assert result[-1].error_message == "second call exploded"


@pytest.mark.parametrize("mode", ["reject", "close"])
async def test_a_stream_failing_before_any_content(fake_provider: FakeProvider, mode: str):
    fake_provider.enqueue(FakeResponse([], raise_exception=ConnectionError("reset")))

    async def emit(event: Any) -> None:
        pass

    run = run_agent_loop(
        [prompt()],
        AgentContext(),
        AgentLoopConfig(model=MODEL),
        emit,
        stream_fn=fake_provider,
        on_failure=mode,  # type: ignore[arg-type]
    )
    if mode == "reject":
        with pytest.raises(ConnectionError, match="reset"):
            await run
    else:
        result = await run
        assert result[-1].stop_reason == "error" and result[-1].error_message == "reset"


async def test_the_agent_closes_an_empty_partial_when_the_stream_rejects(
    fake_provider: FakeProvider,
):
    fake_provider.enqueue(FakeResponse([], raise_exception=ConnectionError("reset")))
    agent = Agent(model=MODEL, stream_fn=fake_provider)
    recorder = EventRecorder()
    agent.subscribe(recorder)
    (failure,) = await agent.prompt("go")
    assert failure.error_message == "reset"
    labels = recorder.labels()
    assert labels.count("message_start:assistant") == labels.count("message_end:assistant") == 1
    assert labels[-2:] == ["turn_end:assistant", "agent_end"]


async def test_a_stream_failing_after_content_keeps_it_and_ends_normally(
    fake_provider: FakeProvider,
):
    fake_provider.enqueue(FakeResponse([text("half")], raise_exception=RuntimeError("cut")))

    async def emit(event: Any) -> None:
        pass

    result = await run_agent_loop(
        [prompt()], AgentContext(), AgentLoopConfig(model=MODEL), emit, stream_fn=fake_provider
    )
    assert result[-1].stop_reason == "error" and result[-1].content[0].text == "half"


# --------------------------------------------------------------------------- bare deltas


def _bare_delta_stream(final_text: str) -> Any:
    start = AssistantMessage(content=[], api=MODEL.api, provider=MODEL.provider, model=MODEL.id)

    async def source():
        yield Start(start)
        yield TextStart(0, None)  # type: ignore[arg-type]
        yield TextDelta(0, "Hel", None)  # type: ignore[arg-type]
        yield TextDelta(0, "lo", None)  # type: ignore[arg-type]
        yield ThinkingDelta(1, "hmm", None)  # type: ignore[arg-type]
        final = start.model_copy(update={"content": [TextContent(text=final_text)]})
        yield Done("stop", final)

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        return AssistantMessageEventStream(source())

    return stream_fn


async def test_text_deltas_without_a_partial_are_applied_to_the_message():
    updates: list[MessageUpdate] = []

    async def emit(event: Any) -> None:
        if isinstance(event, MessageUpdate):
            updates.append(event)

    result = await run_agent_loop(
        [prompt()],
        AgentContext(),
        AgentLoopConfig(model=MODEL),
        emit,
        stream_fn=_bare_delta_stream("Hello"),
    )
    texts = [
        "".join(b.text for b in u.message.content if isinstance(b, TextContent)) for u in updates
    ]
    assert texts == ["", "Hel", "Hello", "Hello"]
    assert updates[-1].message.content[1] == ThinkingContent(thinking="hmm")
    assert result[-1].content == [TextContent(text="Hello")]


BASE = AssistantMessage(content=[], api="a", provider="p", model="m")


@pytest.mark.parametrize(
    ("content", "event", "expected"),
    [
        ([], TextDelta(0, "hi", None), [TextContent(text="hi")]),  # type: ignore[arg-type]
        (
            [TextContent(text="a")],
            TextDelta(0, "b", None),  # type: ignore[arg-type]
            [TextContent(text="ab")],
        ),
        (
            [ThinkingContent(thinking="t"), TextContent(text="a")],
            TextDelta(1, "b", None),  # type: ignore[arg-type]
            [ThinkingContent(thinking="t"), TextContent(text="ab")],
        ),
        (
            [ThinkingContent(thinking="t")],
            ThinkingDelta(0, "u", None),  # type: ignore[arg-type]
            [ThinkingContent(thinking="tu")],
        ),
        (
            [ThinkingContent(thinking="t")],
            TextDelta(0, "x", None),  # type: ignore[arg-type]
            [ThinkingContent(thinking="t"), TextContent(text="x")],
        ),
    ],
)
def test_apply_stream_delta(content: list[Any], event: Any, expected: list[Any]):
    message = BASE.model_copy(update={"content": content})
    updated = apply_stream_delta(message, event)
    assert updated is not None and updated.content == expected
    assert message.content == content  # the input is never mutated


def test_apply_stream_delta_ignores_other_events():
    assert apply_stream_delta(BASE, Start(BASE)) is None
    call = ToolCall(id="c", name="n", arguments={})
    assert apply_stream_delta(BASE.model_copy(update={"content": [call]}), Start(BASE)) is None


# --------------------------------------------------------------------------- thinking levels

PLAIN = fake_model(id="plain")
REASONING = fake_model(id="reasoning", reasoning=True)
MAPPED = fake_model(
    id="mapped",
    reasoning=True,
    thinking_level_map={"off": None, "minimal": None, "xhigh": "xhigh", "max": "max"},
)
LOW_ONLY = fake_model(
    id="low-only", reasoning=True, thinking_level_map={"medium": None, "high": None}
)


@pytest.mark.parametrize(
    ("model", "levels"),
    [
        (PLAIN, ["off"]),
        (REASONING, ["off", "minimal", "low", "medium", "high"]),
        (MAPPED, ["low", "medium", "high", "xhigh", "max"]),
        (LOW_ONLY, ["off", "minimal", "low"]),
    ],
)
def test_supported_thinking_levels(model: Any, levels: list[str]):
    assert supported_thinking_levels(model) == levels


@pytest.mark.parametrize(
    ("model", "level", "expected"),
    [
        (REASONING, "high", "high"),
        (REASONING, "max", "high"),  # not in the map: down to the strongest available
        (MAPPED, "minimal", "low"),  # upward first
        (MAPPED, "max", "max"),
        (LOW_ONLY, "high", "low"),  # nothing above: downward
        (PLAIN, "high", "off"),
    ],
)
def test_clamp_thinking_level(model: Any, level: str, expected: str):
    assert clamp_thinking_level(model, level) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "level", "reasoning"),
    [
        (PLAIN, "high", None),
        (REASONING, "off", None),
        (REASONING, "medium", "medium"),
        (LOW_ONLY, "high", "low"),
        (MAPPED, "minimal", "low"),
    ],
)
def test_resolve_reasoning(model: Any, level: str, reasoning: str | None):
    assert resolve_reasoning(model, level) == reasoning  # type: ignore[arg-type]


async def test_a_model_swap_recomputes_reasoning_from_the_new_models_map(
    fake_provider: FakeProvider,
):
    @tool
    async def shout(value: str) -> str:
        """Upper-case."""
        return value.upper()

    fake_provider.reply(tool_call("shout", {"value": "x"}))
    fake_provider.reply("done")
    agent = Agent(
        model=MAPPED,
        stream_fn=fake_provider,
        tools=[shout],
        thinking_level="max",
        prepare_next_turn=lambda turn: TurnUpdate(model=LOW_ONLY),
    )
    await agent.prompt("go")
    first, second = fake_provider.history
    assert (first.model.id, first.options.reasoning) == ("mapped", "max")
    assert (second.model.id, second.options.reasoning) == ("low-only", "low")


def test_thinking_level_map_is_read_from_catalog_json():
    from openclaw_runtime.llm import Model

    model = Model.model_validate(
        {
            "id": "m",
            "api": "openai-completions",
            "provider": "p",
            "reasoning": True,
            "thinkingLevelMap": {"minimal": None, "xhigh": "xhigh"},
        }
    )
    assert model.thinking_level_map == {"minimal": None, "xhigh": "xhigh"}
    assert supported_thinking_levels(model) == ["off", "low", "medium", "high", "xhigh"]
