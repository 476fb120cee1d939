"""classify_embedded_agent_run_result_for_model_fallback (spec §11.4) and the exhaustion merge."""

from __future__ import annotations

import pytest

from openclaw_runtime.failover import (
    EmbeddedRunResult,
    FailoverReason,
    ResultFallbackClassification,
    RunPayload,
    classify_embedded_agent_run_result_for_model_fallback,
    merge_embedded_agent_run_result_for_model_fallback_exhaustion,
)
from openclaw_runtime.failover.result_classifier import (
    GENERIC_EXTERNAL_RUN_FAILURE_TEXT,
    ExecutionTrace,
    TraceAttempt,
    is_gpt5_model_id,
    is_silent_reply_payload_text,
)

SIDE_EFFECT = (
    "OpenClaw detected an incomplete Codex turn after tool activity. I stopped automatic retry "
    "to avoid repeating side effects; verify the current state before continuing."
)
INCOMPLETE = (
    "OpenClaw detected an incomplete Codex turn before a final answer was available. Please "
    "retry if needed."
)


def run(*payloads: dict, **meta) -> dict:
    result: dict = {"meta": {"durationMs": 1, **meta}}
    if payloads:
        result["payloads"] = list(payloads)
    return result


def code_of(result, model="gpt-5.5", provider="openai", **kw):
    found = classify_embedded_agent_run_result_for_model_fallback(provider, model, result, **kw)
    return None if found is None else (found.code, found.reason)


FMT = FailoverReason.FORMAT

ROWS = [
    # not a run result at all
    (None, "gpt-5.5", None),
    ({"payloads": []}, "gpt-5.5", None),
    ({"meta": "x"}, "gpt-5.5", None),
    # aborted, hook blocks, committed deliveries, replay-invalid and unsafe incomplete turns
    (run(aborted=True), "gpt-5.5", None),
    (run({"text": "Request timed out.", "isError": True}, aborted=True), "glm-5.1", None),
    (run(error={"kind": "hook_block"}), "gpt-5.5", None),
    ({**run(), "deliveryCommitted": True}, "gpt-5.5", None),
    (run(replayInvalid=True), "gpt-5.5", None),
    (run(error={"kind": "incomplete_turn"}), "gpt-5.5", None),
    (run(error={"kind": "incomplete_turn", "fallbackSafe": False}), "gpt-5.5", None),
    ({**run(), "acceptedSessionSpawns": [{"runId": "r", "childSessionKey": "k"}]}, "gpt-5.5", None),
    # the generic external-runner failure copy, exactly one plain payload
    (
        run({"text": GENERIC_EXTERNAL_RUN_FAILURE_TEXT}),
        "claude-x",
        ("generic_external_run_failure", FMT),
    ),
    (
        run({"text": f"  {GENERIC_EXTERNAL_RUN_FAILURE_TEXT}\n"}),
        "claude-x",
        ("generic_external_run_failure", FMT),
    ),
    (run({"text": GENERIC_EXTERNAL_RUN_FAILURE_TEXT, "isError": True}), "claude-x", None),
    (run({"text": GENERIC_EXTERNAL_RUN_FAILURE_TEXT}, {"text": "more"}), "claude-x", None),
    # visible output means the run counts
    (run({"text": "Here is the answer"}), "gpt-5.5", None),
    (run({"mediaUrl": "https://x/y.png"}), "gpt-5.5", None),
    (run({"presentation": {"kind": "card"}}), "gpt-5.5", None),
    # fallback-safe incomplete turn (even with replay-invalid), preserved on exhaustion
    (
        run(error={"kind": "incomplete_turn", "fallbackSafe": True}),
        "claude-x",
        ("incomplete_result", FMT),
    ),
    (
        run(error={"kind": "incomplete_turn", "fallbackSafe": True}, replayInvalid=True),
        "claude-x",
        ("incomplete_result", FMT),
    ),
    # harness verdicts
    (run(agentHarnessResultClassification="empty"), "claude-x", ("empty_result", FMT)),
    (
        run(agentHarnessResultClassification="reasoning-only"),
        "claude-x",
        ("reasoning_only_result", FMT),
    ),
    (
        run(agentHarnessResultClassification="planning-only"),
        "claude-x",
        ("planning_only_result", FMT),
    ),
    # error payloads: only business denials
    (
        run({"text": "401 invalid api key", "isError": True}),
        "claude-x",
        ("embedded_error_payload", FailoverReason.AUTH),
    ),
    (
        run({"text": "Your credit balance is too low", "isError": True}),
        "claude-x",
        ("embedded_error_payload", FailoverReason.BILLING),
    ),
    (
        run({"text": "API key revoked", "isError": True}),
        "claude-x",
        ("embedded_error_payload", FailoverReason.AUTH_PERMANENT),
    ),
    (run({"text": "rate limit exceeded", "isError": True}), "claude-x", None),
    (run({"text": "   ", "isError": True}), "claude-x", None),
    # gpt-5 only: empty and reasoning-only
    (run(), "gpt-5.5", ("empty_result", FMT)),
    (run(), "openai/gpt-5-mini", ("empty_result", FMT)),
    (run(), "claude-x", None),
    (run(finalAssistantRawText="NO_REPLY"), "gpt-5.5", None),
    (run(finalAssistantVisibleText='{"action": "NO_REPLY"}'), "gpt-5.5", None),
    (run({"text": "thinking...", "isReasoning": True}), "gpt-5", ("reasoning_only_result", FMT)),
    (run({"text": "thinking...", "isReasoning": True}), "gpt-50", None),
    (
        run({"text": "thinking", "isReasoning": True}, {"text": "", "isError": False}),
        "gpt-5.5",
        None,
    ),
    # Codex app-server incomplete turns
    (
        run({"text": SIDE_EFFECT, "isError": True}),
        "gpt-5.5",
        ("codex_app_server_incomplete_side_effect", FMT),
    ),
    (
        run({"text": INCOMPLETE, "isError": True}),
        "gpt-5.5",
        ("codex_app_server_incomplete_result", FMT),
    ),
    (
        run({"text": INCOMPLETE, "isError": True}, aborted=True),
        "gpt-5.5",
        ("codex_app_server_incomplete_result", FMT),
    ),
    (
        run(
            {"text": INCOMPLETE, "isError": True},
            aborted=True,
            toolSummary={"calls": 1, "tools": ["write"]},
        ),
        "gpt-5.5",
        None,
    ),
]


