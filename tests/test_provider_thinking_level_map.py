"""A model's ``thinking_level_map`` on the wire: the level is clamped to what the model offers
and sent under the model's own name, over real HTTP to a local server."""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.agent import Agent, TurnUpdate, tool
from openclaw_runtime.llm import Model
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.testing import ScriptedReply

pytestmark = pytest.mark.anyio


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }


ANSWER = [chunk({"role": "assistant", "content": "done"}), chunk(finish="stop")]
CALL = [
    chunk(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "shout", "arguments": '{"value": "x"}'},
                }
            ],
        }
    ),
    chunk(finish="tool_calls"),
]


@tool
async def shout(value: str) -> str:
    """Upper-case."""
    return value.upper()


def model(server: Any, model_id: str, level_map: dict[str, str | None] | None) -> Model:
    return Model(
        id=model_id,
        api="openai-completions",
        provider="local",
        base_url=server.base_url + "/v1",
        reasoning=True,
        thinking_level_map=level_map,
    )


async def test_a_model_swap_sends_the_new_models_clamped_and_spelled_level(
    local_http_server: Any,
) -> None:
    local_http_server.enqueue(ScriptedReply.sse(CALL))
    local_http_server.enqueue(ScriptedReply.sse(ANSWER))
    first = model(local_http_server, "big", {"xhigh": "xhigh", "max": "max"})
    # the second model has no "max"/"xhigh" and calls its top level "hard"
    second = model(local_http_server, "small", {"high": "hard"})
    provider = OpenAICompatProvider()
    try:
        agent = Agent(
            model=first,
            stream_fn=provider.stream_fn,
            tools=[shout],
            thinking_level="max",
            prepare_next_turn=lambda turn: TurnUpdate(model=second),
            get_api_key=lambda _provider: "sk-local",
        )
        await agent.prompt("go")
    finally:
        await provider.aclose()
    bodies = [request.json() for request in local_http_server.requests]
    assert [(b["model"], b["reasoning_effort"]) for b in bodies] == [
        ("big", "max"),
        ("small", "hard"),
    ]


async def test_a_level_the_map_does_not_rename_is_sent_as_is(local_http_server: Any) -> None:
    local_http_server.enqueue(ScriptedReply.sse(ANSWER))
    provider = OpenAICompatProvider()
    try:
        agent = Agent(
            model=model(local_http_server, "plain", {"max": None}),
            stream_fn=provider.stream_fn,
            thinking_level="high",
            get_api_key=lambda _provider: "sk-local",
        )
        await agent.prompt("go")
    finally:
        await provider.aclose()
    assert local_http_server.requests[0].json()["reasoning_effort"] == "high"
