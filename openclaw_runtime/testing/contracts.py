"""Contract tests a plugin inherits to prove its component behaves like a good citizen.

::

    from openclaw_runtime.testing import ContextEngineContract

    class TestMyEngine(ContextEngineContract):
        @pytest.fixture
        def context_engine(self):
            return MyEngine()

Each mixin checks protocol conformance, that inputs are not mutated, idempotence and
determinism where the contract demands it, behaviour on empty input, and cancellation.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import anyio
import pytest

from ..abort import AbortController, is_abort_error
from ..context.engine import (
    AssembleParams,
    AssembleResult,
    CompactParams,
    CompactResult,
    ContextEngineInfo,
    IngestParams,
    IngestResult,
)
from ..llm import Context, Model, StreamOptions, Tool
from ..messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from ..providers.fake import FakeProvider, FakeResponse, text
from ..transcript.policy import TranscriptPolicy

__all__ = [
    "ContextEngineContract",
    "StreamRepairerContract",
    "TranscriptSanitizerContract",
    "sample_transcript",
]


def sample_transcript() -> list[Any]:
    """A small realistic history: prompt, tool call, result, answer, follow-up."""
    return [
        UserMessage(content="What is in a.txt?", timestamp=1_000),
        AssistantMessage(
            content=[
                TextContent(text="Reading it."),
                ToolCall(id="call_1", name="read", arguments={"path": "a.txt"}),
            ],
            stop_reason="toolUse",
            api="fake",
            provider="fake",
            model="m",
            timestamp=2_000,
        ),
        ToolResultMessage(
            tool_call_id="call_1",
            tool_name="read",
            content=[TextContent(text="hello")],
            timestamp=3_000,
        ),
        AssistantMessage(
            content=[TextContent(text="It says hello.")],
            api="fake",
            provider="fake",
            model="m",
            timestamp=4_000,
        ),
        UserMessage(content=[TextContent(text="Thanks!")], timestamp=5_000),
    ]


def _dump(messages: list[Any]) -> list[Any]:
    return [m.to_dict() if hasattr(m, "to_dict") else m for m in messages]


async def _error_of(awaitable: Any, results: list[Any] | None = None) -> Exception | None:
    """The exception ``awaitable`` raised, or None (its result goes to ``results``)."""
    try:
        value = await awaitable
    except Exception as exc:
        return exc
    if results is not None:
        results.append(value)
    return None


class ContextEngineContract:
    """Inherit and provide a ``context_engine`` fixture returning a fresh engine."""

    def test_info_names_the_engine(self, context_engine: Any) -> None:
        info = context_engine.info
        assert isinstance(info, ContextEngineInfo) or hasattr(info, "id")
        assert isinstance(info.id, str) and info.id.strip()
        assert isinstance(info.name, str) and info.name.strip()

    def test_required_methods_are_coroutines(self, context_engine: Any) -> None:
        for name in ("ingest", "assemble", "compact"):
            method = getattr(context_engine, name, None)
            assert callable(method), f"missing {name}()"
            assert inspect.iscoroutinefunction(method), f"{name}() must be async"
        for name in ("bootstrap", "maintain", "ingest_batch", "after_turn", "dispose"):
            method = getattr(context_engine, name, None)
            if method is not None:
                assert inspect.iscoroutinefunction(method), f"{name}() must be async"

    @pytest.mark.anyio
    async def test_assemble_does_not_mutate_its_input(self, context_engine: Any) -> None:
        messages = sample_transcript()
        before = _dump(messages)
        ids = [id(m) for m in messages]
        result = await context_engine.assemble(
            AssembleParams(session_id="contract", messages=messages, token_budget=100_000)
        )
        assert isinstance(result, AssembleResult)
        assert _dump(messages) == before
        assert [id(m) for m in messages] == ids

    @pytest.mark.anyio
    async def test_assemble_is_deterministic_and_idempotent(self, context_engine: Any) -> None:
        first = await context_engine.assemble(
            AssembleParams(
                session_id="contract", messages=sample_transcript(), token_budget=100_000
            )
        )
        second = await context_engine.assemble(
            AssembleParams(
                session_id="contract", messages=sample_transcript(), token_budget=100_000
            )
        )
        assert _dump(first.messages) == _dump(second.messages)
        again = await context_engine.assemble(
            AssembleParams(
                session_id="contract", messages=list(first.messages), token_budget=100_000
            )
        )
        assert _dump(again.messages) == _dump(first.messages)

    @pytest.mark.anyio
    async def test_assemble_of_an_empty_transcript(self, context_engine: Any) -> None:
        result = await context_engine.assemble(
            AssembleParams(session_id="contract", messages=[], token_budget=1000)
        )
        assert result.messages == []

    @pytest.mark.anyio
    async def test_ingest_does_not_mutate_the_message(self, context_engine: Any) -> None:
        message = sample_transcript()[0]
        before = copy.deepcopy(message.to_dict())
        result = await context_engine.ingest(IngestParams(session_id="contract", message=message))
        assert isinstance(result, IngestResult)
        assert message.to_dict() == before

    @pytest.mark.anyio
    async def test_an_aborted_call_stops_promptly(self, context_engine: Any) -> None:
        controller = AbortController()
        controller.abort()
        params = AssembleParams(
            session_id="contract", messages=sample_transcript(), abort_signal=controller.signal
        )
        with anyio.fail_after(5):
            error = await _error_of(context_engine.assemble(params))
        assert error is None or is_abort_error(error), (
            f"an aborted assemble() raised a non-abort error: {error!r}"
        )

    @pytest.mark.anyio
    async def test_compact_returns_a_result(self, context_engine: Any) -> None:
        controller = AbortController()
        controller.abort()
        params = CompactParams(
            session_id="contract", session_file="contract.jsonl", abort_signal=controller.signal
        )
        outcome: list[Any] = []
        with anyio.fail_after(5):
            error = await _error_of(context_engine.compact(params), outcome)
        assert error is None or is_abort_error(error), (
            f"an aborted compact() raised a non-abort error: {error!r}"
        )
        if error is None:
            assert isinstance(outcome[0], CompactResult)


class TranscriptSanitizerContract:
    """Inherit and provide a ``sanitizer`` fixture: ``fn(messages, policy) -> messages``."""

    policy = TranscriptPolicy(api="openai-completions", provider="openai", model_id="contract")

    def _run(self, sanitizer: Any, messages: list[Any]) -> list[Any]:
        result = sanitizer(messages, self.policy)
        assert not inspect.isawaitable(result), "sanitizers are synchronous"
        assert isinstance(result, list)
        return result

    def test_does_not_mutate_its_input(self, sanitizer: Any) -> None:
        messages = sample_transcript()
        before = _dump(messages)
        self._run(sanitizer, messages)
        assert _dump(messages) == before

    def test_is_deterministic(self, sanitizer: Any) -> None:
        first = self._run(sanitizer, sample_transcript())
        second = self._run(sanitizer, sample_transcript())
        assert [m.to_json() for m in first] == [m.to_json() for m in second]

    def test_is_idempotent(self, sanitizer: Any) -> None:
        once = self._run(sanitizer, sample_transcript())
        twice = self._run(sanitizer, once)
        assert [m.to_json() for m in twice] == [m.to_json() for m in once]

    def test_empty_input(self, sanitizer: Any) -> None:
        assert self._run(sanitizer, []) == []


class StreamRepairerContract:
    """Inherit and provide a ``stream_repairer`` fixture: ``transformer(events, context)``.

    Catches the classic mistake of a repairer that rewrites the deltas (what a UI shows) but
    passes the provider's final message through unchanged (what the transcript stores and
    what tools run from): the text and tool calls of the final ``done`` message must be
    exactly what the stream announced. Override ``sample_texts`` with texts your repairer
    changes (the defaults include a plain-text tool call for the ``lookup`` tool).
    """

    sample_texts: tuple[str, ...] = (
        "Hello, world. Nothing to repair here.",
        '{"name": "lookup", "arguments": {"query": "otters"}}',
        'Let me check. {"name": "lookup", "arguments": {"query": "otters"}}',
    )
    tools: tuple[Tool, ...] = (
        Tool(
            name="lookup",
            description="Look something up.",
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        ),
    )

    async def _repaired(self, repairer: Any, sample: str) -> list[Any]:
        provider = FakeProvider()
        provider.enqueue(FakeResponse([text(sample, chunk=7)], stop_reason="stop"))
        model = Model(id="contract", name="contract", api="fake", provider="fake")
        context = Context("contract", [UserMessage(content="hi")], list(self.tools))
        stream = provider.stream_fn(model, context, StreamOptions())
        events = []
        with anyio.fail_after(10):
            async for event in repairer(stream, context):
                events.append(event)
        return events

    @pytest.mark.anyio
    async def test_ends_with_exactly_one_terminal_event(self, stream_repairer: Any) -> None:
        for sample in self.sample_texts:
            events = await self._repaired(stream_repairer, sample)
            kinds = [event.type for event in events]
            assert kinds and kinds[0] == "start", kinds
            assert kinds[-1] in ("done", "error") and kinds.count(kinds[-1]) == 1, kinds

    @pytest.mark.anyio
    async def test_final_message_agrees_with_the_stream(self, stream_repairer: Any) -> None:
        for sample in self.sample_texts:
            events = await self._repaired(stream_repairer, sample)
            final = events[-1].message if events[-1].type == "done" else events[-1].error
            streamed_text = "".join(e.delta for e in events if e.type == "text_delta")
            final_text = "".join(b.text for b in final.content if isinstance(b, TextContent))
            assert streamed_text == final_text, (
                f"for {sample!r} the deltas say {streamed_text!r} but the final message says "
                f"{final_text!r}: apply the repair to the final message too"
            )
            streamed_calls = [
                (e.tool_call.name, e.tool_call.arguments)
                for e in events
                if e.type == "toolcall_end"
            ]
            final_calls = [(b.name, b.arguments) for b in final.content if isinstance(b, ToolCall)]
            assert streamed_calls == final_calls, (
                f"for {sample!r} the stream announced tool calls {streamed_calls!r} but the "
                f"final message holds {final_calls!r}"
            )
            if final_calls:
                assert final.stop_reason == "toolUse", final.stop_reason
