"""The run path's lean forms against the general ones they replace (issue 13, session 7).

Each fast form here is compared with what it stands for, shape by shape: an attempt without
a task group (asyncio) against the empty task group it had, the run's memos against the
computation they remember.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime._exceptions import PluginBackendError
from openclaw_runtime.events import (
    AssistantMessageEventStream,
    Done,
    Error,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
)
from openclaw_runtime.llm import Context, StreamOptions, Tool
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from openclaw_runtime.repair import PlainTextToolCallRepairer, apply_stream_repairers
from openclaw_runtime.reply import with_reply_tag_splitting
from openclaw_runtime.runner.attempt import collect_attempt_facts
from openclaw_runtime.runner.attempt_timer import timer_needs_task_group
from openclaw_runtime.runner.reply_payload import ToolMeta
from openclaw_runtime.runner.retry_instructions import AttemptFacts as RetryFacts
from openclaw_runtime.runner.retry_instructions import resolve_incomplete_turn_payload_text
from openclaw_runtime.runner.task_group_body import DeferredTasks, as_task_group_body
from openclaw_runtime.testing import fake_model
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer
from tests.test_run_recovery import KEYS, build_runtime

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------ the attempt's task group


class _Boom(Exception):
    pass


async def _returns() -> str:
    return "done"


async def _raises_value_error() -> str:
    raise ValueError("bad value")


async def _raises_backend_error() -> str:
    raise PluginBackendError("lanes down", plugin_name="acme")


async def _raises_custom() -> str:
    await anyio.lowlevel.checkpoint()
    raise _Boom("after a checkpoint")


async def _raises_group() -> str:
    raise ExceptionGroup("inner", [ValueError("one"), KeyError("two")])


async def _raises_base() -> str:
    raise GeneratorExit  # a BaseException that is not a cancellation


BODIES = [
    _returns,
    _raises_value_error,
    _raises_backend_error,
    _raises_custom,
    _raises_group,
    _raises_base,
]


def _shape(outcome: Any) -> Any:
    """What a caller can see of an outcome: the value, or the exception's type, message and
    (for a group) its members' shapes."""
    if isinstance(outcome, BaseExceptionGroup):
        return (type(outcome), outcome.message, [_shape(e) for e in outcome.exceptions])
    if isinstance(outcome, BaseException):
        return (type(outcome), str(outcome))
    return outcome


async def _through_task_group(body: Any) -> Any:
    try:
        async with anyio.create_task_group():
            return await body()
    except BaseException as exc:  # the outcome is what is compared
        return exc


async def _through_lean_body(body: Any) -> Any:
    try:
        return await as_task_group_body(body())
    except BaseException as exc:
        return exc


@pytest.mark.parametrize("body", BODIES, ids=[b.__name__ for b in BODIES])
async def test_an_attempt_body_without_a_task_group_ends_as_with_one(body: Any) -> None:
    if timer_needs_task_group():
        pytest.skip("trio: the attempt keeps its task group (the timer is a task in it)")
    assert _shape(await _through_lean_body(body)) == _shape(await _through_task_group(body))


async def test_a_cancelled_attempt_body_stays_a_cancellation() -> None:
    """Cancelled from outside, both forms let the backend's cancellation through unwrapped."""
    outcomes = []
    for runner in (_through_task_group, _through_lean_body):
        started = anyio.Event()

        async def waits(started: anyio.Event = started) -> str:
            started.set()
            await anyio.sleep_forever()
            return "never"

        seen: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def run(runner: Any = runner, waits: Any = waits, seen: list[Any] = seen) -> None:
                seen.append(await runner(waits))

            tg.start_soon(run)
            await started.wait()
            tg.cancel_scope.cancel()
        outcomes.append(seen)
    cancelled = anyio.get_cancelled_exc_class()
    assert [[type(o) for o in seen] for seen in outcomes] == [[cancelled], [cancelled]]


async def test_only_asyncio_runs_an_attempt_without_a_task_group(anyio_backend: str) -> None:
    assert timer_needs_task_group() is ("asyncio" not in str(anyio_backend))


# ------------------------------------------------ the reply-tag splitter over the repairers


class _UpstreamGone(RuntimeError):
    pass


