"""Per-tool-call shortcuts around awaitables, request options and messaging sends (tool5).

Each shortcut is compared with the code it replaced (kept here verbatim) over a table of
inputs: ``maybe_await``'s exact-type fast path, the guard's and the repaired stream's
"a list / an event stream is never awaitable" checks, ``StreamOptions.with_request`` without
``dataclasses.replace``, and the messaging tracker reading its names normalized once.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
from collections.abc import Iterable, Mapping
from types import CoroutineType
from typing import Any

import pytest

from openclaw_runtime.abort import AbortController
from openclaw_runtime.agent.types import maybe_await
from openclaw_runtime.context.guard import ToolResultContextGuard
from openclaw_runtime.events import AssistantMessageEventStream, Done
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import AssistantMessage, TextContent, UserMessage
from openclaw_runtime.reply.dedupe import (
    DEFAULT_MESSAGING_TOOLS,
    MessagingToolTracker,
    messaging_send_text,
)

pytestmark = pytest.mark.anyio


async def _old_maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class _AwaitableList(list[Any]):
    """A list subclass that is awaitable: not the exact type, so it is still awaited."""

    def __await__(self) -> Any:
        yield from ()
        return "awaited list"


class _AwaitableStream(AssistantMessageEventStream):
    def __await__(self) -> Any:
        yield from ()
        return "awaited stream"


class _Future:
    def __await__(self) -> Any:
        yield from ()
        return "awaited future"


async def _coroutine() -> str:
    return "awaited coroutine"


def _values() -> list[Any]:
    return [
        [],
        [1, 2],
        (),
        {"a": 1},
        "",
        "key",
        True,
        False,
        0,
        7,
        1.5,
        None,
        AssistantMessageEventStream(),
        _AwaitableList([1]),
        _AwaitableStream(),
        _Future(),
        object(),
        b"bytes",
        {1, 2},
    ]


async def test_maybe_await_matches_isawaitable_for_every_kind() -> None:
    for value in _values():
        assert await maybe_await(value) == await _old_maybe_await(value)
        if not inspect.isawaitable(value):
            assert await maybe_await(value) is value  # the same object back
    coroutine = _coroutine()
    assert type(coroutine) is CoroutineType
    assert await maybe_await(coroutine) == "awaited coroutine"


async def test_maybe_await_awaits_a_coroutine_once() -> None:
    calls = []

    async def once() -> int:
        calls.append(1)
        return 5

    assert await maybe_await(once()) == 5
    assert calls == [1]


async def test_guard_awaits_an_awaitable_inner_and_takes_a_list_as_it_is() -> None:
    messages: list[Any] = [UserMessage(content="hi")]
    answers: list[Any] = []

    def sync_inner(history: list[Any], _signal: Any) -> list[Any]:
        answers.append("sync")
        return list(history)

    async def async_inner(history: list[Any], _signal: Any) -> list[Any]:
        answers.append("async")
        return list(history)

    class _ReplacingList(list[Any]):
        """A list that is also awaitable: awaited (as before), its answer is what counts."""

        def __await__(self) -> Any:
            yield from ()
            return [UserMessage(content="awaited")]

    class _Replacing:
        def __await__(self) -> Any:
            yield from ()
            return [UserMessage(content="awaited too")]

    def awaitable_list_inner(history: list[Any], _signal: Any) -> Any:
        answers.append("awaitable list")
        return _ReplacingList(history)

    def awaitable_inner(history: list[Any], _signal: Any) -> Any:
        answers.append("awaitable")
        return _Replacing()

    for inner in (sync_inner, async_inner):
        guard = ToolResultContextGuard(context_window_tokens=200_000, inner=inner)
        out = await guard(messages)
        assert [m.content for m in out] == ["hi"]
    for inner, expected in ((awaitable_list_inner, "awaited"), (awaitable_inner, "awaited too")):
        guard = ToolResultContextGuard(context_window_tokens=200_000, inner=inner)
        out = await guard(messages)
        assert [m.content for m in out] == [expected]
    assert answers == ["sync", "async", "awaitable list", "awaitable"]


async def test_repaired_stream_awaits_an_awaitable_stream_function() -> None:
    from openclaw_runtime.repair.compose import _repaired_events

    answer = AssistantMessage(
        content=[TextContent(text="done")],
        api="bench",
        provider="fake",
        model="m",
        stop_reason="stop",
    )

    def stream() -> AssistantMessageEventStream:
        events = AssistantMessageEventStream()
        events.push(Done("stop", answer))
        return events

    def plain(*_: Any) -> Any:
        return stream()

    async def coroutine(*_: Any) -> Any:
        return stream()

    class _Wrapped:
        def __await__(self) -> Any:
            yield from ()
            return stream()

    def awaitable(*_: Any) -> Any:
        return _Wrapped()

    model = Model(id="m", name="m", api="bench", provider="fake")
    for fn in (plain, coroutine, awaitable):
        seen = [
            event.type
            async for event in _repaired_events(fn, (), model, Context(), StreamOptions())
        ]
        assert seen == ["done"], fn


# --- StreamOptions.with_request ---------------------------------------------------------


def _old_with_request(options: StreamOptions, *, signal: Any, api_key: str | None) -> StreamOptions:
    return dataclasses.replace(options, signal=signal, api_key=api_key or options.api_key)


def test_stream_options_fields_are_all_init_fields_signal_and_key_first() -> None:
    names = [item.name for item in dataclasses.fields(StreamOptions)]
    assert names[:2] == ["signal", "api_key"]
    assert all(item.init for item in dataclasses.fields(StreamOptions))


def _random_options(rng: random.Random) -> StreamOptions:
    signal = AbortController().signal
    pick = rng.choice
    return StreamOptions(
        signal=pick([None, signal]),
        api_key=pick([None, "", "sk-old"]),
        temperature=pick([None, 0.0, 0.7]),
        max_tokens=pick([None, 0, 4096]),
        stop=pick([None, [], ["END"]]),
        reasoning=pick([None, "low", "high"]),
        thinking_budgets=pick([None, {"low": 1024}]),
        session_id=pick([None, "s1"]),
        headers=pick([None, {"x": "y"}]),
        connect_timeout=pick([None, 1.0]),
        read_timeout=pick([None, 2.0]),
        idle_timeout=pick([None, 3.0]),
        metadata=pick([None, {"m": 1}]),
        on_payload=pick([None, print]),
        on_response=pick([None, repr]),
        extra=pick([{}, {"k": [1]}]),
        coalesce_deltas=pick([True, False]),
    )


def test_with_request_matches_replace_field_by_field() -> None:
    rng = random.Random(13)
    new_signal = AbortController().signal
    for _ in range(300):
        options = _random_options(rng)
        signal = rng.choice([None, new_signal])
        key = rng.choice([None, "", "sk-new"])
        new = options.with_request(signal=signal, api_key=key)
        old = _old_with_request(options, signal=signal, api_key=key)
        assert type(new) is StreamOptions and new is not options
        for item in dataclasses.fields(StreamOptions):
            # the same objects (a shallow copy), not equal copies
            assert getattr(new, item.name) is getattr(old, item.name), item.name
        assert repr(new) == repr(old)


def test_with_request_of_a_subclass_keeps_its_type() -> None:
    @dataclasses.dataclass(slots=True)
    class Wider(StreamOptions):
        more: int = 3

        def __post_init__(self) -> None:
            self.more += 1

    options = Wider(api_key="sk-a", more=1)
    new = options.with_request(signal=None, api_key="sk-b")
    assert type(new) is Wider and new.api_key == "sk-b"
    assert new.more == _old_with_request(options, signal=None, api_key="sk-b").more


# --- the messaging tracker --------------------------------------------------------------


def _old_send_text(
    tool_name: str, args: Any, *, messaging_tools: Iterable[str] = DEFAULT_MESSAGING_TOOLS
) -> str | None:
    name = (tool_name or "").strip().lower()
    if name not in {n.strip().lower() for n in messaging_tools} or not isinstance(args, Mapping):
        return None
    if name == "message":
        action = args.get("action")
        if action is not None and str(action).strip().lower() not in {
            "send",
            "thread-reply",
            "thread_reply",
            "reply",
        }:
            return None
    for key in ("message", "text", "content"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


_NAMES = [
    "message",
    " Message ",
    "MESSAGE",
    "sessions_send",
    "Sessions_Send\t",
    "read",
    "",
    "notify",
    " NOTIFY",
    "İnform",
    "inform",
    "ΣEND",
]
_TOOL_SETS: list[Iterable[str]] = [
    DEFAULT_MESSAGING_TOOLS,
    ["message", "sessions_send"],
    [" Notify ", "message"],
    ["İnform", "σend"],
    [],
]
_ARGS: list[Any] = [
    {"message": "hi"},
    {"text": "  "},
    {"content": "c", "action": "send"},
    {"message": "m", "action": " Reply "},
    {"message": "m", "action": "delete"},
    {"message": 3, "text": "t"},
    {},
    "not a mapping",
    None,
]


def test_send_text_and_tracker_match_the_old_reading() -> None:
    for tools in _TOOL_SETS:
        tracker = MessagingToolTracker(tools)
        committed = []
        for number, (name, args) in enumerate((name, args) for name in _NAMES for args in _ARGS):
            expected = _old_send_text(name, args, messaging_tools=tools)
            assert messaging_send_text(name, args, messaging_tools=tools) == expected
            call_id = f"c{number}"
            tracker.tool_started(call_id, name, args)
            tracker.tool_ended(call_id, is_error=False)
            if expected is not None:
                committed.append(expected)
        assert tracker.sent_texts == committed[-200:], tools


# --- the event dispatch of the kernel and the attempt -----------------------------------


def _event_classes() -> list[type]:
    from openclaw_runtime import events

    return [
        value
        for value in vars(events).values()
        if isinstance(value, type) and issubclass(value, events.Event)
    ]


def test_the_kernels_no_lifecycle_events_are_none_of_the_lifecycle_kinds() -> None:
    from openclaw_runtime.agent.loop import _NO_LIFECYCLE
    from openclaw_runtime.events import AgentEnd, TurnEnd, TurnStart

    assert len(_NO_LIFECYCLE) == 7
    for kind in _NO_LIFECYCLE:
        assert not issubclass(kind, (TurnStart, TurnEnd, AgentEnd)), kind


def test_the_attempt_records_nothing_only_for_kinds_it_never_records() -> None:
    from openclaw_runtime.events import MessageEnd, ToolExecutionEnd, ToolExecutionStart, TurnEnd
    from openclaw_runtime.runner.attempt import _NOTHING_TO_RECORD

    recorded = (MessageEnd, TurnEnd, ToolExecutionStart, ToolExecutionEnd)
    assert len(_NOTHING_TO_RECORD) == 6
    for kind in _NOTHING_TO_RECORD:
        assert not issubclass(kind, recorded), kind
    # every event class the runtime defines is either recorded or known to need nothing,
    # or goes the isinstance way (the sets only skip checks that answer "no")
    for kind in _event_classes():
        if kind in _NOTHING_TO_RECORD:
            assert not issubclass(kind, recorded)


async def test_the_kernel_tracks_turns_of_subclassed_lifecycle_events() -> None:
    from openclaw_runtime.agent.loop import _LoopRun
    from openclaw_runtime.agent.types import AgentContext, AgentLoopConfig
    from openclaw_runtime.events import AgentEnd, MessageEnd, TurnEnd, TurnStart

    class MyTurnStart(TurnStart):
        pass

    seen: list[Any] = []

    async def emit(event: Any) -> None:
        seen.append(event)

    model = Model(id="m", name="m", api="bench", provider="fake")
    run = _LoopRun(AgentContext(), [], AgentLoopConfig(model=model), emit, None, None)  # type: ignore[arg-type]
    await run.emit(MyTurnStart())
    assert run.turn_open
    await run.emit(MessageEnd(UserMessage(content="x")))
    assert run.turn_open and not run.ended
    await run.emit(TurnEnd(AssistantMessage(api="b", provider="f", model="m"), []))
    assert not run.turn_open
    await run.emit(AgentEnd([]))
    assert run.ended and len(seen) == 4


# --- the cached context's model across appends --------------------------------------------


@pytest.mark.parametrize("read_every", [1, 3])
async def test_the_cached_contexts_model_follows_each_assistant_append(read_every: int) -> None:
    from openclaw_runtime.messages import ToolCall, ToolResultMessage
    from openclaw_runtime.transcript.memory import MemorySessionStore
    from tests.test_record_fast_paths import _cached, _plain

    session = await MemorySessionStore().create("models", cwd="/w")
    await session.append_message(UserMessage(content="go"))
    session.build_session_context()  # a cached context for the appends to extend
    models = [("p", "m"), ("p", "m"), ("q", "m"), ("q", "m"), ("p", "n"), ("p", "m"), ("p", "m")]
    for n, (provider, model_id) in enumerate(models):
        call = ToolCall(id=f"c{n}", name="read", arguments={"path": f"f{n}"})
        assistant = AssistantMessage(
            content=[call], api="a", provider=provider, model=model_id, stop_reason="toolUse"
        )
        await session.append_message(assistant)
        result = ToolResultMessage(
            tool_call_id=f"c{n}", tool_name="read", content=[TextContent(text="r")]
        )
        await session.append_message(result)
        if n % read_every == 0:
            cached = _cached(session)
            assert cached == _plain(session), n
            assert cached[2] is not None and (cached[2].provider, cached[2].model_id) == (
                provider,
                model_id,
            )
    assert _cached(session) == _plain(session)
    await session.aclose()


# --- the repairer's tool names per request ------------------------------------------------


def _old_tool_names(context: Any) -> frozenset[str]:
    from openclaw_runtime.repair.grammar import js_trim

    tools = (
        context.get("tools") if isinstance(context, Mapping) else getattr(context, "tools", None)
    )
    names: set[str] = set()
    for tool in tools or ():
        name = tool.get("name") if isinstance(tool, Mapping) else getattr(tool, "name", None)
        if isinstance(name, str) and js_trim(name):
            names.add(name)
    return frozenset(names)


def test_tool_names_match_the_old_reading() -> None:
    from collections.abc import Iterator

    from openclaw_runtime.agent.tools import AgentTool
    from openclaw_runtime.llm import Tool
    from openclaw_runtime.repair.normalizer import resolve_context_tool_names

    class MappingTool(Tool, Mapping[str, Any]):  # a Tool that is a Mapping too: read by key
        def __getitem__(self, key: str) -> Any:
            return {"name": "from-mapping"}[key]

        def __iter__(self) -> Iterator[str]:
            return iter(["name"])

        def __len__(self) -> int:
            return 1

    async def run(*_: Any) -> Any:
        return None

    tools: list[Any] = [
        Tool(name="read", description=""),
        Tool(name="  ", description=""),
        AgentTool(name="write", description="", parameters={}, execute=run),
        AgentTool(name="blank_later", description="", parameters={}, execute=run),
        {"name": "exec"},
        {"name": 3},
        {},
        MappingTool(name="attr-name", description=""),
        type("Named", (), {"name": "named"})(),
        object(),
    ]
    tools[3].name = "\u00a0"  # changed after it was made: blank to ``js_trim``
    rng = random.Random(5)
    contexts: list[Any] = [Context(), None, {}, {"tools": None}, object()]
    for _ in range(200):
        picked = rng.sample(tools, rng.randint(0, len(tools)))
        contexts.append(Context(tools=picked))
        contexts.append({"tools": picked})
        contexts.append(type("Holder", (), {"tools": picked})())
    for context in contexts:
        assert resolve_context_tool_names(context) == _old_tool_names(context)
    assert "from-mapping" in resolve_context_tool_names(Context(tools=[tools[7]]))


# --- small per-message loops ---------------------------------------------------------------


def test_usage_numbers_match_the_old_reading() -> None:
    import math
    from decimal import Decimal

    from openclaw_runtime.runner.run_usage import _number

    def old(value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return 0
        return value

    class MyInt(int):
        pass

    class MyFloat(float):
        pass

    values: list[object] = [0, 1, -3, 2**70, 0.0, -0.0, 1.5, math.nan, math.inf, True, False]
    values += ["3", None, Decimal("1.5"), MyInt(4), MyFloat(2.5), [1], complex(1, 2)]
    for value in values:
        new, was = _number(value), old(value)
        assert type(new) is type(was) and (new == was or new != new), value
        if isinstance(value, float) and value == 0:
            assert math.copysign(1, new) == math.copysign(1, was)


def test_tool_result_after_the_fence_matches_the_old_reading() -> None:
    from openclaw_runtime.context.guard import _has_tool_result_after, _is_tool_result
    from openclaw_runtime.messages import ToolResultMessage

    def old(messages: list[Any], fence: int) -> bool:
        return any(_is_tool_result(message) for message in messages[fence:])

    class Result(ToolResultMessage):
        pass

    pool: list[Any] = [
        UserMessage(content="u"),
        AssistantMessage(api="a", provider="p", model="m"),
        ToolResultMessage(tool_call_id="c", tool_name="t", content=[]),
        Result(tool_call_id="c", tool_name="t", content=[]),
        {"role": "toolResult"},
        {"role": "tool"},
        {"role": "user"},
        type("Shaped", (), {"role": "tool"})(),
        object(),
    ]
    rng = random.Random(9)
    for _ in range(500):
        messages = [rng.choice(pool) for _ in range(rng.randint(0, 6))]
        fence = rng.randint(0, 7)
        assert _has_tool_result_after(messages, fence) == old(messages, fence)


def test_attempt_facts_match_the_old_reading() -> None:
    from openclaw_runtime.messages import ThinkingContent, ToolCall, ToolResultMessage, Usage
    from openclaw_runtime.runner.attempt import collect_attempt_facts

    def old_started(messages: list[Any]) -> bool:
        started = False
        for message in messages:
            if isinstance(message, AssistantMessage):
                if message.content and any(
                    not (isinstance(b, TextContent) and not b.text) for b in message.content
                ):
                    started = True
                if message.error_output_started or message.usage.output > 0:
                    started = True
        return started

    blocks: list[Any] = [
        TextContent(text=""),
        TextContent(text="hi"),
        ThinkingContent(thinking=""),
        ToolCall(id="c", name="read", arguments={}),
    ]
    rng = random.Random(11)
    for _ in range(400):
        messages: list[Any] = []
        for _ in range(rng.randint(0, 4)):
            if rng.random() < 0.7:
                messages.append(
                    AssistantMessage(
                        content=[rng.choice(blocks) for _ in range(rng.randint(0, 3))],
                        api="a",
                        provider="p",
                        model="m",
                        stop_reason=rng.choice(["stop", "toolUse", "error"]),
                        usage=Usage(output=rng.choice([0, 0, 5])),
                        error_output_started=rng.choice([None, False, True]),
                    )
                )
            else:
                messages.append(
                    ToolResultMessage(
                        tool_call_id="c", tool_name="read", content=[], is_error=False
                    )
                )
        facts = collect_attempt_facts(messages)
        assert facts.provider_started == old_started(messages)


def test_observed_kinds_match_the_old_observes() -> None:
    from openclaw_runtime import events
    from openclaw_runtime.reply.blocks import ReplyStreamObserver

    kinds = {
        value.type
        for value in vars(events).values()
        if isinstance(value, type) and isinstance(getattr(value, "type", None), str)
    }
    assert {"tool_execution_start", "message_update", "turn_end"} <= kinds

    async def send(_text: str) -> None:
        return None

    for observer in (ReplyStreamObserver(), ReplyStreamObserver(send=send)):
        for kind in kinds | {"", "other"}:
            old = kind in {"tool_execution_start", "tool_execution_end"} or (
                observer.chunker is not None
                and kind in {"message_start", "message_update", "message_end"}
            )
            assert (kind in observer.observed_kinds) == old == observer.observes(kind), kind


def test_side_effects_and_async_activity_match_the_old_reading() -> None:
    from openclaw_runtime.runner.reply_payload import ToolMeta, is_likely_mutating_tool_name
    from openclaw_runtime.runner.retry_instructions import (
        _has_async_activity,
        attempt_had_potential_side_effects,
    )

    def old_side_effects(metas: list[Any], messaging: bool, spawns: int, crons: int) -> bool:
        return (
            any(
                (
                    meta.mutating_action
                    if meta.mutating_action is not None
                    else is_likely_mutating_tool_name(meta.tool_name)
                )
                or meta.async_started
                for meta in metas
            )
            or messaging
            or spawns > 0
            or crons > 0
        )

    pool = [
        ToolMeta(tool_name=name, mutating_action=mutating, async_started=started)
        for name in ("read", "write", "exec", "message", "")
        for mutating in (None, True, False)
        for started in (False, True)
    ]
    rng = random.Random(3)
    for _ in range(600):
        metas = [rng.choice(pool) for _ in range(rng.randint(0, 4))]
        messaging, spawns, crons = rng.random() < 0.2, rng.choice([0, 0, 1]), rng.choice([0, 0, 2])
        new = attempt_had_potential_side_effects(
            metas,
            messaging_side_effect=messaging,
            accepted_session_spawns=spawns,
            successful_cron_adds=crons,
        )
        assert new is old_side_effects(metas, messaging, spawns, crons)
        facts = type("Facts", (), {"tool_metas": tuple(metas)})()
        assert _has_async_activity(facts) is any(meta.async_started for meta in metas)  # type: ignore[arg-type]
