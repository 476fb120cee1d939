"""resolve_run_failover_decision (spec §2.1, terminal-based API) and its helpers."""

from __future__ import annotations

import pytest

from openclaw_runtime.failover import (
    AssistantDecisionInput,
    AttemptTerminal,
    FailoverClassification,
    FailoverDecision,
    FailoverReason,
    PromptDecisionInput,
    RetryLimitDecisionInput,
    is_terminal_format_failure,
    merge_retry_failover_reason,
    resolve_model_fallback_decision,
    resolve_run_failover_decision,
    should_escalate_retry_limit,
    should_rotate_assistant,
    should_rotate_prompt,
)


def decision(action, reason=None):
    return FailoverDecision(action, None if reason is None else FailoverReason(reason))


# --------------------------------------------------------------------------- retry limit


@pytest.mark.parametrize(
    ("configured", "reason", "expected"),
    [
        (True, "model_not_found", decision("fallback_model", "model_not_found")),
        (True, "rate_limit", decision("fallback_model", "rate_limit")),
        (True, "billing", decision("fallback_model", "billing")),
        (True, "overloaded", decision("fallback_model", "overloaded")),
        (True, "server_error", decision("fallback_model", "server_error")),
        (True, "timeout", decision("return_error_payload")),
        (True, "format", decision("return_error_payload")),
        (True, "session_expired", decision("return_error_payload")),
        (True, None, decision("return_error_payload")),
        (False, "rate_limit", decision("return_error_payload")),
    ],
)
def test_retry_limit_stage(configured, reason, expected):
    params = {"stage": "retry_limit", "fallbackConfigured": configured, "failoverReason": reason}
    assert resolve_run_failover_decision(params) == expected


# --------------------------------------------------------------------------- prompt

PROMPT = {
    "stage": "prompt",
    "externalAbort": False,
    "fallbackConfigured": True,
    "failoverFailure": True,
    "profileRotated": False,
}


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"failoverReason": "tls_certificate"}, decision("fallback_model", "tls_certificate")),
        (
            {"failoverReason": "unknown", "failoverCode": "cli_turn_stopped"},
            decision("surface_error", "unknown"),
        ),
        (
            {"failoverReason": "rate_limit", "failoverCode": "cli_max_turns"},
            decision("surface_error", "rate_limit"),
        ),
        (
            {
                "failoverReason": "timeout",
                "promptTimeoutFallbackSafe": True,
                "timedOutByRunBudget": True,
                "profileRotated": True,
            },
            decision("surface_error", "timeout"),
        ),
        (
            {"externalAbort": True, "failoverReason": "timeout"},
            decision("surface_error", "timeout"),
        ),
        (
            {"failoverReason": "timeout", "harnessOwnsTransport": True, "profileRotated": True},
            decision("surface_error", "timeout"),
        ),
        (
            {
                "failoverReason": "timeout",
                "harnessOwnsTransport": True,
                "promptTimeoutFallbackSafe": True,
                "profileRotated": True,
            },
            decision("fallback_model", "timeout"),
        ),
        (
            {
                "fallbackConfigured": False,
                "failoverReason": "timeout",
                "harnessOwnsTransport": True,
                "promptTimeoutFallbackSafe": True,
            },
            decision("surface_error", "timeout"),
        ),
        ({"failoverReason": "rate_limit"}, decision("rotate_profile", "rate_limit")),
        ({"failoverReason": None}, decision("rotate_profile")),
        ({"failoverReason": "timeout"}, decision("fallback_model", "timeout")),
        (
            {"failoverReason": "rate_limit", "profileRotated": True},
            decision("fallback_model", "rate_limit"),
        ),
        ({"failoverReason": None, "profileRotated": True}, decision("fallback_model", "unknown")),
        ({"failoverReason": "format"}, decision("surface_error", "format")),
        (
            {"failoverReason": "format", "allowFormatRetry": True},
            decision("rotate_profile", "format"),
        ),
        (
            {"failoverReason": "format", "allowFormatRetry": True, "profileRotated": True},
            decision("fallback_model", "format"),
        ),
        (
            {"failoverReason": "rate_limit", "profileRotated": True, "fallbackConfigured": False},
            decision("surface_error", "rate_limit"),
        ),
        (
            {"failoverFailure": False, "failoverReason": "rate_limit"},
            decision("surface_error", "rate_limit"),
        ),
        (
            {"failoverReason": "tls_certificate", "fallbackConfigured": False},
            decision("surface_error", "tls_certificate"),
        ),
    ],
)
def test_prompt_stage(overrides, expected):
    assert resolve_run_failover_decision({**PROMPT, **overrides}) == expected


