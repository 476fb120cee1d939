"""Tool-use/result pairing and tool-call input hygiene (spec §12.3), on dicts and on models."""

from __future__ import annotations

import copy

import pytest

from openclaw_runtime.messages import AssistantMessage, ToolResultMessage, UserMessage, load_message
from openclaw_runtime.transcript.pairing import (
    DEFAULT_MISSING_TOOL_RESULT_TEXT,
    make_missing_tool_result,
    repair_tool_use_result_pairing,
    sanitize_tool_use_result_pairing,
    strip_tool_result_details,
)
from openclaw_runtime.transcript.tool_inputs import (
    repair_tool_call_inputs,
    sanitize_tool_call_inputs,
)


def call(call_id, name="exec", kind="toolCall", **extra):
    key = "input" if kind in ("toolUse", "tool_use") else "arguments"
    block = {"type": kind, "id": call_id, "name": name, key: {}}
    block.update(extra)
    return block


def assistant(*blocks, stop="toolUse", **extra):
    return {"role": "assistant", "content": list(blocks), "stopReason": stop, **extra}


def result(call_id, text="ok", name="exec", is_error=False, **extra):
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        **extra,
    }


def synthetic(call_id, name="read"):
    return result(
        call_id,
        DEFAULT_MISSING_TOOL_RESULT_TEXT,
        name,
        is_error=True,
        details={"openclawSyntheticMissingToolResult": True},
    )


def user(text="hi"):
    return {"role": "user", "content": text}


def shape(messages):
    """Roles, with tool results shown as ``toolResult:<id>:<text>``."""
    out = []
    for m in messages:
        if m["role"] == "toolResult":
            out.append(f"toolResult:{m['toolCallId']}:{m['content'][0]['text']}")
        else:
            out.append(m["role"])
    return out


MISSING = DEFAULT_MISSING_TOOL_RESULT_TEXT

PAIRING_CASES = [
    pytest.param(
        [assistant(call("c1"), call("c2"), call("c3")), user("later"), result("c2", "real")],
        {},
        [
            "assistant",
            f"toolResult:c1:{MISSING}",
            "toolResult:c2:real",
            f"toolResult:c3:{MISSING}",
            "user",
        ],
        id="parallel-calls-keep-real-result-synthesize-missing-siblings",
    ),
    pytest.param(
        [assistant(call("c1")), user("later"), result("c1")],
        {"missing_tool_result_text": "aborted"},
        ["assistant", "toolResult:c1:ok", "user"],
        id="displaced-result-moves-up",
    ),
    pytest.param(
        [assistant(call("c1"), call("c2")), result("c2", "second"), result("c1", "first")],
        {},
        ["assistant", "toolResult:c1:first", "toolResult:c2:second"],
        id="results-reordered-to-call-order",
    ),
    pytest.param(
        [
            assistant(call("search"), call("status")),
            assistant({"type": "text", "text": "display only"}, stop="stop"),
            result("status", "s"),
            result("search", "q"),
            user("next"),
        ],
        {},
        ["assistant", "toolResult:search:q", "toolResult:status:s", "assistant", "user"],
        id="display-only-assistant-between-call-and-results-does-not-synthesize",
    ),
    pytest.param(
        [
            assistant(call("read")),
            assistant(call("exec2")),
            result("read", "r"),
            result("exec2", "x"),
        ],
        {},
        ["assistant", "toolResult:read:r", "assistant", "toolResult:exec2:x"],
        id="late-real-result-moves-ahead-of-newer-calls",
    ),
    pytest.param(
        [user("hello"), result("orphan"), assistant({"type": "text", "text": "ok"}, stop="stop")],
        {},
        ["user", "assistant"],
        id="orphan-before-any-call-dropped",
    ),
    pytest.param(
        [assistant(call("c1")), result("c1", "a"), result("c1", "b")],
        {},
        ["assistant", "toolResult:c1:a"],
        id="duplicate-in-span-dropped",
    ),
    pytest.param(
        [assistant(call("x"), stop="aborted"), result("x", "partial"), user("retry")],
        {},
        ["assistant", "toolResult:x:partial", "user"],
        id="aborted-turn-keeps-real-result",
    ),
    pytest.param(
        [assistant(call("x"), stop="error"), user("retry")],
        {},
        ["assistant", "user"],
        id="error-turn-gets-no-synthetic-result",
    ),
    pytest.param(
        [assistant(call("x"), stop="error"), result("x"), user("retry")],
        {"errored_assistant_result_policy": "drop"},
        ["user"],
        id="drop-policy-removes-failed-turn-and-its-result",
    ),
    pytest.param(
        [
            assistant(call("e0")),
            result("e0", "first"),
            user("next"),
            assistant(call("e0")),
            result("e0", "second"),
        ],
        {},
        ["assistant", "toolResult:e0:first", "user", "assistant", "toolResult:e0:second"],
        id="repeated-id-across-turns-matched-per-turn",
    ),
    pytest.param(
        [assistant(call("e0"), call("e0")), result("e0", "first"), result("e0", "second")],
        {},
        ["assistant", "toolResult:e0:first", "toolResult:e0:second"],
        id="repeated-id-within-turn-each-occurrence",
    ),
    pytest.param(
        [assistant(call("e0")), assistant(call("e0")), result("e0", "second")],
        {},
        ["assistant", f"toolResult:e0:{MISSING}", "assistant", "toolResult:e0:second"],
        id="adjacent-repeated-id-result-stays-local",
    ),
    pytest.param(
        [
            assistant(call("e0")),
            assistant(call("e0")),
            result("e0", "local"),
            result("e0", "extra"),
        ],
        {},
        ["assistant", f"toolResult:e0:{MISSING}", "assistant", "toolResult:e0:local"],
        id="ambiguous-delayed-results-not-guessed",
    ),
    pytest.param(
        [
            assistant(call("e0")),
            assistant(call("e0"), stop="error"),
            assistant(call("w0")),
            result("e0", "ambiguous"),
            result("w0", "write"),
        ],
        {"errored_assistant_result_policy": "drop"},
        ["assistant", f"toolResult:e0:{MISSING}", "assistant", "toolResult:w0:write"],
        id="unresolved-failed-occurrence-blocks-ambiguous-move",
    ),
    pytest.param(
        [
            assistant(call("c1", "read")),
            synthetic("c1"),
            assistant(call("c2", "write")),
            result("c1", "real", "read"),
            result("c2", "w", "write"),
        ],
        {},
        ["assistant", "toolResult:c1:real", "assistant", "toolResult:c2:w"],
        id="late-real-result-replaces-earlier-synthetic",
    ),
    pytest.param(
        [assistant(call("c1", "read")), synthetic("c1"), result("c1", "real", "read")],
        {},
        ["assistant", "toolResult:c1:real"],
        id="real-result-in-same-span-replaces-synthetic",
    ),
    pytest.param(
        [assistant(call("c1", kind="toolUse")), result("c1")],
        {},
        ["assistant", "toolResult:c1:ok"],
        id="toolUse-blocks-pair-too",
    ),
]


