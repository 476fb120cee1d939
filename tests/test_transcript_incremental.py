"""The incremental sanitizer gives exactly the full pipeline's output on growing histories."""

from __future__ import annotations

import random
from typing import Any

import pytest

from openclaw_runtime.messages import (
    AssistantMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from openclaw_runtime.transcript import resolve_transcript_policy, run_transcript_sanitizers
from openclaw_runtime.transcript.incremental import (
    IncrementalSanitizer,
    find_stable_boundary,
    find_tool_loop_boundary,
)
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS, SanitizerSpec

POLICIES = {
    "openai": resolve_transcript_policy("openai-completions", "openai", "gpt-4o"),
    "anthropic": resolve_transcript_policy(
        "anthropic-messages", "anthropic", "claude-sonnet-4", model_reasoning=True
    ),
    # a Claude model that keeps its thinking: signed thinking replayed as it is
    "anthropic, thinking kept": resolve_transcript_policy(
        "anthropic-messages", "anthropic", "claude-opus-4-6", model_reasoning=True
    ),
    "google": resolve_transcript_policy("google-generative-ai", "google", "gemini-2.5-pro"),
    # a reasoning model on OpenAI-compatible replay: no stage touches thinking blocks
    "openai reasoning": resolve_transcript_policy(
        "openai-completions", "deepseek", "deepseek-reasoner", model_reasoning=True
    ),
}


class History:
    """A random but plausible growing transcript."""

    def __init__(self, seed: int, ids: str = "unique") -> None:
        self.rng = random.Random(seed)
        self.clock = 1_000
        self.calls = 0
        self.messages: list[Any] = []
        #: "unique": every call its own id; "per_turn": numbered from 0 in every assistant
        #: turn (``call_0``, ``call_1``...), as providers that reuse ids across turns send
        #: them; "pool": drawn from two, so they collide everywhere (twice in a turn too)
        self.ids = ids

    def call_id(self, position: int) -> str:
        """The id of the call at ``position`` in its assistant turn."""
        self.calls += 1
        if self.ids == "pool":
            return self.rng.choice(["a", "b"])
        return f"call_{self.calls}" if self.ids == "unique" else f"call_{position}"

    def stamp(self) -> int:
        self.clock += self.rng.randint(1, 50)
        return self.clock

    def assistant(self, blocks: list[Any], stop: str = "stop") -> AssistantMessage:
        usage = Usage(input=self.rng.randint(0, 900), output=self.rng.randint(0, 90))
        return AssistantMessage(
            content=blocks,
            stop_reason=stop,  # type: ignore[arg-type]
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4",
            usage=usage,
            timestamp=self.stamp(),
        )

    def turn(self) -> None:
        rng = self.rng
        user: Any = f"question {len(self.messages)}"
        if rng.random() < 0.1:
            user = [TextContent(text="look"), ImageContent(data="aGk=", mime_type="image/png")]
        if rng.random() < 0.05:
            user = "   "
        self.messages.append(UserMessage(content=user, timestamp=self.stamp()))
        for _ in range(rng.randint(0, 2)):
            thinking = (
                [ThinkingContent(thinking="hmm", thinking_signature=rng.choice([None, "sig"]))]
                if rng.random() < 0.4
                else []
            )
            call = ToolCall(id=self.call_id(0), name=rng.choice(["read", "exec", "gone"]))
            self.messages.append(self.assistant([*thinking, call], stop="toolUse"))
            if rng.random() < 0.9:
                self.messages.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=[TextContent(text="result " * rng.randint(1, 5))],
                        details={"raw": 1},
                        is_error=rng.random() < 0.2,
                        timestamp=self.stamp(),
                    )
                )
        ending = rng.random()
        if ending < 0.1:
            self.messages.append(self.assistant([], stop="error"))
        elif ending < 0.15:
            self.messages.append(self.assistant([TextContent(text="")], stop="aborted"))
            self.messages.append(CustomMessage(custom_type="interrupted", content="note"))
        else:
            blocks: list[Any] = [TextContent(text="answer")]
            if rng.random() < 0.3:
                blocks.insert(0, ThinkingContent(thinking="why", thinking_signature="s"))
            if rng.random() < 0.1:
                blocks.append(TextContent(text="  "))
            self.messages.append(self.assistant(blocks))

    def compact(self) -> None:
        keep = self.messages[-self.rng.randint(1, max(1, len(self.messages) // 2)) :]
        summary = CompactionSummaryMessage(
            summary="so far", tokens_before=100, timestamp=self.stamp()
        )
        self.messages = [summary, *keep]


def dumped(messages: list[Any]) -> list[Any]:
    return [m.model_dump(mode="json") if hasattr(m, "model_dump") else m for m in messages]


@pytest.mark.parametrize("ids", ["unique", "per_turn", "pool"])
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(12))
def test_incremental_equals_full_pipeline(policy_name: str, seed: int, ids: str) -> None:
    policy = POLICIES[policy_name]
    history = History(seed, ids)
    incremental = IncrementalSanitizer()
    reused = 0
    for step in range(40):
        if step and step % 13 == 0:
            history.compact()
        history.turn()
        messages = list(history.messages)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(got) == dumped(expected), f"seed {seed}, step {step}"
        reused += bool(incremental._inputs)
    assert reused > 10  # the cache was actually used


def test_plugin_sanitizers_always_run_in_full() -> None:
    policy = POLICIES["openai"]
    seen: list[int] = []

    def count(messages: list[Any], _policy: Any) -> list[Any]:
        seen.append(len(messages))
        return messages

    specs = [*BUILTIN_SANITIZERS, SanitizerSpec("count", count, 95, plugin="someone")]
    history = History(1)
    incremental = IncrementalSanitizer()
    for _ in range(5):
        history.turn()
        incremental.run(list(history.messages), policy, specs)
    assert seen[-1] == len(history.messages) or seen[-1] >= len(history.messages) - 1


def test_boundary_waits_for_open_tool_calls_and_a_later_assistant() -> None:
    call = ToolCall(id="c1", name="read")
    messages = [
        UserMessage(content="a", timestamp=1),
        AssistantMessage(content=[call], stop_reason="toolUse", timestamp=2),
        UserMessage(content="b (the call is still open)", timestamp=3),
        ToolResultMessage(tool_call_id="c1", tool_name="read", timestamp=4),
        AssistantMessage(content=[TextContent(text="x")], timestamp=5),
        UserMessage(content="c", timestamp=6),
        AssistantMessage(content=[TextContent(text="y")], timestamp=7),
        UserMessage(content="d (no assistant after it yet)", timestamp=8),
    ]
    assert find_stable_boundary(messages) == 5
    assert find_stable_boundary(messages[:6]) == 0


class ToolLoopHistory(History):
    """A history whose user turns run long tool loops, sanitized before every model call."""

    def step(self) -> None:
        """One more model call of the current loop: an assistant turn and (mostly) its results."""
        rng = self.rng
        blocks: list[Any] = []
        if rng.random() < 0.5:
            signature = rng.choice([None, "sig", "sig", "  "])
            blocks.append(ThinkingContent(thinking="plan", thinking_signature=signature))
        calls = []
        for position in range(rng.choice([1, 1, 1, 2, 3])):
            calls.append(ToolCall(id=self.call_id(position), name=rng.choice(["read", "exec"])))
        if rng.random() < 0.01:
            calls.append(ToolCall(id=calls[0].id, name="read"))  # a duplicate id
        self.messages.append(self.assistant([*blocks, *calls], stop="toolUse"))
        order = list(calls)
        if rng.random() < 0.2:
            rng.shuffle(order)
        for call in order:
            if rng.random() < 0.005:
                continue  # a result that never arrived
            self.messages.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(text="out " * rng.randint(1, 4))],
                    details={"raw": 2},
                    is_error=rng.random() < 0.1,
                    timestamp=self.stamp(),
                )
            )
        if rng.random() < 0.02:
            self.messages.append(CustomMessage(custom_type="note", content="aside"))
        if rng.random() < 0.02:
            self.messages.append(self.assistant([], stop="error"))

    def user(self) -> None:
        self.messages.append(UserMessage(content=f"q {len(self.messages)}", timestamp=self.stamp()))


