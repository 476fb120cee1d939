"""Directed retry instructions and their detectors (seed 001, OpenClaw incomplete-turn.ts)."""

from __future__ import annotations

import dataclasses

import pytest

from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from openclaw_runtime.runner.failure_signal import ToolErrorSummary
from openclaw_runtime.runner.planning_only import (
    ACK_EXECUTION_FAST_PATH_INSTRUCTION,
    PLANNING_ONLY_RETRY_INSTRUCTION,
    is_likely_execution_ack_prompt,
    is_planning_only_assistant_text,
    resolve_ack_execution_fast_path_instruction,
    resolve_planning_only_retry_instruction,
)
from openclaw_runtime.runner.reply_payload import ToolMeta
from openclaw_runtime.runner.retry_instructions import (
    COMPACTION_CONTINUATION_RETRY_INSTRUCTION,
    EMPTY_RESPONSE_RETRY_INSTRUCTION,
    INCOMPLETE_TURN_SIDE_EFFECT_TEXT,
    INCOMPLETE_TURN_TEXT,
    REASONING_ONLY_RETRY_INSTRUCTION,
    AttemptFacts,
    attempt_had_potential_side_effects,
    compose_attempt_prompt,
    is_empty_response_assistant_turn,
    is_zero_usage_empty_stop_assistant_turn,
    resolve_compaction_continuation_retry_instruction,
    resolve_empty_response_retry_instruction,
    resolve_incomplete_turn_payload_text,
    resolve_reasoning_only_retry_instruction,
    should_retry_missing_assistant_turn,
    should_retry_silent_error_assistant_turn,
)


def msg(*blocks, stop="stop", output=0, **usage):
    return AssistantMessage(
        content=list(blocks), stop_reason=stop, usage=Usage(output=output, **usage)
    )


SIGNED = ThinkingContent(thinking="let me think", thinking_signature="sig")
UNSIGNED = ThinkingContent(thinking="let me think")
REASONING_ONLY = msg(SIGNED, output=40)
EMPTY_STOP = msg()
ANSWER = msg(TextContent(text="Here is the answer."), output=5)
CALL = ToolCall(id="c1", name="read", arguments={})


def test_instruction_texts_are_openclaws():
    assert REASONING_ONLY_RETRY_INSTRUCTION == (
        "The previous assistant turn recorded reasoning but did not produce a user-visible "
        "answer. Continue from that partial turn and produce the visible answer now. Do not "
        "restate the reasoning or restart from scratch."
    )
    assert EMPTY_RESPONSE_RETRY_INSTRUCTION == (
        "The previous attempt did not produce a user-visible answer. Continue from the current "
        "state and produce the visible answer now. Do not restart from scratch."
    )
    assert COMPACTION_CONTINUATION_RETRY_INSTRUCTION == (
        "The previous attempt compacted the conversation context before producing a final "
        "user-visible answer. Continue from the compacted transcript and produce the final "
        "answer now. Do not restart from scratch, do not repeat completed work, and do not "
        "rerun tools unless the transcript clearly lacks required evidence."
    )


@pytest.mark.parametrize(
    ("additions", "expected"),
    [
        ([], "base"),
        ([None, "", "   "], "base"),
        (["A"], "base\n\nA"),
        (["A", None, "B"], "base\n\nA\n\nB"),
        (["A", "B", "C"], "base\n\nA\n\nB\n\nC"),
    ],
)
def test_compose_attempt_prompt(additions, expected):
    assert compose_attempt_prompt("base", additions) == expected


# --------------------------------------------------------------------------- reasoning-only


@pytest.mark.parametrize(
    ("facts", "kwargs", "applies"),
    [
        (AttemptFacts(assistant=REASONING_ONLY), {}, True),
        (AttemptFacts(assistant=msg(UNSIGNED)), {}, True),  # unsigned thinking only
        (AttemptFacts(assistant=msg(SIGNED, TextContent(text=" "))), {}, True),  # blank text
        (AttemptFacts(assistant=ANSWER), {}, False),
        (AttemptFacts(assistant=msg(SIGNED, TextContent(text="hi"))), {}, False),
        (AttemptFacts(assistant=msg(SIGNED, stop="error")), {}, False),
        (AttemptFacts(assistant=REASONING_ONLY, assistant_texts=("partial",)), {}, False),
        (AttemptFacts(assistant=None), {}, False),
        (AttemptFacts(assistant=EMPTY_STOP), {}, False),  # empty, not reasoning
        (AttemptFacts(assistant=REASONING_ONLY), {"aborted": True}, False),
        (AttemptFacts(assistant=REASONING_ONLY), {"timed_out": True}, False),
        (AttemptFacts(assistant=REASONING_ONLY, client_tool_calls=True), {}, False),
        (AttemptFacts(assistant=REASONING_ONLY, yield_detected=True), {}, False),
        (AttemptFacts(assistant=REASONING_ONLY, had_potential_side_effects=True), {}, False),
        (AttemptFacts(assistant=REASONING_ONLY, accepted_session_spawns=1), {}, False),
        (
            AttemptFacts(assistant=REASONING_ONLY, last_tool_error=ToolErrorSummary("read")),
            {},
            False,
        ),
        (
            AttemptFacts(
                assistant=REASONING_ONLY, tool_metas=(ToolMeta("read", async_started=True),)
            ),
            {},
            False,
        ),
    ],
)
def test_reasoning_only(facts, kwargs, applies):
    result = resolve_reasoning_only_retry_instruction(facts, **kwargs)
    assert result == (REASONING_ONLY_RETRY_INSTRUCTION if applies else None)


