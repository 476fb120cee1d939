"""The tool-result context guard (seed 000 §6.5, tool-result-context-guard.ts, midturn-precheck.ts)."""

from __future__ import annotations

import pytest

from openclaw_runtime import OpenClawRuntimeError
from openclaw_runtime.agent import (
    Agent,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    run_agent_loop,
)
from openclaw_runtime.context import (
    MidTurnPrecheckOptions,
    install_tool_result_context_guard,
    is_mid_turn_precheck_error_message,
)
from openclaw_runtime.context.guard import (
    MID_TURN_PRECHECK_ERROR_MESSAGE,
    MidTurnPrecheckRequest,
    MidTurnPrecheckSignal,
    ToolResultContextGuard,
    enforce_tool_result_limit,
    estimate_tool_result_context_chars,
    is_mid_turn_precheck_signal,
    truncate_tool_result_to_chars,
)
from openclaw_runtime.context.preemptive import (
    prompt_fits_budget,
    should_preemptively_compact_before_prompt,
)
from openclaw_runtime.context.projection import ToolResultProjectionState
from openclaw_runtime.context.truncation import (
    CONTEXT_LIMIT_TRUNCATION_NOTICE,
    format_context_limit_truncation_notice,
)
from openclaw_runtime.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    load_message,
)
from openclaw_runtime.testing import EventRecorder, FakeProvider, fake_model, tool_call

IMAGE = ImageContent(data="AAAA", mime_type="image/png")
HINT = "Inspect src/fixture.ts before retrying."
BIG_OUTPUT = "progress output\n" * 4_000 + "Error: missing import; " + HINT


def tool_result(*content, details=None) -> ToolResultMessage:
    blocks = [TextContent(text=c) if isinstance(c, str) else c for c in content]
    fields = {} if details is None else {"details": details}
    return ToolResultMessage(tool_call_id="c1", tool_name="read", content=blocks, **fields)


def texts(message) -> str:
    return "\n".join(b.text for b in message.content if isinstance(b, TextContent))


# --------------------------------------------------------------------------- weights and limits


@pytest.mark.parametrize(
    ("message", "chars"),
    [
        (tool_result("x" * 10), 20),
        (tool_result("x" * 10, "y" * 5), 30),
        (tool_result(IMAGE), 16_000),
        (tool_result(), 0),
        (UserMessage(content="x" * 10_000), 0),
        (
            load_message(
                {
                    "role": "toolResult",
                    "toolCallId": "c",
                    "toolName": "t",
                    "content": [{"type": "custom", "value": "m" * 10}],
                    "isError": False,
                    "timestamp": 1,
                }
            ),
            2 * len('{"type":"custom","value":"mmmmmmmmmm"}'),
        ),
    ],
)
def test_weighted_tool_result_chars(message, chars):
    assert estimate_tool_result_context_chars(message) == chars


def test_details_do_not_count():
    assert (
        estimate_tool_result_context_chars(tool_result("abc", details={"big": "d" * 80_000})) == 6
    )


def test_results_that_fit_are_returned_as_they_are():
    message = tool_result("x" * 512)
    assert truncate_tool_result_to_chars(message, 1_024) is message
    user = UserMessage(content="x" * 50_000)
    assert truncate_tool_result_to_chars(user, 1_024) is user


def test_oversized_text_is_cut_to_half_the_weighted_budget():
    # OpenClaw splits no surrogate pair here; Python strings have none to split, so the emoji
    # (one code point) stays in the head and the cut falls two characters later.
    source = tool_result("a" * 439 + "😀" + "b" * 1_000, details={"private": "reference"})
    result = truncate_tool_result_to_chars(source, 1_024)
    assert texts(result) == "a" * 439 + "😀b" + format_context_limit_truncation_notice(999)
    assert estimate_tool_result_context_chars(result) <= 1_024
    assert "details" not in result.to_dict()
    assert source.details == {"private": "reference"}
    assert texts(source) == "a" * 439 + "😀" + "b" * 1_000