@pytest.mark.parametrize("ids", ["unique", "per_turn", "pool"])
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(10))
def test_incremental_equals_full_pipeline_inside_tool_loops(
    policy_name: str, seed: int, ids: str
) -> None:
    """Sanitized before every model call of long tool loops, as the runner does (with ids
    unique, and numbered afresh in every turn as some providers send them)."""
    policy = POLICIES[policy_name]
    history = ToolLoopHistory(seed, ids)
    incremental = IncrementalSanitizer()
    loop_hits = 0
    for turn in range(8):
        if turn == 5:
            history.compact()
        if history.rng.random() < 0.85:
            history.user()
        else:
            history.turn()  # a plain turn (sometimes failed) before the loop
        for _ in range(history.rng.randint(0, 14)):
            messages = list(history.messages)
            expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
            got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
            assert dumped(got) == dumped(expected), f"seed {seed}, turn {turn}"
            loop_hits += incremental._loop is not None
            history.step()
        messages = list(history.messages)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(incremental.run(messages, policy, BUILTIN_SANITIZERS)) == dumped(expected)
    assert loop_hits > 0  # the tool-loop cache was actually used


def test_tool_loop_prefix_is_reused_not_resanitized() -> None:
    """Each call inside a clean tool loop only sanitizes the context and the new messages."""
    policy = POLICIES["anthropic"]
    seen: list[int] = []

    def counting(messages: list[Any], policy: Any, sanitizers: Any, **kwargs: Any) -> list[Any]:
        seen.append(len(messages))
        return run_transcript_sanitizers(messages, policy, sanitizers, **kwargs)

    history = ToolLoopHistory(3)
    history.user()
    incremental = IncrementalSanitizer()
    for _ in range(30):
        call = ToolCall(id=f"c{len(history.messages)}", name="read")
        history.messages.append(history.assistant([call], stop="toolUse"))
        history.messages.append(ToolResultMessage(tool_call_id=call.id, tool_name="read"))
        messages = list(history.messages)
        got = incremental.run(messages, policy, BUILTIN_SANITIZERS, full=counting)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(got) == dumped(expected)
    # after the first two calls: the context (user + first group), the group before the
    # boundary and the new group; flat however long the loop grows
    assert seen[:2] == [3, 5]
    assert set(seen[2:]) == {7}
    assert len(history.messages) == 61


