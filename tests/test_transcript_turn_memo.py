"""Turn validation inside a tool loop reuses the previous answer: the same as validating all.

``TurnValidationMemo`` answers ``validate_replay_turns`` for a history that is the previous
request's plus whole clean tool groups without a pass over the history. Each shape of the
loop-tail table is put in the middle of a tool loop, under the policies that validate turns,
on raw and on sanitized histories; the memo must give what the validator gives at every
request. The memo reaches the built-in hook on the history list (other plugins still answer
first), and a real run over HTTP uses it (asyncio and trio).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime.messages import TextContent, UserMessage
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from openclaw_runtime.transcript import resolve_transcript_policy, run_transcript_sanitizers
from openclaw_runtime.transcript import turn_memo as turn_memo_module
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from openclaw_runtime.transcript.replay import validate_replay_turns, validate_strict_replay_turns
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS
from openclaw_runtime.transcript.turn_memo import MemoizedTurns, TurnValidationMemo
from tests.run_support import mock_openai_config, mock_openai_server, read
from tests.test_transcript_incremental import dumped
from tests.test_transcript_loop_tail import SHAPES, THINKS, Loop

_ANTHROPIC = resolve_transcript_policy(
    "anthropic-messages", "anthropic", "claude-sonnet-4", model_reasoning=True
)
POLICIES = {
    "anthropic": _ANTHROPIC,
    "anthropic, users not merged": dataclasses.replace(
        _ANTHROPIC, append_only_runtime_context=True
    ),
    "completions": resolve_transcript_policy("openai-completions", "openai", "gpt-4o"),
    "google": resolve_transcript_policy("google-generative-ai", "google", "gemini-2.5-pro"),
}


def test_the_policies_validate_turns() -> None:
    for policy in POLICIES.values():
        assert policy.validate_anthropic_turns or policy.validate_gemini_turns


#: the two validators the memo serves: the generic one, and with ``strict`` Anthropic's rule
VALIDATORS = {False: validate_replay_turns, True: validate_strict_replay_turns}


class Counting:
    """Counts the full validations the memo runs (both validators, in its module)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        for name, real in (
            ("validate_replay_turns", validate_replay_turns),
            ("validate_strict_replay_turns", validate_strict_replay_turns),
        ):
            monkeypatch.setattr(turn_memo_module, name, self._counting(real))

    def _counting(self, real: Any) -> Any:
        def validate(messages: Any, policy: Any) -> list[Any]:
            self.calls += 1
            return list(real(messages, policy))

        return validate