# --------------------------------------------------------------------------- assistant


def assistant(terminal=None, **overrides):
    params = {
        "stage": "assistant",
        "terminal": terminal or {"kind": "ok"},
        "fallbackConfigured": True,
        "failoverFailure": False,
        "failoverReason": None,
        "profileRotated": False,
    }
    params.update(overrides)
    return params


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (
            assistant(failoverFailure=True, failoverReason="format"),
            decision("surface_error", "format"),
        ),
        (
            assistant(failoverFailure=True, failoverReason="format", allowFormatRetry=True),
            decision("rotate_profile", "format"),
        ),
        (
            assistant(failoverFailure=True, failoverReason="tls_certificate"),
            decision("fallback_model", "tls_certificate"),
        ),
        (
            assistant(
                failoverFailure=True, failoverReason="tls_certificate", fallbackConfigured=False
            ),
            decision("surface_error", "tls_certificate"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "tool_execution", "source": "runtime", "aborted": True}
            ),
            decision("continue_normal"),
        ),
        # what the runner passes after a tool ran out the attempt's time: the aborted turn's
        # "timed out" text classifies as a timeout failure, and still nothing rotates
        (
            assistant(
                {
                    "kind": "timeout",
                    "phase": "tool_execution",
                    "source": "runtime",
                    "aborted": True,
                },
                failoverFailure=True,
                failoverReason="timeout",
            ),
            decision("continue_normal"),
        ),
        (
            assistant(
                {
                    "kind": "timeout",
                    "phase": "tool_execution",
                    "source": "runtime",
                    "aborted": True,
                },
                failoverFailure=True,
                failoverReason="timeout",
                profileRotated=True,
            ),
            decision("continue_normal"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "prompt", "source": "runtime", "aborted": True},
                failoverFailure=True,
                failoverReason="timeout",
            ),
            decision("rotate_profile", "timeout"),
        ),
        (
            assistant(failoverFailure=True, failoverReason="timeout", profileRotated=True),
            decision("fallback_model", "timeout"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "prompt", "source": "runtime", "aborted": True},
                harnessOwnsTransport=True,
            ),
            decision("continue_normal"),
        ),
        (
            assistant(failoverFailure=True, failoverReason="timeout", harnessOwnsTransport=True),
            decision("continue_normal"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "prompt", "source": "runtime"},
                failoverFailure=True,
                failoverReason="rate_limit",
                harnessOwnsTransport=True,
            ),
            decision("rotate_profile", "rate_limit"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "prompt", "source": "external", "aborted": True}
            ),
            decision("surface_error"),
        ),
        (
            assistant(
                {"kind": "aborted", "source": "external"},
                failoverFailure=True,
                failoverReason="rate_limit",
            ),
            decision("surface_error", "rate_limit"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "tool_execution", "source": "idle", "aborted": True},
                signalOwnedInterruption=True,
            ),
            decision("surface_error"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "prompt", "source": "idle"},
                fallbackConfigured=False,
                profileRotated=True,
            ),
            decision("surface_error"),
        ),
        (
            assistant({"kind": "timeout", "phase": "prompt", "source": "idle"}),
            decision("rotate_profile"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "prompt", "source": "idle"}, profileRotated=True
            ),
            decision("fallback_model", "timeout"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "tool_execution", "source": "idle"},
                profileRotated=True,
            ),
            decision("fallback_model", "timeout"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "prompt", "source": "run_budget", "aborted": True}
            ),
            decision("continue_normal"),
        ),
        (
            assistant({"kind": "timeout", "phase": "prompt", "source": "observation"}),
            decision("continue_normal"),
        ),
        (
            assistant({"kind": "timeout", "phase": "compaction", "source": "runtime"}),
            decision("continue_normal"),
        ),
        (
            assistant(failoverFailure=True, failoverReason="rate_limit"),
            decision("rotate_profile", "rate_limit"),
        ),
        (
            assistant(failoverFailure=True, failoverReason="billing", profileRotated=True),
            decision("fallback_model", "billing"),
        ),
        (
            assistant(failoverFailure=True, failoverReason=None, profileRotated=True),
            decision("fallback_model", "unknown"),
        ),
        (
            assistant(
                failoverFailure=True,
                failoverReason="billing",
                profileRotated=True,
                fallbackConfigured=False,
            ),
            decision("surface_error", "billing"),
        ),
        (
            assistant(
                {"kind": "aborted", "source": "runtime"},
                failoverFailure=True,
                failoverReason="rate_limit",
            ),
            decision("continue_normal"),
        ),
        (
            assistant(
                {"kind": "aborted", "source": "yield_cleanup"},
                failoverFailure=True,
                failoverReason="rate_limit",
            ),
            decision("rotate_profile", "rate_limit"),
        ),
        (
            assistant(
                {"kind": "timeout", "phase": "prompt", "source": "idle", "aborted": True},
                failoverFailure=True,
                failoverReason="rate_limit",
                profileRotated=True,
            ),
            decision("fallback_model", "rate_limit"),
        ),
        (
            assistant(failoverFailure=False, failoverReason="rate_limit"),
            decision("continue_normal"),
        ),
    ],
)
def test_assistant_stage(params, expected):
    assert resolve_run_failover_decision(params) == expected