# --------------------------------------------------------------------------- empty response


@pytest.mark.parametrize(
    ("facts", "payloads", "empty"),
    [
        (AttemptFacts(assistant=None), 0, True),
        (AttemptFacts(assistant=EMPTY_STOP), 0, True),
        (AttemptFacts(assistant=msg(TextContent(text=""))), 0, True),
        (AttemptFacts(assistant=ANSWER), 1, False),  # a visible payload
        (AttemptFacts(assistant=EMPTY_STOP, assistant_texts=("hi",)), 0, False),
        (AttemptFacts(assistant=msg(stop="error")), 0, False),
        (AttemptFacts(assistant=msg(CALL, stop="toolUse")), 0, False),
        (AttemptFacts(assistant=REASONING_ONLY), 0, False),
        # a post-tool empty stop stays empty even with earlier narration
        (
            AttemptFacts(
                assistant=EMPTY_STOP,
                assistant_texts=("checking",),
                tool_metas=(ToolMeta("read"),),
                items_completed=1,
            ),
            1,
            True,
        ),
        # ... but a post-tool answer is an answer
        (
            AttemptFacts(
                assistant=ANSWER,
                assistant_texts=("checking", "done"),
                tool_metas=(ToolMeta("read"),),
                items_completed=1,
            ),
            1,
            False,
        ),
    ],
)
def test_empty_response_shape(facts, payloads, empty):
    assert is_empty_response_assistant_turn(facts, payload_count=payloads) is empty


@pytest.mark.parametrize(
    ("facts", "kwargs", "applies"),
    [
        (AttemptFacts(assistant=EMPTY_STOP), {}, True),
        (AttemptFacts(assistant=None), {}, True),
        (AttemptFacts(assistant=EMPTY_STOP), {"provider": "ollama"}, False),
        (AttemptFacts(assistant=EMPTY_STOP), {"provider": "ollama-cloud"}, False),
        (AttemptFacts(assistant=msg(output=3)), {"provider": "ollama"}, True),
        (AttemptFacts(assistant=EMPTY_STOP), {"provider": "ollamax"}, True),
        (AttemptFacts(assistant=EMPTY_STOP), {"aborted": True}, False),
        (AttemptFacts(assistant=EMPTY_STOP, had_potential_side_effects=True), {}, False),
        (AttemptFacts(assistant=ANSWER), {"payload_count": 1}, False),
    ],
)
def test_empty_response_instruction(facts, kwargs, applies):
    kwargs = {"payload_count": 0, **kwargs}
    result = resolve_empty_response_retry_instruction(facts, **kwargs)
    assert result == (EMPTY_RESPONSE_RETRY_INSTRUCTION if applies else None)


@pytest.mark.parametrize(
    ("message", "zero"),
    [
        (EMPTY_STOP, True),
        (msg(output=1), False),
        (msg(input=5), False),
        (msg(TextContent(text="")), False),  # content present
        (msg(stop="length"), False),
        (None, False),
    ],
)
def test_zero_usage_empty_stop(message, zero):
    assert is_zero_usage_empty_stop_assistant_turn(message) is zero


# --------------------------------------------------------------------------- compaction


@pytest.mark.parametrize(
    ("facts", "kwargs", "applies"),
    [
        (AttemptFacts(), {}, True),
        (AttemptFacts(), {"attempt_compaction_count": 0}, False),
        (AttemptFacts(), {"payload_count": 1}, False),
        (AttemptFacts(), {"attempts_so_far": 1}, False),  # once per run
        (AttemptFacts(), {"interrupted": True}, False),
        (AttemptFacts(), {"prompt_error": True}, False),
        (AttemptFacts(), {"empty_reply_is_silent": True}, False),
        (AttemptFacts(client_tool_calls=True), {}, False),
        (AttemptFacts(had_potential_side_effects=True), {}, False),
        (AttemptFacts(last_tool_error=ToolErrorSummary("read")), {}, False),
    ],
)
def test_compaction_continuation(facts, kwargs, applies):
    kwargs = {"attempt_compaction_count": 1, "payload_count": 0, "attempts_so_far": 0, **kwargs}
    result = resolve_compaction_continuation_retry_instruction(facts, **kwargs)
    assert result == (COMPACTION_CONTINUATION_RETRY_INSTRUCTION if applies else None)