def test_an_error_at_the_end_survives():
    result = truncate_tool_result_to_chars(tool_result(BIG_OUTPUT), 8_192)
    assert HINT in texts(result)
    assert CONTEXT_LIMIT_TRUNCATION_NOTICE in texts(result)
    assert estimate_tool_result_context_chars(result) <= 8_192


def test_images_are_kept_while_they_fit():
    source = tool_result("x" * 10_000, IMAGE, IMAGE)
    result = truncate_tool_result_to_chars(source, 20_000)
    assert sum(isinstance(b, ImageContent) for b in result.content) == 1
    assert result.content[-1].text == "[1 image omitted from context; rerun with fewer images]"
    assert estimate_tool_result_context_chars(result) <= 20_000
    assert texts(result).startswith("x" * 1_000)


def test_when_no_image_fits_the_notice_says_so():
    result = truncate_tool_result_to_chars(tool_result("x" * 100, IMAGE), 5_000)
    assert [type(b) for b in result.content] == [TextContent, TextContent]
    assert result.content[0].text == "x" * 100
    assert result.content[1].text == (
        "[1 image omitted from context; no images fit the context limit; rerun with fewer images]"
    )


def test_two_dropped_images_use_the_plural():
    result = truncate_tool_result_to_chars(tool_result(IMAGE, IMAGE), 1_024)
    assert texts(result) == (
        "[2 images omitted from context; no images fit the context limit; rerun with fewer images]"
    )


def test_enforce_returns_a_new_list_and_keeps_small_messages():
    small, big = tool_result("ok"), tool_result("z" * 5_000)
    user = UserMessage(content="q")
    messages = [user, small, big]
    result = enforce_tool_result_limit(messages, 1_024)
    assert result is not messages
    assert result[0] is user and result[1] is small
    assert result[2] is not big and estimate_tool_result_context_chars(result[2]) <= 1_024
    assert texts(big) == "z" * 5_000


# --------------------------------------------------------------------------- the signal


def test_signal_text_and_markers():
    request = MidTurnPrecheckRequest(
        route="compact_only",
        estimated_prompt_tokens=120,
        prompt_budget_before_reserve=100,
        overflow_tokens=20,
        tool_result_reducible_chars=0,
        effective_reserve_tokens=5,
    )
    signal = MidTurnPrecheckSignal(request)
    assert str(signal) == MID_TURN_PRECHECK_ERROR_MESSAGE
    assert MID_TURN_PRECHECK_ERROR_MESSAGE == (
        "Context overflow: prompt too large for the model (mid-turn precheck)."
    )
    assert isinstance(signal, OpenClawRuntimeError)
    assert signal.is_control_flow_signal
    assert signal.route == "compact_only" and signal.request is request
    assert is_mid_turn_precheck_signal(signal) and not is_mid_turn_precheck_signal(ValueError())
    assert is_mid_turn_precheck_error_message(MID_TURN_PRECHECK_ERROR_MESSAGE)
    assert not is_mid_turn_precheck_error_message(
        "Context overflow: prompt too large for the model (precheck)."
    )
    assert not is_mid_turn_precheck_error_message(None)
    assert request.to_dict() == {
        "route": "compact_only",
        "estimatedPromptTokens": 120,
        "promptBudgetBeforeReserve": 100,
        "overflowTokens": 20,
        "toolResultReducibleChars": 0,
        "effectiveReserveTokens": 5,
    }


# --------------------------------------------------------------------------- the transform


class Target:
    def __init__(self, transform=None):
        self.transform_context = transform


def precheck(**overrides) -> MidTurnPrecheckOptions:
    fields = {"context_token_budget": 2_000, "reserve_tokens": 500}
    fields.update(overrides)
    return MidTurnPrecheckOptions(**fields)


USER = UserMessage(content="read the big file")
CALL = AssistantMessage(
    content=[ToolCall(id="c1", name="read", arguments={})], stop_reason="toolUse"
)


