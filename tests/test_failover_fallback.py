"""run_with_model_fallback: the outer loop over the model chain, its events and its errors."""

from __future__ import annotations

import pytest

from openclaw_runtime import ConfigurationError, FailoverExhaustedError, ProviderError, hookimpl
from openclaw_runtime.failover import (
    FailoverClassification,
    FailoverReason,
    FailoverSignal,
    ModelCandidate,
    ModelResultRejectedError,
    ResultFallbackClassification,
    classify_embedded_agent_run_result_for_model_fallback,
    hook_classifier,
    merge_embedded_agent_run_result_for_model_fallback_exhaustion,
    resolve_model_candidate_chain,
    run_with_model_fallback,
)
from openclaw_runtime.failover.fallback import signal_from_exception
from openclaw_runtime.testing import EventRecorder


class StatusError(ProviderError):
    """A provider error that carries an HTTP status like SDK errors do."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


class Script:
    """attempt_fn: each model raises or returns what the script says; calls are recorded."""

    def __init__(self, outcomes: dict[str, object]):
        self.outcomes = outcomes
        self.calls: list[str] = []

    async def __call__(self, candidate: ModelCandidate) -> object:
        self.calls.append(candidate.ref)
        outcome = self.outcomes[candidate.ref]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def summary(recorder: EventRecorder) -> list[tuple]:
    out = []
    for event in recorder.events:
        if event.type == "fallback_decision":
            out.append((event.type, event.provider, event.action, event.reason, event.next_model))
        elif event.type in ("fallback_attempt_start", "fallback_succeeded"):
            out.append((event.type, event.provider, event.model))
        elif event.type == "fallback_candidate_skipped":
            out.append((event.type, event.model, event.reason))
        else:
            out.append((event.type, event.outcome))
    return out


CHAIN = ["anthropic/claude", "openai/gpt-5", "google/gemini"]


@pytest.mark.anyio
async def test_first_candidate_succeeds():
    recorder = EventRecorder()
    script = Script({"anthropic/claude": "ok"})
    got = await run_with_model_fallback(CHAIN, script, emit=recorder)
    assert (got.outcome, got.result, got.candidate.ref, got.attempts) == (
        "completed",
        "ok",
        "anthropic/claude",
        (),
    )
    assert summary(recorder) == [
        ("fallback_attempt_start", "anthropic", "claude"),
        ("fallback_succeeded", "anthropic", "claude"),
    ]


@pytest.mark.anyio
async def test_falls_back_and_reports_why():
    recorder = EventRecorder()
    script = Script(
        {
            "anthropic/claude": StatusError("429 Too Many Requests", status=429),
            "openai/gpt-5": StatusError("Your credit balance is too low", status=400),
            "google/gemini": "answer",
        }
    )
    got = await run_with_model_fallback(CHAIN, script, emit=recorder)
    assert got.result == "answer" and got.candidate.ref == "google/gemini"
    assert [a.reason for a in got.attempts] == [FailoverReason.RATE_LIMIT, FailoverReason.BILLING]
    assert summary(recorder) == [
        ("fallback_attempt_start", "anthropic", "claude"),
        ("fallback_decision", "anthropic", "fallback_model", "rate_limit", "gpt-5"),
        ("fallback_attempt_start", "openai", "gpt-5"),
        ("fallback_decision", "openai", "fallback_model", "billing", "gemini"),
        ("fallback_attempt_start", "google", "gemini"),
        ("fallback_succeeded", "google", "gemini"),
    ]
    first = recorder.of("fallback_decision")[0]
    assert first.status == 429
    assert first.error == "429 Too Many Requests"
    assert first.explanation == "anthropic/claude failed (rate_limit); trying openai/gpt-5"
    assert recorder.of("fallback_succeeded")[0].previous_failures == 2
    assert first.to_dict()["nextProvider"] == "openai"


@pytest.mark.anyio
async def test_exhaustion_raises_with_every_attempt():
    recorder = EventRecorder()
    errors = [
        StatusError("429 rate limit exceeded", status=429),
        StatusError("insufficient credits", status=402),
        StatusError("503 Service Unavailable", status=503),
    ]
    script = Script(dict(zip(CHAIN, errors, strict=True)))
    with pytest.raises(FailoverExhaustedError) as caught:
        await run_with_model_fallback(CHAIN, script, emit=recorder)
    err = caught.value
    assert str(err) == (
        "All models failed (3): anthropic/claude: 429 rate limit exceeded (rate_limit) | "
        "openai/gpt-5: insufficient credits (billing) | "
        "google/gemini: 503 Service Unavailable (overloaded)"
    )
    assert [(a.candidate.ref, a.decision.action, a.error) for a in err.attempts] == [
        ("anthropic/claude", "fallback_model", errors[0]),
        ("openai/gpt-5", "fallback_model", errors[1]),
        ("google/gemini", "return_error_payload", errors[2]),
    ]
    assert err.__cause__ is errors[2]
    assert summary(recorder)[-2:] == [
        ("fallback_decision", "google", "return_error_payload", "overloaded", None),
        ("fallback_exhausted", "error"),
    ]
    assert recorder.of("fallback_exhausted")[0].reason == "overloaded"


@pytest.mark.anyio
async def test_single_candidate_reraises_its_own_error():
    error = StatusError("429 rate limit exceeded", status=429)
    with pytest.raises(StatusError) as caught:
        await run_with_model_fallback(["anthropic/claude"], Script({"anthropic/claude": error}))
    assert caught.value is error


@pytest.mark.anyio
async def test_context_overflow_belongs_to_compaction():
    recorder = EventRecorder()
    error = StatusError("prompt is too long: 210000 tokens > 200000 maximum", status=400)
    script = Script({"anthropic/claude": error, "openai/gpt-5": "never"})
    with pytest.raises(StatusError) as caught:
        await run_with_model_fallback(CHAIN, script, emit=recorder)
    assert caught.value is error
    assert script.calls == ["anthropic/claude"]
    decision = recorder.of("fallback_decision")[0]
    assert (decision.action, decision.reason) == ("surface_error", "context_overflow")
    assert "compaction" in decision.explanation


@pytest.mark.anyio
async def test_request_size_ceiling_may_use_another_model():
    message = "413 Request too large on tokens per minute (TPM): Limit 8000, Requested 9000"
    script = Script({"anthropic/claude": StatusError(message, status=413), "openai/gpt-5": "ok"})
    got = await run_with_model_fallback(CHAIN, script)
    assert got.candidate.ref == "openai/gpt-5"
    assert got.attempts[0].reason == FailoverReason.CONTEXT_OVERFLOW


@pytest.mark.anyio
async def test_unclassified_errors_fall_back_but_are_reraised_on_the_last_candidate():
    first, last = RuntimeError("weird glitch"), RuntimeError("another glitch")
    script = Script({"anthropic/claude": first, "openai/gpt-5": last})
    recorder = EventRecorder()
    with pytest.raises(RuntimeError) as caught:
        await run_with_model_fallback(CHAIN[:2], script, emit=recorder)
    assert caught.value is last
    assert [(e.action, e.reason) for e in recorder.of("fallback_decision")] == [
        ("fallback_model", "unknown"),
        ("surface_error", None),
    ]


@pytest.mark.anyio
async def test_tls_failure_skips_the_providers_other_models():
    recorder = EventRecorder()
    chain = ["anthropic/claude", "anthropic/haiku", "openai/gpt-5"]
    script = Script(
        {
            "anthropic/claude": StatusError("unable to verify the first certificate"),
            "openai/gpt-5": "ok",
        }
    )
    got = await run_with_model_fallback(chain, script, emit=recorder)
    assert got.candidate.ref == "openai/gpt-5"
    assert script.calls == ["anthropic/claude", "openai/gpt-5"]
    assert summary(recorder) == [
        ("fallback_attempt_start", "anthropic", "claude"),
        ("fallback_decision", "anthropic", "fallback_model", "tls_certificate", "gpt-5"),
        ("fallback_candidate_skipped", "haiku", "tls_certificate"),
        ("fallback_attempt_start", "openai", "gpt-5"),
        ("fallback_succeeded", "openai", "gpt-5"),
    ]
    assert "skipped" in recorder.of("fallback_decision")[0].explanation


@pytest.mark.anyio
async def test_runtime_coordination_errors_never_consume_fallbacks():
    error = ConfigurationError("bad lane config")
    script = Script({"anthropic/claude": error, "openai/gpt-5": "never"})
    with pytest.raises(ConfigurationError):
        await run_with_model_fallback(CHAIN, script)
    assert script.calls == ["anthropic/claude"]


@pytest.mark.anyio
async def test_fallback_not_configured_tries_only_the_first():
    error = StatusError("429", status=429)
    script = Script({"anthropic/claude": error, "openai/gpt-5": "never"})
    with pytest.raises(StatusError):
        await run_with_model_fallback(CHAIN, script, fallback_configured=False)
    assert script.calls == ["anthropic/claude"]


@pytest.mark.anyio
async def test_rejected_results_fall_back_and_the_best_preserved_result_wins():
    recorder = EventRecorder()
    incomplete = {
        "payloads": [{"text": "stopped early", "isError": True}],
        "meta": {
            "error": {"kind": "incomplete_turn", "fallbackSafe": True, "terminalPresentation": True}
        },
    }
    empty = {
        "payloads": [],
        "meta": {"executionTrace": {"winnerProvider": "openai", "winnerModel": "gpt-5"}},
    }
    script = Script({"anthropic/claude": incomplete, "openai/gpt-5": empty})

    def classify_result(result, candidate):
        return classify_embedded_agent_run_result_for_model_fallback(
            candidate.provider, candidate.model, result
        )

    got = await run_with_model_fallback(
        CHAIN[:2],
        script,
        classify_result=classify_result,
        merge_exhausted_result=merge_embedded_agent_run_result_for_model_fallback_exhaustion,
        emit=recorder,
    )
    assert got.outcome == "exhausted"
    # OpenClaw: the merged result names the latest rejected candidate (its bookkeeping), and
    # shows the preserved (most credible) candidate's payloads
    assert got.candidate.ref == "openai/gpt-5"
    assert got.result["payloads"] == incomplete["payloads"]
    assert got.result["meta"]["error"]["kind"] == "incomplete_turn"
    assert "winnerProvider" not in got.result["meta"]["executionTrace"]
    assert [(a.reason, type(a.error)) for a in got.attempts] == [
        (FailoverReason.FORMAT, ModelResultRejectedError),
        (FailoverReason.FORMAT, ModelResultRejectedError),
    ]
    assert got.attempts[1].error.code == "empty_result"
    assert summary(recorder)[-1] == ("fallback_exhausted", "preserved_result")


@pytest.mark.anyio
async def test_rejected_result_then_success():
    def classify_result(result, candidate):
        if result == "":
            return ResultFallbackClassification("empty", FailoverReason.FORMAT, "empty_result")
        return None

    script = Script({"anthropic/claude": "", "openai/gpt-5": "real answer"})
    got = await run_with_model_fallback(CHAIN, script, classify_result=classify_result)
    assert (got.outcome, got.result) == ("completed", "real answer")
    assert got.attempts[0].error.result == ""


@pytest.mark.anyio
async def test_plugin_chain_classifies_and_a_raising_plugin_is_skipped(runtime_factory):
    class Acme:
        @hookimpl
        def classify_failover(self, provider, message):
            if provider != "acme":
                return None
            return FailoverClassification.of("billing") if "melted" in message else None

    class Crashing:
        @hookimpl(tryfirst=True)
        def classify_failover(self, signal):
            raise RuntimeError("classifier bug")

    runtime = runtime_factory(plugins=[("acme", Acme()), ("crashing", Crashing())])
    recorder = EventRecorder()
    script = Script({"acme/m1": StatusError("quota melted"), "openai/gpt-5": "ok"})
    got = await run_with_model_fallback(
        ["acme/m1", "openai/gpt-5"], script, classify=hook_classifier(runtime.hooks), emit=recorder
    )
    assert got.result == "ok"
    assert got.attempts[0].reason == FailoverReason.BILLING
    assert recorder.of("fallback_decision")[0].reason == "billing"
    assert {fault.plugin for fault in runtime.hooks.faults} == {"crashing"}


@pytest.mark.anyio
async def test_a_raising_injected_classifier_falls_back_to_the_generic_one():
    def broken(signal: FailoverSignal):
        raise ValueError("bug")

    script = Script(
        {"anthropic/claude": StatusError("429 slow down", status=429), "openai/gpt-5": "ok"}
    )
    got = await run_with_model_fallback(CHAIN, script, classify=broken)
    assert got.attempts[0].reason == FailoverReason.RATE_LIMIT


@pytest.mark.anyio
async def test_a_raising_observer_does_not_change_the_outcome():
    async def emit(event):
        raise RuntimeError("observer bug")

    script = Script({"anthropic/claude": StatusError("429", status=429), "openai/gpt-5": "ok"})
    got = await run_with_model_fallback(CHAIN, script, emit=emit)
    assert got.result == "ok"


@pytest.mark.anyio
async def test_secrets_never_reach_events_or_the_exhaustion_error():
    recorder = EventRecorder()
    key = "sk-proj-abcdefghijklmnop1234"
    script = Script(
        {
            "anthropic/claude": StatusError(f"401 Incorrect API key provided: {key}", status=401),
            "openai/gpt-5": StatusError(
                "Authorization: Bearer abcdefghijklmnopqrstuv failed", status=401
            ),
        }
    )
    with pytest.raises(FailoverExhaustedError) as caught:
        await run_with_model_fallback(CHAIN[:2], script, emit=recorder)
    rendered = [str(event.to_dict()) for event in recorder.events] + [str(caught.value)]
    assert all(key not in text and "abcdefghijklmnopqrstuv" not in text for text in rendered)
    assert "sk-***" in str(caught.value)
    assert [a.reason for a in caught.value.attempts] == [FailoverReason.AUTH, FailoverReason.AUTH]


@pytest.mark.anyio
async def test_empty_chain_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="at least one model candidate"):
        await run_with_model_fallback([], Script({}))
    with pytest.raises(ConfigurationError, match="'provider/model'"):
        await run_with_model_fallback(["no-provider"], Script({}))


# --------------------------------------------------------------------------- signals from errors


def test_signal_from_exception_reads_sdk_shapes():
    class Response:
        status_code = 503

    class SdkError(Exception):
        response = Response()
        code = "overloaded"
        error_type = "server"

    candidate = ModelCandidate("openai", "gpt-5")
    signal = signal_from_exception(SdkError("boom"), candidate)
    assert (signal.status, signal.code, signal.error_type, signal.message) == (
        503,
        "overloaded",
        "server",
        "boom",
    )
    assert (signal.provider, signal.model) == ("openai", "gpt-5")
    attached = FailoverSignal(status=429, provider="other")
    error = RuntimeError("x")
    error.signal = attached  # type: ignore[attr-defined]
    assert signal_from_exception(error, candidate) == FailoverSignal(
        status=429, provider="other", model="gpt-5"
    )
    assert signal_from_exception(RuntimeError(), candidate).message == "RuntimeError"


# --------------------------------------------------------------------------- candidate chain


def refs(chain):
    return [(c.ref, c.route_origin) for c in chain]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"primary": "anthropic/claude", "fallbacks": ["openai/gpt-5", "google/gemini"]},
            [
                ("anthropic/claude", "requested"),
                ("openai/gpt-5", "configured-fallback"),
                ("google/gemini", "configured-fallback"),
            ],
        ),
        (
            {
                "primary": "openai/gpt-5",
                "fallbacks": ["anthropic/claude", "OpenAI/gpt-5", "haiku"],
                "configured_primary": "anthropic/claude",
            },
            [
                ("openai/gpt-5", "requested"),
                ("anthropic/claude", "configured-fallback"),
                ("anthropic/haiku", "configured-fallback"),
            ],
        ),
        (
            {
                "primary": "openai/gpt-5",
                "fallbacks": ["google/gemini"],
                "configured_primary": "anthropic/claude",
            },
            [
                ("openai/gpt-5", "requested"),
                ("google/gemini", "configured-fallback"),
                ("anthropic/claude", "configured-primary"),
            ],
        ),
        (
            {
                "primary": "openai/gpt-5",
                "fallbacks": ["google/gemini"],
                "configured_primary": "anthropic/claude",
                "fallbacks_override": [],
            },
            [("openai/gpt-5", "requested")],
        ),
        (
            {
                "primary": "openai/gpt-5",
                "fallbacks_override": ["fast", "  ", "/nothing", "google/"],
                "aliases": {"FAST": "groq/llama"},
            },
            [("openai/gpt-5", "requested"), ("groq/llama", "configured-fallback")],
        ),
        (
            {
                "primary": ("openai", "gpt-5"),
                "fallbacks": [ModelCandidate("x", "y", auth_profile_id="p")],
            },
            [("openai/gpt-5", "requested"), ("x/y", "configured-fallback")],
        ),
        (
            {"primary": "sonnet", "aliases": {"sonnet": "anthropic/claude-sonnet"}},
            [("anthropic/claude-sonnet", "requested")],
        ),
        (
            {"primary": "gpt-5", "default_provider": "openai", "fallbacks": ["gpt-5-mini"]},
            [("openai/gpt-5", "requested"), ("openai/gpt-5-mini", "configured-fallback")],
        ),
    ],
)
def test_resolve_model_candidate_chain(kwargs, expected):
    assert refs(resolve_model_candidate_chain(**kwargs)) == expected


def test_candidate_chain_keeps_auth_profile_locks_and_rejects_unresolvable_primary():
    chain = resolve_model_candidate_chain("a/b", [ModelCandidate("x", "y", auth_profile_id="p")])
    assert chain[1].auth_profile_id == "p"
    with pytest.raises(ConfigurationError, match="cannot resolve the requested model"):
        resolve_model_candidate_chain("bare-model")
