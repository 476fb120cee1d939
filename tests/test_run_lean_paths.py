"""The run path's shortcuts for plain turns (issue 13, lean-run2) change nothing visible.

* ``splits_to_itself``: the tag splitter's fast path. Table of messages; for each one the
  predicate's answer, and — with the fast path switched off — proof that the full splitter
  would have returned the same content (so returning the message itself is exact). The reply
  tag table of ``test_reply_tags`` runs through both paths too.
* Lane heartbeats start at the grant: beats follow the half-second throttle from the moment
  the lanes are granted, not from the first event (a fake clock, no sleeping).
* Stream repair leaves out a stage that says a request's stream passes it untouched (the
  plain-text tool-call repairer when no tools are offered); a probe that is missing, raises
  or says anything but True keeps the stage; tool-call text is still promoted with tools.
* End to end over real HTTP (asyncio and trio): a plain reply, a reply with leading
  whitespace and a reply with inline reasoning come out with the same text, thinking and
  transcript content as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.containment import PluginGuard
from openclaw_runtime.failover.fallback import ModelCandidate, _as_candidate
from openclaw_runtime.llm import Context, StreamOptions, Tool
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from openclaw_runtime.repair.compose import apply_stream_repairers, guard_stream_repairer
from openclaw_runtime.repair.normalizer import PlainTextToolCallRepairer
from openclaw_runtime.reply import stream as reply_stream
from openclaw_runtime.reply.stream import split_message_tags
from openclaw_runtime.reply.tag_free import splits_to_itself
from openclaw_runtime.runner import run_state
from openclaw_runtime.runner.request import RunRequest
from openclaw_runtime.runner.run_state import RunState
from openclaw_runtime.testing import FakeProvider, FakeProviderPlugin, fake_model, text
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from tests.test_reply_tags import CASES as TAG_CASES
from tests.test_run_recovery import KEYS, Recorder, build_runtime
from tests.test_runtime_stream_repair import lookup


def _message(*content: Any) -> AssistantMessage:
    return AssistantMessage(
        content=list(content), api="openai-completions", provider="p", model="m"
    )


def _call() -> ToolCall:
    return ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})


# (name, message, enforce_final_tag, splits to itself)
FAST_PATH_TABLE: list[tuple[str, AssistantMessage, bool, bool]] = [
    ("plain text", _message(TextContent(text="The answer is 4.")), False, True),
    ("no content", _message(), False, True),
    ("only a tool call", _message(_call()), False, True),
    ("text then tool call", _message(TextContent(text="Let me look."), _call()), False, True),
    (
        "native thinking then text",
        _message(ThinkingContent(thinking="hmm", thinking_signature="s"), TextContent(text="ok")),
        False,
        True,
    ),
    ("two text blocks", _message(TextContent(text="a"), TextContent(text=" b")), False, True),
    ("markdown, code, brackets", _message(TextContent(text="`x` ```\ny\n``` [[a]]")), False, True),
    ("a think tag", _message(TextContent(text="<think>r</think>Hi")), False, False),
    ("a harmless '<'", _message(TextContent(text="1 < 2")), False, False),
    ("leading whitespace", _message(TextContent(text="\n\nHi")), False, False),
    (
        "leading whitespace, 2nd",
        _message(TextContent(text="Hi"), TextContent(text=" x")),
        False,
        True,
    ),
    ("empty text block", _message(TextContent(text="")), False, False),
    ("whitespace-only block", _message(TextContent(text="  ")), False, False),
    ("signed text", _message(TextContent(text="Hi", text_signature="sig")), False, False),
    (
        "extra wire field",
        _message(TextContent.model_validate({"text": "Hi", "x": 1})),
        False,
        False,
    ),
    ("enforce_final_tag", _message(TextContent(text="Hi")), True, False),
]


def _full_split(
    monkeypatch: pytest.MonkeyPatch, message: AssistantMessage, enforce: bool
) -> AssistantMessage:
    """What the splitter returns without its fast path."""
    with monkeypatch.context() as patch:
        patch.setattr(reply_stream, "splits_to_itself", lambda *_a, **_k: False)
        return split_message_tags(message, enforce_final_tag=enforce)


@pytest.mark.parametrize(
    ("message", "enforce", "expected"),
    [case[1:] for case in FAST_PATH_TABLE],
    ids=[case[0] for case in FAST_PATH_TABLE],
)
def test_fast_path_answers_and_is_exact(
    monkeypatch: pytest.MonkeyPatch, message: AssistantMessage, enforce: bool, expected: bool
) -> None:
    assert splits_to_itself(message, enforce_final_tag=enforce) is expected
    full = _full_split(monkeypatch, message, enforce)
    fast = split_message_tags(message, enforce_final_tag=enforce)
    assert fast.content == full.content
    if expected:
        assert fast is message
        assert full.content == message.content  # the full splitter changes nothing either


def test_cases_that_do_change_are_still_split(monkeypatch: pytest.MonkeyPatch) -> None:
    tagged = split_message_tags(_message(TextContent(text="<think>r</think>Hi")))
    assert [type(b).__name__ for b in tagged.content] == ["ThinkingContent", "TextContent"]
    stripped = split_message_tags(_message(TextContent(text="\n\nHi")))
    assert stripped.content == [TextContent(text="Hi")]
    unsigned = split_message_tags(_message(TextContent(text="Hi", text_signature="sig")))
    assert (
        unsigned.content
        == _full_split(
            monkeypatch, _message(TextContent(text="Hi", text_signature="sig")), False
        ).content
    )


@pytest.mark.parametrize(("text", "_reply", "_reasoning"), TAG_CASES)
@pytest.mark.parametrize("enforce", [False, True])
def test_reply_tag_table_gives_the_same_blocks_both_ways(
    monkeypatch: pytest.MonkeyPatch, text: str, _reply: str, _reasoning: str, enforce: bool
) -> None:
    message = _message(TextContent(text=text), _call(), TextContent(text=text))
    fast = split_message_tags(message, enforce_final_tag=enforce)
    assert fast.content == _full_split(monkeypatch, message, enforce).content


# --------------------------------------------------------------------------- heartbeats


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_lane_heartbeats_follow_the_throttle_from_the_grant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = Runtime({"state_dir": str(tmp_path / "state")}, memory=True, load_entrypoints=False)
    state = RunState(runtime, RunRequest(prompt="hi"), None)
    clock = _Clock()
    monkeypatch.setattr(run_state.time, "monotonic", clock)
    beats: list[float] = []
    state.start_heartbeats([lambda: beats.append(clock.now), lambda: beats.append(-clock.now)])
    state.heartbeat()  # the first event, right after the grant: the leases are fresh
    clock.now += 0.4
    state.heartbeat()
    assert beats == []
    clock.now += 0.2  # 0.6 s after the grant
    state.heartbeat()
    assert beats == [clock.now, -clock.now]
    clock.now += 0.3
    state.heartbeat()
    assert len(beats) == 2
    clock.now += 0.3  # 0.6 s after the last beat
    state.heartbeat()
    assert beats[2:] == [clock.now, -clock.now]


# --------------------------------------------------------------------------- end to end


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys=KEYS) as running:
        yield running


@pytest.mark.anyio
@pytest.mark.parametrize("memory", [False, True], ids=["durable", "memory"])
@pytest.mark.parametrize(
    ("served", "text", "thinking"),
    [
        ("Paris is the capital.", "Paris is the capital.", []),
        ("\n\n  Paris.", "Paris.", []),
        ("<think>recall</think>\n\nParis.", "Paris.", ["recall"]),
        ("1 < 2, so <b>yes</b>.", "1 < 2, so <b>yes</b>.", []),
    ],
)
async def test_runs_reply_with_the_same_text_and_blocks(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    memory: bool,
    served: str,
    text: str,
    thinking: list[str],
) -> None:
    base = build_runtime(tmp_path, server, keys=("key-a",))
    runtime = Runtime(base.config, memory=memory, load_entrypoints=False)
    server.enqueue(Reply(text=served, model="main"))
    recorder = Recorder()
    try:
        result = await runtime.run("capital of France?", session_id="s1", on_event=recorder)
        assert result.ok, result
        assert result.text == text
        ends = [e for e in recorder.events if e.type == "message_end"]
        final = ends[-1].message  # type: ignore[attr-defined]
        assert [b.text for b in final.content if isinstance(b, TextContent)] == [text]
        assert [b.thinking for b in final.content if isinstance(b, ThinkingContent)] == thinking
        session = await runtime.services.session_store.open("s1")
        messages = session.build_session_context().messages
        await session.aclose()
        stored = [m for m in messages if isinstance(m, AssistantMessage)][-1]
        assert stored.content == final.content
    finally:
        await runtime.aclose()


# --------------------------------------------------------------------------- stream repair


class _Stage:
    """A transformer that records the event types it saw; ``probe`` is its pass-through
    answer (``"missing"``: no probe; ``"raise"``: the probe raises)."""

    def __init__(self, probe: Any) -> None:
        self.seen: list[str] = []
        if probe != "missing":
            self.passes_through = self._probe
        self._answer = probe

    def _probe(self, context: Any) -> Any:
        if self._answer == "raise":
            raise RuntimeError("probe failed")
        return self._answer

    def __call__(self, events: Any, context: Any) -> Any:
        async def transform() -> Any:
            async for event in events:
                self.seen.append(event.type)
                yield event

        return transform()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("probe", "left_out"),
    [(True, True), (False, False), ("missing", False), ("raise", False), ("yes", False)],
)
@pytest.mark.parametrize("guarded", [False, True], ids=["bare", "guarded"])
async def test_a_stage_is_left_out_only_when_it_says_it_passes_through(
    probe: Any, left_out: bool, guarded: bool
) -> None:
    provider = FakeProvider()
    provider.reply(text("hello"))
    stage = _Stage(probe)
    transformer: Any = stage
    if guarded:
        transformer = guard_stream_repairer(stage, guard=PluginGuard(), plugin="p", name="s")
    stream = apply_stream_repairers(provider.stream_fn, [transformer])(
        fake_model(), Context(), StreamOptions()
    )
    types = [event.type async for event in stream]
    assert types[0] == "start" and types[-1] == "done"
    assert (await stream.result()).text() == "hello"
    assert stage.seen == ([] if left_out else types)


def test_the_plain_text_repairer_passes_through_only_without_tools() -> None:
    repairer = PlainTextToolCallRepairer()
    assert repairer.passes_through(Context()) is True
    assert repairer.passes_through(Context(tools=[Tool("read", "read a file")])) is False
    assert repairer.passes_through(Context(tools=[Tool("  ", "blank name")])) is True


@pytest.mark.anyio
async def test_tool_call_text_stays_text_without_tools_and_is_promoted_with_them(
    runtime_factory: Any,
) -> None:
    written = '{"name": "lookup", "arguments": {"query": "otters"}}'
    provider = FakeProvider()
    provider.reply(text(written))
    provider.reply(text(written))
    provider.reply("Otters hold hands.")
    runtime = runtime_factory(plugins=[("fake-provider", FakeProviderPlugin(provider))])
    plain = runtime.create_agent(model="fake/fake-model")
    await plain.prompt("no tools here")
    assert plain.state.messages[-1].text() == written
    assert not [b for b in plain.state.messages[-1].content if isinstance(b, ToolCall)]
    with_tools = runtime.create_agent(model="fake/fake-model", tools=[lookup])
    await with_tools.prompt("Tell me about otters")
    (call,) = [b for b in with_tools.state.messages[1].content if isinstance(b, ToolCall)]
    assert (call.name, call.arguments) == ("lookup", {"query": "otters"})
    assert with_tools.state.messages[-1].text() == "Otters hold hands."


# --------------------------------------------------------------------------- candidates


@pytest.mark.parametrize(
    ("candidate", "origin"),
    [
        (ModelCandidate("p", "m"), "requested"),
        (ModelCandidate("p", "m"), "configured-fallback"),
        (ModelCandidate("p", "m", "configured-fallback", "p:key"), "requested"),
        (ModelCandidate("p", "m", "configured-fallback", "p:key"), "configured-fallback"),
    ],
)
def test_a_candidate_gets_its_origin_and_keeps_the_rest(
    candidate: ModelCandidate, origin: Any
) -> None:
    got = _as_candidate(candidate, origin, default_provider=None, aliases={})
    assert got == ModelCandidate(
        candidate.provider, candidate.model, origin, candidate.auth_profile_id
    )
