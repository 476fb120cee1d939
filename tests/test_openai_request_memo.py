"""A Chat Completions tool loop's request converts only what is new, with the same messages as
converting everything (``ChatConversion`` through ``RequestMemo``).

Random conversations grow request by request (``RandomToolLoop``: tool groups with ids of
every style, failed turns, missing, stray and late results, images, prompts; copies, cuts):
at every request the messages through the memo equal the messages converted from scratch,
for each id rule (``openai``, Mistral's ``strict9``, ``keep``) and a text-only model.
"""

from __future__ import annotations

import pytest

from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import Message, TextContent, ToolCall, ToolResultMessage
from openclaw_runtime.providers import openai_request
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.providers.openai_request import build_request_body, convert_messages
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


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@pytest.mark.parametrize("seed", range(12))
def test_the_memo_converts_as_from_scratch(
    seed: int, model: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = count_conversions(monkeypatch, openai_request)
    native = "abcde" if model is MISTRAL else "call_"  # Mistral's 9 alphanumerics: abcde0001
    conversation = RandomToolLoop(seed, model, native=native)
    memo = RequestMemo()
    reused = 0
    for _ in range(80):
        conversation.step()
        context = Context("Be brief.", list(conversation.messages), [])
        before = len(sizes)
        got = convert_messages(model, context, memo=memo)
        assert got == convert_messages(model, context), seed
        reused += sizes[before] < len(context.messages)  # converted only what was new
    assert reused >= 10, reused  # the memo served along the way


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


def test_one_id_twice_in_what_a_request_adds_converts_everything() -> None:
    """Two new groups calling ``call_5``: the rule gives the second ``call_5_2`` unless an
    earlier call took that, which only the whole history tells."""
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


def test_a_result_naming_an_earlier_call_takes_that_calls_id() -> None:
    """A result whose call is in an earlier turn (unanswered there) pairs with that call by the
    id rule's queue: the group is not clean, the whole history is converted."""
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


def test_a_second_result_for_one_call_converts_everything() -> None:
    """A call answered twice: the second answer gets a fresh id from the rule, which depends on
    every id given out before (here the very one it would pick), so the group is not clean."""
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
