"""What a run holds while it waits on its model, made smaller: each cut is checked against the
way it was done before.

* the sanitizer stages' specs are shared by every session handed the same registrations
  (``transcript.stage_specs``), equal to the specs worked out from scratch;
* the reply-tag splitter joins the runtime's repair chain (``extend_stream_repairers``) instead
  of wrapping a second repaired stream around it: the same events, result, error and closing
  order as the two nested layers, on a table of provider and repairer shapes;
* ``AbortSignal`` callbacks, ``PendingMessageQueue`` and ``EventStream`` make their containers
  on first use, and a callback's remover is a small object: the same behaviour as before,
  including a callback that removes another while the signal fires.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from openclaw_runtime.abort import AbortController, TurnHandoff
from openclaw_runtime.agent.agent import PendingMessageQueue
from openclaw_runtime.context.guard import _HistoryTokens
from openclaw_runtime.context.projection import ToolResultProjectionState
from openclaw_runtime.context.tokens import boundary_token_pressure, estimate_message_token_pressure
from openclaw_runtime.events import (
    AssistantMessageEventStream,
    Done,
    Error,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallEnd,
    ToolCallStart,
)
from openclaw_runtime.llm import Context, StreamOptions
from openclaw_runtime.messages import AssistantMessage, TextContent, ToolCall, UserMessage
from openclaw_runtime.repair import PlainTextToolCallRepairer, apply_stream_repairers
from openclaw_runtime.repair.compose import extend_stream_repairers
from openclaw_runtime.reply import with_reply_tag_splitting
from openclaw_runtime.reply.stream import split_reply_tag_events
from openclaw_runtime.testing import fake_model
from openclaw_runtime.transcript import stage_specs as stage_specs_module
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from openclaw_runtime.transcript.policy import resolve_transcript_policy
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS, SanitizerSpec
from openclaw_runtime.transcript.stage_specs import build_stage_specs, stage_specs

# --------------------------------------------------------------------------- stage specs


@dataclasses.dataclass
class _Registration:
    name: str
    component: Any
    order: int
    plugin: str | None = None


def _custom(messages: list[Any], policy: Any) -> list[Any]:
    return messages


def _registrations(specs: tuple[SanitizerSpec, ...]) -> list[_Registration]:
    return [_Registration(s.name, s.fn, s.order, "builtin.transcript") for s in specs]


SHAPES: dict[str, Callable[[], list[Any]]] = {
    "no stages": lambda: [],
    "built-in specs": lambda: list(BUILTIN_SANITIZERS),
    "built-in registrations": lambda: _registrations(BUILTIN_SANITIZERS),
    "one built-in": lambda: [BUILTIN_SANITIZERS[3]],
    "reversed built-ins": lambda: list(reversed(BUILTIN_SANITIZERS)),
    "a plugin registration": lambda: [
        *_registrations(BUILTIN_SANITIZERS),
        _Registration("mine", _custom, 55, "p"),
    ],
    "a registration without plugin": lambda: [_Registration("mine", _custom, 5, None)],
    "a (name, fn) tuple": lambda: [("mine", _custom)],
    "a (name, fn, order) tuple": lambda: [("mine", _custom, 7), *BUILTIN_SANITIZERS[:2]],
    "a built-in under a tuple": lambda: [("images", BUILTIN_SANITIZERS[1].fn, 20)],
    "a built-in fn under another name": lambda: [
        SanitizerSpec("renamed", BUILTIN_SANITIZERS[0].fn, 999)
    ],
}


def _spec_fields(spec: SanitizerSpec) -> tuple[Any, ...]:
    return (spec.name, spec.fn, spec.order, spec.plugin)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_shared_specs_equal_the_specs_worked_out_from_scratch(shape: str) -> None:
    sanitizers = SHAPES[shape]()
    shared = stage_specs(sanitizers)
    fresh = build_stage_specs(sanitizers)
    assert [_spec_fields(s) for s in shared.specs] == [_spec_fields(s) for s in fresh.specs]
    assert shared.builtin_only == fresh.builtin_only
    assert shared.stages == fresh.stages
    # the same objects again: the very same answer (nothing made per session)
    assert stage_specs(list(sanitizers)) is shared
    assert shared.made_from(sanitizers)


def test_builtin_only_tells_a_plugin_stage_apart() -> None:
    assert stage_specs(SHAPES["built-in registrations"]()).builtin_only
    assert not stage_specs(SHAPES["a plugin registration"]()).builtin_only
    assert not stage_specs(SHAPES["a (name, fn) tuple"]()).builtin_only


def test_other_objects_with_equal_fields_get_their_own_specs() -> None:
    first = _registrations(BUILTIN_SANITIZERS)
    second = _registrations(BUILTIN_SANITIZERS)
    assert first == second
    a, b = stage_specs(first), stage_specs(second)
    assert a is not b
    assert a.made_from(first) and not a.made_from(second)
    assert b.made_from(second)


def test_the_cache_stays_bounded_and_right() -> None:
    sets = [_registrations(BUILTIN_SANITIZERS) for _ in range(stage_specs_module.CACHE_SIZE + 5)]
    for registrations in sets:
        assert stage_specs(registrations).made_from(registrations)
    assert len(stage_specs_module._cache) <= stage_specs_module.CACHE_SIZE
    # an early set was dropped: it is worked out again, still right
    again = stage_specs(sets[0])
    assert again.made_from(sets[0])
    assert again.stages == build_stage_specs(sets[0]).stages


def test_sessions_handed_the_same_registrations_share_their_specs() -> None:
    registrations = _registrations(BUILTIN_SANITIZERS)
    policy = resolve_transcript_policy("openai-completions", "openai", "gpt-4o")
    one, two = IncrementalSanitizer(), IncrementalSanitizer()
    one.run([], policy, list(registrations))
    two.run([], policy, list(registrations))
    assert one._seen_sanitizers is not None
    assert one._seen_sanitizers is two._seen_sanitizers


# --------------------------------------------------------------------------- repair chain


pytestmark = pytest.mark.anyio


def _model() -> Any:
    return fake_model()


def _message(model: Any) -> AssistantMessage:
    return AssistantMessage(api=model.api, provider=model.provider, model=model.id)


def _text_events(model: Any, chunks: list[str], log: list[str]) -> AsyncIterator[Any]:
    async def events() -> AsyncIterator[Any]:
        try:
            partial = _message(model)
            yield Start(partial)
            partial.content.append(TextContent(text=""))
            yield TextStart(0, partial)
            for chunk in chunks:
                partial.content[0].text += chunk  # type: ignore[union-attr]
                yield TextDelta(0, chunk, partial)
            text = "".join(chunks)
            yield TextEnd(0, text, partial)
            final = _message(model)
            final.content.append(TextContent(text=text))
            yield Done("stop", final)
            yield TextDelta(0, "after done", partial)  # never reaches anyone
        finally:
            log.append("close provider")

    return events()


def _tool_events(model: Any, log: list[str]) -> AsyncIterator[Any]:
    async def events() -> AsyncIterator[Any]:
        try:
            partial = _message(model)
            yield Start(partial)
            partial.content.append(TextContent(text="<think>plan</think>calling"))
            yield TextStart(0, partial)
            yield TextDelta(0, "<think>plan</think>calling", partial)
            yield TextEnd(0, "<think>plan</think>calling", partial)
            call = ToolCall(id="c1", name="lookup", arguments={"q": "x"})
            partial.content.append(call)
            yield ToolCallStart(1, partial)
            yield ToolCallEnd(1, call, partial)
            final = _message(model)
            final.content.extend([TextContent(text="<think>plan</think>calling"), call])
            final.stop_reason = "toolUse"
            yield Done("toolUse", final)
        finally:
            log.append("close provider")

    return events()


def _error_events(model: Any, log: list[str]) -> AsyncIterator[Any]:
    async def events() -> AsyncIterator[Any]:
        try:
            partial = _message(model)
            yield Start(partial)
            partial.content.append(TextContent(text="<final>par"))
            yield TextStart(0, partial)
            yield TextDelta(0, "<final>par", partial)
            failed = _message(model)
            failed.content.append(TextContent(text="<final>par"))
            failed.stop_reason = "error"
            failed.error_message = "upstream said no"
            yield Error("error", failed)
        finally:
            log.append("close provider")

    return events()


class Gone(RuntimeError):
    pass


def _raising_events(model: Any, log: list[str]) -> AsyncIterator[Any]:
    async def events() -> AsyncIterator[Any]:
        try:
            partial = _message(model)
            yield Start(partial)
            partial.content.append(TextContent(text=""))
            yield TextStart(0, partial)
            partial.content[0].text += "<think>Hel"  # type: ignore[union-attr]
            yield TextDelta(0, "<think>Hel", partial)
            raise Gone("connection reset by peer")
        finally:
            log.append("close provider")

    return events()


PROVIDERS: dict[str, Callable[[Any, list[str]], AsyncIterator[Any]]] = {
    "plain text": lambda model, log: _text_events(model, ["Hello", " world"], log),
    "inline reasoning split over chunks": lambda model, log: _text_events(
        model, ["<thi", "nk>hmm</th", "ink>The ", "<final>answer</final>"], log
    ),
    "a tool call": _tool_events,
    "an error event": _error_events,
    "raises mid-stream": _raising_events,
}


def _stream_fn(provider: str, log: list[str], *, awaitable: bool) -> Any:
    def stream_fn(model: Any, context: Any, options: Any) -> AssistantMessageEventStream:
        return AssistantMessageEventStream(PROVIDERS[provider](model, log))

    async def awaitable_stream_fn(
        model: Any, context: Any, options: Any
    ) -> AssistantMessageEventStream:
        return stream_fn(model, context, options)

    return awaitable_stream_fn if awaitable else stream_fn


def _passthrough(name: str, log: list[str]) -> Any:
    async def transformer(events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        try:
            async for event in events:
                if isinstance(event, TextDelta):  # what this layer sees tells where it sits
                    log.append(f"{name} saw {event.delta!r}")
                yield event
        finally:
            log.append(f"close {name}")

    return transformer


def _breaks_after_start(log: list[str]) -> Any:
    async def transformer(events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        try:
            async for event in events:
                yield event
                raise ValueError("repairer broke")
        finally:
            log.append("close broken")

    return transformer


def _plain() -> PlainTextToolCallRepairer:
    ids = itertools.count()
    return PlainTextToolCallRepairer(tool_call_id=lambda: f"id{next(ids)}")


INNER: dict[str, Callable[[list[str]], list[Any]]] = {
    "one passthrough": lambda log: [_passthrough("a", log)],
    "two passthroughs": lambda log: [_passthrough("a", log), _passthrough("b", log)],
    "the built-in repairer": lambda log: [_plain(), _passthrough("a", log)],
    "a repairer that raises": lambda log: [_passthrough("a", log), _breaks_after_start(log)],
}


def _dumped(value: Any) -> dict[str, Any]:
    """The model's fields, without the moment it was made (two runs are compared)."""
    dumped: dict[str, Any] = value.model_dump()
    dumped.pop("timestamp", None)
    return dumped


