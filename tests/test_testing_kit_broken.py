"""Every contract suite fails on a deliberately broken component (a suite that cannot fail
proves nothing). Each test calls one suite method the way pytest would and expects the
assertion that names the broken promise."""

from __future__ import annotations

import copy
import functools
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openclaw_runtime import hookimpl
from openclaw_runtime.context.engine import AssembleResult
from openclaw_runtime.context.legacy import LegacyContextEngine
from openclaw_runtime.events import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Done,
    Error,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
)
from openclaw_runtime.failover import FailoverClassification, FailoverReason, FailoverSignal
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import AssistantMessage, TextContent
from openclaw_runtime.repair.blocks import PlainTextToolCallBlock, PlainTextToolCallParseOptions
from openclaw_runtime.repair.formats import FormatScan, JsonObjectToolCallFormat
from openclaw_runtime.testing import (
    ContextEngineContract,
    FailoverClassifierContract,
    ProviderContract,
    ToolCallFormatContract,
    TranscriptSanitizerContract,
    registered_component,
)

# --------------------------------------------------------------------------- failover classifier


def classifier_plugin(classify: Any) -> Any:
    class Plugin:
        @hookimpl
        def classify_failover(self, signal: FailoverSignal) -> Any:
            return classify(signal)

    return Plugin()


def owned(signal: FailoverSignal) -> FailoverClassification | None:
    """A good classifier: ``acme``'s code ``acme_busy`` is an overload; no opinion otherwise."""
    if signal.provider == "acme" and signal.code == "acme_busy":
        return FailoverClassification.of(FailoverReason.OVERLOADED)
    return None


class AcmeClassifier(FailoverClassifierContract):
    provider = "acme"
    cases = (
        (FailoverSignal(provider="acme", status=503, code="acme_busy"), FailoverReason.OVERLOADED),
        (FailoverSignal(provider="acme", status=429, message="slow down"), None),
    )


def test_the_failover_suite_passes_a_good_classifier(tmp_path):
    suite, plugin = AcmeClassifier(), classifier_plugin(owned)
    suite.test_declares_its_cases(plugin, tmp_path)
    suite.test_answers_its_cases(plugin, tmp_path / "1")
    suite.test_never_raises_and_answers_with_a_classification(plugin, tmp_path / "2")
    suite.test_is_deterministic(plugin, tmp_path / "3")
    suite.test_leaves_other_providers_alone(plugin, tmp_path / "4")


def test_the_failover_suite_catches_a_classifier_that_raises(tmp_path):
    def raises(signal: FailoverSignal) -> Any:
        if signal.message and len(signal.message) > 3_000:
            raise ValueError("message too long")
        return owned(signal)

    with pytest.raises(AssertionError, match="raised on odd input"):
        AcmeClassifier().test_never_raises_and_answers_with_a_classification(
            classifier_plugin(raises), tmp_path
        )


def test_the_failover_suite_catches_an_answer_that_is_not_a_classification(tmp_path):
    def stringly(signal: FailoverSignal) -> Any:
        return "overloaded" if signal.status == 503 else owned(signal)

    with pytest.raises(AssertionError, match="not a FailoverClassification"):
        AcmeClassifier().test_never_raises_and_answers_with_a_classification(
            classifier_plugin(stringly), tmp_path
        )


def test_the_failover_suite_catches_a_classifier_answering_for_everyone(tmp_path):
    def greedy(signal: FailoverSignal) -> Any:
        if signal.code == "acme_busy":
            return FailoverClassification.of(FailoverReason.OVERLOADED)
        return None

    with pytest.raises(AssertionError, match="return None for providers you do not own"):
        AcmeClassifier().test_leaves_other_providers_alone(classifier_plugin(greedy), tmp_path)


def test_the_failover_suite_catches_a_wrong_or_missing_answer(tmp_path):
    def wrong(signal: FailoverSignal) -> Any:
        if signal.code == "acme_busy":
            return FailoverClassification.of(FailoverReason.RATE_LIMIT)
        return None

    with pytest.raises(AssertionError, match="expected"):
        AcmeClassifier().test_answers_its_cases(classifier_plugin(wrong), tmp_path / "a")
    with pytest.raises(AssertionError, match="gave no answer"):
        AcmeClassifier().test_answers_its_cases(classifier_plugin(lambda s: None), tmp_path / "b")