@pytest.mark.parametrize("strict", [False, True], ids=["generic", "strict"])
@pytest.mark.parametrize("sanitized", [False, True])
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("shape_name", sorted(SHAPES))
def test_a_tool_group_in_a_loop_validates_as_in_full(
    shape_name: str,
    policy_name: str,
    sanitized: bool,
    strict: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = POLICIES[policy_name]
    shape, clean = SHAPES[shape_name]
    loop = Loop(compacted=False)
    memo = TurnValidationMemo()
    incremental = IncrementalSanitizer()
    full = Counting(monkeypatch)
    groups = [loop.group(), loop.group(text=True), shape(loop), loop.group(), loop.group()]
    for number, group in enumerate(groups):
        loop.messages.extend(group)
        messages = list(loop.messages)
        if sanitized:
            expected_input = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
            messages = incremental.run(messages, policy, BUILTIN_SANITIZERS)
            assert dumped(messages) == dumped(expected_input)
        before = full.calls
        got = memo(messages, policy, strict=strict)
        expected = VALIDATORS[strict](messages, policy)
        assert dumped(got) == dumped(expected), (shape_name, number)
        if number == 1 or (number == 2 and clean):
            assert full.calls == before, (shape_name, number)  # reused, no pass
        if sanitized and policy.drop_thinking_blocks and shape_name in THINKS and number > 2:
            # an older Claude model: the sanitizer replaced the previous request's last group
            # (the shape) by its copy without thinking; the part before it is reused
            assert full.calls == before, (shape_name, number)
        if number == 2 and not sanitized and shape_name in THINKS:
            # a turn that thinks is reused when its results name its calls' tools (the
            # validator keeps it whole then), and validated in full when one does not
            renamed = shape_name == "thinking, its result naming another tool"
            assert (full.calls == before) != renamed, shape_name


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(6))
def test_random_loops_validate_as_in_full(policy_name: str, seed: int) -> None:
    """Both validators, asked in turn at random (each switch starts the memo over)."""
    rng = random.Random(seed)
    policy = POLICIES[policy_name]
    names = sorted(SHAPES)
    loop = Loop(compacted=False)
    memo = TurnValidationMemo()
    for turn in range(4):
        if turn:
            loop.messages.append(UserMessage(content=f"turn {turn}", timestamp=loop.stamp()))
        for _ in range(rng.randint(3, 10)):
            if rng.random() < 0.75:
                loop.messages.extend(loop.group(text=rng.random() < 0.3))
            else:
                loop.messages.extend(SHAPES[rng.choice(names)][0](loop))
            if rng.random() < 0.1:
                loop.messages = loop.messages[: rng.randint(1, len(loop.messages))]
            messages = list(loop.messages)
            strict = rng.random() < 0.3
            got = memo(messages, policy, strict=strict)
            assert dumped(got) == dumped(VALIDATORS[strict](messages, policy)), seed
            got.clear()  # the caller's list: the memo's own copy stays


def test_the_builtin_hook_uses_the_memo_and_other_plugins_still_answer_first(
    runtime_factory: Any,
) -> None:
    policy = POLICIES["anthropic"]
    loop = Loop(compacted=False)
    loop.messages.extend(loop.group())
    runtime = runtime_factory()
    memo = TurnValidationMemo()
    validated, plugin = runtime.hooks.validate_replay_turns(
        MemoizedTurns(loop.messages, memo), policy
    )
    assert plugin == "builtin.transcript"
    assert validated == validate_replay_turns(loop.messages, policy)
    assert memo._inputs == loop.messages  # the built-in answered through the memo

    class Mine:
        @hookimpl
        def validate_replay_turns(self, messages: list[Any], policy: Any) -> list[Any]:
            assert isinstance(messages, list)
            return messages[:1]

    mine = runtime_factory(plugins=[("mine", Mine())])
    other = TurnValidationMemo()
    validated, plugin = mine.hooks.validate_replay_turns(
        MemoizedTurns(loop.messages, other), policy
    )
    assert (validated, plugin) == (loop.messages[:1], "mine")
    assert not other._inputs  # only the built-in reads the memo (it starts empty)


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with mock_openai_server() as running:
        yield running


