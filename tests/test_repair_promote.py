"""Promotion of plain-text calls to structured ``ToolCall`` blocks, all or nothing (spec §9.4)."""

from __future__ import annotations

import re

import pytest

from openclaw_runtime.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from openclaw_runtime.repair import (
    BUILTIN_TOOL_CALL_FORMATS,
    project_standalone_plain_text_tool_call_message,
    promote_plain_text_tool_calls,
)
from openclaw_runtime.repair.promote import (
    create_promoted_plain_text_tool_call_events,
    extract_standalone_plain_text_tool_call_text,
    promote_standalone_plain_text_tool_call_message,
    resolve_exact_tool_name,
)

TOOLS = {"read", "write"}


def assistant(*blocks, stop_reason="stop") -> AssistantMessage:
    content = [TextContent(text=b) if isinstance(b, str) else b for b in blocks]
    return AssistantMessage(
        content=content, stop_reason=stop_reason, api="fake", provider="fake", model="m"
    )


def counter():
    count = 0

    def next_id():
        nonlocal count
        count += 1
        return f"call_{count}"

    return next_id


def calls(message):
    return [(b.name, b.arguments) for b in message.content if isinstance(b, ToolCall)]


READ_A = '[read]\n{"path":"a"}\n[/read]'
WRITE_B = '[tool:write]{"path":"b","content":"x"}'


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        ([READ_A], [("read", {"path": "a"})]),
        ([f"\n\n  {READ_A}\n\n"], [("read", {"path": "a"})]),
        (
            [f"{READ_A}\n{WRITE_B}"],
            [("read", {"path": "a"}), ("write", {"path": "b", "content": "x"})],
        ),
        (['{"name":"read","arguments":{"path":"a"}}'], [("read", {"path": "a"})]),
        (["<function=read><parameter=path>a</parameter></function>"], [("read", {"path": "a"})]),
        (['analysis to=read code {"path":"a"}'], [("read", {"path": "a"})]),
        (
            ['{"tool_calls":[{"name":"read","arguments":{}},{"name":"write","arguments":{}}]}'],
            [("read", {}), ("write", {})],
        ),
        # text blocks of one run are joined; their boundary is a line break for the grammar
        (["[read]", '{"path":"a"}[/read]'], [("read", {"path": "a"})]),
        (['[tool:read]{"path":"a', 'b"}'], [("read", {"path": "ab"})]),  # payload unchanged
        (["[read]", "<parameter=path>", "a</parameter></function>"], [("read", {"path": "a"})]),
        ([READ_A, "   "], [("read", {"path": "a"})]),  # blank blocks drop out
    ],
)
def test_promotes_text_that_is_only_calls(blocks, expected):
    original = assistant(*blocks)
    promoted = promote_standalone_plain_text_tool_call_message(
        original, TOOLS, create_tool_call_block=None
    )
    assert promoted is not None
    assert calls(promoted) == expected
    assert all(isinstance(b, ToolCall) for b in promoted.content)
    assert promoted.stop_reason == "toolUse"
    assert original.stop_reason == "stop" and isinstance(original.content[0], TextContent)


@pytest.mark.parametrize(
    "blocks",
    [
        [f"{READ_A}\n[tool:delete]{{}}"],  # one unknown name: nothing is promoted
        [f"Let me read it.\n{READ_A}"],  # prose next to a call
        [f"{READ_A}\nDone."],
        [READ_A, "and some prose"],
        ['[read]\n{"path":}\n[/read]'],
        ['[read]\n{"path":"a"}'],  # unfinished
        ["just an answer"],
        ["   "],
        [],
    ],
)
def test_nothing_is_promoted_unless_every_block_resolves(blocks):
    message = assistant(*blocks)
    before = message.to_dict()
    assert promote_standalone_plain_text_tool_call_message(message, TOOLS) is None
    assert message.to_dict() == before  # left as it was


def test_no_allowed_names_means_no_promotion():
    assert promote_standalone_plain_text_tool_call_message(assistant(READ_A), []) is None


@pytest.mark.parametrize(
    ("stop_reason", "allowed", "promoted"),
    [
        ("stop", None, True),
        ("length", None, True),
        ("length", {"stop", "toolUse"}, False),
        ("toolUse", {"stop", "toolUse"}, True),
    ],
)
def test_allowed_stop_reasons(stop_reason, allowed, promoted):
    result = promote_standalone_plain_text_tool_call_message(
        assistant(READ_A, stop_reason=stop_reason), TOOLS, allowed_stop_reasons=allowed
    )
    assert (result is not None) is promoted


def test_a_resolver_maps_written_names_to_allowed_ones():
    def case_insensitive(raw, allowed):
        return next((name for name in allowed if name.lower() == raw.lower()), None)

    message = assistant('[tool:READ]{"path":"a"}')
    assert promote_standalone_plain_text_tool_call_message(message, TOOLS) is None
    promoted = promote_standalone_plain_text_tool_call_message(
        message, TOOLS, resolve_tool_name=case_insensitive
    )
    assert calls(promoted) == [("read", {"path": "a"})]
    assert resolve_exact_tool_name("read", frozenset(TOOLS)) == "read"
    assert resolve_exact_tool_name("READ", frozenset(TOOLS)) is None