@pytest.mark.anyio
async def test_guard_composes_with_the_existing_transform():
    seen = []

    def inner(messages, signal):
        seen.append(list(messages))
        return [*messages, tool_result("w" * 50_000)]

    target = Target(inner)
    guard = install_tool_result_context_guard(target, context_window_tokens=8_192)
    assert target.transform_context is guard
    out = await target.transform_context([USER], None)
    assert seen == [[USER]]
    assert out[0] is USER
    assert estimate_tool_result_context_chars(out[1]) <= 8_192
    guard.uninstall()
    assert target.transform_context is inner


@pytest.mark.anyio
async def test_async_inner_transform_is_awaited():
    async def inner(messages, signal):
        return messages[:1]

    target = Target(inner)
    install_tool_result_context_guard(target, context_window_tokens=8_192)
    assert await target.transform_context([USER, CALL], None) == [USER]


@pytest.mark.anyio
async def test_precheck_fires_only_for_tool_results_after_the_fence():
    seen = []
    guard = ToolResultContextGuard(
        context_window_tokens=200_000, mid_turn_precheck=precheck(on_mid_turn_precheck=seen.append)
    )
    history = [UserMessage(content="x" * 40_000)]  # already over budget, but no new tool result
    assert await guard(history, None) == history
    with pytest.raises(MidTurnPrecheckSignal) as caught:
        await guard([*history, CALL, tool_result("y" * 100)], None)
    assert caught.value is guard.last_signal
    assert seen == [caught.value.request]
    assert caught.value.route == "compact_only"  # a small tool result cannot absorb the overflow
    assert caught.value.request.prompt_budget_before_reserve == 1_999


@pytest.mark.anyio
async def test_pre_prompt_message_count_seeds_the_fence():
    guard = ToolResultContextGuard(
        context_window_tokens=200_000,
        mid_turn_precheck=precheck(get_pre_prompt_message_count=lambda: 1),
    )
    with pytest.raises(MidTurnPrecheckSignal):
        await guard([USER, CALL, tool_result("y" * 20_000)], None)


@pytest.mark.anyio
async def test_the_fence_advances_after_a_fitting_check():
    options = precheck(context_token_budget=200_000, get_pre_prompt_message_count=lambda: 1)
    guard = ToolResultContextGuard(context_window_tokens=200_000, mid_turn_precheck=options)
    messages = [USER, CALL, tool_result("y" * 20_000)]
    assert len(await guard(messages, None)) == 3
    options.context_token_budget = 1_000  # now over budget, but nothing new arrived
    assert len(await guard(messages, None)) == 3
    with pytest.raises(MidTurnPrecheckSignal):
        await guard([*messages, CALL, tool_result("more")], None)


@pytest.mark.anyio
async def test_disabled_precheck_never_signals():
    guard = ToolResultContextGuard(
        context_window_tokens=200_000,
        mid_turn_precheck=precheck(enabled=False, get_pre_prompt_message_count=lambda: 0),
    )
    assert len(await guard([USER, CALL, tool_result("y" * 20_000)], None)) == 3
    assert guard.last_signal is None


@pytest.mark.anyio
async def test_reserve_and_system_prompt_are_read_at_each_check():
    reads = []

    def reserve():
        reads.append("reserve")
        return 0

    guard = ToolResultContextGuard(
        context_window_tokens=200_000,
        mid_turn_precheck=precheck(
            context_token_budget=100_000,
            reserve_tokens=reserve,
            get_system_prompt=lambda: reads.append("system") or "sys",
            get_pre_prompt_message_count=lambda: 1,
        ),
    )
    await guard([USER, CALL, tool_result("ok")], None)
    assert reads == ["system", "reserve"]


