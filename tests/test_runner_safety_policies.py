"""Tables for the pure rules behind issue 9 §5's runner fixes.

* ``plan_attempt_input``: once a tool result of the run follows its prompt, no retry sends
  the prompt again (a side-effecting tool would run twice);
* ``failed_run_error`` / ``describe_unfinished_turn``: a failed outcome without an error gets
  one, with a kind and a message that names the cause;
* the bounded JSON helpers: depth measured without recursion, too-deep values refused or
  pruned, never an exception other than ``UntrustedJSONError``.
"""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime._json import (
    PRUNED,
    UntrustedJSONError,
    json_depth_exceeds,
    loads_untrusted,
    prune_json,
    untrusted_json_object,
)
from openclaw_runtime.messages import AssistantMessage, TextContent
from openclaw_runtime.repair import promote_plain_text_tool_calls
from openclaw_runtime.runner.attempt_input import AttemptInputPlan, plan_attempt_input
from openclaw_runtime.runner.failure_signal import ToolErrorSummary
from openclaw_runtime.runner.outcome import build_agent_run_terminal_outcome
from openclaw_runtime.runner.request import RunErrorInfo
from openclaw_runtime.runner.retry_instructions import EMPTY_RESPONSE_RETRY_INSTRUCTION
from openclaw_runtime.runner.run_error import describe_unfinished_turn, failed_run_error

# --------------------------------------------------------------------------- attempt input

P = "the prompt"
I1 = "instruction one"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # the bug: tool call, tool result, empty answer, then an empty-response retry
        (
            dict(last_role="assistant", additions=[I1], tool_result_after_prompt=True),
            AttemptInputPlan("prompt", I1),
        ),
        (
            dict(last_role="assistant", tool_result_after_prompt=True),
            AttemptInputPlan("prompt", EMPTY_RESPONSE_RETRY_INSTRUCTION),
        ),
        # without a tool result the retry is OpenClaw's: the prompt with the instruction
        (
            dict(last_role="assistant", additions=[I1], tool_result_after_prompt=False),
            AttemptInputPlan("prompt", f"{P}\n\n{I1}"),
        ),
        # a tool result at the end: continue, or the instruction alone (unchanged rows)
        (
            dict(last_role="toolResult", tool_result_after_prompt=True),
            AttemptInputPlan("continue"),
        ),
        (
            dict(last_role="toolResult", additions=[I1], tool_result_after_prompt=True),
            AttemptInputPlan("prompt", I1),
        ),
        # the first attempt always sends the prompt
        (
            dict(first_attempt=True, last_role="assistant", tool_result_after_prompt=True),
            AttemptInputPlan("prompt", P),
        ),
    ],
)
def test_a_retry_never_resends_a_prompt_whose_tools_ran(
    kwargs: dict[str, Any], expected: AttemptInputPlan
) -> None:
    params: dict[str, Any] = {
        "first_attempt": False,
        "base_prompt": P,
        "additions": [],
        "last_is_run_prompt": False,
        "leaf_is_run_prompt": False,
        **kwargs,
    }
    plan = plan_attempt_input(**params)
    assert plan == expected
    if params["tool_result_after_prompt"] and not params["first_attempt"]:
        assert P not in (plan.prompt or "")


# --------------------------------------------------------------------------- failed-run errors


def _assistant(stop_reason: str = "stop", content: list[Any] | None = None) -> AssistantMessage:
    return AssistantMessage(content=content or [], stop_reason=stop_reason)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tool_error", "assistant", "expected"),
    [
        (
            ToolErrorSummary("counter", error="disk full"),
            _assistant(),
            "the tool 'counter' failed: disk full; the model then gave no answer",
        ),
        (
            ToolErrorSummary("exec", error=None, timed_out=True),
            None,
            "the tool 'exec' failed (timed out); the model then gave no answer",
        ),
        (None, None, "the model returned no assistant message"),
        (
            None,
            _assistant("toolUse"),
            "the turn stopped after asking for tools, without an answer",
        ),
        (
            None,
            _assistant(content=[{"type": "thinking", "thinking": "hmm"}]),
            "the model returned only reasoning, no answer",
        ),
        (None, _assistant(), "the model returned an empty answer"),
    ],
)
def test_describe_unfinished_turn(
    tool_error: ToolErrorSummary | None, assistant: AssistantMessage | None, expected: str
) -> None:
    assert describe_unfinished_turn(tool_error, assistant) == expected