def test_typed_inputs_match_dict_inputs():
    typed = AssistantDecisionInput(
        terminal=AttemptTerminal("timeout", phase="prompt", source="idle"),
        fallback_configured=True,
        failover_failure=False,
        failover_reason=None,
        profile_rotated=True,
    )
    assert resolve_run_failover_decision(typed) == decision("fallback_model", "timeout")
    prompt = PromptDecisionInput(
        external_abort=False,
        fallback_configured=True,
        failover_failure=True,
        failover_reason=FailoverReason.RATE_LIMIT,
        profile_rotated=False,
    )
    assert resolve_run_failover_decision(prompt) == decision("rotate_profile", "rate_limit")
    retry = RetryLimitDecisionInput(fallback_configured=True, failover_reason=FailoverReason.AUTH)
    assert resolve_run_failover_decision(retry) == decision("fallback_model", "auth")


def test_decision_to_dict_matches_openclaw_shape():
    assert decision("continue_normal").to_dict() == {"action": "continue_normal"}
    assert decision("return_error_payload").to_dict() == {"action": "return_error_payload"}
    assert decision("surface_error").to_dict() == {"action": "surface_error", "reason": None}
    assert decision("rotate_profile", "auth").to_dict() == {
        "action": "rotate_profile",
        "reason": "auth",
    }


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"stage": "later"}, "stage must be one of"),
        ({"fallbackConfigured": True}, "stage must be one of"),
        (
            {"stage": "retry_limit", "fallbackConfigured": True},
            r"missing required field\(s\) \['failoverReason'\]",
        ),
        (
            {"stage": "retry_limit", "fallbackConfigured": True, "failoverReason": "nope"},
            "not a failover reason",
        ),
        ({**PROMPT, "failoverReason": None, "extra": 1}, r"unknown field\(s\) \['extra'\]"),
        ({**PROMPT, "failoverReason": None, "externalAbort": "no"}, "externalAbort must be a bool"),
        (assistant(terminal={"kind": "paused"}), "terminal kind must be"),
        (assistant(terminal="ok"), "terminal must be"),
    ],
)
def test_bad_input_names_what_was_wrong(params, message):
    with pytest.raises(ValueError, match=message):
        resolve_run_failover_decision(params)