def test_tool_loop_boundary_needs_a_clean_loop() -> None:
    c1, c2, c3 = (ToolCall(id=f"c{i}", name="read") for i in (1, 2, 3))

    def result(call: ToolCall) -> ToolResultMessage:
        return ToolResultMessage(tool_call_id=call.id, tool_name="read")

    user = UserMessage(content="go", timestamp=1)
    a1 = AssistantMessage(content=[c1], stop_reason="toolUse", timestamp=2)
    a2 = AssistantMessage(content=[c2], stop_reason="toolUse", timestamp=3)
    a3 = AssistantMessage(content=[c3], stop_reason="toolUse", timestamp=4)
    loop = [user, a1, result(c1), a2, result(c2), a3]
    found = find_tool_loop_boundary(loop, 0)
    assert found is not None and (found.index, found.context_end) == (5, 3)
    assert find_tool_loop_boundary(loop[:3], 0) is None  # one group: nothing before it to keep
    # a result missing, or something else inside the loop, stops the scan there
    assert find_tool_loop_boundary([user, a1, a2, result(c2), a3], 0) is None
    odd = [user, a1, result(c1), a2, CustomMessage(custom_type="x", content="y"), a3]
    found = find_tool_loop_boundary(odd, 0)
    assert found is not None and found.index == 3
    assert find_tool_loop_boundary(loop, 1) is None  # not a user message