@pytest.mark.parametrize(("result", "model", "expected"), ROWS, ids=lambda v: repr(v)[:60])
def test_classification_row(result, model, expected):
    assert code_of(result, model=model) == expected


@pytest.mark.parametrize(
    "flag", ["has_directly_sent_block_reply", "has_block_reply_pipeline_output"]
)
def test_block_replies_never_fall_back(flag):
    assert code_of(run(), **{flag: True}) is None


def test_incomplete_result_message_and_priority():
    result = run(
        {"text": "The turn stopped early.", "isError": True},
        error={"kind": "incomplete_turn", "fallbackSafe": True, "terminalPresentation": True},
    )
    found = classify_embedded_agent_run_result_for_model_fallback("anthropic", "claude", result)
    assert found == ResultFallbackClassification(
        "The turn stopped early.",
        FailoverReason.FORMAT,
        "incomplete_result",
        preserve_result_on_exhaustion=True,
        preserve_result_priority=1,
    )
    bare = classify_embedded_agent_run_result_for_model_fallback(
        "anthropic", "claude", run(error={"kind": "incomplete_turn", "fallbackSafe": True})
    )
    assert bare is not None
    assert bare.message == "anthropic/claude ended with an incomplete terminal response"
    assert bare.preserve_result_priority == 0
    assert bare.to_dict()["preserveResultOnExhaustion"] is True


def test_messages_name_provider_and_model():
    found = classify_embedded_agent_run_result_for_model_fallback("openai", "gpt-5.5", run())
    assert found is not None
    assert found.message == "openai/gpt-5.5 ended without a visible assistant reply"
    planning = classify_embedded_agent_run_result_for_model_fallback(
        "x", "m", run(agentHarnessResultClassification="planning-only")
    )
    assert planning is not None
    assert planning.message == "x/m ended with a structured plan but no final answer"
    error = classify_embedded_agent_run_result_for_model_fallback(
        "x", "m", run({"text": "invalid api key", "isError": True})
    )
    assert error is not None and error.raw_error == "invalid api key"
    assert error.to_dict() == {
        "message": "x/m ended with a provider error: invalid api key",
        "reason": "auth",
        "code": "embedded_error_payload",
        "rawError": "invalid api key",
    }