def test_non_mapping_input_is_a_type_error():
    with pytest.raises(TypeError, match="decision input or a mapping"):
        resolve_run_failover_decision(["prompt"])  # type: ignore[arg-type]


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("failure", "reason", "allow", "expected"),
    [
        (True, "format", False, True),
        (True, "format", True, False),
        (False, "format", False, False),
        (True, "rate_limit", False, False),
    ],
)
def test_is_terminal_format_failure(failure, reason, allow, expected):
    params = PromptDecisionInput(
        external_abort=False,
        fallback_configured=True,
        failover_failure=failure,
        failover_reason=FailoverReason(reason),
        profile_rotated=False,
        allow_format_retry=allow,
    )
    assert is_terminal_format_failure(params) is expected


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("rate_limit", True),
        ("timeout", False),
        ("tls_certificate", False),
        ("format", False),
        (None, True),
    ],
)
def test_should_rotate_prompt(reason, expected):
    params = PromptDecisionInput(
        external_abort=False,
        fallback_configured=True,
        failover_failure=True,
        failover_reason=None if reason is None else FailoverReason(reason),
        profile_rotated=False,
    )
    assert should_rotate_prompt(params) is expected


def test_should_escalate_retry_limit_and_rotate_assistant():
    assert should_escalate_retry_limit(
        RetryLimitDecisionInput(True, FailoverReason.MODEL_NOT_FOUND)
    )
    assert not should_escalate_retry_limit(
        RetryLimitDecisionInput(True, FailoverReason.SESSION_EXPIRED)
    )
    assert not should_escalate_retry_limit(RetryLimitDecisionInput(False, FailoverReason.BILLING))
    tool_timeout = AssistantDecisionInput(
        terminal=AttemptTerminal("timeout", phase="tool_execution", source="runtime", aborted=True),
        fallback_configured=True,
        failover_failure=False,
        failover_reason=None,
        profile_rotated=False,
    )
    assert not should_rotate_assistant(tool_timeout)


@pytest.mark.parametrize(
    ("previous", "current", "timed_out", "expected"),
    [
        (None, None, True, "timeout"),
        (None, None, False, None),
        ("rate_limit", None, True, "rate_limit"),
        ("rate_limit", "billing", True, "billing"),
        (None, "auth", False, "auth"),
    ],
)
def test_merge_retry_failover_reason_newest(previous, current, timed_out, expected):
    got = merge_retry_failover_reason(previous, current, timed_out=timed_out)
    assert got == (None if expected is None else FailoverReason(expected))


# --------------------------------------------------------------------------- outer model step


@pytest.mark.parametrize(
    ("classification", "message", "remaining", "expected"),
    [
        (
            FailoverClassification.of("rate_limit"),
            "429 slow",
            True,
            decision("fallback_model", "rate_limit"),
        ),
        (None, "weird", True, decision("fallback_model", "unknown")),
        (None, "weird", False, decision("surface_error")),
        (
            FailoverClassification.of("billing"),
            "402",
            False,
            decision("return_error_payload", "billing"),
        ),
        (
            FailoverClassification.context_overflow(),
            "prompt is too long",
            True,
            decision("surface_error", "context_overflow"),
        ),
        (
            FailoverClassification.of("rate_limit"),
            "413 on tokens per minute (TPM): Limit 8000, Requested 9000",
            True,
            decision("fallback_model", "rate_limit"),
        ),
        (
            FailoverClassification.context_overflow(),
            "413 status code (no body)",
            True,
            decision("fallback_model", "context_overflow"),
        ),
    ],
)
def test_resolve_model_fallback_decision(classification, message, remaining, expected):
    got = resolve_model_fallback_decision(
        classification, error_message=message, has_remaining_candidate=remaining
    )
    assert got == expected