@pytest.mark.parametrize("seed", range(6))
def test_tool_loop_cache_grows_in_place_and_shares_nothing(seed: int) -> None:
    """The clean-tail path grows the loop cache in place: it must hold exactly the history up
    to its boundary (the same objects) and the pipeline's output for it, in lists of its own,
    and never change a list it returned earlier."""
    policy = POLICIES["anthropic"]
    history = ToolLoopHistory(seed)
    history.user()
    incremental = IncrementalSanitizer()
    returned: list[tuple[list[Any], list[Any]]] = []
    for _ in range(25):
        history.step()
        messages = list(history.messages)
        got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(got) == dumped(expected)
        returned.append((got, list(got)))
        loop = incremental._loop
        if loop is None:
            continue
        index = loop.boundary.index
        assert loop.inputs is not messages and loop.outputs is not got
        assert len(loop.inputs) == index
        assert all(a is b for a, b in zip(loop.inputs, messages[:index], strict=True))
        assert all(a is b for a, b in zip(loop.outputs, got, strict=False))
        assert dumped(loop.outputs) == dumped(expected[: len(loop.outputs)])
    for got, snapshot in returned:
        assert len(got) == len(snapshot) and all(map(lambda a, b: a is b, got, snapshot))


def _first_prompt(rng: random.Random, stamp: int) -> Any:
    """A session's first user message: mostly plain text, sometimes one the pipeline changes."""
    kind = rng.choice(["plain", "plain", "blocks", "blank", "blank_block", "image", "wire"])
    if kind == "plain":
        return UserMessage(content="read the files", timestamp=stamp)
    if kind == "blocks":
        return UserMessage(content=[TextContent(text="a"), TextContent(text="b")], timestamp=stamp)
    if kind == "blank":
        return UserMessage(content="   ", timestamp=stamp)
    if kind == "blank_block":
        return UserMessage(content=[TextContent(text="go"), TextContent(text=" ")], timestamp=stamp)
    if kind == "image":
        image = ImageContent(data="aGk=", mime_type="image/png")
        return UserMessage(content=[TextContent(text="look"), image], timestamp=stamp)
    return {"role": "user", "content": "read the files", "timestamp": stamp}


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(40))
def test_a_fresh_sessions_first_tool_groups_equal_the_full_pipeline(
    policy_name: str, seed: int
) -> None:
    """A fresh session's tool loop from its first request on: the loop cache starts after the
    first group (one request earlier than a scan for stable entries allows) and grows its
    context when the boundary passes that group; every request equals the full pipeline,
    whatever the prompt, the groups (thinking, several calls, shuffled or missing results,
    errors) and the policy."""
    policy = POLICIES[policy_name]
    history = ToolLoopHistory(1_000 + seed)
    history.messages.append(_first_prompt(history.rng, history.stamp()))
    incremental = IncrementalSanitizer()
    for _ in range(history.rng.randint(1, 7)):
        messages = list(history.messages)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(got) == dumped(expected), f"seed {seed}, {len(messages)} messages"
        history.step()
    history.user()  # the next turn starts from what the loop left cached
    messages = list(history.messages)
    expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
    assert dumped(incremental.run(messages, policy, BUILTIN_SANITIZERS)) == dumped(expected)


def _clean_group(number: int, call_id: str | None = None) -> list[Any]:
    call = ToolCall(id=call_id or f"c{number}", name="read", arguments={"path": f"f{number}"})
    assistant = AssistantMessage(
        content=[call], stop_reason="toolUse", api="x", provider="x", model="m", timestamp=number
    )
    result = ToolResultMessage(
        tool_call_id=call.id, tool_name="read", content=[TextContent(text="r")], timestamp=number
    )
    return [assistant, result]


def _answer(text: str, stamp: int, *, thinking: bool = False) -> AssistantMessage:
    blocks: list[Any] = [TextContent(text=text)]
    if thinking:
        blocks.insert(0, ThinkingContent(thinking="why", thinking_signature="sig"))
    return AssistantMessage(
        content=blocks, api="x", provider="x", model="m", usage=Usage(input=5), timestamp=stamp
    )