def test_all_three_instructions_compose_in_seed_order():
    prompt = compose_attempt_prompt(
        "Fix the bug",
        [
            resolve_reasoning_only_retry_instruction(AttemptFacts(assistant=REASONING_ONLY)),
            resolve_empty_response_retry_instruction(
                AttemptFacts(assistant=EMPTY_STOP), payload_count=0
            ),
            resolve_compaction_continuation_retry_instruction(
                AttemptFacts(), attempt_compaction_count=1, payload_count=0, attempts_so_far=0
            ),
        ],
    )
    assert prompt == (
        "Fix the bug\n\n"
        + REASONING_ONLY_RETRY_INSTRUCTION
        + "\n\n"
        + EMPTY_RESPONSE_RETRY_INSTRUCTION
        + "\n\n"
        + COMPACTION_CONTINUATION_RETRY_INSTRUCTION
    )


# --------------------------------------------------------------------------- silent error / missing


@pytest.mark.parametrize(
    ("facts", "retry"),
    [
        (AttemptFacts(assistant=msg(stop="error")), True),
        (AttemptFacts(assistant=msg(TextContent(text=" "), stop="error")), True),
        (AttemptFacts(assistant=msg(stop="error", output=3)), False),  # produced output
        (AttemptFacts(assistant=msg(TextContent(text="partial"), stop="error")), False),
        (AttemptFacts(assistant=msg(CALL, stop="error")), False),
        (AttemptFacts(assistant=msg(stop="stop")), False),
        (AttemptFacts(assistant=msg(stop="error"), had_potential_side_effects=True), False),
        (AttemptFacts(assistant=msg(stop="error"), assistant_texts=("x",)), False),
        (AttemptFacts(assistant=None), False),
    ],
)
def test_silent_error_retry(facts, retry):
    assert should_retry_silent_error_assistant_turn(facts) is retry


@pytest.mark.parametrize(
    ("facts", "kwargs", "retry"),
    [
        (AttemptFacts(), {}, True),
        (AttemptFacts(assistant=EMPTY_STOP), {}, False),  # an assistant message exists
        (AttemptFacts(), {"payload_count": 1}, False),
        (AttemptFacts(), {"aborted": True}, False),
        (AttemptFacts(), {"prompt_error": True}, False),
        (AttemptFacts(items_started=1), {}, False),
        (AttemptFacts(assistant_texts=("NO_REPLY",)), {}, False),
        (AttemptFacts(had_potential_side_effects=True), {}, False),
        (AttemptFacts(committed_messaging_delivery=True), {}, False),
    ],
)
def test_missing_assistant_retry(facts, kwargs, retry):
    kwargs = {"payload_count": 0, **kwargs}
    assert should_retry_missing_assistant_turn(facts, **kwargs) is retry


# --------------------------------------------------------------------------- incomplete turn


@pytest.mark.parametrize(
    ("facts", "kwargs", "text"),
    [
        (AttemptFacts(assistant=msg(CALL, stop="toolUse")), {}, INCOMPLETE_TURN_TEXT),
        (
            AttemptFacts(assistant=msg(CALL, stop="toolUse")),
            {"payload_count": 1},  # pre-tool text does not hide a tool-use terminal
            INCOMPLETE_TURN_TEXT,
        ),
        (AttemptFacts(assistant=REASONING_ONLY), {}, INCOMPLETE_TURN_TEXT),
        (AttemptFacts(assistant=EMPTY_STOP), {}, INCOMPLETE_TURN_TEXT),
        (AttemptFacts(assistant=msg(stop="error")), {}, INCOMPLETE_TURN_TEXT),
        (
            AttemptFacts(assistant=EMPTY_STOP, had_potential_side_effects=True),
            {},
            INCOMPLETE_TURN_SIDE_EFFECT_TEXT,
        ),
        (AttemptFacts(assistant=ANSWER), {"payload_count": 1}, None),
        (AttemptFacts(assistant=EMPTY_STOP), {"timed_out": True}, None),
        (AttemptFacts(assistant=EMPTY_STOP), {"aborted": True, "external_abort": True}, None),
        (AttemptFacts(assistant=EMPTY_STOP, assistant_texts=("NO_REPLY",)), {}, None),
        (AttemptFacts(assistant=EMPTY_STOP, accepted_session_spawns=1), {}, None),
        (
            AttemptFacts(assistant=EMPTY_STOP, last_tool_error=ToolErrorSummary("write")),
            {},
            None,
        ),
    ],
)
def test_incomplete_turn_text(facts, kwargs, text):
    kwargs = {"payload_count": 0, **kwargs}
    assert resolve_incomplete_turn_payload_text(facts, **kwargs) == text