def _event_key(event: Any) -> tuple[Any, ...]:
    fields: list[Any] = [type(event).__name__]
    for name in ("content_index", "delta", "content", "reason"):
        if hasattr(event, name):
            fields.append((name, getattr(event, name)))
    for name in ("message", "error", "tool_call"):
        value = getattr(event, name, None)
        if value is not None:
            fields.append((name, _dumped(value)))
    return tuple(fields)


async def _consume(stream_fn: Any, how: str) -> dict[str, Any]:
    model = _model()
    response = stream_fn(model, Context(), StreamOptions())
    events: list[Any] = []
    outcome: Any = None
    try:
        if how == "iterate":
            async for event in response:
                events.append(_event_key(event))
        elif how == "first two":
            async for event in response:
                events.append(_event_key(event))
                if len(events) == 2:
                    break
            await response.aclose()
            return {"events": events}
        result = await response.result()
        outcome = ("result", _dumped(result))
    except Exception as exc:  # the run's view: which error, with which text
        outcome = ("error", type(exc).__name__, str(exc))
    return {"events": events, "outcome": outcome}


CASES = list(itertools.product(PROVIDERS, INNER, ("iterate", "result only", "first two")))


@pytest.mark.parametrize(("provider", "inner", "how"), CASES)
@pytest.mark.parametrize("enforce_final_tag", [False, True])
async def test_the_splitter_joining_the_chain_gives_what_nesting_gave(
    provider: str, inner: str, how: str, enforce_final_tag: bool
) -> None:
    def nested(log: list[str]) -> Any:
        repaired = apply_stream_repairers(
            _stream_fn(provider, log, awaitable=False), INNER[inner](log)
        )

        def split(events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            return split_reply_tag_events(events, context, enforce_final_tag=enforce_final_tag)

        return apply_stream_repairers(repaired, [split])

    def joined(log: list[str]) -> Any:
        repaired = apply_stream_repairers(
            _stream_fn(provider, log, awaitable=False), INNER[inner](log)
        )
        return with_reply_tag_splitting(repaired, enforce_final_tag=enforce_final_tag)

    before_log: list[str] = []
    after_log: list[str] = []
    before = await _consume(nested(before_log), how)
    after = await _consume(joined(after_log), how)
    assert after == before
    assert after_log == before_log
    assert "close provider" in after_log


@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_an_awaitable_provider_joins_the_chain_too(provider: str) -> None:
    logs: tuple[list[str], list[str]] = ([], [])
    fns = [
        apply_stream_repairers(
            apply_stream_repairers(_stream_fn(provider, logs[0], awaitable=True), [_plain()]),
            [lambda events, context: split_reply_tag_events(events, context)],
        ),
        with_reply_tag_splitting(
            apply_stream_repairers(_stream_fn(provider, logs[1], awaitable=True), [_plain()])
        ),
    ]
    results = [await _consume(fn, "iterate") for fn in fns]
    assert results[0] == results[1]
    assert logs[0] == logs[1]


def test_the_joined_chain_is_one_layer_and_made_once() -> None:
    log: list[str] = []
    inner = _passthrough("a", log)
    repaired = apply_stream_repairers(_stream_fn("plain text", log, awaitable=False), [inner])
    first = with_reply_tag_splitting(repaired)
    assert first is with_reply_tag_splitting(repaired)  # nothing made per attempt
    assert first is not with_reply_tag_splitting(repaired, enforce_final_tag=True)
    chain = first.chain  # type: ignore[attr-defined]
    assert chain[0] is inner and len(chain) == 2
    assert first.__wrapped__ is repaired.__wrapped__  # type: ignore[attr-defined]


async def test_a_bare_provider_gets_one_repaired_layer() -> None:
    log: list[str] = []
    fn = with_reply_tag_splitting(_stream_fn("a tool call", log, awaitable=False))
    outcome = await _consume(fn, "iterate")
    assert outcome["outcome"][0] == "result"
    message = outcome["outcome"][1]
    assert [block["type"] for block in message["content"]] == ["thinking", "text", "toolCall"]
    assert log == ["close provider"]


async def test_joining_refuses_a_transformer_that_cannot_be_called() -> None:
    repaired = apply_stream_repairers(_stream_fn("plain text", [], awaitable=False), [_plain()])
    with pytest.raises(TypeError, match="not callable"):
        extend_stream_repairers(repaired, [42])  # type: ignore[list-item]


# --------------------------------------------------------------------------- lazy containers


def test_abort_callbacks_keep_their_behaviour() -> None:
    controller = AbortController()
    signal = controller.signal
    calls: list[str] = []
    removers: list[Callable[[], None]] = []

    def a() -> None:
        calls.append("a")
        removers[0]()  # removing a later one while the signal fires: it still runs, as before

    signal.add_callback(a)
    removers.append(signal.add_callback(lambda: calls.append("b")))
    remove_c = signal.add_callback(lambda: calls.append("c"))
    remove_c()
    remove_c()  # twice: nothing
    controller.abort()
    assert calls == ["a", "b"]
    removers[0]()  # after firing: nothing
    controller.abort()  # once only
    assert calls == ["a", "b"]
    signal.add_callback(lambda: calls.append("late"))()  # already aborted: called now
    assert calls == ["a", "b", "late"]


async def test_linked_cancel_scopes_follow_the_signal() -> None:
    controller = AbortController()
    signal = controller.signal
    with signal.linked_cancel_scope() as scope:
        pass
    assert not scope.cancel_called
    assert signal._callbacks == []  # the scope took its callback off on the way out
    reached = anyio.Event()
    handoff_survived = False
    async with anyio.create_task_group() as tg:

        async def waits() -> None:
            nonlocal handoff_survived
            with signal.linked_cancel_scope(ignore_handoff=True) as ignoring:
                with signal.linked_cancel_scope() as cancelled:
                    reached.set()
                    await anyio.sleep_forever()
                assert cancelled.cancel_called
                handoff_survived = not ignoring.cancel_called

        tg.start_soon(waits)
        await reached.wait()
        controller.abort(TurnHandoff())
    assert handoff_survived
    other = AbortController()
    other.abort()
    with other.signal.linked_cancel_scope() as already:  # aborted before: cancelled at once
        await anyio.lowlevel.checkpoint()
    assert already.cancel_called


QUEUE_SCRIPTS = [
    ["drain", "len", "has"],
    ["put", "len", "has", "drain", "drain", "len"],
    ["put", "put", "put", "drain", "len", "drain", "drain", "has"],
    ["put", "clear", "has", "put", "drain"],
    ["clear", "drain", "put", "put", "drain", "put", "drain", "drain"],
]


@pytest.mark.parametrize("mode", ["one-at-a-time", "all"])
@pytest.mark.parametrize("script", QUEUE_SCRIPTS)
def test_pending_message_queues_behave_as_a_deque_did(mode: Any, script: list[str]) -> None:
    queue = PendingMessageQueue(mode)
    reference: deque[Any] = deque()
    counter = itertools.count()
    for step in script:
        if step == "put":
            item = next(counter)
            queue.enqueue(item)
            reference.append(item)
        elif step == "drain":
            if mode == "all":
                expected = list(reference)
                reference.clear()
            else:
                expected = [reference.popleft()] if reference else []
            assert queue.drain() == expected
        elif step == "len":
            assert len(queue) == len(reference)
        elif step == "has":
            assert queue.has_items() == bool(reference)
        else:
            queue.clear()
            reference.clear()


async def test_a_pushed_stream_delivers_what_was_pushed() -> None:
    model = _model()
    stream = AssistantMessageEventStream()
    assert stream._queue is None  # nothing made until something is pushed
    partial = _message(model)
    stream.push(Start(partial))
    final = _message(model)
    stream.push(Done("stop", final))
    stream.push(Start(partial))  # after the completion: dropped
    seen = [type(event).__name__ async for event in stream]
    assert seen == ["Start", "Done"]
    assert await stream.result() is final


def _user(text: str) -> Any:
    return UserMessage(content=text)


def test_the_history_estimate_made_lazily_equals_a_fresh_sum() -> None:
    history = [_user("x" * n) for n in (3, 40, 500, 7, 90)]
    steps = [history[:1], history[:3], history[:3], history[:5], history[1:4], [], history]
    estimate = _HistoryTokens()
    assert estimate._messages is None  # nothing held before the first estimate
    for messages in steps:
        fresh = boundary_token_pressure(
            sum(estimate_message_token_pressure(m) for m in messages),
            system_prompt="be brief",
            prompt="go",
        )
        assert estimate(messages, system_prompt="be brief", prompt="go") == fresh


def test_a_projection_state_holds_nothing_until_it_keeps_a_projection() -> None:
    state = ToolResultProjectionState()
    assert len(state) == 0
    state.forget()
    state.forget("call-1")  # nothing kept: nothing to drop
    assert len(state) == 0
