"""Which conversations a provider's request memo keeps: each one whose first message lives.

The memo used to keep the eight conversations used last, so a provider serving more sessions
than that (a service's open sessions, taking turns) converted every request's whole history
again. A conversation is now known by its first message, held weakly: it lasts as long as
the caller holds that message (a kept-open session holds its history), and goes with it.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from openclaw_runtime.llm import Context
from openclaw_runtime.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from openclaw_runtime.providers import openai_request
from openclaw_runtime.providers.openai_request import convert_messages
from openclaw_runtime.providers.request_memo import RequestMemo, Taken
from openclaw_runtime.testing.random_tool_loops import RandomToolLoop, count_conversions
from tests.test_openai_request_memo import GPT


def _group(conversation: str, n: int) -> list[Any]:
    call = ToolCall(id=f"call_{conversation}_{n}", name="read", arguments={"n": n})
    return [
        AssistantMessage(content=[call], api=GPT.api, provider=GPT.provider, model=GPT.id),
        ToolResultMessage(tool_call_id=call.id, tool_name="read", content=[]),
    ]


def _convert(memo: RequestMemo, messages: list[Any]) -> list[Any]:
    got = convert_messages(GPT, Context("", list(messages), []), memo=memo)
    assert got == convert_messages(GPT, Context("", list(messages), []))
    return got


def test_more_conversations_than_the_old_bound_each_convert_only_what_is_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Forty tool loops taking turns on one memo: after each one's first request, every
    request converts its new tool group alone (with the eight-conversation bound, taking
    turns, every request converted everything)."""
    sizes = count_conversions(monkeypatch, openai_request)
    loops = {f"s{n}": [UserMessage(content=f"start {n}")] for n in range(40)}
    memo = RequestMemo()
    for step in range(4):
        for name, messages in loops.items():
            if step:
                messages.extend(_group(name, step))
            _convert(memo, messages)
    assert len(memo) == 40
    # each request: converted through the memo (counted), then from scratch (not counted:
    # ``whole`` with no memo calls the same conversion, so both are in ``sizes``)
    through_memo = sizes[0::2]
    assert through_memo[:40] == [1] * 40  # the first requests: the prompt
    assert through_memo[40:] == [2] * (3 * 40), through_memo[40:]


def test_the_random_conversations_taking_turns_convert_as_from_scratch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twenty random conversations (failed turns, copies, cuts, retries) stepped in turn
    through one memo: every request's messages equal converting everything, and the memo
    serves each of them."""
    sizes = count_conversions(monkeypatch, openai_request)
    loops = [RandomToolLoop(seed, GPT, native="call_") for seed in range(20)]
    memo = RequestMemo()
    reused = [0] * len(loops)
    for _ in range(25):
        for index, loop in enumerate(loops):
            loop.step()
            context = Context("Be brief.", list(loop.messages), [])
            before = len(sizes)
            assert convert_messages(GPT, context, memo=memo) == convert_messages(GPT, context)
            reused[index] += sizes[before] < len(context.messages)
    assert min(reused) >= 3, reused


def test_a_conversation_goes_with_its_first_message() -> None:
    """Once the caller lets a conversation's messages go, the memo holds none of them and
    forgets the conversation (the other one stays)."""
    memo = RequestMemo()
    kept = [UserMessage(content="kept"), *_group("k", 1)]
    dropped = [UserMessage(content="dropped"), *_group("d", 1)]
    _convert(memo, kept)
    _convert(memo, dropped)
    assert len(memo) == 2
    watched = [weakref.ref(message) for message in dropped]
    del dropped
    gc.collect()
    assert [ref() for ref in watched] == [None, None, None]  # the memo held none of them
    assert len(memo) == 1
    kept.extend(_group("k", 2))
    _convert(memo, kept)  # still served
    assert len(memo) == 1


def test_conversations_one_after_another_are_served_and_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fifty conversations one after another, each let go before the next starts (often at
    the address of the one before): each is served, and only the live one is kept."""
    sizes = count_conversions(monkeypatch, openai_request)
    memo = RequestMemo()
    for n in range(50):
        messages = [UserMessage(content=f"start {n}")]
        _convert(memo, messages)
        messages.extend(_group("s", n))
        before = len(sizes)
        _convert(memo, messages)
        assert sizes[before] == 2, n  # the new group alone
        assert len(memo) == 1, n
        del messages
    assert len(memo) == 0


def test_at_most_kept_conversations_the_least_recently_used_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes = count_conversions(monkeypatch, openai_request)
    memo = RequestMemo(kept=3)
    loops = [[UserMessage(content=f"start {n}")] for n in range(4)]
    for messages in loops:
        _convert(memo, messages)
    assert len(memo) == 3
    loops[0].extend(_group("a", 1))
    del sizes[:]
    _convert(memo, loops[0])
    assert sizes[0] == 3  # the first was dropped: converted whole
    loops[2].extend(_group("c", 1))
    del sizes[:]
    _convert(memo, loops[2])
    assert sizes[0] == 2  # kept: the new group alone


class _Listing:
    """A conversion of anything: each message's ``repr``, nothing merged, no ids."""

    def whole(self, messages: Sequence[Any]) -> tuple[list[Any], Taken]:
        return self.part(messages), Taken({}, {})

    def part(self, units: Sequence[Any]) -> list[Any]:
        self.converted.append(len(units))
        return [repr(message) for message in units]

    def clean(self, unit: Sequence[Any], taken: Callable[[str], bool]) -> bool:
        return True

    def joins(self, before: Any, after: Any) -> bool:
        return False

    def settled(self, params: list[Any]) -> int:
        return len(params)

    def __init__(self) -> None:
        self.converted: list[int] = []


def test_a_first_message_that_cannot_be_weakly_referenced_is_held() -> None:
    """Messages of a plugin's own kind without weak references (``object()``): the memo
    holds the first one and serves the conversation all the same, within its bound."""
    memo, listing = RequestMemo(kept=2), _Listing()
    messages = [object()]
    with pytest.raises(TypeError):
        weakref.ref(messages[0])
    memo.convert(messages, (), listing)
    for _ in range(3):
        messages.append(object())
        params = memo.convert(list(messages), (), listing)
        assert params == [repr(message) for message in messages]
    assert listing.converted[-1] == 1  # the new message alone
    assert len(memo) == 1
