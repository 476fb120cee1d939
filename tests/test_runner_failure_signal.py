"""Cron's fatal failure signal (seed 000 §5.4, OpenClaw failure-signal.ts)."""

from __future__ import annotations

import pytest

from openclaw_runtime.runner.failure_signal import (
    EXHAUSTED_UNAVAILABLE_TOOL_MESSAGE,
    ToolErrorSummary,
    is_exec_like_tool_name,
    resolve_embedded_run_failure_signal,
)


@pytest.mark.parametrize(
    ("trigger", "error", "fatal"),
    [
        ("cron", {"toolName": "exec", "errorCode": "SYSTEM_RUN_DENIED"}, True),
        ("cron", {"toolName": "bash", "errorCode": "INVALID_REQUEST"}, True),
        ("cron", {"toolName": " Bash ", "errorCode": " SYSTEM_RUN_DENIED "}, True),
        ("cron", {"toolName": "exec", "errorCode": "system_run_denied"}, False),  # exact code
        ("cron", {"toolName": "exec", "errorCode": "TIMEOUT"}, False),
        ("cron", {"toolName": "exec"}, False),
        ("cron", {"toolName": "read", "errorCode": "SYSTEM_RUN_DENIED"}, False),  # not exec-like
        ("cron", {"toolName": "shell", "errorCode": "SYSTEM_RUN_DENIED"}, False),
        ("user", {"toolName": "exec", "errorCode": "SYSTEM_RUN_DENIED"}, False),  # cron only
        ("heartbeat", {"toolName": "exec", "errorCode": "SYSTEM_RUN_DENIED"}, False),
        (None, {"toolName": "exec", "errorCode": "SYSTEM_RUN_DENIED"}, False),
        ("Cron", {"toolName": "exec", "errorCode": "SYSTEM_RUN_DENIED"}, False),
        ("cron", None, False),
    ],
)
def test_cron_fatal_table(trigger, error, fatal):
    signal = resolve_embedded_run_failure_signal(trigger, error)
    assert (signal is not None and signal.fatal_for_cron) is fatal


def test_execution_denied_signal_shape():
    signal = resolve_embedded_run_failure_signal(
        "cron",
        ToolErrorSummary(
            tool_name="exec", error_code="SYSTEM_RUN_DENIED", error=" denied by sandbox "
        ),
    )
    assert signal is not None
    assert signal.to_dict() == {
        "kind": "execution_denied",
        "source": "tool",
        "toolName": "exec",
        "code": "SYSTEM_RUN_DENIED",
        "message": "denied by sandbox",
        "fatalForCron": True,
    }


def test_message_falls_back_to_the_code():
    signal = resolve_embedded_run_failure_signal(
        "cron", {"toolName": "bash", "errorCode": "INVALID_REQUEST", "error": "   "}
    )
    assert signal is not None
    assert signal.message == "INVALID_REQUEST"


def test_exhausted_unavailable_tool_wins():
    signal = resolve_embedded_run_failure_signal(
        "cron", {"toolName": "read", "errorCode": "X"}, exhausted_unknown_tool=True
    )
    assert signal is not None
    assert signal.kind == "exhausted_unavailable_tool"
    assert signal.message == EXHAUSTED_UNAVAILABLE_TOOL_MESSAGE
    assert signal.fatal_for_cron
    assert resolve_embedded_run_failure_signal("user", None, exhausted_unknown_tool=True) is None


@pytest.mark.parametrize(
    ("name", "exec_like"),
    [
        ("exec", True),
        ("bash", True),
        ("EXEC", True),
        (" bash ", True),
        ("shell", False),
        ("", False),
        (None, False),
    ],
)
def test_exec_like(name, exec_like):
    assert is_exec_like_tool_name(name) is exec_like


def test_summary_from_snake_case_and_bad_input():
    summary = ToolErrorSummary.from_mapping(
        {"tool_name": "exec", "error_code": "INVALID_REQUEST", "timed_out": True}
    )
    assert summary == ToolErrorSummary("exec", error_code="INVALID_REQUEST", timed_out=True)
    with pytest.raises(ValueError, match="toolName"):
        ToolErrorSummary.from_mapping({"errorCode": "X"})
