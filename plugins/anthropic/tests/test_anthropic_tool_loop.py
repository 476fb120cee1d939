"""A Claude tool loop costs the same at every call: no pass over the whole history per request.

Claude thinks before its calls. The transcript pipeline and the turn validation run before
every request of a tool loop; both used to go over the whole turn, or the whole history, at
every request when the turns thought (and the turn validation of this plugin always did): a
loop of K calls cost O(K²). They reuse the previous request's work now, for the models that
keep their thinking (``claude-opus-4-6``) and the older ones whose earlier turns' thinking
is dropped (``claude-sonnet-4-5``). End to end over real HTTP (``AnthropicMessagesServer``):
kept-open sessions of several tool-loop turns send exactly the requests they sent when every
request ran the pipeline and the validation over the whole history, no request ran the
pipeline over more than two turns, and the validation ran over the whole history only while
the session kept nothing of it. On asyncio and trio, memory and durable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openclaw_runtime_anthropic import _request as request_module
from openclaw_runtime_anthropic import plugin as anthropic_plugin

from openclaw_runtime import Runtime, tool
from openclaw_runtime.providers.request_memo import RequestMemo
from openclaw_runtime.testing.anthropic_server import AnthropicMessagesServer
from openclaw_runtime.testing.random_tool_loops import count_conversions
from openclaw_runtime.transcript import replay as replay_module
from openclaw_runtime.transcript import run_transcript_sanitizers
from openclaw_runtime.transcript import turn_memo as turn_memo_module
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from openclaw_runtime.transcript.replay import validate_strict_replay_turns

pytestmark = pytest.mark.anyio

TURNS = 4
CALLS = 5


@tool
async def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@pytest.fixture
def server() -> Iterator[AnthropicMessagesServer]:
    with AnthropicMessagesServer() as running:
        yield running


def _config(
    state_dir: Path, server: AnthropicMessagesServer, model: str, thinking: str = "low"
) -> dict[str, Any]:
    return {
        "state_dir": str(state_dir),
        "models": [
            {
                "id": model,
                "api": "anthropic-messages",
                "provider": "anthropic",
                "baseUrl": server.base_url,
                "reasoning": True,
                "contextWindow": 200_000,
                "maxTokens": 4096,
            }
        ],
        "agent": {"model": f"anthropic/{model}", "thinking_level": thinking},
        "auth": {
            "profiles": [
                {
                    "id": "anthropic:0",
                    "provider": "anthropic",
                    "mode": "api_key",
                    "credential": {"value": "sk-ant-local-test-key"},
                }
            ]
        },
    }


async def _turns(
    state_dir: Path,
    server: AnthropicMessagesServer,
    model: str,
    memory: bool,
    thinking: str = "low",
) -> list[list[Any]]:
    """``TURNS`` turns of ``CALLS`` tool calls and an answer on one kept-open session: the
    request bodies of each turn. With ``thinking`` off the calls come without thinking (the
    answers keep theirs: a session whose thinking was turned off)."""
    runtime = Runtime(
        _config(state_dir, server, model, thinking),
        plugins=[anthropic_plugin],
        load_entrypoints=False,
        memory=memory,
    )
    bodies: list[list[Any]] = []
    try:
        for turn in range(TURNS):
            for n in range(CALLS):
                call = {"path": f"t{turn}f{n}.txt"}
                server.enqueue_tool_use("read", call, model=model, thinking=thinking != "off")
            start = len(server.requests)
            result = await runtime.run(f"read them {turn}", session_id="loop", tools=[read])
            assert result.ok, result.error
            assert result.text == f"answer {turn + 1}"
            bodies.append([request.json() for request in server.requests[start:]])
    finally:
        await runtime.aclose()
    return bodies


class Passes:
    """How many messages each whole-pipeline run, each full turn validation (its
    dangling-call pass, which every one makes) and each conversion of the request's messages
    got."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pipeline: list[int] = []
        self.validated: list[int] = []
        self.converted = count_conversions(monkeypatch, request_module)

        def pipeline(messages: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
            self.pipeline.append(len(messages))
            return run_transcript_sanitizers(messages, *args, **kwargs)

        def strip_dangling(messages: Any) -> list[Any]:
            # every full validation goes through it, by the memo or not
            self.validated.append(len(messages))
            return real_strip(messages)

        real_strip = replay_module.strip_dangling_tool_uses
        monkeypatch.setitem(IncrementalSanitizer.run.__kwdefaults__, "full", pipeline)
        monkeypatch.setattr(replay_module, "strip_dangling_tool_uses", strip_dangling)


def _whole_history_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """No cache: every request sanitized, validated and converted over the whole history."""

    def sanitize(self: Any, messages: Any, policy: Any, sanitizers: Any, **_: Any) -> Any:
        return run_transcript_sanitizers(list(messages), policy, sanitizers)

    def validate(self: Any, messages: Any, policy: Any, *, strict: bool = False) -> Any:
        return validate_strict_replay_turns(list(messages), policy)

    def convert(self: Any, messages: Any, key: Any, conversion: Any) -> Any:
        return conversion.whole(messages)[0]

    monkeypatch.setattr(IncrementalSanitizer, "run", sanitize)
    monkeypatch.setattr(turn_memo_module.TurnValidationMemo, "__call__", validate)
    monkeypatch.setattr(RequestMemo, "convert", convert)


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
@pytest.mark.parametrize("model", ["claude-opus-4-6", "claude-sonnet-4-5"])
async def test_a_claude_tool_loop_does_no_whole_history_pass_per_request(
    tmp_path: Path,
    server: AnthropicMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    memory: bool,
) -> None:
    passes = Passes(monkeypatch)
    bodies = await _turns(tmp_path / "cached", server, model, memory)
    requests = TURNS * (CALLS + 1)
    assert sum(len(turn) for turn in bodies) == requests
    # every call thought, and what it thought went back to the provider as it should
    last = bodies[-1][-1]["messages"]
    thinking = [
        block
        for message in last
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "thinking"
    ]
    keeps = model == "claude-opus-4-6"  # older models drop earlier turns' thinking
    assert len(thinking) == (TURNS * (CALLS + 1) - 1 if keeps else 1), len(thinking)
    # the pipeline runs only at a turn's first requests (not at each of its CALLS + 1), and
    # never over more than the previous turn and this one (a turn adds 2 * CALLS + 2)
    turn_size = 2 * CALLS + 2
    assert len(passes.pipeline) <= 2 * TURNS, passes.pipeline
    assert max(passes.pipeline, default=0) <= 2 * turn_size, passes.pipeline
    # the whole history is validated at the session's first request and at the second
    # turn's first (nothing of the first turn is kept yet); never again
    assert passes.validated == [1, turn_size + 1], passes.validated
    # the request's messages are converted whole at the session's first request only; a
    # turn's first request converts the previous turn (the session's copies) and its prompt
    # (for an older model the second too, where the previous turn comes back without its
    # thinking), every other request its new group (two messages) and, for an older model,
    # the previous group that came back as a copy
    assert passes.converted[0] == 1, passes.converted
    assert max(passes.converted) <= turn_size + 3, passes.converted  # the history: 4 turns
    assert passes.converted.count(turn_size + 1) == TURNS - 1, passes.converted

    # the same turns with the whole history sanitized and validated at every request
    _whole_history_every_time(monkeypatch)
    server.reset()
    assert await _turns(tmp_path / "whole", server, model, memory) == bodies


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
async def test_with_thinking_off_a_tool_loop_converts_only_what_is_new(
    tmp_path: Path,
    server: AnthropicMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    memory: bool,
) -> None:
    """Thinking off is the default. The active tool turn alone keeps its thinking then, so
    the request memo took no request with thinking off and every request converted the
    whole history; then each request converted the previous group again with its own.
    The calls come without thinking here (thinking off), so the active turn converts the
    same once another follows: each request converts its own group, a turn's first the
    previous turn and its prompt, then the prompt alone (for the next turn's cut); and
    sends the same body."""
    passes = Passes(monkeypatch)
    bodies = await _turns(tmp_path / "cached", server, "claude-opus-4-6", memory, "off")
    assert all(body["thinking"] == {"type": "disabled"} for turn in bodies for body in turn)
    turn_size = 2 * CALLS + 2
    first, later = [1, *[2] * CALLS], [turn_size + 1, 1, *[2] * CALLS]
    assert passes.converted == first + later * (TURNS - 1), passes.converted

    _whole_history_every_time(monkeypatch)
    server.reset()
    whole = await _turns(tmp_path / "whole", server, "claude-opus-4-6", memory, "off")
    assert whole == bodies