@pytest.mark.parametrize(("messages", "options", "expected"), PAIRING_CASES)
def test_pairing_table(messages, options, expected):
    before = copy.deepcopy(messages)
    out = sanitize_tool_use_result_pairing(messages, **options)
    assert shape(out) == expected
    assert messages == before  # input untouched


@pytest.mark.parametrize(("messages", "options", "expected"), PAIRING_CASES)
def test_pairing_is_idempotent(messages, options, expected):
    once = sanitize_tool_use_result_pairing(messages, **options)
    twice = sanitize_tool_use_result_pairing(once, **options)
    assert twice == once


def test_synthetic_result_shape_is_exact():
    report = repair_tool_use_result_pairing([assistant(call("c9", "grep"), timestamp=42)])
    (added,) = report.added
    assert added == {
        "role": "toolResult",
        "toolCallId": "c9",
        "toolName": "grep",
        "content": [
            {
                "type": "text",
                "text": "[openclaw] missing tool result in session history; "
                "inserted synthetic error result for transcript repair.",
            }
        ],
        "details": {"openclawSyntheticMissingToolResult": True},
        "isError": True,
        "timestamp": 42,
    }


def test_missing_call_name_becomes_unknown_and_text_can_be_overridden():
    block = {"type": "toolCall", "id": "c1", "arguments": {}}
    (added,) = repair_tool_use_result_pairing(
        [assistant(block)], missing_tool_result_text="aborted"
    ).added
    assert added["toolName"] == "unknown"
    assert added["content"][0]["text"] == "aborted"
    assert make_missing_tool_result("x")["toolName"] == "unknown"


@pytest.mark.parametrize(
    ("tool_name", "expected"),
    [("", "read"), ("   ", "read"), (" grep ", "grep"), ("read", "read")],
)
def test_blank_result_tool_name_filled_from_call(tool_name, expected):
    out = sanitize_tool_use_result_pairing(
        [assistant(call("c1", "read")), result("c1", name=tool_name)]
    )
    assert out[1]["toolName"] == expected


def test_result_without_id_answers_the_only_call():
    anonymous = {"role": "toolResult", "toolName": "read", "content": [], "isError": False}
    out = sanitize_tool_use_result_pairing([assistant(call("c1", "read")), anonymous])
    assert out[1]["toolCallId"] == "c1"
    assert out[1]["isError"] is True