@pytest.mark.anyio
async def test_custom_estimator_drives_the_precheck():
    def pessimist(messages, *, system_prompt=None, prompt=""):
        return 10**9

    guard = ToolResultContextGuard(
        context_window_tokens=200_000,
        mid_turn_precheck=precheck(
            context_token_budget=200_000, get_pre_prompt_message_count=lambda: 1
        ),
        estimator=pessimist,
    )
    with pytest.raises(MidTurnPrecheckSignal) as caught:
        await guard([USER, CALL, tool_result("tiny")], None)
    assert caught.value.request.estimated_prompt_tokens == 10**9
    assert guard.take_signal() is caught.value and guard.last_signal is None


def test_install_needs_a_transform_context_attribute():
    with pytest.raises(TypeError, match="transform_context"):
        install_tool_result_context_guard(object(), context_window_tokens=1_000)


# --------------------------------------------------------------------------- through the kernel


async def _dump(call_id, args, signal, on_update):
    return AgentToolResult(content=[TextContent(text=BIG_OUTPUT)], details={"private": "reference"})


DUMP = AgentTool(
    name="dump",
    description="dump diagnostic output",
    parameters={"type": "object", "properties": {}},
    execute=_dump,
)


def _tool_results(messages):
    return [m for m in messages if isinstance(m, ToolResultMessage)]


@pytest.mark.anyio
async def test_provider_sees_the_bounded_result_while_the_transcript_keeps_it_whole():
    provider = FakeProvider()
    provider.reply(tool_call("dump", {}, id="c1"))
    provider.reply("fixed it")
    agent = Agent(model=fake_model(), stream_fn=provider, tools=[DUMP])
    guard = install_tool_result_context_guard(agent, context_window_tokens=8_192)

    await agent.prompt("read the diagnostic")

    assert len(provider.history) == 2
    [sent] = _tool_results(provider.history[1].context.messages)
    assert estimate_tool_result_context_chars(sent) <= guard.max_single_tool_result_chars == 8_192
    assert CONTEXT_LIMIT_TRUNCATION_NOTICE in texts(sent) and HINT in texts(sent)
    assert "details" not in sent.to_dict()
    [stored] = _tool_results(agent.state.messages)
    assert texts(stored) == BIG_OUTPUT
    assert stored.details == {"private": "reference"}
    assert agent.state.messages[-1].text() == "fixed it"
    assert agent.state.error_message is None


@pytest.mark.anyio
async def test_mid_turn_precheck_stops_the_loop_with_a_recognisable_failure():
    provider = FakeProvider()
    provider.reply(tool_call("dump", {}, id="c1"))
    provider.reply("never requested")
    agent = Agent(model=fake_model(), stream_fn=provider, tools=[DUMP])
    recorder = EventRecorder()
    agent.subscribe(recorder)
    requests = []
    guard = install_tool_result_context_guard(
        agent,
        context_window_tokens=8_192,
        mid_turn_precheck=precheck(on_mid_turn_precheck=requests.append),
    )

    await agent.prompt("read the diagnostic")

    assert len(provider.history) == 1  # the second request was never sent
    failure = agent.state.messages[-1]
    assert failure.stop_reason == "error"
    assert failure.error_message == MID_TURN_PRECHECK_ERROR_MESSAGE
    assert is_mid_turn_precheck_error_message(agent.state.error_message)
    assert guard.last_signal is not None and requests == [guard.last_signal.request]
    assert guard.last_signal.route in ("compact_then_truncate", "truncate_tool_results_only")
    assert guard.last_signal.request.overflow_tokens > 0
    assert recorder.labels()[-3:] == ["message_end:assistant", "turn_end:assistant", "agent_end"]
    [stored] = _tool_results(agent.state.messages)
    assert texts(stored) == BIG_OUTPUT


@pytest.mark.anyio
async def test_guard_wraps_an_agent_loop_config_and_its_existing_transform():
    provider = FakeProvider()
    provider.reply(tool_call("dump", {}, id="c1"))
    provider.reply("done")
    inner_calls = []

    def inner(messages, signal):
        inner_calls.append(len(messages))
        return messages

    config = AgentLoopConfig(model=fake_model(), transform_context=inner)
    install_tool_result_context_guard(config, context_window_tokens=8_192)
    context = AgentContext(system_prompt="", messages=[], tools=[DUMP])
    new_messages = await run_agent_loop(
        [UserMessage(content="go")], context, config, EventRecorder(), stream_fn=provider
    )
    assert inner_calls == [1, 3]
    [sent] = _tool_results(provider.history[1].context.messages)
    assert estimate_tool_result_context_chars(sent) <= 8_192
    [stored] = _tool_results(new_messages)
    assert texts(stored) == BIG_OUTPUT


