"""The kernel's behaviour (openclaw-spec §8, seed 000 §3), on asyncio and trio."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from openclaw_runtime import AgentBusyError, TranscriptError, TranscriptNotContinuableError
from openclaw_runtime.agent import (
    AfterToolCallResult,
    Agent,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    BeforeToolCallResult,
    TurnUpdate,
    agent_loop,
    agent_loop_continue,
    run_agent_loop,
    tool,
)
from openclaw_runtime.messages import (
    AssistantMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.testing import (
    EventRecorder,
    FakeProvider,
    FakeResponse,
    delay,
    fake_model,
    gate,
    text,
    tool_call,
)

pytestmark = pytest.mark.anyio

MODEL = fake_model()


def make_agent(provider: FakeProvider, *tools: AgentTool, **options) -> tuple[Agent, EventRecorder]:
    agent = Agent(model=MODEL, stream_fn=provider, tools=list(tools), **options)
    recorder = EventRecorder()
    agent.subscribe(recorder)
    return agent, recorder


def make_tool(name: str, fn, schema: dict | None = None, **options) -> AgentTool:
    async def execute(call_id, args, signal, on_update):
        return await fn(args, signal, on_update)

    return AgentTool(
        name=name,
        description=f"{name} tool",
        parameters=schema or {"type": "object", "properties": {}},
        execute=execute,
        **options,
    )


def text_of(message) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextContent))


@tool
async def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


# --------------------------------------------------------------------------- event order


async def test_event_order_of_a_tool_using_turn(fake_provider):
    fake_provider.reply(tool_call("shout", {"text": "hi"}, id="c1"))
    fake_provider.reply("done")
    agent, recorder = make_agent(fake_provider, shout)

    new_messages = await agent.prompt("go")

    assert recorder.labels() == [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_end:assistant",
        "tool_execution_start",
        "tool_execution_end",
        "message_start:toolResult",
        "message_end:toolResult",
        "turn_end:assistant",
        "turn_start",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end:assistant",
        "agent_end",
    ]
    # streamed deltas sit between the assistant's start and end
    labels = recorder.labels(updates=True)
    first_start = labels.index("message_start:assistant")
    assert labels[first_start + 1 : first_start + 5] == ["message_update"] * 4
    kinds = [e.assistant_message_event.type for e in recorder.of("message_update")][:4]
    assert kinds == ["toolcall_start", "toolcall_delta", "toolcall_delta", "toolcall_end"]

    _user, call_msg, result, answer = agent.state.messages
    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert new_messages == agent.state.messages
    assert recorder.of("agent_end")[0].messages == agent.state.messages
    assert call_msg.stop_reason == "toolUse"
    assert result.tool_call_id == "c1" and result.text() == "HI" and not result.is_error
    assert text_of(answer) == "done"
    # the second model call saw the tool result
    assert fake_provider.history[1].context.messages[-1] is result
    turn_ends = recorder.of("turn_end")
    assert turn_ends[0].tool_results == [result]
    assert turn_ends[1].tool_results == []


async def test_agent_loop_stream_is_iterable_and_awaitable(fake_provider):
    fake_provider.reply("hello")
    context = AgentContext(messages=[])
    config = AgentLoopConfig(model=MODEL)
    prompt = UserMessage(content="hi")
    async with agent_loop([prompt], context, config, stream_fn=fake_provider) as events:
        seen = [event.type async for event in events]
        messages = await events.result()
    assert seen[0] == "agent_start" and seen[-1] == "agent_end"
    assert [m.role for m in messages] == ["user", "assistant"]
    assert context.messages == []  # the caller's context is not mutated


# --------------------------------------------------------------------------- steering & follow-up


async def test_steering_sent_during_a_tool_batch_reaches_the_next_model_call(fake_provider):
    release = anyio.Event()

    async def slow(args, signal, on_update):
        await release.wait()
        return "slow result"

    fake_provider.reply(tool_call("slow", {}, id="c1"))
    fake_provider.reply("adjusted")
    agent, recorder = make_agent(fake_provider, make_tool("slow", slow))

    def steer_while_tool_runs(event, signal):
        if event.type == "tool_execution_start":
            agent.steer("actually, use metric units")
            release.set()

    agent.subscribe(steer_while_tool_runs)
    with anyio.fail_after(10):
        await agent.prompt("go")

    second_call = fake_provider.history[1].context.messages
    assert [m.role for m in second_call] == ["user", "assistant", "toolResult", "user"]
    assert second_call[-1].text() == "actually, use metric units"
    # the running tool batch was not interrupted by the steering message
    assert second_call[2].text() == "slow result" and not second_call[2].is_error
    labels = recorder.labels()
    turn_break = labels.index("turn_end:assistant")
    assert labels[turn_break + 1 : turn_break + 4] == [
        "turn_start",
        "message_start:user",
        "message_end:user",
    ]


async def test_follow_up_revives_a_finished_loop(fake_provider):
    fake_provider.reply("first answer")
    fake_provider.reply("second answer")
    agent, recorder = make_agent(fake_provider)

    def queue_follow_up(event, signal):
        is_answer = event.type == "message_end" and event.message.role == "assistant"
        if is_answer and len(fake_provider.history) == 1:
            agent.follow_up("and one more thing")

    agent.subscribe(queue_follow_up)
    await agent.prompt("hello")

    assert len(fake_provider.history) == 2
    assert fake_provider.history[1].context.messages[-1].text() == "and one more thing"
    assert recorder.labels().count("agent_end") == 1
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "user", "assistant"]


async def test_follow_up_waits_for_the_tool_loop_to_finish(fake_provider):
    fake_provider.reply(tool_call("shout", {"text": "a"}))
    fake_provider.reply("tools done")
    fake_provider.reply("follow-up answered")
    agent, _ = make_agent(fake_provider, shout)

    def queue_during_tools(event, signal):
        if event.type == "tool_execution_start":
            agent.follow_up("later please")

    agent.subscribe(queue_during_tools)
    await agent.prompt("go")

    def users(i):
        return [m.text() for m in fake_provider.history[i].context.messages if m.role == "user"]

    assert users(1) == ["go"]  # not injected after the tool batch...
    assert users(2) == ["go", "later please"]  # ...but once the model stopped


@pytest.mark.parametrize("queue", ["steer", "follow_up"])
async def test_one_at_a_time_consumes_one_message_per_drain_point(fake_provider, queue):
    for i in range(4):
        fake_provider.reply(f"answer {i}")
    agent, _ = make_agent(fake_provider)
    for text_ in ("m1", "m2", "m3"):
        getattr(agent, queue)(text_)

    await agent.prompt("start")

    assert len(fake_provider.history) == (3 if queue == "steer" else 4)
    last_user_per_call = [
        [m for m in req.context.messages if m.role == "user"][-1].text()
        for req in fake_provider.history
    ]
    if queue == "steer":  # the initial poll injects m1 before the first model call
        assert last_user_per_call == ["m1", "m2", "m3"]
    else:  # follow-ups only once the agent would stop
        assert last_user_per_call == ["start", "m1", "m2", "m3"]
    assert not agent.has_queued_messages()


async def test_all_mode_drains_every_queued_message_at_once(fake_provider):
    fake_provider.reply("one answer")
    agent, _ = make_agent(fake_provider, steering_mode="all")
    for text_ in ("m1", "m2", "m3"):
        agent.steer(text_)
    await agent.prompt("start")
    assert len(fake_provider.history) == 1
    users = [m.text() for m in fake_provider.history[0].context.messages if m.role == "user"]
    assert users == ["start", "m1", "m2", "m3"]


# --------------------------------------------------------------------------- abort


async def test_abort_during_a_tool_call_persists_an_aborted_message(fake_provider):
    tool_started, tool_cancelled = anyio.Event(), anyio.Event()

    async def hang(args, signal, on_update):
        tool_started.set()
        try:
            await anyio.sleep(3600)  # ignores the signal; the loop must cancel it anyway
        finally:
            tool_cancelled.set()

    fake_provider.reply(tool_call("hang", {}, id="c1"))
    fake_provider.reply("never requested")
    agent, recorder = make_agent(fake_provider, make_tool("hang", hang))

    async def abort_once_running():
        await tool_started.wait()
        agent.abort()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(abort_once_running)
            await agent.prompt("go")

    assert tool_cancelled.is_set()
    assert fake_provider.pending == 1  # no model call after the abort
    assert recorder.labels() == [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_end:assistant",
        "tool_execution_start",
        "tool_execution_end",
        "message_start:toolResult",
        "message_end:toolResult",
        "turn_end:assistant",
        "turn_start",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end:assistant",
        "message_start:custom",
        "message_end:custom",
        "agent_end",
    ]
    result = agent.state.messages[2]
    assert result.is_error and result.text() == "Operation aborted"
    assert recorder.of("tool_execution_end")[0].execution_started is True
    aborted, interruption = agent.state.messages[-2:]
    assert aborted.stop_reason == "aborted" and aborted.error_message
    assert interruption.custom_type == "openclaw:turn-aborted" and interruption.display is False
    assert not agent.is_running and agent.state.is_streaming is False


async def test_abort_while_streaming_keeps_the_partial_answer(fake_provider):
    fake_provider.enqueue(FakeResponse([text("partial words here"), delay(3600), text("never")]))
    agent, recorder = make_agent(fake_provider)

    def abort_on_first_delta(event, signal):
        if event.type == "message_update" and event.assistant_message_event.type == "text_end":
            agent.abort()

    agent.subscribe(abort_on_first_delta)
    with anyio.fail_after(10):
        await agent.prompt("go")

    assistant = agent.state.messages[1]
    assert assistant.stop_reason == "aborted"
    assert text_of(assistant) == "partial words here"
    assert recorder.labels()[-5:] == [
        "message_end:assistant",
        "turn_end:assistant",
        "message_start:custom",
        "message_end:custom",
        "agent_end",
    ]


async def test_abort_before_the_first_model_call(fake_provider):
    fake_provider.reply("unused")
    agent, recorder = make_agent(fake_provider)
    agent.subscribe(lambda e, s: agent.abort() if e.type == "message_end" else None)
    await agent.prompt("go")
    assert fake_provider.history == []
    assert agent.state.messages[-2].stop_reason == "aborted"
    assert recorder.labels()[-1] == "agent_end"


async def test_cancelling_the_caller_still_closes_the_lifecycle(fake_provider):
    fake_provider.enqueue(FakeResponse([text("start"), delay(3600)]))
    agent, recorder = make_agent(fake_provider)
    with anyio.move_on_after(0.2):
        await agent.prompt("go")
    assert recorder.labels()[-3:] == ["message_end:assistant", "turn_end:assistant", "agent_end"]
    assert agent.state.messages[-1].stop_reason == "aborted"
    assert not agent.is_running


# --------------------------------------------------------------------------- failures


async def test_stream_fn_that_raises_still_produces_the_closing_sequence():
    def broken(model, context, options):
        raise RuntimeError("boom")

    agent, recorder = make_agent(broken)  # type: ignore[arg-type]
    await agent.prompt("go")
    assert recorder.labels() == [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end:assistant",
        "agent_end",
    ]
    failure = agent.state.messages[-1]
    assert failure.stop_reason == "error" and failure.error_message == "boom"
    assert agent.state.error_message == "boom"


async def test_stream_that_raises_after_partial_content_keeps_it(fake_provider):
    fake_provider.enqueue(FakeResponse([text("half an")], raise_exception=RuntimeError("cut off")))
    agent, recorder = make_agent(fake_provider)
    await agent.prompt("go")
    failure = agent.state.messages[-1]
    assert failure.stop_reason == "error" and failure.error_message == "cut off"
    assert text_of(failure) == "half an"
    assert recorder.labels()[-3:] == ["message_end:assistant", "turn_end:assistant", "agent_end"]
    assert recorder.labels().count("message_start:assistant") == 1


@pytest.mark.parametrize("callback", ["convert_to_llm", "transform_context", "get_api_key"])
async def test_callback_that_raises_still_closes_the_lifecycle(fake_provider, callback):
    fake_provider.reply("unused")

    def explode(*args):
        raise ValueError(f"{callback} exploded")

    agent, recorder = make_agent(fake_provider, **{callback: explode})
    await agent.prompt("go")
    assert recorder.labels()[-4:] == [
        "message_start:assistant",
        "message_end:assistant",
        "turn_end:assistant",
        "agent_end",
    ]
    assert agent.state.messages[-1].error_message == f"{callback} exploded"


async def test_should_stop_after_turn_raising_after_turn_end_keeps_events_balanced(fake_provider):
    fake_provider.reply("answer")

    def explode(turn):
        raise ValueError("stop check failed")

    agent, recorder = make_agent(fake_provider, should_stop_after_turn=explode)
    await agent.prompt("go")
    labels = recorder.labels()
    assert labels.count("turn_start") == labels.count("turn_end:assistant") == 2
    assert labels[-5:] == [
        "turn_start",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end:assistant",
        "agent_end",
    ]


async def test_an_error_stop_reason_ends_the_run(fake_provider):
    fake_provider.fail("rate limited", status=429, retry_after_ms=2000)
    fake_provider.reply("unused")
    agent, recorder = make_agent(fake_provider)
    await agent.prompt("go")
    failure = agent.state.messages[-1]
    assert failure.stop_reason == "error"
    assert (failure.error_status, failure.error_retry_after_ms) == (429, 2000)
    assert fake_provider.pending == 1
    assert recorder.labels()[-2:] == ["turn_end:assistant", "agent_end"]


async def test_listener_errors_are_isolated(fake_provider, caplog):
    fake_provider.reply("fine")
    agent, recorder = make_agent(fake_provider)

    def broken_listener(event, signal):
        raise RuntimeError("ui crashed")

    agent.subscribe(broken_listener)
    await agent.prompt("go")
    assert recorder.labels()[-1] == "agent_end"
    assert text_of(agent.state.messages[-1]) == "fine"
    assert "ui crashed" in caplog.text


# --------------------------------------------------------------------------- tool calls


async def test_tool_calls_run_only_when_stop_reason_is_tool_use(fake_provider):
    calls = []

    async def record(args, signal, on_update):
        calls.append(args)
        return "ran"

    fake_provider.enqueue(
        FakeResponse([text("cut"), tool_call("record", {})], stop_reason="length")
    )
    agent, recorder = make_agent(fake_provider, make_tool("record", record))
    await agent.prompt("go")

    assert calls == []
    assistant = agent.state.messages[-1]
    assert assistant.stop_reason == "length"
    assert not any(isinstance(b, ToolCall) for b in assistant.content)
    assert recorder.of("tool_execution_start") == []
    assert len(fake_provider.history) == 1


async def test_invalid_arguments_become_an_error_result_the_model_can_read(fake_provider):
    executed = []

    async def count(args, signal, on_update):
        executed.append(args)
        return "ok"

    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "label": {"type": "string"}},
        "required": ["n", "label"],
    }
    fake_provider.reply(tool_call("count", {"n": "seven"}, id="c1"))
    fake_provider.reply("sorry")
    agent, recorder = make_agent(fake_provider, make_tool("count", count, schema))
    await agent.prompt("go")

    assert executed == []
    result = agent.state.messages[2]
    assert result.is_error
    assert result.text().startswith('Validation failed for tool "count":')
    assert "  - label: 'label' is a required property" in result.text()
    assert "  - n: 'seven' is not of type 'integer'" in result.text()
    assert '"n": "seven"' in result.text()
    end = recorder.of("tool_execution_end")[0]
    assert end.error_kind == "argument-validation" and end.execution_started is False
    assert fake_provider.history[1].context.messages[-1] is result


async def test_unknown_tool_gets_an_error_result(fake_provider):
    fake_provider.reply(tool_call("ghost", {}, id="c1"))
    fake_provider.reply("ok")
    agent, _ = make_agent(fake_provider, shout)
    await agent.prompt("go")
    result = agent.state.messages[2]
    assert result.is_error and result.text() == "Tool ghost not found"
    assert result.tool_name == "ghost"


async def test_deferred_tool_is_resolved_once_and_stays_available(fake_provider):
    resolved = []

    async def resolver(ctx, signal):
        resolved.append(ctx.tool_call.name)
        return shout if ctx.tool_call.name == "shout" else None

    fake_provider.reply(tool_call("shout", {"text": "a"}))
    fake_provider.reply(tool_call("shout", {"text": "b"}))
    fake_provider.reply("done")
    agent, _ = make_agent(fake_provider, resolve_deferred_tool=resolver)
    await agent.prompt("go")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [r.text() for r in results] == ["A", "B"]
    assert resolved == ["shout"]
    assert [t.name for t in fake_provider.history[1].context.tools] == ["shout"]


@pytest.mark.parametrize(
    ("resolver_result", "expected"),
    [
        ("wrong-name", 'Deferred tool resolver returned "other" for requested "ghost"'),
        ("raise", "resolver exploded"),
    ],
)
async def test_deferred_tool_resolver_failures(fake_provider, resolver_result, expected):
    other = make_tool("other", lambda *a: None)

    def resolver(ctx, signal):
        if resolver_result == "raise":
            raise LookupError("resolver exploded")
        return other

    fake_provider.reply(tool_call("ghost", {}))
    fake_provider.reply("ok")
    agent, _ = make_agent(fake_provider, resolve_deferred_tool=resolver)
    await agent.prompt("go")
    result = agent.state.messages[2]
    assert result.is_error and result.text() == expected


async def test_parallel_execution_runs_tools_concurrently(fake_provider):
    a_started, b_started, b_ended = anyio.Event(), anyio.Event(), anyio.Event()

    async def a(args, signal, on_update):
        a_started.set()
        await b_started.wait()
        await b_ended.wait()  # finishes only after b's tool_execution_end went out
        return "a"

    async def b(args, signal, on_update):
        b_started.set()
        await a_started.wait()  # would deadlock if the tools ran one after another
        return "b"

    fake_provider.reply(tool_call("a", {}, id="ca"), tool_call("b", {}, id="cb"))
    fake_provider.reply("done")
    agent, recorder = make_agent(fake_provider, make_tool("a", a), make_tool("b", b))
    agent.subscribe(
        lambda e, s: (
            b_ended.set() if e.type == "tool_execution_end" and e.tool_name == "b" else None
        )
    )
    with anyio.fail_after(10):
        await agent.prompt("go")

    # tool_execution_end in completion order, result messages in call order
    assert [e.tool_name for e in recorder.of("tool_execution_end")] == ["b", "a"]
    results = [
        e.message.tool_name for e in recorder.of("message_end") if e.message.role == "toolResult"
    ]
    assert results == ["a", "b"]
    assert [e.tool_name for e in recorder.of("tool_execution_start")] == ["a", "b"]


@pytest.mark.parametrize("how", ["config", "tool"])
async def test_sequential_execution(fake_provider, how):
    log = []

    def stepper(name):
        async def run(args, signal, on_update):
            log.append(f"{name}-start")
            await anyio.sleep(0.01)
            log.append(f"{name}-end")
            return name

        return run

    mode = {"execution_mode": "sequential"} if how == "tool" else {}
    tools = [make_tool("a", stepper("a"), **mode), make_tool("b", stepper("b"))]
    fake_provider.reply(tool_call("a", {}), tool_call("b", {}))
    fake_provider.reply("done")
    options = {"tool_execution": "sequential"} if how == "config" else {}
    agent, recorder = make_agent(fake_provider, *tools, **options)
    await agent.prompt("go")
    assert log == ["a-start", "a-end", "b-start", "b-end"]
    tool_labels = [
        label
        for label in recorder.labels()
        if label.startswith("tool_") or label.endswith("toolResult")
    ]
    assert (
        tool_labels
        == [
            "tool_execution_start",
            "tool_execution_end",
            "message_start:toolResult",
            "message_end:toolResult",
        ]
        * 2
    )


async def test_before_and_after_tool_call_hooks(fake_provider):
    def gate(ctx, signal):
        if ctx.args["text"] == "secret":
            return BeforeToolCallResult(block=True, reason="not allowed")
        return None

    def after(ctx, signal):
        return AfterToolCallResult(content=[TextContent(text=ctx.result.text() + "!")])

    fake_provider.reply(
        tool_call("shout", {"text": "secret"}, id="c1"), tool_call("shout", {"text": "ok"}, id="c2")
    )
    fake_provider.reply("done")
    agent, _ = make_agent(fake_provider, shout, before_tool_call=gate, after_tool_call=after)
    await agent.prompt("go")
    blocked, allowed = agent.state.messages[2:4]
    assert blocked.is_error and blocked.text() == "not allowed"
    assert not allowed.is_error and allowed.text() == "OK!"


async def test_tool_batch_terminates_the_run_only_if_every_result_says_so(fake_provider):
    async def final(args, signal, on_update):
        return AgentToolResult(content=[TextContent(text="bye")], terminate=True)

    fake_provider.reply(tool_call("final", {}), tool_call("final", {}))
    fake_provider.reply("never")
    agent, recorder = make_agent(fake_provider, make_tool("final", final))
    await agent.prompt("go")
    assert fake_provider.pending == 1
    assert recorder.labels()[-2:] == ["turn_end:assistant", "agent_end"]


async def test_tool_updates_are_emitted_in_order_before_the_end(fake_provider):
    async def progress(args, signal, on_update):
        for step in ("10%", "50%", "90%"):
            on_update(AgentToolResult(content=[TextContent(text=step)]))
            await anyio.lowlevel.checkpoint()
        return "100%"

    fake_provider.reply(tool_call("progress", {}))
    fake_provider.reply("done")
    agent, recorder = make_agent(fake_provider, make_tool("progress", progress))
    await agent.prompt("go")
    labels = [e.type for e in recorder.events if e.type.startswith("tool_execution")]
    assert labels == ["tool_execution_start"] + ["tool_execution_update"] * 3 + [
        "tool_execution_end"
    ]
    updates = [e.partial_result.text() for e in recorder.of("tool_execution_update")]
    assert updates == ["10%", "50%", "90%"]


async def test_a_tool_that_raises_becomes_an_error_result(fake_provider):
    async def broken(args, signal, on_update):
        raise OSError("disk on fire")

    fake_provider.reply(tool_call("broken", {}))
    fake_provider.reply("handled")
    agent, recorder = make_agent(fake_provider, make_tool("broken", broken))
    await agent.prompt("go")
    result = agent.state.messages[2]
    assert result.is_error and result.text() == "disk on fire"
    assert recorder.of("tool_execution_end")[0].execution_started is True


# --------------------------------------------------------------------------- continue & control


async def test_continue_preconditions(fake_provider):
    config = AgentLoopConfig(model=MODEL)
    with pytest.raises(TranscriptError, match="no messages"):
        async with agent_loop_continue(AgentContext(), config, stream_fn=fake_provider):
            pass
    done = AssistantMessage(content=[TextContent(text="hi")])
    with pytest.raises(
        TranscriptNotContinuableError, match="Cannot continue from message role: assistant"
    ):
        async with agent_loop_continue(
            AgentContext(messages=[done]), config, stream_fn=fake_provider
        ):
            pass
    fake_provider.reply("continued")
    context = AgentContext(messages=[UserMessage(content="retry me")])
    async with agent_loop_continue(context, config, stream_fn=fake_provider) as events:
        messages = await events.result()
    assert [m.role for m in messages] == ["assistant"]
    assert fake_provider.history[0].context.messages[0].text() == "retry me"


async def test_agent_continue_from_an_assistant_message_uses_queued_messages(fake_provider):
    fake_provider.reply("first")
    fake_provider.reply("steered")
    agent, _ = make_agent(fake_provider)
    await agent.prompt("hi")
    with pytest.raises(TranscriptNotContinuableError, match="role: assistant"):
        await agent.continue_()
    agent.steer("one more")
    await agent.continue_()
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "user", "assistant"]
    assert text_of(agent.state.messages[-1]) == "steered"
    assert len(fake_provider.history) == 2


async def test_wait_for_idle_resolves_after_agent_end_listeners(fake_provider):
    fake_provider.reply("hi")
    agent, _ = make_agent(fake_provider)
    finished = []

    async def slow_listener(event, signal):
        if event.type == "agent_end":
            await anyio.sleep(0.05)
            finished.append("listener")

    agent.subscribe(slow_listener)
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "go")
        while not agent.is_running:
            await anyio.lowlevel.checkpoint()
        await agent.wait_for_idle()
        finished.append("idle")
    assert finished == ["listener", "idle"]


async def test_prompt_while_running_is_refused(fake_provider):
    started, hold = anyio.Event(), anyio.Event()
    fake_provider.enqueue(FakeResponse([text("slow"), gate(hold)]))
    agent, _ = make_agent(fake_provider)
    agent.subscribe(lambda e, s: started.set() if e.type == "agent_start" else None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "first")
        await started.wait()
        with pytest.raises(AgentBusyError, match="steer"):
            await agent.prompt("second")
        with pytest.raises(AgentBusyError):
            await agent.continue_()
        hold.set()
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]


async def test_should_stop_after_turn_ends_the_run_gracefully(fake_provider):
    fake_provider.reply(tool_call("shout", {"text": "x"}))
    fake_provider.reply("never")
    agent, recorder = make_agent(fake_provider, shout, should_stop_after_turn=lambda turn: True)
    await agent.prompt("go")
    assert fake_provider.pending == 1
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult"]
    assert recorder.labels()[-2:] == ["turn_end:assistant", "agent_end"]


async def test_prepare_next_turn_can_swap_the_model(fake_provider):
    fake_provider.reply(tool_call("shout", {"text": "x"}))
    fake_provider.reply("from the other model")
    other = fake_model(id="other-model", reasoning=True)
    agent, _ = make_agent(
        fake_provider,
        shout,
        prepare_next_turn=lambda turn: TurnUpdate(model=other, thinking_level="high"),
    )
    await agent.prompt("go")
    first, second = fake_provider.history
    assert (first.model.id, first.options.reasoning) == ("fake-model", None)
    assert (second.model.id, second.options.reasoning) == ("other-model", "high")


async def test_request_gets_transformed_context_and_resolved_key(fake_provider):
    fake_provider.reply("ok")
    seen_signal = []

    def keep_last(messages, signal):
        seen_signal.append(signal)
        return messages[-1:]

    agent, _ = make_agent(
        fake_provider,
        messages=[UserMessage(content="old"), AssistantMessage(content=[TextContent(text="x")])],
        transform_context=keep_last,
        get_api_key=lambda provider: f"key-for-{provider}",
    )
    await agent.prompt("new")
    request = fake_provider.history[0]
    assert [m.text() for m in request.context.messages] == ["new"]
    assert request.options.api_key == "key-for-fake"
    assert seen_signal[0] is request.options.signal is not None
    assert "key-for" not in repr(request.options)  # secrets stay out of reprs


async def test_custom_messages_are_replayed_as_user_messages(fake_provider):
    fake_provider.reply("ok")
    note = CustomMessage(custom_type="app:note", content="remember the milk", display=False)
    agent, _ = make_agent(fake_provider, messages=[note])
    await agent.prompt("go")
    sent = fake_provider.history[0].context.messages
    assert [m.role for m in sent] == ["user", "user"]
    assert sent[0].text() == "remember the milk"


async def test_run_agent_loop_with_a_plain_emit_sink(fake_provider):
    fake_provider.reply("plain")
    recorder = EventRecorder()
    messages = await run_agent_loop(
        [UserMessage(content="hi")],
        AgentContext(),
        AgentLoopConfig(model=MODEL),
        recorder,
        stream_fn=fake_provider,
    )
    assert [m.role for m in messages] == ["user", "assistant"]
    assert recorder.labels()[0] == "agent_start" and recorder.labels()[-1] == "agent_end"
