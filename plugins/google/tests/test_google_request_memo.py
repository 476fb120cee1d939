"""A Gemini tool loop's request converts only what is new, with the same contents as
converting everything (``ContentsConversion`` through the core's ``RequestMemo``).

Random conversations grow request by request (``RandomToolLoop``: tool groups with ids of
every style, thinking with and without a signature, other models' turns, failed turns,
missing, stray and late results, images, prompts; copies, cuts): at every request the
contents through the memo equal the contents converted from scratch, for Gemini 2.5 (result
images as a user turn of their own), Gemini 3 (inside the response) and a text-only model.
"""

from __future__ import annotations

import pytest
from openclaw_runtime_google import _request
from openclaw_runtime_google._provider import GeminiProvider
from openclaw_runtime_google._request import convert_messages

from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.providers.request_memo import RequestMemo
from openclaw_runtime.testing.random_tool_loops import RandomToolLoop, count_conversions

GEMINI_2 = Model(
    id="gemini-2.5-pro",
    api="google-generative-ai",
    provider="google",
    base_url="http://127.0.0.1:9",
    context_window=1_000_000,
    max_tokens=8192,
    input=["text", "image"],
    reasoning=True,
)
GEMINI_3 = GEMINI_2.model_copy(update={"id": "gemini-3-pro-preview"})
TEXT_ONLY = GEMINI_2.model_copy(update={"input": ["text"]})
#: a model behind the Gemini API that takes ids: the id rule spans the history, no memo
WITH_IDS = GEMINI_2.model_copy(update={"id": "claude-sonnet-4-5"})


@pytest.mark.parametrize(
    "model", [GEMINI_2, GEMINI_3, TEXT_ONLY], ids=["gemini 2.5", "gemini 3", "text only"]
)
@pytest.mark.parametrize("seed", range(12))
def test_the_memo_converts_as_from_scratch(
    seed: int, model: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = count_conversions(monkeypatch, _request)
    conversation = RandomToolLoop(seed, model, native="call_")
    memo = RequestMemo()
    reused = 0
    for _ in range(80):
        conversation.step()
        messages = list(conversation.messages)
        before = len(sizes)
        got = convert_messages(messages, model, memo=memo)
        assert got == convert_messages(messages, model), seed
        reused += sizes[before] < len(messages)  # converted only what was new
    assert reused >= 10, reused  # the memo served along the way


def test_a_model_that_takes_ids_converts_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = count_conversions(monkeypatch, _request)
    conversation = RandomToolLoop(3, WITH_IDS, native="call_")
    memo = RequestMemo()
    for _ in range(30):
        conversation.step()
        messages = list(conversation.messages)
        before = len(sizes)
        assert convert_messages(messages, WITH_IDS, memo=memo) == convert_messages(
            messages, WITH_IDS
        )
        assert sizes[before] == len(messages)
    assert not memo._conversations


def test_the_provider_builds_its_body_through_the_memo_unless_a_hook_may_rewrite_it() -> None:
    provider = GeminiProvider()
    conversation = RandomToolLoop(5, GEMINI_2, native="call_")
    plain = StreamOptions()
    for _ in range(6):
        conversation.group()
        context = Context("Be brief.", list(conversation.messages), [])
        body = provider.build_body(GEMINI_2, context, plain)
        body["contents"].append({"role": "user", "parts": [{"text": "changed"}]})  # a copy
        assert body == {
            **_request.build_request_body(GEMINI_2, context, plain),
            "contents": [*convert_messages(context.messages, GEMINI_2), body["contents"][-1]],
        }
    assert provider.request_memo._conversations

    rewriting = GeminiProvider()
    options = StreamOptions(on_payload=lambda body, model: None)
    rewriting.build_body(GEMINI_2, Context("", list(conversation.messages), []), options)
    assert not rewriting.request_memo._conversations