def test_the_failover_suite_catches_a_classifier_that_is_not_deterministic(tmp_path):
    counter = itertools.count()

    def flaky(signal: FailoverSignal) -> Any:
        if signal.provider == "acme" and next(counter) % 2:
            return FailoverClassification.of(FailoverReason.TIMEOUT)
        return owned(signal)

    with pytest.raises(AssertionError, match="classified differently"):
        AcmeClassifier().test_is_deterministic(classifier_plugin(flaky), tmp_path)


# --------------------------------------------------------------------------- tool-call format


def format_plugin(fmt: Any) -> Any:
    class Plugin:
        @hookimpl
        def register_tool_call_formats(self, register: Any) -> None:
            register("under_test", fmt)

    return Plugin()


class JsonFormatSuite(ToolCallFormatContract):
    format_name = "under_test"
    samples = (
        ('{"name": "lookup", "arguments": {"query": "otters"}}', "lookup", {"query": "otters"}),
    )


class IgnoresOptions(JsonObjectToolCallFormat):
    def parse_at(self, text: str, start: int, options: Any, line_breaks: Any) -> Any:
        return super().parse_at(text, start, PlainTextToolCallParseOptions(), line_breaks)


class RaisesOnJunk(JsonObjectToolCallFormat):
    def parse_at(self, text: str, start: int, options: Any, line_breaks: Any) -> Any:
        if "\x00" in text:
            raise ValueError("NUL")
        return super().parse_at(text, start, options, line_breaks)


class ImpatientScan(JsonObjectToolCallFormat):
    """Says ``invalid`` for a call still arriving: the repairer would leak it as text."""

    def scan_at(self, text: str, start: int, options: Any) -> FormatScan:
        scan = super().scan_at(text, start, options)
        return scan if scan.kind == "complete" else FormatScan("invalid")


class FlipFlopScan(JsonObjectToolCallFormat):
    """Says ``invalid`` and then changes its mind."""

    def scan_at(self, text: str, start: int, options: Any) -> FormatScan:
        if len(text) - start == 2:
            return FormatScan("invalid")
        return (
            FormatScan("prefix")
            if text[start : start + 1] != "{"
            else super().scan_at(text, start, options)
        )


def test_the_format_suite_passes_the_builtin_json_format(tmp_path):
    suite, plugin = JsonFormatSuite(), format_plugin(JsonObjectToolCallFormat())
    suite.test_is_a_tool_call_format(plugin, tmp_path / "1")
    suite.test_honours_the_allow_list_and_the_cap(plugin, tmp_path / "2")
    suite.test_scan_agrees_with_parse(plugin, tmp_path / "3")
    suite.test_invalid_is_final(plugin, tmp_path / "4")


def test_the_format_suite_catches_a_format_ignoring_the_allow_list(tmp_path):
    with pytest.raises(AssertionError, match="not an allowed tool"):
        JsonFormatSuite().test_honours_the_allow_list_and_the_cap(
            format_plugin(IgnoresOptions()), tmp_path
        )


def test_the_format_suite_catches_a_format_that_raises(tmp_path):
    with pytest.raises(ValueError, match="NUL"):
        JsonFormatSuite().test_never_raises_on_junk(format_plugin(RaisesOnJunk()), tmp_path)


def test_the_format_suite_catches_an_impatient_scan(tmp_path):
    with pytest.raises(AssertionError, match="a prefix of a valid call"):
        JsonFormatSuite().test_scan_agrees_with_parse(format_plugin(ImpatientScan()), tmp_path)


def test_the_format_suite_catches_an_invalid_verdict_taken_back(tmp_path):
    with pytest.raises(AssertionError, match="went from invalid back"):
        JsonFormatSuite().test_invalid_is_final(format_plugin(FlipFlopScan()), tmp_path)


def test_the_format_suite_catches_a_format_registered_under_another_name(tmp_path):
    class Elsewhere:
        @hookimpl
        def register_tool_call_formats(self, register: Any) -> None:
            register("other_name", JsonObjectToolCallFormat())

    with pytest.raises(AssertionError, match="no tool call format named 'under_test'"):
        JsonFormatSuite().test_is_a_tool_call_format(Elsewhere(), tmp_path)