def _scripted(texts: list[str], end: str) -> Any:
    """A provider streaming ``texts`` as one text block, then ending with ``end``: ``done``,
    ``error``, ``raise`` (its generator raises) or ``cut`` (it just stops)."""

    def stream_fn(model: Any, context: Any, options: Any) -> AssistantMessageEventStream:
        async def events() -> AsyncIterator[Any]:
            partial = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
            yield Start(partial)
            if texts:
                partial.content.append(TextContent(text=""))
                yield TextStart(0, partial)
                for text in texts:
                    partial.content[0].text += text  # type: ignore[union-attr]
                    yield TextDelta(0, text, partial)
                    await anyio.lowlevel.checkpoint()
                yield TextEnd(0, "".join(texts), partial)
            if end == "done":
                yield Done("stop", partial.model_copy(update={"stop_reason": "stop"}))
            elif end == "error":
                failed = partial.model_copy(update={"stop_reason": "error", "error_message": "x"})
                yield Error("error", failed)
            elif end == "raise":
                raise _UpstreamGone("connection reset")

        return AssistantMessageEventStream(events())

    return stream_fn


async def _passthrough(events: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
    async for event in events:
        yield event


async def _raising_repairer(events: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
    async for event in events:
        if isinstance(event, TextDelta):
            raise _Boom("repairer broke")
        yield event


def _plain() -> PlainTextToolCallRepairer:
    ids = itertools.count()
    return PlainTextToolCallRepairer(tool_call_id=lambda: f"id{next(ids)}")


STREAMS = {
    "plain text": (["Hello ", "world"], "done"),
    "think tags": (["<think>let me", " see</think>", "The answer", " is 4."], "done"),
    "final tags": (["<think>a</think><final>B", "</final>"], "done"),
    "unclosed think": (["<think>never closed"], "done"),
    "no text": ([], "done"),
    "an error turn": (["<think>x</think>partial"], "error"),
    "the provider raises": (["<think>x</think>Hel"], "raise"),
    "the stream stops": (["cut short"], "cut"),
}
RUNTIME_CHAINS: dict[str, Callable[[], list[Any]]] = {
    "the built-in repairer": lambda: [_plain()],
    "a plugin repairer": lambda: [_passthrough],
    "two repairers": lambda: [_plain(), _passthrough],
    "a repairer that raises": lambda: [_raising_repairer],
}


def _event_shape(event: Any) -> Any:
    fields = {}
    for name in ("content_index", "delta", "content", "reason"):
        if hasattr(event, name):
            fields[name] = getattr(event, name)
    message = getattr(event, "message", None) or getattr(event, "error", None)
    if message is not None:
        fields["message"] = _dump(message)
    partial = getattr(event, "partial", None)
    if partial is not None:
        fields["partial"] = _dump(partial)
    return (type(event).__name__, fields)


def _dump(message: AssistantMessage) -> dict[str, Any]:
    return message.model_dump(exclude={"timestamp"})  # the clock, not the stream


async def _drain(stream_fn: Any, tools: bool) -> Any:
    offered = [Tool(name="lookup", description="Look up.")] if tools else []
    context = Context("system", [UserMessage(content="hi")], offered)
    stream = stream_fn(fake_model(), context, StreamOptions())
    events = [_event_shape(event) async for event in stream]
    try:
        result: Any = _dump(await stream.result())
    except Exception as exc:  # the failure is part of what is compared
        result = (type(exc).__name__, str(exc))
    return events, result


@pytest.mark.parametrize("tools", [False, True], ids=["no tools", "tools"])
@pytest.mark.parametrize("chain", list(RUNTIME_CHAINS))
@pytest.mark.parametrize("shape", list(STREAMS))
@pytest.mark.parametrize("enforce", [False, True], ids=["tags", "enforce final"])
async def test_the_splitter_flattened_into_the_repairers_streams_as_nested(
    shape: str, chain: str, tools: bool, enforce: bool
) -> None:
    texts, end = STREAMS[shape]
    provider = _scripted(texts, end)
    repaired = apply_stream_repairers(provider, RUNTIME_CHAINS[chain]())

    def hidden(model: Any, context: Any, options: Any) -> Any:  # not flattened: the old form
        return repaired(model, context, options)

    flat = with_reply_tag_splitting(repaired, enforce_final_tag=enforce)
    nested = with_reply_tag_splitting(hidden, enforce_final_tag=enforce)
    stages = flat.chain  # type: ignore[attr-defined]
    assert len(stages) == len(RUNTIME_CHAINS[chain]()) + 1  # joined, not wrapped
    assert flat.__wrapped__ is provider  # type: ignore[attr-defined]
    assert await _drain(flat, tools) == await _drain(nested, tools)


# ------------------------------------------------------------ the run's deferred tasks


async def test_deferred_tasks_run_when_asked_and_keep_what_they_start() -> None:
    deferred = DeferredTasks()
    ran: list[str] = []

    async def record(tag: str) -> None:
        await anyio.lowlevel.checkpoint()
        ran.append(tag)
        if tag == "first":
            deferred.start_soon(record, "started by first")

    deferred.start_soon(record, "first")
    deferred.start_soon(record, "second", name="named")
    assert ran == [] and deferred.pending == 2  # nothing runs before the block ends
    await deferred.run_pending()
    assert sorted(ran) == ["first", "second", "started by first"]
    assert deferred.pending == 0
    deferred.start_soon(record, "dropped")
    deferred.drop()
    await deferred.run_pending()
    assert "dropped" not in ran


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as running:
        yield running


@pytest.mark.parametrize("rotate", [False, True], ids=["first profile", "rotated"])
async def test_a_run_has_recorded_its_profile_success_when_it_returns(
    tmp_path: Path, server: FaultInjectingOpenAIServer, rotate: bool
) -> None:
    """The profile that answered is the provider's last good one, its ledger cleared, by
    the time ``run`` returns (the fire-and-forget record is waited for, with or without the
    run's task group)."""
    if rotate:
        server.set_key("key-a", "rate_limited")
    runtime = build_runtime(tmp_path, server)
    try:
        result = await runtime.run("hello")
        state = await runtime.auth_store.load()
    finally:
        await runtime.aclose()
    used = "mock:1" if rotate else "mock:0"
    assert result.ok and result.auth_profile_id == used
    assert state.last_good.get("mock") == used
    assert state.usage_stats[used].last_used is not None
    assert state.usage_stats[used].cooldown_reason is None


# ------------------------------------------------------------- the run's messages, remembered


def _assistant(text: str, stop: str = "stop") -> AssistantMessage:
    return AssistantMessage(
        api="fake",
        provider="fake",
        model="m",
        content=[TextContent(text=text)],
        stop_reason=stop,  # type: ignore[arg-type]
        error_message="boom" if stop == "error" else None,
    )


async def test_the_remembered_run_messages_follow_every_change_of_the_session(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    """After each step that changes what the run's messages are (an append, a failed turn
    set aside, a branch moved back, the run continued in a successor session) the
    remembered answer equals a fresh read, and so do the facts."""
    from openclaw_runtime.runner.request import RunRequest  # lazy: this test only
    from openclaw_runtime.runner.run_state import RunState  # lazy: this test only
    from openclaw_runtime.runner.session_ops import set_aside_failed_tail  # lazy: this test

    runtime = build_runtime(tmp_path, server)
    try:
        run = RunState(runtime, RunRequest(prompt="hi"), None)
        session = await runtime.services.checkout_session("s-memo", cwd=str(tmp_path))
        run.session, run.session_id = session, "s-memo"
        run.start_leaf_id = session.get_leaf_id()

        def check(step: str) -> None:
            fresh = run._read_run_messages()
            assert run.run_messages() == fresh, step
            assert run.run_messages() is not run.run_messages(), step  # a copy each time
            facts, expected = run.run_facts(), collect_attempt_facts(fresh)
            assert facts.assistant == expected.assistant, step
            assert facts.assistant_texts == expected.assistant_texts, step
            assert facts.tool_metas == expected.tool_metas, step
            assert facts.last_tool_error == expected.last_tool_error, step

        check("nothing yet")

        async def append(message: Any) -> str:
            entry_id = await session.append_message(message)
            run.run_entry_ids.add(entry_id)
            return entry_id

        await append(UserMessage(content="hi"))
        check("the prompt")
        hello = await append(_assistant("hello"))
        check("an answer")
        await append(_assistant("partial", stop="error"))
        check("a failed turn")
        await set_aside_failed_tail(session)
        check("the failed turn set aside")
        await append(_assistant("again"))
        check("a retry's answer")
        await session.branch(hello)
        assert [m.role for m in run.run_messages()] == ["user", "assistant"]
        check("the branch moved back")
        successor = await runtime.services.checkout_session("s-next", cwd=str(tmp_path))
        run._continue_on(successor)
        session = successor
        check("continued in a successor")
        await append(UserMessage(content="more"))
        check("the successor's first message")
    finally:
        await runtime.aclose()


# ----------------------------------------------- the incomplete-turn text, one assessment


def _reference_incomplete_text(facts: RetryFacts, *, payload_count: int) -> str | None:
    """``resolve_incomplete_turn_payload_text`` as it read before (the shape helpers, each
    assessing the message itself): what the one-assessment form must answer."""
    from openclaw_runtime.runner import retry_instructions as ri  # lazy: the reference only

    assistant = facts.assistant
    tool_use_terminal = assistant is not None and assistant.stop_reason == "toolUse"
    empty = ri.is_empty_response_assistant_turn(facts, payload_count=payload_count)
    reasoning_only = ri.is_reasoning_only_assistant_turn(assistant)
    unsigned_thinking = ri.is_unsigned_thinking_only_assistant_turn(assistant)
    non_visible_post_tool = (
        empty or unsigned_thinking or (reasoning_only and ri._has_completed_tool_activity(facts))
    )
    if (
        (payload_count != 0 and not tool_use_terminal and not non_visible_post_tool)
        or facts.client_tool_calls
        or ri.has_replay_blocking_tool_error(facts)
    ):
        return None
    if ri._has_only_silent_reply(facts.assistant_texts) or facts.committed_messaging_delivery:
        return None
    stop_reason = assistant.stop_reason if assistant is not None else None
    if not (tool_use_terminal or reasoning_only or unsigned_thinking or empty) and (
        stop_reason != "error"
    ):
        return None
    return (
        ri.INCOMPLETE_TURN_SIDE_EFFECT_TEXT
        if facts.had_potential_side_effects
        else ri.INCOMPLETE_TURN_TEXT
    )


def _turn(content: list[Any], stop: str = "stop") -> AssistantMessage:
    return AssistantMessage(
        api="fake",
        provider="fake",
        model="m",
        content=content,
        stop_reason=stop,  # type: ignore[arg-type]
    )


ASSISTANTS: dict[str, AssistantMessage | None] = {
    "none": None,
    "text": _turn([TextContent(text="Hello")]),
    "blank text": _turn([TextContent(text="  ")]),
    "no content": _turn([]),
    "signed thinking": _turn([ThinkingContent(thinking="hm", thinking_signature="sig")]),
    "signed thinking, blank text": _turn(
        [ThinkingContent(thinking="hm", thinking_signature="sig"), TextContent(text="")]
    ),
    "unsigned thinking": _turn([ThinkingContent(thinking="hm")]),
    "thinking and text": _turn(
        [ThinkingContent(thinking="hm", thinking_signature="s"), TextContent(text="Hi")]
    ),
    "tool use": _turn([ToolCall(id="c1", name="write", arguments={})], stop="toolUse"),
    "error stop": _turn([TextContent(text="part")], stop="error"),
    "error, no content": _turn([], stop="error"),
}
TOOLS = {
    "no tools": (),
    "a read": (ToolMeta(tool_name="read"),),
    "a write": (ToolMeta(tool_name="write"),),
}


@pytest.mark.parametrize("payload_count", [0, 1, 2])
@pytest.mark.parametrize("tools", list(TOOLS))
@pytest.mark.parametrize("assistant", list(ASSISTANTS))
@pytest.mark.parametrize("side_effects", [False, True])
def test_the_incomplete_turn_text_from_one_assessment_is_the_old_answer(
    assistant: str, tools: str, payload_count: int, side_effects: bool
) -> None:
    message = ASSISTANTS[assistant]
    texts = (message.text(),) if message is not None and message.text().strip() else ()
    facts = RetryFacts(
        assistant_texts=texts,
        assistant=message,
        tool_metas=TOOLS[tools],
        had_potential_side_effects=side_effects,
        items_started=len(TOOLS[tools]),
        items_completed=len(TOOLS[tools]),
    )
    assert resolve_incomplete_turn_payload_text(
        facts, payload_count=payload_count
    ) == _reference_incomplete_text(facts, payload_count=payload_count)


# ------------------------------------------------------- an empty steering store's lease


@pytest.mark.parametrize("lease_id", [None, "", "lease-1"])
async def test_an_empty_in_memory_store_leases_as_the_general_path(lease_id: str | None) -> None:
    """An empty store: the same answer (None) and the same records after as the general
    lease (a store with records takes the general path: the steering tests)."""
    from openclaw_runtime.runner.steering_store import (  # lazy: this test only
        InMemorySteeringStore,
        RecordsSteeringStore,
    )

    empty = InMemorySteeringStore()
    assert await empty.lease("session:a", now_ms=1.0, lease_id=lease_id) is None
    general = await RecordsSteeringStore.lease(
        InMemorySteeringStore(), "session:a", now_ms=1.0, lease_id=lease_id
    )
    assert general is None
    assert await empty.load() == {}


# ------------------------------------------------------------ auth order without profiles

_NOW = 1_700_000_000_000


def _profile(pid: str, provider: str) -> Any:
    from openclaw_runtime.auth import AuthProfile  # lazy: these tables only

    return AuthProfile(id=pid, provider=provider, mode="api_key", credential=f"secret-{pid}")  # type: ignore[arg-type]


def _order_cases() -> dict[str, tuple[Any, Any]]:
    from openclaw_runtime.auth import AuthProfileStoreState  # lazy: these tables only
    from openclaw_runtime.auth.state import ProfileUsageStats  # lazy: these tables only
    from openclaw_runtime.config import AuthSettings  # lazy: these tables only

    empty = AuthProfileStoreState()
    stats_only = AuthProfileStoreState.of((), usage_stats={"openai:x": ProfileUsageStats()})
    other = AuthProfileStoreState.of((_profile("anthropic:a", "anthropic"),))
    own = AuthProfileStoreState.of((_profile("openai:a", "openai"),))
    ordered = AuthProfileStoreState.of((), order={"openai": ("openai:gone",)})
    return {
        "nothing, no config": (empty, None),
        "nothing, empty settings": (empty, AuthSettings()),
        "nothing, an empty dict config": (empty, {}),
        "usage stats but no profile": (stats_only, None),
        "another provider's profile": (other, None),
        "its own profile": (own, None),
        "a stored order only": (ordered, None),
        "a configured order only": (empty, {"auth": {"order": {"openai": ["openai:cfg"]}}}),
        "a configured profile only": (
            empty,
            {"auth": {"profiles": {"openai:cfg": {"provider": "openai", "mode": "api_key"}}}},
        ),
    }


@pytest.mark.parametrize("provider", ["openai", "OpenAI", "anthropic", "z.ai"])
@pytest.mark.parametrize("case", list(_order_cases()))
def test_the_auth_order_without_profiles_is_the_general_answer(case: str, provider: str) -> None:
    """The shortcut (no profile, no order anywhere) answers what the general walk answers."""
    from openclaw_runtime.auth.order import (  # lazy: this test only
        _auth_config_view,
        _walk_auth_profile_order,
        resolve_auth_profile_order_with_metadata,
    )

    state, cfg = _order_cases()[case]
    fast = resolve_auth_profile_order_with_metadata(
        store=state, provider=provider, now_ms=_NOW, cfg=cfg, for_model="m"
    )
    general = _walk_auth_profile_order(
        _auth_config_view(cfg),
        store=state,
        provider=provider,
        now_ms=_NOW,
        cfg=cfg,
        preferred_profile=None,
        for_model="m",
        cooldown_scope=None,
        readiness_mode="execution",
        env=None,
    )
    assert fast == general


async def test_the_split_form_of_a_function_is_made_once_and_streams_apart() -> None:
    """One split function per repaired function and mode; two streams through split
    functions at once each split their own text (the splitter belongs to the stream)."""
    provider = _scripted(["<think>a</think>", "one"], "done")
    other = _scripted(["<think>b</think>", "two"], "done")
    repaired = apply_stream_repairers(provider, [PlainTextToolCallRepairer()])
    split = with_reply_tag_splitting(repaired)
    assert with_reply_tag_splitting(repaired) is split
    assert with_reply_tag_splitting(repaired, enforce_final_tag=True) is not split
    assert with_reply_tag_splitting(other) is not split
    context = Context("system", [UserMessage(content="hi")], [])
    first = split(fake_model(), context, StreamOptions())
    second = with_reply_tag_splitting(other)(fake_model(), context, StreamOptions())
    seen: dict[str, Any] = {}

    async def drain(name: str, stream: Any) -> None:
        async for _event in stream:
            await anyio.lowlevel.checkpoint()
        seen[name] = _dump(await stream.result())["content"]

    async with anyio.create_task_group() as tg:
        tg.start_soon(drain, "first", first)
        tg.start_soon(drain, "second", second)
    assert [block["type"] for block in seen["first"]] == ["thinking", "text"]
    assert [block.get("thinking") or block.get("text") for block in seen["first"]] == ["a", "one"]
    assert [block.get("thinking") or block.get("text") for block in seen["second"]] == ["b", "two"]


# ------------------------------------------------------------------- the lane timeout, kept


@pytest.mark.parametrize(
    "timeout_s",
    [None, 0, 0.0, 0.0004, 0.5, 1, 1.0, 20, 600, 600.0, 172_800, 2_147_000, 1e12, -1, True],
)
def test_the_remembered_lane_timeout_is_the_policys(timeout_s: Any) -> None:
    from openclaw_runtime.runner.lane_policy import (  # lazy: this test only
        resolve_embedded_run_lane_timeout_ms,
        resolve_run_lane_timeout_s,
    )

    timeout_ms = 0 if timeout_s is None else timeout_s * 1000
    expected = resolve_embedded_run_lane_timeout_ms(timeout_ms) / 1000
    for _ in range(2):  # asked again: the remembered answer
        assert resolve_run_lane_timeout_s(timeout_s) == expected
