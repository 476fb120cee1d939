"""Every model of the fallback chain failed: the run ends on what OpenClaw returns
(issue 15 §3, spec §11.4): the latest rejected candidate's bookkeeping, the most credible
payload (a preserved, fallback-safe incomplete turn beats a later thrown error and a
summary of errors), no winner (an error outcome, no ``fallback_succeeded``).

End to end over real HTTP against ``FaultInjectingOpenAIServer`` (asyncio and trio), plus
tables for the pure parts (``runner.exhaustion``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.events import Event
from openclaw_runtime.failover import (
    EmbeddedRunResult,
    RunPayload,
    classify_embedded_agent_run_result_for_model_fallback,
    merge_embedded_agent_run_result_for_model_fallback_exhaustion,
)
from openclaw_runtime.llm import Model
from openclaw_runtime.messages import AssistantMessage, TextContent
from openclaw_runtime.runner.candidate import CandidateResult
from openclaw_runtime.runner.exhaustion import (
    candidate_result_view,
    merge_candidate_results_for_exhaustion,
)
from openclaw_runtime.runner.reply_payload import ReplyPayload
from openclaw_runtime.runner.request import RunErrorInfo
from openclaw_runtime.runner.retry_instructions import (
    INCOMPLETE_TURN_SIDE_EFFECT_TEXT,
    INCOMPLETE_TURN_TEXT,
)
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer

KEYS = {"key-a": "ok", "key-backup": "ok"}


# --------------------------------------------------------------------------- end to end


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as running:
        yield running


@pytest.fixture
async def runtime(server: FaultInjectingOpenAIServer, tmp_path: Path) -> Any:
    def model(model_id: str, provider: str) -> dict[str, Any]:
        return {
            "id": model_id,
            "api": "openai-completions",
            "provider": provider,
            "baseUrl": server.base_url,
            "contextWindow": 64_000,
            "maxTokens": 1024,
        }

    config = {
        "state_dir": str(tmp_path / "state"),
        "models": [model("main", "mock"), model("mini", "backup")],
        "agent": {"model": "mock/main", "fallbacks": ["backup/mini"], "timeout_seconds": 20},
        "auth": {
            "profiles": [
                {
                    "id": "mock:0",
                    "provider": "mock",
                    "mode": "api_key",
                    "credential": {"value": "key-a"},
                },
                {
                    "id": "backup:0",
                    "provider": "backup",
                    "mode": "api_key",
                    "credential": {"value": "key-backup"},
                },
            ]
        },
    }
    built = Runtime(config, load_entrypoints=False)
    built.retry_backoff_scale = 0
    yield built
    await built.aclose()


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        if event.type != "message_update":
            self.events.append(event)

    def of(self, kind: str) -> list[Any]:
        return [event for event in self.events if event.type == kind]


@pytest.mark.anyio
async def test_every_model_ending_empty_shows_the_incomplete_turn_of_the_latest(
    server: FaultInjectingOpenAIServer, runtime: Runtime
) -> None:
    server.inject(Fault("empty", model="main", times=50), Fault("empty", model="mini", times=50))
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)

    # no winner: an error outcome, no fallback_succeeded, the preserved result shown
    assert result.outcome.status == "error"
    assert not result.ok
    assert recorder.of("fallback_succeeded") == []
    [exhausted] = recorder.of("fallback_exhausted")
    assert exhausted.outcome == "preserved_result"
    # the most credible payload: the incomplete turn, not "All models failed (2): ..."
    assert [(p.text, p.is_error) for p in result.payloads] == [(INCOMPLETE_TURN_TEXT, True)]
    assert result.error is not None and result.error.kind == "incomplete_turn"
    # the latest bookkeeping: the last model that ran, with its profile
    assert (result.provider, result.model, result.auth_profile_id) == ("backup", "mini", "backup:0")
    assert {r.body["model"] for r in server.requests} == {"main", "mini"}


@pytest.mark.anyio
async def test_a_preserved_turn_beats_a_later_thrown_error(
    server: FaultInjectingOpenAIServer, runtime: Runtime
) -> None:
    server.inject(
        Fault("empty", model="main", times=50),
        Fault("status", status=401, model="mini", times=50),
    )
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)

    assert result.outcome.status == "error"
    assert recorder.of("fallback_succeeded") == []
    assert [e.outcome for e in recorder.of("fallback_exhausted")] == ["preserved_result"]
    # mini's auth failure did not replace main's turn with an error summary
    assert [p.text for p in result.payloads] == [INCOMPLETE_TURN_TEXT]
    assert "All models failed" not in (result.error.message if result.error else "")
    # the latest *rejected* result is main's: its bookkeeping stands
    assert (result.provider, result.model) == ("mock", "main")
    assert [r.body["model"] for r in server.requests][-1] == "mini"


@pytest.mark.anyio
async def test_one_answering_model_still_wins(
    server: FaultInjectingOpenAIServer, runtime: Runtime
) -> None:
    server.inject(Fault("empty", model="main", times=50))
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert result.ok, result.error
    assert (result.provider, result.model) == ("backup", "mini")
    assert len(recorder.of("fallback_succeeded")) == 1
    assert recorder.of("fallback_exhausted") == []


# --------------------------------------------------------------------------- the pure parts

MODEL = Model(id="m", api="x", provider="p")
OTHER = Model(id="n", api="x", provider="q")


def _answer(**fields: Any) -> CandidateResult:
    return CandidateResult(status="ok", model=MODEL, auth_profile_id="p:0", **fields)


VIEW_CASES = [
    # (result, expected error_kind, fallback-safe, classification code or None)
    (_answer(payloads=[ReplyPayload(text="hi")]), None, False, None),
    (
        _answer(
            payloads=[ReplyPayload(text=INCOMPLETE_TURN_TEXT, is_error=True)],
            incomplete_text=INCOMPLETE_TURN_TEXT,
            fallback_safe=True,
            harness_classification="empty",
        ),
        "incomplete_turn",
        True,
        "incomplete_result",
    ),
    # a tool with side effects ran: never redone by another model
    (
        _answer(
            payloads=[ReplyPayload(text=INCOMPLETE_TURN_SIDE_EFFECT_TEXT, is_error=True)],
            incomplete_text=INCOMPLETE_TURN_SIDE_EFFECT_TEXT,
            fallback_safe=False,
            harness_classification="empty",
        ),
        "incomplete_turn",
        False,
        None,
    ),
    # an empty turn that is not incomplete (no incomplete text): the harness decides
    (
        _answer(payloads=[], harness_classification="reasoning-only"),
        None,
        False,
        "reasoning_only_result",
    ),
    # visible text with an incomplete tool-use stop: nothing to redo
    (
        _answer(
            payloads=[ReplyPayload(text="partial answer")],
            incomplete_text=INCOMPLETE_TURN_TEXT,
            fallback_safe=True,
        ),
        "incomplete_turn",
        True,
        None,
    ),
]


@pytest.mark.parametrize(("result", "kind", "safe", "code"), VIEW_CASES)
def test_candidate_result_view(
    result: CandidateResult, kind: str | None, safe: bool, code: str | None
) -> None:
    view = candidate_result_view(result)
    assert (view.error_kind, view.error_fallback_safe) == (kind, safe)
    found = classify_embedded_agent_run_result_for_model_fallback("p", "m", view)
    assert (found.code if found else None) == code
    if code == "incomplete_result":
        assert found is not None and found.preserve_result_on_exhaustion


def _failed(model: Model, text: str, **fields: Any) -> CandidateResult:
    return CandidateResult(
        status="ok",
        model=model,
        auth_profile_id=f"{model.provider}:0",
        assistant=AssistantMessage(content=[TextContent(text=text)], stop_reason="stop"),
        payloads=[ReplyPayload(text=text, is_error=True)],
        incomplete_text=text,
        **fields,
    )


def test_merge_keeps_latest_bookkeeping_and_preferred_presentation() -> None:
    preferred = _failed(MODEL, "first", fallback_safe=True, harness_classification="empty")
    latest = _failed(
        OTHER,
        "second",
        fallback_safe=True,
        harness_classification="reasoning-only",
        liveness_state="blocked",
        error=RunErrorInfo("incomplete_turn", "second failed"),
    )
    merged = merge_candidate_results_for_exhaustion(latest, preferred)
    # bookkeeping from the latest
    assert (merged.model, merged.auth_profile_id) == (OTHER, "q:0")
    assert merged.harness_classification == "reasoning-only"
    assert merged.liveness_state == "blocked"
    # presentation from the preferred
    assert [p.text for p in merged.payloads or ()] == ["first"]
    assert merged.incomplete_text == "first"
    assert merged.assistant is preferred.assistant
    assert merged.error is None
    # the inputs are untouched, and the same result merges to itself
    assert latest.incomplete_text == "second"
    assert merge_candidate_results_for_exhaustion(latest, latest) is latest


def test_merge_twin_agrees_with_the_spec_merge() -> None:
    """The same two results through the spec function (on the classifier's view) and
    through the twin: the payloads and error shown are the same."""
    preferred = _failed(MODEL, "first", fallback_safe=True)
    latest = _failed(OTHER, "second", fallback_safe=False)
    twin = candidate_result_view(merge_candidate_results_for_exhaustion(latest, preferred))
    spec = merge_embedded_agent_run_result_for_model_fallback_exhaustion(
        candidate_result_view(latest), candidate_result_view(preferred)
    )
    assert isinstance(spec, EmbeddedRunResult)
    assert twin.payloads == spec.payloads == (RunPayload(text="first", is_error=True),)
    assert (twin.error_kind, twin.error_fallback_safe) == (
        spec.error_kind,
        spec.error_fallback_safe,
    )