@pytest.mark.parametrize("key", ["toolUseId", "tool_call_id", "tool_use_id", "callId", "call_id"])
def test_result_ids_read_from_every_spelling(key):
    spelled = {"role": "toolResult", key: "c1", "toolName": "exec", "content": [], "isError": False}
    out = sanitize_tool_use_result_pairing([assistant(call("c1")), spelled])
    assert [m["role"] for m in out] == ["assistant", "toolResult"]
    assert out[1] is spelled


def test_report_counts_and_discarded_in_transcript_order():
    messages = [
        assistant(call("c1", "read")),
        synthetic("c1"),
        result("orphan"),
        result("c1", "real", "read"),
    ]
    report = repair_tool_use_result_pairing(messages)
    assert report.discarded == [messages[1], messages[2]]
    assert report.dropped_duplicate_count == 1
    assert report.dropped_orphan_count == 1
    assert report.moved is True


def test_clean_transcript_is_returned_unchanged():
    messages = [assistant(call("c1")), result("c1"), user("next")]
    report = repair_tool_use_result_pairing(messages)
    assert report.messages is messages
    assert report.moved is False
    assert report.added == []


def test_pairing_works_on_models_and_keeps_them_models():
    messages = [
        load_message(assistant(call("c1", "read"), timestamp=7)),
        UserMessage(content="interrupt", timestamp=8),
    ]
    out = sanitize_tool_use_result_pairing(messages)
    assert [type(m) for m in out] == [AssistantMessage, ToolResultMessage, UserMessage]
    assert out[1].to_dict()["details"] == {"openclawSyntheticMissingToolResult": True}
    assert out[1].timestamp == 7


# --------------------------------------------------------------------------- tool-call inputs


def ids(messages):
    return [
        b.get("id")
        for m in messages
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] != "text"
    ]


INPUT_CASES = [
    pytest.param(
        [
            call("ok", "read"),
            call("empty_name", ""),
            call("blank", "   ", kind="toolUse"),
            call("", "exec", kind="functionCall"),
        ],
        {},
        ["ok"],
        id="blank-id-or-name-dropped",
    ),
    pytest.param(
        [
            call("ok", "read"),
            call("bad", 'toolu_01abc <|tool_call_argument_begin|> {"command"'),
            call("long", "read_" + "x" * 80, kind="toolUse"),
        ],
        {},
        ["ok"],
        id="bad-chars-or-over-64-dropped",
    ),
    pytest.param(
        [call("ok", "x" * 64)],
        {},
        ["ok"],
        id="64-chars-allowed",
    ),
    pytest.param(
        [call("c1", " read "), call("c2", " write ")],
        {"allowed_tool_names": ["read"]},
        ["c1"],
        id="allowlist-matched-after-trimming",
    ),
    pytest.param(
        [call("c1", "Read")],
        {"allowed_tool_names": ["read"]},
        ["c1"],
        id="allowlist-case-insensitive",
    ),
    pytest.param(
        [
            {"type": "tool_use", "id": "t1", "name": "read"},
            {"type": "tool_call", "tool_call_id": "t2", "name": "write", "arguments": {}},
            {"type": "function_call", "call_id": "t3", "name": "exec", "arguments": "{}"},
        ],
        {"allowed_tool_names": ["write", "exec"]},
        [None, None],
        id="snake-case-blocks-need-input",
    ),
]


@pytest.mark.parametrize(("blocks", "options", "expected"), INPUT_CASES)
def test_tool_call_input_table(blocks, options, expected):
    messages = [assistant(*blocks)]
    before = copy.deepcopy(messages)
    out = sanitize_tool_call_inputs(messages, **options)
    assert ids(out) == expected
    assert messages == before


def test_names_are_trimmed_in_kept_calls():
    (message,) = sanitize_tool_call_inputs([assistant(call("c1", " read "))])
    assert message["content"][0]["name"] == "read"


def test_assistant_left_without_content_is_dropped():
    report = repair_tool_call_inputs([assistant(call("c1", "")), user()])
    assert shape(report.messages) == ["user"]
    assert (report.dropped_tool_calls, report.dropped_assistant_messages) == (1, 1)


def test_partial_json_artifacts():
    message = assistant(
        call("call_ok", "read", arguments={"path": "/a"}),
        call(
            "call_partial|fc_123",
            "Bash",
            arguments={"command": "ls"},
            partialJson='{"command": "ls"}',
        ),
        call("call_empty|fc_789", "session_status", partialJson=""),
        call("toolu_123", "Bash", partialJson='{"command":'),
        call(
            "call_truncated|fc_456",
            "Bash",
            arguments={"command": "ls"},
            partialJson='{"command":"ls"',
        ),
        {
            "type": "toolUse",
            "id": "call_partial2",
            "name": "read",
            "input": None,
            "partialJson": '{"path":',
        },
    )
    (out,) = sanitize_tool_call_inputs([message])
    kept = [b for b in out["content"]]
    assert [b["id"] for b in kept] == ["call_ok", "call_partial|fc_123", "call_empty|fc_789"]
    assert "partialJson" not in kept[1] and "partialJson" not in kept[2]


