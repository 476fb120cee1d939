"""A tool loop's request messages convert only what is new, with the same params as converting
everything (``_body_memo``).

Random conversations grow request by request (tool groups with Anthropic's ids and with ids
the id rule rewrites, thinking, other models' turns, failed turns, missing and stray
results, images, prompts; sometimes a message comes back as a copy, sometimes the history is
cut): at every request the params through the memo equal the params converted from scratch,
with and without cache markers, and the memo's own params never change under the markers.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from openclaw_runtime_anthropic import _request
from openclaw_runtime_anthropic._provider import AnthropicProvider
from openclaw_runtime_anthropic._request import (
    apply_cache_control_to_messages,
    convert_messages,
    with_cache_control,
)

from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import (
    ToolCall,
    ToolResultMessage,
)
from openclaw_runtime.providers.request_memo import RequestMemo
from openclaw_runtime.testing.random_tool_loops import RandomToolLoop, count_conversions

MODEL = Model(
    id="claude-opus-4-6",
    api="anthropic-messages",
    provider="anthropic",
    base_url="http://127.0.0.1:9",
    context_window=200_000,
    max_tokens=4096,
    input=["text", "image"],
)
TEXT_ONLY = MODEL.model_copy(update={"input": ["text"]})
CACHE = {"type": "ephemeral"}


def claude_loop(seed: int) -> RandomToolLoop:
    """A random conversation with Claude (its ids ``toolu_…``)."""
    return RandomToolLoop(seed, MODEL)


#: 77: a last unit whose params merged into the ones before (no cut before it); 22: with
#: thinking off, a history cut short at a cut, which makes the turn before it the active
#: one (its thinking kept). 800 seeds were run once, these stay.
@pytest.mark.parametrize("thinking", [True, False], ids=["thinking", "thinking off"])
@pytest.mark.parametrize("model", [MODEL, TEXT_ONLY], ids=["images", "text only"])
@pytest.mark.parametrize("seed", [*range(12), 22, 77])
def test_the_memo_converts_as_from_scratch(
    seed: int, model: Model, monkeypatch: pytest.MonkeyPatch, thinking: bool
) -> None:
    conversions = count_conversions(monkeypatch, _request)
    conversation = claude_loop(seed)
    memo = RequestMemo()
    reused = requests = 0
    for _ in range(80):
        conversation.step()
        messages = list(conversation.messages)
        limit = conversation.rng.choice([4, 1, 0])
        cache = CACHE if conversation.rng.random() < 0.8 else None
        before = len(conversions)
        got = convert_messages(
            messages,
            model,
            memo=memo,
            cache_control=cache,
            cache_marker_limit=limit,
            replay_thinking=thinking,
        )
        expected = convert_messages(
            messages,
            model,
            cache_control=cache,
            cache_marker_limit=limit,
            replay_thinking=thinking,
        )
        assert got == expected, seed
        # the memo's own params carry no marker: what it converts next builds on them
        for known in memo._conversations.values():
            assert "cache_control" not in repr(known.params)
        requests += 1
        reused += conversions[before] < len(messages)  # converted only what was new
    assert reused >= requests // 8, (reused, requests)  # the memo served along the way


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("limit", [0, 1, 2, 4])
def test_markers_on_copies_equal_the_markers_in_place(seed: int, limit: int) -> None:
    conversation = claude_loop(seed)
    for _ in range(12):
        conversation.step()
    params = convert_messages(list(conversation.messages), MODEL)
    pristine = copy.deepcopy(params)
    in_place = copy.deepcopy(params)
    apply_cache_control_to_messages(in_place, CACHE, limit)
    assert with_cache_control(params, CACHE, limit) == in_place
    assert params == pristine  # nothing it was given changed


def test_a_body_a_hook_may_rewrite_does_not_use_the_memo() -> None:
    """``on_payload`` gets the body to change: its params must not be the memo's, so such a
    request neither reads nor fills it."""
    provider = AnthropicProvider()
    conversation = claude_loop(1)
    conversation.group()

    def rewrite(body: Any, model: Any) -> None:
        body["messages"][0]["content"] = "rewritten"

    options = StreamOptions(on_payload=rewrite)
    first = provider.build_body(MODEL, Context("", list(conversation.messages), []), options)
    rewrite(first, MODEL)
    conversation.group()
    second = provider.build_body(MODEL, Context("", list(conversation.messages), []), options)
    assert second["messages"][0]["content"] != "rewritten"
    assert not provider.request_memo._conversations


def test_a_late_result_is_converted_in_place() -> None:
    """A result that arrives after its turn's others (its call had none, so the previous
    request carried a synthetic one) answers that call: the whole history is converted."""
    conversation = claude_loop(0)
    first = ToolCall(id="toolu_first", name="read", arguments={})
    late_call = ToolCall(id="toolu_late", name="read", arguments={})
    conversation.messages.append(conversation.assistant([first, late_call]))
    conversation.messages.append(
        ToolResultMessage(tool_call_id="toolu_first", tool_name="read", content=[])
    )
    memo = RequestMemo()
    before = convert_messages(list(conversation.messages), MODEL, memo=memo)
    assert before[-1]["content"][1]["is_error"]  # the synthetic "No result provided"
    late = ToolResultMessage(tool_call_id="toolu_late", tool_name="read", content=[])
    conversation.messages.append(late)
    messages = list(conversation.messages)
    assert convert_messages(messages, MODEL, memo=memo) == convert_messages(messages, MODEL)