@pytest.mark.parametrize("call_id", [None, "call_0"])
@pytest.mark.parametrize(
    ("earlier", "want"),
    [
        ("none", [0, 0, 0, 0, 0, 0]),  # a fresh session: the plain prompt, then the loop cache
        ("clean", [0, 0, 0, 0, 0, 0]),  # clean earlier turns: a clean region, then the loop
        ("thinking", [1, 1, 0, 0, 0, 0]),  # an answer with thinking: the pipeline, twice
    ],
)
def test_a_clean_loops_requests_run_no_stage(
    earlier: str, want: list[int], call_id: str | None
) -> None:
    """Stage runs per request of a clean tool loop. A fresh session's plain prompt (first
    request) needs none and neither do the following ones. After earlier turns, the new
    turn's first two requests sanitize the previous turn and the new prompt: no stage when
    that part is a clean region (``transcript.clean_turns``), else the pipeline at both (the
    boundary moves to the new prompt at the second); from the third request on, the loop
    cache, as every later one does. The same with every call named ``call_0`` (a provider
    numbering its calls afresh in every turn): the cached parts name it too."""
    policy = POLICIES["openai"]
    history: list[Any] = []
    if earlier != "none":
        for turn in range(3):
            history.append(UserMessage(content=f"question {turn}", timestamp=10 * turn + 1))
            history.extend(_clean_group(100 + turn, call_id))
            thinking = earlier == "thinking" and turn == 2
            history.append(_answer(f"answer {turn}", 10 * turn + 2, thinking=thinking))
    history.append(UserMessage(content="read them", timestamp=50))
    ran: list[int] = []

    def counting(messages: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        ran.append(len(messages))
        return run_transcript_sanitizers(messages, *args, **kwargs)

    incremental = IncrementalSanitizer()
    if earlier != "none":  # the session's earlier turns were sanitized as they ran
        incremental.run(list(history[:-1]), policy, BUILTIN_SANITIZERS)
    runs_per_request = []
    for number in range(6):
        messages = list(history)
        before = len(ran)
        got = incremental.run(messages, policy, BUILTIN_SANITIZERS, full=counting)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(got) == dumped(expected)
        runs_per_request.append(len(ran) - before)
        history.extend(_clean_group(number, call_id))
    assert runs_per_request == want
    loop = incremental._loop
    assert loop is not None
    user = len(history) - 13  # the prompt, then six groups of two
    # the context holds the prompt and the loop's first group once the boundary is past it
    assert loop.context == history[user : user + 3]
    assert loop.boundary.index == len(history) - 4


def _lost_call_history() -> list[Any]:
    """A session where a tool call never got its result (a process killed mid-tool)."""
    lost = ToolCall(id="lost", name="read", arguments={})
    return [
        UserMessage(content="first", timestamp=1),
        AssistantMessage(content=[TextContent(text="hi")], timestamp=2),
        UserMessage(content="read it", timestamp=3),
        AssistantMessage(content=[lost], stop_reason="toolUse", timestamp=4),
    ]


def test_a_call_whose_result_never_comes_holds_no_boundary() -> None:
    """A call whose result never came (a process killed mid-tool) gets a synthetic result
    right after it from the pairing stage, whatever follows, so user messages after it are
    boundaries again. A call whose result does come later (displaced), or a later result
    naming no id (a legacy result may answer a turn's only call), still holds them back."""
    messages = _lost_call_history()
    messages += [
        UserMessage(content="again", timestamp=5),
        AssistantMessage(content=[TextContent(text="ok")], timestamp=6),
        UserMessage(content="more", timestamp=7),
    ]
    assert find_stable_boundary(messages) == 4
    later = ToolCall(id="c2", name="read", arguments={})
    messages += [
        AssistantMessage(content=[later], stop_reason="toolUse", timestamp=8),
        ToolResultMessage(tool_call_id="c2", tool_name="read", timestamp=9),
        AssistantMessage(content=[TextContent(text="done")], timestamp=10),
        UserMessage(content="next", timestamp=11),
        AssistantMessage(content=[TextContent(text="fine")], timestamp=12),
    ]
    assert find_stable_boundary(messages) == 10
    # the lost call's result arrives after all: no boundary between the call and it
    displaced = [*messages[:6], ToolResultMessage(tool_call_id="lost", tool_name="read")]
    displaced += [UserMessage(content="then", timestamp=13), messages[5]]
    assert find_stable_boundary(displaced) == 7
    assert find_stable_boundary(displaced[:7]) == 2
    # a result naming no id may answer the lost call (its turn's only call)
    idless = [*messages[:6], ToolResultMessage(tool_call_id="", tool_name="read")]
    assert find_stable_boundary(idless) == 2
    # the next frame's call, still waiting, holds the boundaries after it while its
    # result is yet to come in the history
    waiting = [*messages[:8], UserMessage(content="x", timestamp=9), *messages[8:]]
    assert find_stable_boundary(waiting[:10]) == 6
    assert find_stable_boundary(waiting) == 11


def test_the_cached_part_is_left_when_the_rest_answers_it() -> None:
    """A cached boundary past a lost call: a later result naming the lost call, or naming
    no id before the next call, sends the request through the whole pipeline (the answer
    equals it either way)."""
    policy = POLICIES["openai"]
    base = [
        *_lost_call_history(),
        UserMessage(content="again", timestamp=5),
        AssistantMessage(content=[TextContent(text="ok")], timestamp=6),
        UserMessage(content="more", timestamp=7),
        AssistantMessage(content=[TextContent(text="sure")], timestamp=8),
    ]
    ran: list[int] = []

    def counting(m: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        ran.append(len(m))
        return run_transcript_sanitizers(m, *args, **kwargs)

    for late in (
        ToolResultMessage(tool_call_id="lost", tool_name="read", content=[TextContent(text="r")]),
        ToolResultMessage(tool_call_id="", tool_name="read", content=[TextContent(text="r")]),
    ):
        incremental = IncrementalSanitizer()
        incremental.run(list(base), policy, BUILTIN_SANITIZERS)
        assert incremental.cached_length == 6  # the boundary past the lost call
        messages = [*base, late, UserMessage(content="last", timestamp=9)]
        ran.clear()
        got = incremental.run(messages, policy, BUILTIN_SANITIZERS, full=counting)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(got) == dumped(expected)
        assert ran == [len(messages)]  # from the start, not from the cached boundary


@pytest.mark.parametrize("below", range(0, 14))
def test_a_boundary_below_an_index_equals_the_scan_of_the_part_before(below: int) -> None:
    """``below``: the largest boundary before that index, confirmed by an assistant turn that
    may come after it; never one a plain scan of the whole history would not give."""
    history = History(5)
    for _ in range(4):
        history.turn()
    messages = history.messages
    got = find_stable_boundary(messages, below=below)
    assert got < below or got == 0
    # the same as the largest boundary of any longer scan that is before ``below``
    candidates = {find_stable_boundary(messages[:end]) for end in range(len(messages) + 1)}
    assert got == max([b for b in candidates if b < below], default=0)


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(8))
def test_sessions_after_a_lost_result_equal_the_pipeline_and_cache_again(
    policy_name: str, seed: int
) -> None:
    """After a call that never got its result, turns that call tools: every request equals
    the full pipeline, and the cache moves past the lost call again (it used to stay before
    it for good, so every later request ran the whole pipeline over everything after it)."""
    policy = POLICIES[policy_name]
    history = ToolLoopHistory(2_000 + seed)
    history.messages = _lost_call_history()
    incremental = IncrementalSanitizer()
    for _ in range(6):
        history.user()
        for _ in range(history.rng.randint(1, 4)):
            history.step()
            messages = list(history.messages)
            expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
            got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
            assert dumped(got) == dumped(expected), (seed, len(messages))
        history.messages.append(history.assistant([TextContent(text="answer")]))
    called = {
        c.id for m in history.messages if isinstance(m, AssistantMessage) for c in m.tool_calls()
    }
    answered = {m.tool_call_id for m in history.messages if isinstance(m, ToolResultMessage)}
    if called - answered == {"lost"}:  # (the random steps lost no other result)
        assert incremental.cached_length > 4


def test_a_user_message_at_or_after_below_passes_over_the_candidate_before_it() -> None:
    """``[u, a, u1, u2, a2]``: ``u1`` is never a boundary (``u2`` takes its place before any
    assistant turn follows), so nothing before index 3 is one either."""
    u, a = UserMessage(content="u", timestamp=1), AssistantMessage(content=[TextContent(text="a")])
    messages = [u, a, UserMessage(content="u1"), UserMessage(content="u2"), a]
    assert find_stable_boundary(messages) == 3
    assert find_stable_boundary(messages, below=3) == 0
    assert find_stable_boundary(messages, below=4) == 3


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(10))
def test_text_turns_after_a_lost_result_equal_the_pipeline(policy_name: str, seed: int) -> None:
    """After a call whose result never came: text-only turns, now and then a tool turn, the
    lost call's result arriving late, or a result naming no id. Every request equals the full
    pipeline; the cache moves past the lost call while nothing answers it."""
    policy = POLICIES[policy_name]
    rng = random.Random(3_000 + seed)
    history = ToolLoopHistory(3_000 + seed)
    history.messages = _lost_call_history()
    incremental = IncrementalSanitizer()
    moved = False
    for _ in range(12):
        history.user()
        kind = rng.random()
        if kind < 0.2:
            history.step()
        elif kind < 0.27:
            history.messages.append(
                ToolResultMessage(
                    tool_call_id=rng.choice(["lost", ""]),
                    tool_name="read",
                    content=[TextContent(text="late")],
                )
            )
        messages = list(history.messages)
        expected = run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
        got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
        assert dumped(got) == dumped(expected), (seed, len(messages))
        history.messages.append(history.assistant([TextContent(text="answer")]))
        moved = moved or incremental.cached_length > 4
    assert moved