ABANDONED = build_agent_run_terminal_outcome("ok", liveness_state="abandoned")
FAILED = build_agent_run_terminal_outcome("error")
TIMED_OUT = build_agent_run_terminal_outcome("timeout")
COMPLETED = build_agent_run_terminal_outcome("ok")
KNOWN = RunErrorInfo("provider", "500 boom", "server_error")


@pytest.mark.parametrize(
    ("outcome", "error", "cause", "expected"),
    [
        (COMPLETED, None, "ignored", None),
        (FAILED, KNOWN, "ignored", KNOWN),
        (COMPLETED, KNOWN, None, KNOWN),
        (
            ABANDONED,
            None,
            "the tool 'counter' failed: disk full",
            RunErrorInfo(
                "incomplete_turn",
                "Agent run ended before producing a complete result: the tool 'counter' "
                "failed: disk full",
            ),
        ),
        (FAILED, None, None, RunErrorInfo("failed", "the run ended with outcome 'failed'")),
        (
            TIMED_OUT,
            None,
            "the model returned no assistant message",
            RunErrorInfo(
                "timed_out",
                "the run ended with outcome 'timed_out': the model returned no assistant message",
            ),
        ),
        # a secret in a tool's error text never reaches the result
        (
            ABANDONED,
            None,
            "the tool 'http' failed: 401 for key sk-abcdefghijklmnopqrstuvwx",
            RunErrorInfo(
                "incomplete_turn",
                "Agent run ended before producing a complete result: the tool 'http' failed: "
                "401 for key sk-***",
            ),
        ),
    ],
)
def test_failed_run_error(
    outcome: Any, error: RunErrorInfo | None, cause: str | None, expected: RunErrorInfo | None
) -> None:
    found = failed_run_error(outcome, error, cause=cause)
    assert found == expected
    if outcome.status != "ok":
        assert found is not None and found.kind and found.message  # the rule itself


# --------------------------------------------------------------------------- bounded JSON


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "limit", "deeper"),
    [
        (1, 0, False),
        ([], 0, True),
        ([], 1, False),
        ({"a": {"b": []}}, 2, True),
        ({"a": {"b": []}}, 3, False),
        (_nested(100_000), 64, True),  # measured without recursion
        (_nested(64), 64, False),
    ],
)
def test_json_depth_exceeds(value: Any, limit: int, deeper: bool) -> None:
    assert json_depth_exceeds(value, limit) is deeper


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"error": {"message": "x"}}', {"error": {"message": "x"}}),
        ("[" * 64 + "]" * 64, "ok"),
        ("[" * 65 + "]" * 65, UntrustedJSONError),
        ("[" * 5_000 + "]" * 5_000, UntrustedJSONError),
        ('{"x": NaN}', UntrustedJSONError),
        ('"\\ud800"', UntrustedJSONError),
        ("not json", UntrustedJSONError),
        ("1e400", UntrustedJSONError),
    ],
)
def test_loads_untrusted(text: str, expected: Any) -> None:
    if expected is UntrustedJSONError:
        with pytest.raises(UntrustedJSONError):
            loads_untrusted(text)
        assert untrusted_json_object(text) is None
        return
    value = loads_untrusted(text)
    if isinstance(expected, dict):
        assert value == expected and untrusted_json_object(text) == expected
    else:
        assert not json_depth_exceeds(value, 64)


def test_prune_json_keeps_the_shallow_facts() -> None:
    payload = {"error": {"message": "boom", "code": 503, "details": _nested(1_000)}}
    pruned = prune_json(payload, 4)
    assert pruned["error"]["message"] == "boom" and pruned["error"]["code"] == 503
    assert pruned["error"]["details"] == [[PRUNED]]
    assert not json_depth_exceeds(pruned, 4)
    assert prune_json({"a": 1}) == {"a": 1}


@pytest.mark.parametrize(("depth", "promoted"), [(3, True), (64, True), (300, False)])
def test_plain_text_tool_call_nested_too_deeply_stays_text(depth: int, promoted: bool) -> None:
    # a tool call the model wrote as text, 300 levels deep, was promoted and then could not be
    # stored ("Circular reference detected"); past the bound it is not a tool call
    text = '[read]\n{"path":' + "[" * (depth - 1) + "]" * (depth - 1) + "}\n[/read]"
    message = AssistantMessage(content=[TextContent(text=text)], provider="p", model="m")
    projection = promote_plain_text_tool_calls(message, {"read"})
    assert (projection is not None) is promoted
    if projection is not None:
        projection.message.to_dict()  # storable