def test_a_resolver_that_rejects_one_name_blocks_all():
    promoted = promote_standalone_plain_text_tool_call_message(
        assistant(f"{READ_A}\n{WRITE_B}"),
        TOOLS,
        resolve_tool_name=lambda raw, allowed: raw if raw == "read" else None,
    )
    assert promoted is None


def test_non_text_blocks_block_promotion_unless_retainable():
    thinking = ThinkingContent(thinking="plan", thinking_signature="sig")
    message = assistant(thinking, READ_A)
    assert project_standalone_plain_text_tool_call_message(message, TOOLS) is None
    projection = project_standalone_plain_text_tool_call_message(
        message, TOOLS, is_retainable_non_text_block=lambda block: block.type == "thinking"
    )
    assert projection is not None
    assert projection.message.content[0] is thinking
    assert dict(projection.source_to_projected_content_index) == {0: 0}


def test_runs_between_non_text_blocks_are_promoted_separately():
    thinking = ThinkingContent(thinking="plan")
    image = ImageContent(data="AAAA", mime_type="image/png")
    message = assistant(READ_A, thinking, " ", image, WRITE_B)
    projection = promote_plain_text_tool_calls(message, TOOLS, tool_call_id=counter())
    assert projection is not None
    kinds = [b.type for b in projection.message.content]
    assert kinds == ["toolCall", "thinking", "image", "toolCall"]
    assert dict(projection.source_to_projected_content_index) == {1: 1, 3: 2}
    assert [b.id for b in projection.message.tool_calls()] == ["call_1", "call_2"]


def test_a_run_that_is_not_calls_blocks_everything():
    message = assistant(READ_A, ThinkingContent(thinking="plan"), "Here you go.")
    assert promote_plain_text_tool_calls(message, TOOLS) is None


def test_a_message_with_a_structured_call_is_left_alone():
    native = ToolCall(id="call_native", name="read", arguments={})
    assert promote_plain_text_tool_calls(assistant(READ_A, native), TOOLS) is None


def test_promoted_calls_get_openclaw_ids_and_the_wire_format():
    projection = promote_plain_text_tool_calls(assistant(READ_A), TOOLS)
    wire = projection.message.to_dict()
    assert wire["stopReason"] == "toolUse"
    (call,) = wire["content"]
    assert re.fullmatch(r"call_[0-9a-f]{24}", call["id"])
    assert call == {
        "type": "toolCall",
        "id": call["id"],
        "name": "read",
        "arguments": {"path": "a"},
    }
    assert (wire["api"], wire["provider"], wire["model"]) == ("fake", "fake", "m")


def test_only_the_given_formats_are_recognized():
    xml_only = [BUILTIN_TOOL_CALL_FORMATS["xmlish"]]
    assert promote_plain_text_tool_calls(assistant(READ_A), TOOLS, formats=xml_only) is None
    xml = assistant("<function=read><parameter=path>a</parameter></function>")
    assert promote_plain_text_tool_calls(xml, TOOLS, formats=xml_only) is not None


def test_accepts_openclaw_dicts_with_string_content():
    promoted = promote_standalone_plain_text_tool_call_message(
        {"role": "assistant", "content": "[tool:echo]\n{}", "stopReason": "stop"}, ["echo"]
    )
    assert calls(promoted) == [("echo", {})]
    assert (
        promote_standalone_plain_text_tool_call_message(
            {"role": "user", "content": "[tool:echo]{}"}, ["echo"]
        )
        is None
    )


def test_promoted_events_describe_every_call():
    message = promote_plain_text_tool_calls(
        assistant(ThinkingContent(thinking="t"), f"{READ_A}\n{WRITE_B}"),
        TOOLS,
        tool_call_id=counter(),
    ).message
    events = create_promoted_plain_text_tool_call_events(message)
    assert [(e.type, e.content_index) for e in events] == [
        ("toolcall_start", 1),
        ("toolcall_delta", 1),
        ("toolcall_end", 1),
        ("toolcall_start", 2),
        ("toolcall_delta", 2),
        ("toolcall_end", 2),
    ]
    assert events[1].delta == '{"path":"a"}'
    assert events[4].delta == '{"path":"b","content":"x"}'
    assert events[2].tool_call is message.content[1]
    assert all(e.partial is message for e in events)


@pytest.mark.parametrize(
    ("blocks", "options", "expected"),
    [
        (["[tool:x]\n{}"], {}, "[tool:x]\n{}"),
        (["  a", "b  "], {}, "ab"),
        (["   "], {}, None),
        ([ThinkingContent(thinking="t"), "a"], {}, None),
        ([ThinkingContent(thinking="t"), "a"], {"allow_other_non_text_blocks": True}, "a"),
        (
            [ThinkingContent(thinking="t"), "a"],
            {"is_retainable_non_text_block": lambda b: True},
            "a",
        ),
        (["a"], {"allowed_stop_reasons": {"toolUse"}}, None),
    ],
)
def test_extract_standalone_text(blocks, options, expected):
    assert extract_standalone_plain_text_tool_call_text(assistant(*blocks), **options) == expected