class CallArrowFormat:
    """A good custom syntax: ``CALL>`` followed by a JSON call object."""

    inner = JsonObjectToolCallFormat()

    def parse_at(self, text: str, start: int, options: Any, line_breaks: Any) -> Any:
        if not text.startswith("CALL>", start):
            return None
        blocks = self.inner.parse_at(text, start + 5, options, line_breaks)
        if not blocks:
            return None
        return [
            PlainTextToolCallBlock(b.name, b.arguments, start, b.end, text[start : b.end])
            for b in blocks
        ]

    def scan_at(self, text: str, start: int, options: Any) -> FormatScan:
        head = text[start : start + 5]
        if not "CALL>".startswith(head) or not head:
            return FormatScan("invalid")
        if len(head) < 5 or start + 5 >= len(text):
            return FormatScan("prefix")
        return self.inner.scan_at(text, start + 5, options)


class ArrowSuite(ToolCallFormatContract):
    format_name = "under_test"
    samples = (
        (
            'CALL>{"name": "lookup", "arguments": {"query": "otters"}}',
            "lookup",
            {"query": "otters"},
        ),
    )


@pytest.mark.anyio
async def test_the_format_suite_passes_a_good_custom_format(tmp_path):
    suite, plugin = ArrowSuite(), format_plugin(CallArrowFormat())
    suite.test_parses_its_samples(plugin, tmp_path / "1")
    suite.test_never_raises_on_junk(plugin, tmp_path / "2")
    suite.test_scan_agrees_with_parse(plugin, tmp_path / "3")
    suite.test_invalid_is_final(plugin, tmp_path / "4")
    await suite.test_the_runtime_promotes_its_samples(plugin, tmp_path / "5")


@pytest.mark.anyio
async def test_the_format_suite_catches_a_format_the_runtime_cannot_use(tmp_path):
    # parses fine when asked directly, but its scan never lets the streaming repairer hold
    # the call back: the runtime never promotes it
    class NeverHolds(CallArrowFormat):
        def scan_at(self, text: str, start: int, options: Any) -> FormatScan:
            return FormatScan("invalid")

    with pytest.raises(AssertionError, match="did not turn"):
        await ArrowSuite().test_the_runtime_promotes_its_samples(
            format_plugin(NeverHolds()), tmp_path
        )


# --------------------------------------------------------------------------- provider

BROKEN = Model(id="broken-model", api="broken", provider="broken", baseUrl="http://127.0.0.1:9/v1")


def provider_plugin(stream_fn: Any) -> Any:
    class Plugin:
        @hookimpl
        def register_providers(self, register: Any) -> None:
            register("broken", stream_fn)

    return Plugin()


