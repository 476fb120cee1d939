"""The pipeline skips the ``validate_replay_turns`` call only when it would answer ``None`` untouched.

``Hooks.turn_validation_abstains`` says so when the policy asks for no turn validation and the
built-in validator (which then returns ``None`` before reading anything) is the only
implementation, with no call monitor, no trace and no breaker state for it. Each condition is
tested on its own (table); whenever it says yes, the hook call gives ``(None, None)`` for random
histories and policies; and a tool loop through ``Runtime.run`` sends the same requests and
returns the same result with the skip as with the hook called before every request, while a
plugin, a monitor or a fault still sees every call (asyncio and trio).
"""

from __future__ import annotations

import dataclasses
import random
import types
from typing import Any

import pytest

from openclaw_runtime import hookimpl
from openclaw_runtime._hooks import Hooks
from openclaw_runtime.testing import FakeProvider, FakeProviderPlugin, tool_call
from openclaw_runtime.transcript import TranscriptPolicy, resolve_transcript_policy
from tests.test_runtime_stream_repair import lookup
from tests.test_transcript_loop_tail import Loop

_OFF = TranscriptPolicy(api="fake", provider="fake", model_id="m")
_GEMINI = dataclasses.replace(_OFF, validate_gemini_turns=True)
_ANTHROPIC = dataclasses.replace(_OFF, validate_anthropic_turns=True)


class _Answers:
    @hookimpl
    def validate_replay_turns(self, messages: list[Any], policy: Any) -> list[Any] | None:
        return None


def test_the_builtin_alone_with_validation_off_abstains(runtime_factory: Any) -> None:
    hooks = runtime_factory().hooks
    assert hooks.turn_validation_abstains(_OFF)
    assert not hooks.turn_validation_abstains(_GEMINI)
    assert not hooks.turn_validation_abstains(_ANTHROPIC)


def test_another_validator_is_always_called(runtime_factory: Any) -> None:
    assert not runtime_factory(plugins=[("mine", _Answers())]).hooks.turn_validation_abstains(_OFF)


def test_another_validator_behind_the_builtin_is_always_called(runtime_factory: Any) -> None:
    class Last:
        @hookimpl(trylast=True)
        def validate_replay_turns(self, messages: list[Any], policy: Any) -> list[Any]:
            return ["last"]

    hooks = runtime_factory(plugins=[("last", Last())]).hooks
    assert [i.plugin_name for i in hooks._impls("validate_replay_turns")] == [
        "builtin.transcript",
        "last",
    ]  # the built-in is called first and abstains; ``last`` answers
    assert hooks.validate_replay_turns([], _OFF) == (["last"], "last")
    assert not hooks.turn_validation_abstains(_OFF)


def test_a_call_monitor_or_the_trace_sees_every_call(runtime_factory: Any) -> None:
    hooks = runtime_factory().hooks
    remove = hooks._pm.add_call_monitor(lambda call: None)
    assert not hooks.turn_validation_abstains(_OFF)
    remove()
    assert hooks.turn_validation_abstains(_OFF)
    hooks.trace = True
    assert not hooks.turn_validation_abstains(_OFF)


def test_a_breaker_on_the_builtin_is_consulted(runtime_factory: Any) -> None:
    hooks = runtime_factory().hooks
    hooks.record_fault("builtin.transcript", "validate_replay_turns", "boom")
    assert not hooks.turn_validation_abstains(_OFF)
    other = runtime_factory().hooks
    other.record_fault("builtin.transcript", "another_hook", "boom")
    assert other.turn_validation_abstains(_OFF)


def test_a_lookalike_of_the_builtin_is_not_taken_for_it(runtime_factory: Any) -> None:
    from openclaw_runtime.builtins import transcript  # lazy: the module under test

    lookalike = types.ModuleType(transcript.__name__)
    lookalike.validate_replay_turns = transcript.validate_replay_turns  # type: ignore[attr-defined]
    runtime = runtime_factory()
    runtime.plugin_manager.unregister(name="builtin.transcript")
    runtime.plugin_manager.register(lookalike, name="lookalike")
    hooks = Hooks(runtime.plugin_manager)
    assert hooks.validate_replay_turns([], _OFF) == (None, None)
    assert not hooks.turn_validation_abstains(_OFF)