@pytest.mark.parametrize("call_id", [None, "call_0"])
def test_a_requests_work_is_its_new_messages_whatever_the_ids(
    call_id: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How many messages each request reads the facts of (``message_facts``), on a session
    of twelve turns with two tool groups each, then a turn of eight groups: the new group
    inside a loop, the previous turn and the new prompt at a turn's first requests, never
    the whole turn or the whole history. With every call named ``call_0`` (a provider
    numbering its calls per turn) the caches used to give up on the reused ids, and the
    pipeline ran over the whole turn or history; no stage needs to run either way."""
    from openclaw_runtime.transcript import clean_turns as clean_turns_module
    from openclaw_runtime.transcript import incremental as incremental_module
    from openclaw_runtime.transcript import loop_tail

    read: list[int] = [0]

    def counting(message: Any, allowed: Any) -> Any:
        read[0] += 1
        return loop_tail.message_facts(message, allowed)

    monkeypatch.setattr(incremental_module, "message_facts", counting)
    monkeypatch.setattr(clean_turns_module, "message_facts", counting)
    policy = POLICIES["openai"]
    history: list[Any] = []
    number = 0

    def group() -> list[Any]:
        nonlocal number
        number += 1
        return _clean_group(number, call_id)

    incremental = IncrementalSanitizer()
    per_request: list[int] = []
    for turn in range(13):
        history.append(UserMessage(content=f"question {turn}", timestamp=10 * turn + 1))
        for _ in range(8 if turn == 12 else 2):
            read[0] = 0
            messages = list(history)
            got = incremental.run(messages, policy, BUILTIN_SANITIZERS)
            assert dumped(got) == dumped(
                run_transcript_sanitizers(messages, policy, BUILTIN_SANITIZERS)
            )
            per_request.append(read[0])
            history.extend(group())
        history.append(_answer(f"answer {turn}", 10 * turn + 2))
    assert len(history) == 90
    # a turn's first two requests read the previous turn and the new prompt (the same
    # count at every turn: not the history); inside the loop, its new group only
    firsts, loop = per_request[2:26], per_request[26:]
    assert max(firsts) <= 13, str(per_request)
    assert len(loop) == 6 and loop[0] <= 4 and max(loop[1:]) <= 2, str(per_request)