# --------------------------------------------------------------------------- side effects


@pytest.mark.parametrize(
    ("metas", "kwargs", "effects"),
    [
        ((), {}, False),
        ((ToolMeta("read"),), {}, False),
        ((ToolMeta("write"),), {}, True),
        ((ToolMeta("exec"),), {}, True),
        ((ToolMeta("slack_send_dm"),), {}, True),  # contains "send"
        ((ToolMeta("github_actions"),), {}, True),  # ends with _actions
        ((ToolMeta("exec", mutating_action=False),), {}, False),  # explicit flag wins
        ((ToolMeta("read", async_started=True),), {}, True),
        ((), {"messaging_side_effect": True}, True),
        ((), {"accepted_session_spawns": 1}, True),
        ((), {"successful_cron_adds": 1}, True),
    ],
)
def test_side_effects(metas, kwargs, effects):
    assert attempt_had_potential_side_effects(metas, **kwargs) is effects


# --------------------------------------------------------------------------- planning-only


@pytest.mark.parametrize(
    ("texts", "planning"),
    [
        (("I'll check the logs and fix the failing test.",), True),
        (("Let me inspect the config first.",), True),
        (("On it",), True),
        (("Sure!",), True),
        (("One sec while I look into it.",), True),
        (("Plan:\n1. Read the file\n2. I'll patch the bug",), True),
        (("I\u2019ll look into the deploy.",), True),  # curly apostrophe
        (("Done — I fixed the failing test.",), False),  # completion language
        (("The answer is 42.",), False),
        (("I'll check it.\n```\ncode\n```",), False),  # code fence
        (("x" * 701,), False),  # too long
        ((), False),
    ],
)
def test_planning_only_text(texts, planning):
    assert is_planning_only_assistant_text(texts) is planning


PLANNING = AttemptFacts(
    assistant=msg(TextContent(text="I'll check the logs.")),
    assistant_texts=("I'll check the logs.",),
)


@pytest.mark.parametrize(
    ("facts", "prompt", "applies"),
    [
        (PLANNING, "Why is the build failing? Check the logs.", True),
        (PLANNING, None, True),
        (PLANNING, "thanks", False),  # not actionable
        (PLANNING, "What's the plan?", False),  # the user asked for a plan
        (dataclasses.replace(PLANNING, assistant=msg(stop="length")), "fix the bug", False),
        (dataclasses.replace(PLANNING, tool_metas=(ToolMeta("write"),)), "fix the bug", False),
        (dataclasses.replace(PLANNING, tool_metas=(ToolMeta("update_plan"),)), "fix it", True),
        (dataclasses.replace(PLANNING, had_potential_side_effects=True), "fix the bug", False),
        (dataclasses.replace(PLANNING, messaging_delivery_evidence=True), "fix the bug", False),
        (dataclasses.replace(PLANNING, client_tool_calls=True), "fix the bug", False),
        # one read-only tool then "I'll ... next" still counts as planning
        (
            AttemptFacts(
                assistant=msg(TextContent(text="Let me read the config next.")),
                assistant_texts=("Let me read the config next.",),
                tool_metas=(ToolMeta("read"),),
                items_started=1,
                items_completed=1,
            ),
            "fix the config bug",
            True,
        ),
    ],
)
def test_planning_only_instruction(facts, prompt, applies):
    result = resolve_planning_only_retry_instruction(facts, prompt=prompt)
    assert result == (PLANNING_ONLY_RETRY_INSTRUCTION if applies else None)


def test_ack_answer_to_an_ack_request_is_not_planning():
    facts = AttemptFacts(assistant=msg(TextContent(text="Got it.")), assistant_texts=("Got it.",))
    assert resolve_planning_only_retry_instruction(facts, prompt="Please confirm with ok") is None
    assert (
        resolve_planning_only_retry_instruction(facts, prompt="please fix the build")
        == PLANNING_ONLY_RETRY_INSTRUCTION
    )


@pytest.mark.parametrize(
    ("prompt", "ack"),
    [
        ("ok", True),
        ("Go ahead!", True),
        ("do it.", True),
        ("weiter", True),
        ("進めて", True),
        ("ok?", False),
        ("ok\ndo it", False),
        ("please refactor the parser", False),
    ],
)
def test_execution_ack_prompt(prompt, ack):
    assert is_likely_execution_ack_prompt(prompt) is ack
    assert resolve_ack_execution_fast_path_instruction(prompt) == (
        ACK_EXECUTION_FAST_PATH_INSTRUCTION if ack else None
    )