@pytest.mark.parametrize("seed", range(6))
def test_when_it_abstains_the_hook_answers_none(runtime_factory: Any, seed: int) -> None:
    rng = random.Random(seed)
    hooks: Hooks = runtime_factory().hooks
    policies = [
        _OFF,
        _GEMINI,
        _ANTHROPIC,
        resolve_transcript_policy("openai-completions", "openai", "gpt-4o"),
        resolve_transcript_policy("openai-responses", "openai", "gpt-5"),
        resolve_transcript_policy("google-generative-ai", "google", "gemini-2.5-pro"),
        resolve_transcript_policy("anthropic-messages", "anthropic", "claude-sonnet-4"),
    ]
    for _ in range(20):
        loop = Loop(compacted=rng.random() < 0.5)
        for _ in range(rng.randrange(4)):
            loop.messages.extend(loop.group())
        policy = rng.choice(policies)
        if hooks.turn_validation_abstains(policy):
            assert hooks.validate_replay_turns(list(loop.messages), policy) == (None, None)
        else:
            assert policy.validate_gemini_turns or policy.validate_anthropic_turns


async def _tool_loop(runtime_factory: Any, calls: int, *plugins: Any) -> tuple[Any, list[Any]]:
    provider = FakeProvider()
    for n in range(calls):
        provider.reply(tool_call("lookup", {"query": f"q{n}"}, id=f"call-{n}"))
    provider.reply("all done")
    runtime = runtime_factory(plugins=[("fake-provider", FakeProviderPlugin(provider)), *plugins])
    result = await runtime.run(
        "look them up", session_id="s", tools=[lookup], model="fake/fake-model"
    )
    return result, [request.context for request in provider.history]


def _shape(result: Any, contexts: list[Any]) -> Any:
    return (
        result.ok,
        result.text,
        [m.model_dump(exclude={"timestamp"}) for m in result.messages],
        [[m.model_dump(exclude={"timestamp"}) for m in context.messages] for context in contexts],
    )


@pytest.mark.anyio
async def test_a_tool_loop_is_the_same_with_and_without_the_skip(
    runtime_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[bool] = []
    original = Hooks.turn_validation_abstains

    def recording(self: Hooks, policy: Any) -> bool:
        asked.append(original(self, policy))
        return asked[-1]

    dispatched: list[str] = []
    first = Hooks._first

    def counting(self: Hooks, hook_name: str, kwargs: Any) -> Any:
        dispatched.append(hook_name)
        return first(self, hook_name, kwargs)

    monkeypatch.setattr(Hooks, "turn_validation_abstains", recording)
    monkeypatch.setattr(Hooks, "_first", counting)
    skipped = _shape(*await _tool_loop(runtime_factory, 5))
    assert asked == [True] * 6  # asked before each of the six requests, and it skipped
    assert "validate_replay_turns" not in dispatched
    monkeypatch.setattr(Hooks, "turn_validation_abstains", lambda self, policy: False)
    called = _shape(*await _tool_loop(runtime_factory, 5))
    assert dispatched.count("validate_replay_turns") == 6
    assert skipped == called


@pytest.mark.anyio
async def test_a_plugin_and_a_monitor_still_see_every_request(runtime_factory: Any) -> None:
    seen: list[int] = []

    class Counting:
        @hookimpl
        def validate_replay_turns(self, messages: list[Any], policy: Any) -> None:
            seen.append(len(messages))

    result, contexts = await _tool_loop(runtime_factory, 4, ("counting", Counting()))
    assert result.ok and len(contexts) == 5
    assert seen == [len(context.messages) for context in contexts]

    calls: list[str] = []
    provider = FakeProvider()
    for n in range(3):
        provider.reply(tool_call("lookup", {"query": f"q{n}"}, id=f"call-{n}"))
    provider.reply("all done")
    runtime = runtime_factory(plugins=[("fake-provider", FakeProviderPlugin(provider))])
    runtime.plugin_manager.add_call_monitor(
        lambda call: calls.append(call.plugin) if call.hook == "validate_replay_turns" else None
    )
    result = await runtime.run(
        "look them up", session_id="s", tools=[lookup], model="fake/fake-model"
    )
    assert result.ok
    assert calls == ["builtin.transcript"] * 4
