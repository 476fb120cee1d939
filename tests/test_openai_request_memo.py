"""A Chat Completions tool loop's request converts only what is new, with the same messages as
converting everything (``ChatConversion`` through ``RequestMemo``).

Random conversations grow request by request (``RandomToolLoop``: tool groups with ids of
every style, failed turns, missing, stray and late results, images, prompts; copies, cuts):
at every request the messages through the memo equal the messages converted from scratch,
for each id rule (``openai``, Mistral's ``strict9``, ``keep``) and a text-only model; with
ids numbered afresh in every answer too (``call_0``, Kimi's ``functions.read:0``). Each runs
both ways a request goes on: from the previous request's end with the id rule's state
(``ChatConversion.resume``) and, at any cut, with clean units only (``clean``).
"""

from __future__ import annotations

import pytest

from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import (
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.providers import openai_request
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.providers.openai_request import (
    ChatConversion,
    build_request_body,
    convert_messages,
)
from openclaw_runtime.providers.request_memo import RequestMemo
from openclaw_runtime.testing.random_tool_loops import RandomToolLoop, count_conversions

GPT = Model(
    id="gpt-4o",
    api="openai-completions",
    provider="openai",
    base_url="http://127.0.0.1:9/v1",
    context_window=128_000,
    max_tokens=4096,
    input=["text", "image"],
)
MISTRAL = GPT.model_copy(update={"id": "mistral-large", "provider": "mistral"})
KEEP = GPT.model_copy(update={"compat": {"tool_call_id_mode": "keep"}})
TEXT_ONLY = GPT.model_copy(update={"input": ["text"]})
MODELS = [GPT, MISTRAL, KEEP, TEXT_ONLY]
IDS = ["openai", "strict9", "keep", "text only"]


@pytest.fixture(params=["resumed", "clean only"])
def resuming(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both ways: going on from the previous request's end with the id rule's state, and
    (without ``resume``) with clean units only."""
    if request.param == "clean only":
        monkeypatch.delattr(ChatConversion, "resume")
    return bool(request.param == "resumed")


def _served(seed: int, model: Model, monkeypatch: pytest.MonkeyPatch, per_turn: bool) -> float:
    """How many of a random conversation's 80 requests converted only what was new (each
    checked against converting everything)."""
    sizes = count_conversions(monkeypatch, openai_request)
    native = "abcde" if model is MISTRAL else "call_"  # Mistral's 9 alphanumerics: abcde0001
    conversation = RandomToolLoop(seed, model, native=native, per_turn=per_turn)
    memo = RequestMemo()
    reused = 0
    for _ in range(80):
        conversation.step()
        context = Context("Be brief.", list(conversation.messages), [])
        before = len(sizes)
        got = convert_messages(model, context, memo=memo)
        assert got == convert_messages(model, context), seed
        reused += sizes[before] < len(context.messages)  # converted only what was new
    return reused / 80


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@pytest.mark.parametrize("seed", range(12))
def test_the_memo_converts_as_from_scratch(
    seed: int, model: Model, monkeypatch: pytest.MonkeyPatch, resuming: bool
) -> None:
    assert _served(seed, model, monkeypatch, per_turn=False) >= 10 / 80  # the memo served


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@pytest.mark.parametrize("seed", range(12))
def test_ids_numbered_per_answer_convert_as_from_scratch(
    seed: int, model: Model, monkeypatch: pytest.MonkeyPatch, resuming: bool
) -> None:
    """Servers that number their calls afresh in every answer: every id after the first
    answer repeats one, so no unit is clean (each request converted everything); going on
    from the previous request's end, most requests convert what they add."""
    served = _served(seed, model, monkeypatch, per_turn=True)
    if resuming or model is KEEP:
        assert served >= 0.5, served


@pytest.mark.parametrize("after", [[], ["answer", "prompt"]], ids=["last", "earlier"])
def test_a_call_id_a_failed_turn_took_is_rewritten_later(after: list[str]) -> None:
    """A failed turn is not replayed, but the id rule saw its call: a later call with that id
    gets a fresh one, through the memo as in place (the failed turn last before the cut, or
    earlier)."""
    loop = RandomToolLoop(0, GPT)
    failed = loop.assistant([ToolCall(id="call_1", name="read", arguments={})], "aborted")
    loop.messages.append(failed)
    if after:
        loop.messages.append(loop.assistant([TextContent(text="sorry")], "stop"))
        loop.messages.append(loop.messages[0].model_copy(update={"content": "again"}))
    memo = RequestMemo()
    convert_messages(GPT, Context("", list(loop.messages), []), memo=memo)
    again = loop.assistant([ToolCall(id="call_1", name="read", arguments={})])
    result = ToolResultMessage(tool_call_id="call_1", tool_name="read", content=[])
    context = Context("", [*loop.messages, again, result], [])
    got = convert_messages(GPT, context, memo=memo)
    assert got == convert_messages(GPT, context)
    assert got[-2]["tool_calls"][0]["id"] != "call_1"  # rewritten: the failed turn took it


def test_one_id_twice_in_what_a_request_adds(resuming: bool) -> None:
    """Two new groups calling ``call_5``: the rule gives the second ``call_5_2`` unless an
    earlier call took that, which only the whole history tells (or the rule's state at the
    previous request's end)."""
    loop = RandomToolLoop(0, GPT)
    loop.messages.append(loop.assistant([ToolCall(id="call_5_2", name="r")]))
    loop.messages.append(ToolResultMessage(tool_call_id="call_5_2", tool_name="r", content=[]))
    memo = RequestMemo()
    convert_messages(GPT, Context("", list(loop.messages), []), memo=memo)
    groups: list[Message] = []
    for _ in range(2):
        groups.append(loop.assistant([ToolCall(id="call_5", name="r")]))
        groups.append(ToolResultMessage(tool_call_id="call_5", tool_name="r", content=[]))
    context = Context("", [*loop.messages, *groups], [])
    got = convert_messages(GPT, context, memo=memo)
    assert got == convert_messages(GPT, context)
    assert got[-1]["tool_call_id"] not in ("call_5", "call_5_2")


def test_a_result_naming_an_earlier_call_takes_that_calls_id(resuming: bool) -> None:
    """A result whose call is in an earlier turn (unanswered there) pairs with that call by the
    id rule's queue: the group is not clean (the whole history is converted), or the rule's
    state at the previous request's end has the call in its queue."""
    loop = RandomToolLoop(0, GPT)
    early = ToolCall(id="call|early", name="read", arguments={})  # rewritten to call_early
    loop.messages.append(loop.assistant([early]))
    memo = RequestMemo()
    convert_messages(GPT, Context("", list(loop.messages), []), memo=memo)
    turn = loop.assistant([ToolCall(id="call_2", name="read", arguments={})])
    late = ToolResultMessage(tool_call_id="call|early", tool_name="read", content=[])
    context = Context("", [*loop.messages, turn, late], [])
    got = convert_messages(GPT, context, memo=memo)
    assert got == convert_messages(GPT, context)
    assert got[-1]["tool_call_id"] == "call_early"


def test_a_second_result_for_one_call(resuming: bool) -> None:
    """A call answered twice: the second answer gets a fresh id from the rule, which depends on
    every id given out before (here the very one it would pick), so the group is not clean
    (or the rule's state at the previous request's end knows them)."""
    loop = RandomToolLoop(0, GPT)
    loop.messages.append(loop.assistant([ToolCall(id="call_7_tool_result", name="r")]))
    loop.messages.append(
        ToolResultMessage(tool_call_id="call_7_tool_result", tool_name="r", content=[])
    )
    memo = RequestMemo()
    convert_messages(GPT, Context("", list(loop.messages), []), memo=memo)
    turn = loop.assistant([ToolCall(id="call_7", name="r")])
    twice = [ToolResultMessage(tool_call_id="call_7", tool_name="r", content=[])] * 2
    context = Context("", [*loop.messages, turn, *twice], [])
    got = convert_messages(GPT, context, memo=memo)
    assert got == convert_messages(GPT, context)
    assert got[-1]["tool_call_id"] not in ("call_7", "call_7_tool_result")


def test_ids_kept_as_they_are_reuse_the_history_even_when_repeated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``keep``: nothing is rewritten, so a server that numbers its calls per answer
    (``call_0`` every time) still converts only the new group."""
    sizes = count_conversions(monkeypatch, openai_request)
    loop = RandomToolLoop(0, KEEP)
    memo = RequestMemo()
    converted = []
    for _ in range(3):
        loop.messages.append(loop.assistant([ToolCall(id="call_0", name="r")]))
        loop.messages.append(ToolResultMessage(tool_call_id="call_0", tool_name="r", content=[]))
        context = Context("", list(loop.messages), [])
        before = len(sizes)
        assert convert_messages(KEEP, context, memo=memo) == convert_messages(KEEP, context)
        converted.append(sizes[before])
    assert converted == [3, 2, 2]  # after the first, each request converted its group alone


@pytest.mark.parametrize("raw", ["call_0", "functions.read:0"], ids=["call_0", "kimi"])
def test_ids_numbered_per_answer_convert_only_the_new_group(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that names every answer's first call ``call_0`` (or Kimi's
    ``functions.read:0``, which the rule must rewrite even once): each repeat's id depends
    on every earlier one, so every request converted the whole history. From the previous
    request's end the rule's state gives the new group its id as in place. The memo keeps
    that state once a group was not clean (a copy at every turn for ids that never need
    it): the first repeat converts everything once more."""
    sizes = count_conversions(monkeypatch, openai_request)
    loop = RandomToolLoop(0, GPT)
    memo = RequestMemo()
    converted, ids = [], []
    for _ in range(4):
        loop.messages.append(loop.assistant([ToolCall(id=raw, name="read")]))
        loop.messages.append(ToolResultMessage(tool_call_id=raw, tool_name="read", content=[]))
        context = Context("", list(loop.messages), [])
        before = len(sizes)
        got = convert_messages(GPT, context, memo=memo)
        assert got == convert_messages(GPT, context)
        converted.append(sizes[before])
        ids.append((got[-2]["tool_calls"][0]["id"], got[-1]["tool_call_id"]))
    assert converted == [3, 5, 2, 2]  # then each request converts its group alone
    assert len({call for call, _ in ids}) == 4  # four calls, four ids
    assert all(call == result for call, result in ids)  # each result answers its call


def _turn(call_id: str) -> list[Message]:
    return [
        RandomToolLoop(0, GPT).assistant([ToolCall(id=call_id, name="read")]),
        ToolResultMessage(tool_call_id=call_id, tool_name="read", content=[]),
    ]


def test_a_late_result_in_a_resumed_request_keeps_its_calls_place() -> None:
    """A late result (its call in an earlier request) takes its call's id; the memo must
    still know that id as taken where the call was, not where the result came: a later
    request from a cut between them that calls that id again gets it rewritten. (A repeated
    ``call_f`` first, so the memo goes on from the id rule's state.)"""
    prompt, first, again = UserMessage(content="go"), _turn("call_f"), _turn("call_f")
    early = RandomToolLoop(0, GPT).assistant([ToolCall(id="call_x", name="read")])
    start = [prompt, *first, *again, early]  # call_x unanswered
    memo = RequestMemo()
    requests: list[list[Message]] = [
        [prompt, *first],
        [prompt, *first, *again],  # not clean: the states are kept from now on
        start,
        [*start, *_turn("call_y"), _turn("call_x")[1]],  # then call_x's late result
        [*start, *_turn("call_x")],  # from the cut after ``early``: call_x again
    ]
    for messages in requests:
        context = Context("", messages, [])
        got = convert_messages(GPT, context, memo=memo)
        assert got == convert_messages(GPT, context)
    assert got[-2]["tool_calls"][0]["id"] != "call_x"  # rewritten: the first call took it


def test_an_id_given_again_after_a_cut_is_known_where_it_is_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``call_z`` given at the fourth message, then the history cut and ``call_z`` given at
    the second: the memo must know it taken from the second on (not the fourth), or the next
    ``call_z`` would keep its id (clean units only, where ``taken`` decides)."""
    monkeypatch.delattr(ChatConversion, "resume")
    prompt = UserMessage(content="go")
    again = _turn("call_z")
    memo = RequestMemo()
    requests: list[list[Message]] = [
        [prompt],
        [prompt, *_turn("call_y"), *_turn("call_z")],
        [prompt, *again],
        [prompt, *again, *_turn("call_z")],
    ]
    for messages in requests:
        context = Context("", messages, [])
        got = convert_messages(GPT, context, memo=memo)
        assert got == convert_messages(GPT, context)
    assert got[-2]["tool_calls"][0]["id"] != "call_z"


def test_a_state_kept_past_a_cut_is_not_used_for_other_messages() -> None:
    """The id rule's state at a request's end holds for those messages only: a request from
    an earlier cut with other messages of the same length, then one going on from its end,
    must not go on from the first request's state (it would not know ``call_h`` taken)."""
    prompt, first, again = UserMessage(content="go"), _turn("call_f"), _turn("call_f")
    other = _turn("call_h")
    memo = RequestMemo()
    requests: list[list[Message]] = [
        [prompt, *first],
        [prompt, *first, *again],  # not clean: the states are kept from now on
        [prompt, *first, *again, *_turn("call_g")],  # a state at 7, a cut at 5
        [prompt, *first, *again, *other],  # from the cut at 5: clean, no state at 7
        [prompt, *first, *again, *other, *_turn("call_h")],
    ]
    for messages in requests:
        context = Context("", messages, [])
        got = convert_messages(GPT, context, memo=memo)
        assert got == convert_messages(GPT, context)
    assert got[-2]["tool_calls"][0]["id"] != "call_h"  # rewritten: the fourth request took it


def test_a_request_sent_again_converts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A retry (the same messages again, after a rate limit, say) reuses the params."""
    sizes = count_conversions(monkeypatch, openai_request)
    loop = RandomToolLoop(2, GPT)
    for _ in range(5):
        loop.group()
    memo = RequestMemo()
    context = Context("", list(loop.messages), [])
    first = convert_messages(GPT, context, memo=memo)
    before = len(sizes)
    assert convert_messages(GPT, context, memo=memo) == first
    assert sizes[before:] == []


def test_the_provider_builds_its_body_through_the_memo_unless_a_hook_may_rewrite_it() -> None:
    provider = OpenAICompatProvider()
    loop = RandomToolLoop(5, GPT)
    plain = StreamOptions()
    for _ in range(6):
        loop.group()
        context = Context("Be brief.", list(loop.messages), [])
        body = provider.build_body(GPT, context, plain)
        assert body == build_request_body(GPT, context, plain)
        body["messages"].append({"role": "user", "content": "changed"})  # the body's own list
    assert provider.request_memo._conversations

    rewriting = OpenAICompatProvider()
    options = StreamOptions(on_payload=lambda body, model: None)
    rewriting.build_body(GPT, Context("", list(loop.messages), []), options)
    assert not rewriting.request_memo._conversations