def scripted(events_of: Any) -> Any:
    def stream_fn(
        model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        return AssistantMessageEventStream(events_of(model, context, options))

    return stream_fn


async def answer(
    model: Model, context: Context, options: StreamOptions, *, final_text: str = "hello"
) -> AsyncIterator[AssistantMessageEvent]:
    message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
    yield Start(message)
    if options.signal is not None and options.signal.aborted:
        message.stop_reason, message.error_message = "aborted", "aborted"
        yield Error("aborted", message)
        return
    message.content.append(TextContent(text=""))
    yield TextStart(0, message)
    yield TextDelta(0, "hello", message)
    message.content[0] = TextContent(text=final_text)
    yield TextEnd(0, final_text, message)
    yield Done("stop", message)


class BrokenProviderSuite(ProviderContract):
    uses_network = True


@pytest.mark.anyio
async def test_the_provider_suite_passes_a_good_provider(tmp_path):
    plugin = provider_plugin(scripted(answer))
    await BrokenProviderSuite().test_streams_an_answer(plugin, BROKEN, tmp_path / "1")
    await BrokenProviderSuite().test_an_aborted_call_ends_aborted(plugin, BROKEN, tmp_path / "2")


@pytest.mark.anyio
async def test_the_provider_suite_catches_a_final_message_that_disagrees(tmp_path):
    lies = functools.partial(answer, final_text="HELLO")

    with pytest.raises(AssertionError, match="the final message says 'HELLO'"):
        await BrokenProviderSuite().test_streams_an_answer(
            provider_plugin(scripted(lies)), BROKEN, tmp_path
        )


@pytest.mark.anyio
async def test_the_provider_suite_catches_a_provider_that_raises(tmp_path):
    async def raises(model: Model, context: Context, options: StreamOptions) -> Any:
        yield Start(AssistantMessage(api=model.api, provider=model.provider, model=model.id))
        async with httpx.AsyncClient() as client:
            await client.post(
                model.base_url + "/chat", headers={"authorization": options.api_key or ""}
            )

    with pytest.raises(AssertionError, match="raised ConnectError instead of ending its stream"):
        await BrokenProviderSuite().test_a_refused_connection_is_an_error_event(
            provider_plugin(scripted(raises)), BROKEN, tmp_path
        )


@pytest.mark.anyio
async def test_the_provider_suite_catches_a_leaked_key(tmp_path):
    async def leaks(model: Model, context: Context, options: StreamOptions) -> Any:
        message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
        yield Start(message)
        message.stop_reason = "error"
        message.error_message = f"connection refused (key {options.api_key})"
        yield Error("error", message)

    with pytest.raises(AssertionError, match="the key leaked"):
        await BrokenProviderSuite().test_a_refused_connection_is_an_error_event(
            provider_plugin(scripted(leaks)), BROKEN, tmp_path
        )


@pytest.mark.anyio
async def test_the_provider_suite_catches_an_ignored_abort(tmp_path):
    def deaf(model: Model, context: Context, options: StreamOptions) -> Any:
        return answer(model, context, options.with_request(signal=None, api_key=None))

    with pytest.raises(AssertionError, match="an aborted call ended 'stop'"):
        await BrokenProviderSuite().test_an_aborted_call_ends_aborted(
            provider_plugin(scripted(deaf)), BROKEN, tmp_path
        )


@pytest.mark.anyio
async def test_the_provider_suite_catches_a_provider_that_edits_the_context(tmp_path):
    def edits(model: Model, context: Context, options: StreamOptions) -> Any:
        context.system_prompt += " Also, be verbose."
        return answer(model, context, options)

    with pytest.raises(AssertionError, match="modified the context"):
        await BrokenProviderSuite().test_streams_an_answer(
            provider_plugin(scripted(edits)), BROKEN, tmp_path
        )


# --------------------------------------------------------------------------- sanitizer, engine


def sanitizer_plugin(fn: Any) -> Any:
    class Plugin:
        @hookimpl
        def register_transcript_sanitizers(self, register: Any) -> None:
            register("under_test", fn)

    return Plugin()


def test_the_sanitizer_suite_catches_mutation_and_non_idempotence(tmp_path):
    def mutates(messages: list[Any], policy: Any) -> list[Any]:
        for message in messages:
            message.timestamp = 0
        return messages

    def stamps(messages: list[Any], policy: Any) -> list[Any]:
        out = [copy.deepcopy(m) for m in messages]
        if out:
            out[0].timestamp += 1
        return out

    suite = TranscriptSanitizerContract()
    broken = registered_component(
        sanitizer_plugin(mutates), "transcript_sanitizers", "under_test", tmp_path / "a"
    )
    with pytest.raises(AssertionError):
        suite.test_does_not_mutate_its_input(broken)
    broken = registered_component(
        sanitizer_plugin(stamps), "transcript_sanitizers", "under_test", tmp_path / "b"
    )
    suite.test_does_not_mutate_its_input(broken)
    with pytest.raises(AssertionError):
        suite.test_is_idempotent(broken)


@pytest.mark.anyio
async def test_the_engine_suite_catches_an_engine_that_edits_its_input():
    class Trimming(LegacyContextEngine):
        async def assemble(self, params: Any) -> AssembleResult:
            del params.messages[0]
            return await super().assemble(params)

    with pytest.raises(AssertionError):
        await ContextEngineContract().test_assemble_does_not_mutate_its_input(Trimming())


def test_registered_component_names_an_unknown_slot(tmp_path: Path):
    with pytest.raises(ValueError, match="unknown component slot 'formats'"):
        registered_component(None, "formats", "json_object", tmp_path)