def test_partial_json_call_on_a_stop_turn_is_dropped():
    message = assistant(
        call("call_p|fc_1", "Bash", arguments={"command": "ls"}, partialJson='{"command":"ls"}'),
        stop="stop",
    )
    assert sanitize_tool_call_inputs([message, user()]) == [user()]


def test_sessions_spawn_attachment_content_is_redacted():
    spawn = {
        "type": "toolCall",
        "id": "s1",
        "name": "sessions_spawn",
        "arguments": {
            "task": "t",
            "attachments": [{"name": "a.txt", "content": "secret"}, {"name": "b"}],
        },
    }
    (out,) = sanitize_tool_call_inputs([assistant(spawn)])
    assert out["content"][0]["arguments"]["attachments"] == [
        {"name": "a.txt", "content": "__OPENCLAW_REDACTED__"},
        {"name": "b"},
    ]
    assert spawn["arguments"]["attachments"][0]["content"] == "secret"


def signed(*blocks, signature="sig"):
    return assistant(
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": signature}, *blocks
    )


SIGNED = {"allow_provider_owned_thinking_replay": True}


@pytest.mark.parametrize(
    ("messages", "options", "expected_roles"),
    [
        pytest.param(
            [signed(call("g", "gateway"))],
            {"allowed_tool_names": ["read"], **SIGNED},
            [],
            id="disallowed-sibling-drops-whole-turn",
        ),
        pytest.param(
            [signed(call("p|fc", "exec", partialJson='{"command":"ls"}'))],
            {"allowed_tool_names": ["exec"], **SIGNED},
            [],
            id="partial-json-drops-whole-turn",
        ),
        pytest.param(
            [signed(call("s", "read"), call("s", "read", kind="toolUse"))],
            {"allowed_tool_names": ["read"], **SIGNED},
            [],
            id="reused-id-within-turn-drops-whole-turn",
        ),
        pytest.param(
            [signed(call("s", "read")), signed(call("s", "read", kind="toolUse"))],
            {"allowed_tool_names": ["read"], **SIGNED},
            ["assistant"],
            id="later-signed-turn-reusing-signed-id-dropped",
        ),
    ],
)
def test_signed_thinking_turns_all_or_nothing(messages, options, expected_roles):
    out = sanitize_tool_call_inputs(messages, **options)
    assert [m["role"] for m in out] == expected_roles


def test_signed_turn_kept_byte_for_byte():
    messages = [signed(call("c1", "read")), result("c1", name="read")]
    assert sanitize_tool_call_inputs(messages, allowed_tool_names=["read"], **SIGNED) is messages


def test_signed_reused_id_with_displaced_result_is_dropped():
    first = assistant(call("shared", "read"))
    first_result = result("shared", "mutable", "read")
    later = signed(call("shared", "read", kind="toolUse"))
    displaced = result("shared", "signed", "read")
    out = sanitize_tool_call_inputs(
        [first, first_result, later, user(), displaced], allowed_tool_names=["read"], **SIGNED
    )
    assert out == [first, first_result, user(), displaced]


@pytest.mark.parametrize("is_signed", [False, True])
def test_completed_calls_to_removed_tools_survive(is_signed):
    blocks = [call("old", "removed_plugin")]
    old = signed(*blocks) if is_signed else assistant(*blocks)
    options = {"allowed_tool_names": ["read"], "allow_provider_owned_thinking_replay": is_signed}
    completed = [old, result("old", "done", "removed_plugin")]
    assert sanitize_tool_call_inputs(completed, **options) is completed
    assert sanitize_tool_call_inputs([old], **options) == []
    only_synthetic = make_missing_tool_result("old", "removed_plugin")
    assert sanitize_tool_call_inputs([old, only_synthetic], **options) == [only_synthetic]


def test_strip_tool_result_details_keeps_synthetic_flag_only():
    messages = [
        result("c1", details={"internal": True}),
        {"role": "assistant", "content": [], "details": {"no": "touch"}},
        {
            **synthetic("m"),
            "details": {"internal": True, "openclawSyntheticMissingToolResult": True},
        },
    ]
    out = strip_tool_result_details(messages)
    assert "details" not in out[0]
    assert out[1] is messages[1]
    assert out[2]["details"] == {"openclawSyntheticMissingToolResult": True}
    assert strip_tool_result_details(out) is out


def test_strip_details_on_models_unsets_the_field():
    message = ToolResultMessage(tool_call_id="c", tool_name="t", details={"x": 1}, timestamp=1)
    (out,) = strip_tool_result_details([message])
    assert "details" not in out.to_dict()
    assert message.details == {"x": 1}