@pytest.mark.anyio
async def test_a_tool_loop_over_http_validates_through_the_memo(
    tmp_path: Path, server: FaultInjectingOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """openai-completions validates turns (strict alternation): a loop of six calls runs the
    full validation only until the memo holds a history ending with results."""
    full = Counting(monkeypatch)
    config = mock_openai_config(
        tmp_path / "state",
        server,
    )
    runtime = Runtime(config, load_entrypoints=False)
    calls = 6
    for n in range(calls):
        server.enqueue(Reply(tool_calls=[("read", {"path": f"f{n}.txt"})]))
    server.enqueue(Reply(text="all read"))
    try:
        result = await runtime.run("read them", session_id="loop", tools=[read])
    finally:
        await runtime.aclose()
    roles = [m.role for m in result.messages]
    assert roles.count("toolResult") == calls
    assert result.messages[-1].text() == "all read"
    assert len(server.requests) == calls + 1
    assert 0 < full.calls < calls + 1  # the later requests reused the memo


def test_another_policy_validates_in_full() -> None:
    loop = Loop(compacted=False)
    loop.messages.append(UserMessage(content="and also", timestamp=loop.stamp()))
    loop.messages.extend(loop.group())
    memo = TurnValidationMemo()
    merged = memo(list(loop.messages), POLICIES["anthropic"])
    assert len(merged) == len(loop.messages) - 1  # the two user turns became one
    loop.messages.extend(loop.group())
    kept = POLICIES["anthropic, users not merged"]
    got = memo(list(loop.messages), kept)
    assert dumped(got) == dumped(validate_replay_turns(list(loop.messages), kept))
    assert len(got) == len(loop.messages)


def test_a_shared_part_is_reused_only_where_the_answer_lines_up_with_it() -> None:
    """A request may share only part of the previous one (an older Claude model's sanitizer
    hands back the previous last group as a copy). That part's answer is taken from the
    previous one by position, which holds only where the validator merged nothing."""
    policy = POLICIES["anthropic"]
    loop = Loop(compacted=False)
    loop.messages.append(UserMessage(content="and also", timestamp=loop.stamp()))  # merged
    first, second = loop.group(), loop.group()
    loop.messages.extend([*first, *second])
    memo = TurnValidationMemo()
    before = list(loop.messages)
    assert len(memo(before, policy)) == len(before) - 1  # the two user turns became one
    # the second group's turn comes back as a copy, and a group follows
    copy = second[0].model_copy()
    after = [*before[:-2], copy, second[1], *loop.group()]
    got = memo(after, policy)
    assert dumped(got) == dumped(validate_replay_turns(after, policy))


def test_a_shared_part_that_lost_a_result_is_validated_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sharing a part that ends with a result is not enough when the previous history went
    on with another result of the same turn: the turn's calls are checked up to its next
    assistant turn, so without that result one of them is dangling now."""
    policy = POLICIES["completions"]
    loop = Loop(compacted=False)
    one, two = loop.call(), loop.call()
    turn = loop.assistant(one, two)
    loop.messages.extend([turn, loop.result(one), loop.result(two)])
    memo = TurnValidationMemo()
    memo(list(loop.messages), policy)
    full = Counting(monkeypatch)
    dropped_result = [*loop.messages[:-1], *loop.group()]
    got = memo(dropped_result, policy)
    assert dumped(got) == dumped(validate_replay_turns(dropped_result, policy))
    assert full.calls == 1
    assert [block.id for block in got[1].content] == [one.id]  # the other call is dangling


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
def test_a_turns_second_request_reuses_its_first(
    policy_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn's first request ends with its prompt; the second adds a tool group after it.
    The validator reads nothing differently before the group, so the first answer stands."""
    policy = POLICIES[policy_name]
    loop = Loop(compacted=False)
    loop.messages.extend([*loop.group(), loop.assistant(TextContent(text="done"), stop="stop")])
    loop.messages.append(UserMessage(content="next", timestamp=loop.stamp()))
    memo = TurnValidationMemo()
    full = Counting(monkeypatch)
    for strict in (False, True):
        first = list(loop.messages)
        memo(first, policy, strict=strict)
        second = [*first, *loop.group()]
        got = memo(second, policy, strict=strict)
        assert dumped(got) == dumped(VALIDATORS[strict](second, policy))
        assert full.calls == 1 + strict, strict  # the first request's, only


def _copied(message: Any) -> Any:
    """The same message as another object (the next attempt's model of it, a sanitizer's
    copy)."""
    return message.model_copy()


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
def test_a_kept_open_sessions_next_turn_validates_only_what_is_new(
    policy_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At an attempt's end the memo keeps the part made of the session's own messages; the
    next turn resends it with the previous turn (as other objects) and a new prompt, and
    only that is read."""
    policy = POLICIES[policy_name]
    loop = Loop(compacted=False)
    loop.messages.extend([*loop.group(), loop.assistant(TextContent(text="done"), stop="stop")])
    memo = TurnValidationMemo()
    full = Counting(monkeypatch)
    kept = list(loop.messages)  # the session's messages (a stable part: ends with an answer)
    for turn in range(3):
        prompt = UserMessage(content=f"turn {turn}", timestamp=loop.stamp())
        attempt = [*kept, prompt]  # the attempt's own objects from the prompt on
        for _ in range(3):
            attempt += loop.group()
            got = memo(attempt, policy)
            assert dumped(got) == dumped(validate_replay_turns(attempt, policy)), turn
        attempt.append(loop.assistant(TextContent(text=f"answer {turn}"), stop="stop"))
        memo.keep_leading(kept)  # the attempt ends: the session's part is kept
        kept = [*kept, *(_copied(m) for m in attempt[len(kept) :])]  # the session's models
    assert full.calls == 1, full.calls  # the first request only


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(8))
def test_random_requests_with_copies_and_kept_parts_validate_as_in_full(
    policy_name: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests that resend the previous one, a copy of some of its last messages, a part
    kept at an attempt's end, or any shape of the loop-tail table: the memo's answer is the
    validator's every time."""
    rng = random.Random(seed)
    policy = POLICIES[policy_name]
    names = sorted(SHAPES)
    loop = Loop(compacted=False)
    memo = TurnValidationMemo()
    full = Counting(monkeypatch)
    requests = 60
    for _ in range(requests):
        roll = rng.random()
        if roll < 0.5:
            loop.messages.extend(loop.group(text=rng.random() < 0.3))
        elif roll < 0.6:
            loop.messages.append(loop.assistant(TextContent(text="so"), stop="stop"))
        elif roll < 0.7:
            loop.messages.append(UserMessage(content="more", timestamp=loop.stamp()))
        elif roll < 0.8:
            loop.messages.extend(SHAPES[rng.choice(names)][0](loop))
        elif roll < 0.9:
            back = rng.randint(1, min(4, len(loop.messages)))
            loop.messages[-back:] = [_copied(m) for m in loop.messages[-back:]]
        else:
            memo.keep_leading(loop.messages[: rng.randint(0, len(loop.messages))])
        messages = list(loop.messages)
        strict = rng.random() < 0.3
        got = memo(messages, policy, strict=strict)
        expected = VALIDATORS[strict](messages, policy)
        assert dumped(got) == dumped(expected), seed
    assert full.calls < requests * 3 // 4, full.calls  # reused along the way


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
def test_a_part_is_kept_only_before_a_stable_cut(policy_name: str) -> None:
    """A part kept at an attempt's end must end where what followed it changed nothing
    before it: not between two results of one turn (the second answered one of its calls)."""
    policy = POLICIES[policy_name]
    loop = Loop(compacted=False)
    one, two = loop.call(), loop.call()
    loop.messages.extend([loop.assistant(one, two), loop.result(one), loop.result(two)])
    memo = TurnValidationMemo()
    memo(list(loop.messages), policy)
    memo.keep_leading(loop.messages[:-1])  # the second result was not the session's
    then = [*loop.messages[:-1], UserMessage(content="next", timestamp=loop.stamp())]
    assert dumped(memo(then, policy)) == dumped(validate_replay_turns(then, policy))


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
def test_no_cut_after_a_turn_whose_calls_wait(policy_name: str) -> None:
    """A turn whose calls have no result yet may still be answered by what follows (a
    user message carrying the result, for a turn that does not think): no cut after it."""
    policy = POLICIES[policy_name]
    loop = Loop(compacted=False)
    call = loop.call()
    loop.messages.append(loop.assistant(call))
    memo = TurnValidationMemo()
    memo(list(loop.messages), policy)
    carried = {"type": "toolResult", "toolCallId": call.id, "content": "out"}
    answer = UserMessage(content=[carried], timestamp=loop.stamp())  # type: ignore[list-item]
    then = [*loop.messages, answer]
    expected = validate_replay_turns(then, policy)
    assert dumped(memo(then, policy)) == dumped(expected)