def test_injected_reason_classifier_decides_error_payloads():
    result = run({"text": "melted", "isError": True})
    found = classify_embedded_agent_run_result_for_model_fallback(
        "acme", "m", result, classify_reason=lambda text, provider: FailoverReason.BILLING
    )
    assert found is not None and found.reason == FailoverReason.BILLING


def test_typed_input_equals_dict_input():
    typed = EmbeddedRunResult(payloads=(RunPayload(text="t", is_reasoning=True),))
    assert code_of(typed, model="gpt-5") == ("reasoning_only_result", FMT)
    assert EmbeddedRunResult.from_mapping(run({"text": "t", "isReasoning": True})) == typed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NO_REPLY", True),
        ("  NO_REPLY\n", True),
        ('{"action":"NO_REPLY"}', True),
        ('{"action":"NO_REPLY","x":1}', False),
        ("NO_REPLY please", False),
        ("no_reply", False),
        (None, False),
    ],
)
def test_silent_reply_text(text, expected):
    assert is_silent_reply_payload_text(text) is expected


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-5", True),
        ("GPT-5.5", True),
        ("openai/gpt-5-codex", True),
        ("x:gpt-5", True),
        ("gpt-50", False),
        ("my-gpt-5", False),
        (None, False),
    ],
)
def test_gpt5_model_ids(model, expected):
    assert is_gpt5_model_id(model) is expected


# --------------------------------------------------------------------------- exhaustion merge


def test_merge_keeps_latest_bookkeeping_and_preferred_payload_and_clears_winner():
    latest = {
        "payloads": [{"text": "latest", "isError": True}],
        "meta": {
            "durationMs": 9,
            "usage": {"input": 5},
            "error": {"kind": "other"},
            "executionTrace": {
                "winnerProvider": "openai",
                "winnerModel": "gpt-5",
                "attempts": [
                    {"provider": "anthropic", "model": "c", "result": "error"},
                    {"provider": "openai", "model": "gpt-5", "result": "success"},
                ],
                "runner": "embedded",
            },
        },
    }
    preferred = {
        "payloads": [{"text": "preferred"}],
        "meta": {
            "durationMs": 1,
            "error": {"kind": "incomplete_turn", "terminalPresentation": True},
        },
    }
    merged = merge_embedded_agent_run_result_for_model_fallback_exhaustion(latest, preferred)
    assert merged["payloads"] == [{"text": "preferred"}]
    assert merged["meta"]["durationMs"] == 9
    assert merged["meta"]["usage"] == {"input": 5}
    assert merged["meta"]["error"] == {"kind": "incomplete_turn", "terminalPresentation": True}
    assert merged["meta"]["executionTrace"] == {
        "attempts": [{"provider": "anthropic", "model": "c", "result": "error"}],
        "runner": "embedded",
    }
    assert latest["meta"]["executionTrace"]["winnerProvider"] == "openai"  # input untouched


def test_merge_of_the_same_clean_result_is_identity():
    result = {"payloads": [], "meta": {"executionTrace": {"attempts": [{"result": "error"}]}}}
    assert merge_embedded_agent_run_result_for_model_fallback_exhaustion(result, result) == result


def test_merge_typed_results():
    latest = EmbeddedRunResult(
        payloads=(RunPayload(text="latest"),),
        error_kind="other",
        tool_calls=3,
        execution_trace=ExecutionTrace(
            "openai",
            "gpt-5",
            (TraceAttempt("openai", "gpt-5", "success"),),
        ),
    )
    preferred = EmbeddedRunResult(
        payloads=(RunPayload(text="preferred"),),
        error_kind="incomplete_turn",
        error_fallback_safe=True,
        error_terminal_presentation=True,
    )
    merged = merge_embedded_agent_run_result_for_model_fallback_exhaustion(latest, preferred)
    assert isinstance(merged, EmbeddedRunResult)
    assert merged.payloads == preferred.payloads
    assert (merged.error_kind, merged.error_terminal_presentation) == ("incomplete_turn", True)
    assert merged.tool_calls == 3
    assert merged.execution_trace == ExecutionTrace(None, None, None)
    same = merge_embedded_agent_run_result_for_model_fallback_exhaustion(preferred, preferred)
    assert same is preferred


def test_merge_rejects_mixed_inputs():
    with pytest.raises(TypeError, match="both be EmbeddedRunResult or dicts"):
        merge_embedded_agent_run_result_for_model_fallback_exhaustion(EmbeddedRunResult(), {})