class CountingProjectionState(ToolResultProjectionState):
    def __init__(self) -> None:
        super().__init__()
        self.projected: list[object] = []

    def project(self, message, max_chars, project, measure):  # type: ignore[no-untyped-def]
        self.projected.append(message)
        return super().project(message, max_chars, project, measure)


@pytest.mark.anyio
async def test_a_message_object_sent_again_is_not_projected_again():
    """A tool loop resends the whole history; only the new messages are projected."""
    state = CountingProjectionState()
    guard = ToolResultContextGuard(context_window_tokens=8_192, projection_state=state)
    big = tool_result("w" * 50_000)
    first = await guard([USER, CALL, big], None)
    assert state.projected == [USER, CALL, big]
    state.projected.clear()
    more = tool_result("small")
    second = await guard([USER, CALL, big, CALL, more], None)
    assert state.projected == [more]
    assert second[:3] == first and second[2] is first[2]  # the same projected bytes
    # an edited copy (a new object) is projected again, and the limit is part of the key
    state.projected.clear()
    edited = big.model_copy(update={"content": [TextContent(text="short now")]})
    third = await guard([USER, CALL, edited], None)
    assert state.projected == [edited] and texts(third[2]) == "short now"
    state.projected.clear()
    guard.max_single_tool_result_chars = 100_000
    await guard([USER, CALL, edited], None)
    assert state.projected == [USER, CALL, edited]


@pytest.mark.parametrize("budget", [500, 1_000, 2_000, 5_000, 20_000, 200_000])
@pytest.mark.parametrize("size", [0, 100, 4_000, 20_000, 60_000])
def test_prompt_fits_budget_agrees_with_the_routing_decision(budget, size):
    messages = [USER, CALL, tool_result("y" * size)] if size else [USER]
    decision = should_preemptively_compact_before_prompt(
        messages=messages, context_token_budget=budget, reserve_tokens=400, system_prompt="sys"
    )
    fits = prompt_fits_budget(
        messages, context_token_budget=budget, reserve_tokens=400, system_prompt="sys"
    )
    assert fits == (decision.route == "fits")


@pytest.mark.anyio
async def test_guard_reads_the_inner_list_without_keeping_it():
    """The inner transform's list (or tuple) is read, not copied: the guard's answer is a list
    of its own, the inner list is left as it was, and a later change to the inner list does
    not change what the next request projects."""
    kept: list[list[object]] = []

    def inner(messages, signal):
        out = [*messages]
        kept.append(out)
        return out if len(kept) % 2 else tuple(out)

    target = Target(inner)
    guard = install_tool_result_context_guard(target, context_window_tokens=8_192)
    history: list[object] = [USER]
    answers = []
    for n in range(6):
        call = AssistantMessage(
            content=[ToolCall(id=f"c{n}", name="read", arguments={})], stop_reason="toolUse"
        )
        history = [*history, call, tool_result("w" * (20_000 if n % 2 else 10))]
        out = await target.transform_context(history, None)
        assert out is not kept[-1] and isinstance(out, list)
        assert len(kept[-1]) == len(history) and all(map(lambda a, b: a is b, kept[-1], history))
        kept[-1].clear()  # the inner transform reuses its list: the guard must not care
        answers.append(list(out))
        assert out[0] is USER and len(out) == len(history)
        assert all(estimate_tool_result_context_chars(m) <= 8_192 for m in out[2::2])
    for answer, n in zip(answers, range(6), strict=True):
        assert len(answer) == 3 + 2 * n
    guard.uninstall()
