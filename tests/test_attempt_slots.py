"""The attempt's callbacks as slots objects give what the closures they replace gave (issue 13).

``_Pipeline`` (the per-request history pipeline) and ``_AttemptTurn`` (the loop guard, the
abort link, the getters) are compared with the closure forms ``_run_attempt`` used before,
copied here as the reference, on tables of histories and tool-call rounds.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from openclaw_runtime.abort import AbortController, AbortSignal
from openclaw_runtime.agent.types import AgentContext, TurnContext
from openclaw_runtime.messages import AssistantMessage, ToolCall
from openclaw_runtime.runner.attempt import AttemptOutcome, _AttemptTurn, _Pipeline
from openclaw_runtime.runner.live import LiveRunRegistry
from openclaw_runtime.runner.live_run import _live_run_scope, _LiveRunScope, live_run_scope
from openclaw_runtime.runner.recovery import PostCompactionLoopGuard
from openclaw_runtime.runner.request import RunRequest
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer
from openclaw_runtime.transcript import resolve_transcript_policy
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from openclaw_runtime.transcript.replay import validate_replay_turns
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS, SanitizerSpec
from openclaw_runtime.transcript.turn_memo import MemoizedTurns, TurnValidationMemo
from tests.test_run_recovery import KEYS, build_runtime
from tests.test_transcript_incremental import ToolLoopHistory, dumped

POLICIES = {
    "responses": resolve_transcript_policy("openai-responses", "openai", "gpt-5"),
    "anthropic, read only": resolve_transcript_policy(
        "anthropic-messages",
        "anthropic",
        "claude-sonnet-4",
        model_reasoning=True,
        allowed_tool_names=["read"],
    ),
    "completions": resolve_transcript_policy("openai-completions", "openai", "gpt-4o"),
}


def _closure_pipeline(spec: Any) -> Callable[[list[Any], AbortSignal | None], list[Any]]:
    """``attempt._pipeline`` as it was (a closure), the reference."""
    policy = spec.policy
    sanitizers = list(spec.sanitizers)
    validate = spec.validate_turns
    on_error = spec.on_sanitizer_error

    incremental = spec.session.replay_sanitizer
    turns = TurnValidationMemo()

    def transform(messages: list[Any], _signal: AbortSignal | None) -> list[Any]:
        sanitized = incremental.run(messages, policy, sanitizers, on_error=on_error)
        validated = validate(MemoizedTurns(sanitized, turns), policy)
        return sanitized if validated is None else validated

    return transform


def _plugin_sanitizer(messages: list[Any], _policy: Any) -> list[Any]:
    """A sanitizer that is not built in: the incremental sanitizer takes the full path."""
    return list(messages)


VALIDATORS: dict[str, Callable[[list[Any], Any], list[Any] | None]] = {
    "built-in": lambda messages, policy: validate_replay_turns(list(messages), policy),
    "none": lambda _messages, _policy: None,
    # the pipeline is told the validator abstains and never calls it
    "none, skipped": lambda _messages, _policy: pytest.fail("called although it abstains"),
}
SANITIZERS: dict[str, list[Any]] = {
    "built-in": list(BUILTIN_SANITIZERS),
    "with a plugin's": [
        *BUILTIN_SANITIZERS,
        SanitizerSpec("copy", _plugin_sanitizer, order=150, plugin="p"),
    ],
}


def _spec(policy: Any, sanitizers: list[Any], validate: Any, faults: list[Any]) -> Any:
    return SimpleNamespace(
        policy=policy,
        sanitizers=tuple(sanitizers),
        validate_turns=validate,
        run=SimpleNamespace(turns_abstain=lambda _policy: validate is VALIDATORS["none, skipped"]),
        on_sanitizer_error=lambda *args: faults.append(args),
        session=SimpleNamespace(replay_sanitizer=IncrementalSanitizer()),
    )


@pytest.mark.parametrize("validator", sorted(VALIDATORS))
@pytest.mark.parametrize("sanitizers", sorted(SANITIZERS))
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(4))
def test_the_pipeline_object_answers_as_the_closure(
    seed: int, policy_name: str, sanitizers: str, validator: str
) -> None:
    policy = POLICIES[policy_name]
    slow_faults: list[Any] = []
    fast_faults: list[Any] = []
    slow_validator = VALIDATORS["none" if validator == "none, skipped" else validator]
    slow = _closure_pipeline(_spec(policy, SANITIZERS[sanitizers], slow_validator, slow_faults))
    fast = _Pipeline(_spec(policy, SANITIZERS[sanitizers], VALIDATORS[validator], fast_faults))
    history = ToolLoopHistory(seed)
    requests = 0
    for turn in range(5):
        if turn == 3:
            history.compact()
        history.user() if history.rng.random() < 0.85 else history.turn()
        for _ in range(history.rng.randint(2, 8)):
            history.step()
            expected = slow(list(history.messages), None)
            got = fast(list(history.messages), None)
            assert dumped(got) == dumped(expected), (seed, turn)
            requests += 1
    assert requests > 10
    assert fast_faults == slow_faults


def _turn(calls: list[tuple[str, dict[str, Any]]]) -> TurnContext:
    message = AssistantMessage(
        content=[
            ToolCall(id=f"c{i}", name=name, arguments=args) for i, (name, args) in enumerate(calls)
        ],
        stop_reason="toolUse" if calls else "stop",
    )
    return TurnContext(message, [], AgentContext("", [], []), [])


ROUNDS: dict[str, list[list[tuple[str, dict[str, Any]]]]] = {
    "same round three times": [[("read", {"p": "a"})]] * 3,
    "same round, argument order differs": [
        [("read", {"p": "a", "q": 1})],
        [("read", {"q": 1, "p": "a"})],
        [("read", {"p": "a", "q": 1})],
    ],
    "a text turn in between": [[("read", {"p": "a"})], [], [("read", {"p": "a"})]] * 2,
    "different rounds": [[("read", {"p": "a"})], [("read", {"p": "b"})], [("exec", {})]],
    "two calls, order swapped": [
        [("read", {"p": "a"}), ("exec", {})],
        [("exec", {}), ("read", {"p": "a"})],
        [("read", {"p": "a"}), ("exec", {})],
        [("ls", {})],
    ],
}


@pytest.mark.parametrize("guarded", [False, True])
@pytest.mark.parametrize("rounds_name", sorted(ROUNDS))
def test_the_loop_guard_method_stops_as_the_closure(rounds_name: str, guarded: bool) -> None:
    slow_outcome = AttemptOutcome(facts=None, new_messages=[])  # type: ignore[arg-type]
    fast_outcome = AttemptOutcome(facts=None, new_messages=[])  # type: ignore[arg-type]
    slow_guard = PostCompactionLoopGuard() if guarded else None

    def stop_after_turn(turn: TurnContext) -> bool:  # the closure, as it was
        if slow_guard is None:
            return False
        calls = [(call.name, call.arguments) for call in turn.message.tool_calls()]
        if slow_guard.observe(calls):
            slow_outcome.loop_guard_tripped = True
            return True
        return False

    this = _AttemptTurn(SimpleNamespace(), fast_outcome, None, AbortController())  # type: ignore[arg-type]
    this.guard = PostCompactionLoopGuard() if guarded else None
    answers = []
    for calls in ROUNDS[rounds_name]:
        expected = stop_after_turn(_turn(calls))
        assert this.stop_after_turn(_turn(calls)) is expected
        answers.append(expected)
        assert fast_outcome.loop_guard_tripped == slow_outcome.loop_guard_tripped
    trips = rounds_name not in ("different rounds", "a text turn in between")
    assert any(answers) is (guarded and trips)


def test_the_abort_link_and_getters_read_the_attempt() -> None:
    run = AbortController()
    controller = AbortController()
    spec = SimpleNamespace(run_signal=run.signal, api_key="k-1")
    this = _AttemptTurn(spec, AttemptOutcome(facts=None, new_messages=[]), None, controller)  # type: ignore[arg-type]
    this.system_prompt, this.pre_prompt_count = "sys", 7
    unlink = run.signal.add_callback(this.abort_from_run)
    assert not controller.signal.aborted
    reason = RuntimeError("stopped by the user")
    run.abort(reason)
    assert controller.signal.aborted and controller.signal.reason is reason
    unlink()
    assert (this.get_system_prompt(), this.get_pre_prompt_message_count()) == ("sys", 7)
    assert this.api_key("openai") == "k-1"


# ------------------------------------------------------------------ the live-run scope


def _live_run(abort: AbortController | None) -> Any:
    request = RunRequest(
        prompt="hi", session_id="s-1", abort_signal=None if abort is None else abort.signal
    )
    return SimpleNamespace(
        session_id="s-1",
        session_key="k-1",
        run_id="r-1",
        config=SimpleNamespace(
            agent=SimpleNamespace(steering_mode="all", follow_up_mode="one-at-a-time")
        ),
        request=request,
        live=None,
        services=SimpleNamespace(live_runs=LiveRunRegistry(), steering_store=object()),
    )


async def _through(
    scope: Callable[[Any], Any], ending: str, caller_abort: bool, caplog: pytest.LogCaptureFixture
) -> tuple[Any, ...]:
    abort = AbortController() if caller_abort else None
    run = _live_run(abort)
    original = run.request
    seen: list[Any] = []
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="openclaw_runtime"):
        try:
            async with scope(run) as handle:
                seen.append(run.services.live_runs.get("s-1") is handle)
                seen.append(run.live is handle and run.request.abort_signal is handle.signal)
                if ending == "pending":
                    handle.enqueue("steer", "late")
                if caller_abort and abort is not None:
                    abort.abort(RuntimeError("caller"))
                    seen.append(str(handle.signal.reason))
                if ending == "raises":
                    raise _Boom("block")
        except _Boom as exc:
            seen.append(f"raised {exc}")
    seen.append(run.services.live_runs.get("s-1"))
    seen.append(
        original.abort_signal is (None if abort is None else abort.signal)
    )  # the caller's is unchanged
    seen.append([record.getMessage() for record in caplog.records])
    return tuple(seen)


class _Boom(Exception):
    pass


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("caller_abort", [False, True])
@pytest.mark.parametrize("ending", ["returns", "raises", "pending"])
async def test_the_live_run_scope_class_does_what_the_generator_did(
    anyio_backend: str, ending: str, caller_abort: bool, caplog: pytest.LogCaptureFixture
) -> None:
    run = _live_run(None)
    assert isinstance(live_run_scope(run), _LiveRunScope)  # no inbox: the class form
    slow = await _through(_live_run_scope, ending, caller_abort, caplog)
    fast = await _through(_LiveRunScope, ending, caller_abort, caplog)
    assert fast == slow
    assert slow[0] is True and slow[-3] is None  # registered in the block, cleared after
    assert any("were not read" in line for line in slow[-1]) is (ending == "pending")


# ------------------------------------------------------------------ nothing kept past the run


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as running:
        yield running


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_finished_run_leaves_no_attempt_object_for_the_cyclic_collector(
    anyio_backend: str, tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    """The attempt's callback object, its pipeline and the live-run scope are freed by
    reference counting when the run returns: none of them sits in a reference cycle (the
    loop's config holds the callbacks, so the callback object must not hold the config)."""
    runtime = build_runtime(tmp_path, server)
    kinds = (_AttemptTurn, _Pipeline, _LiveRunScope)
    try:
        await runtime.run("warm up")
        gc.collect()
        gc.disable()
        try:
            result = await runtime.run("hello")
            left = [type(o).__name__ for o in gc.get_objects() if isinstance(o, kinds)]
        finally:
            gc.enable()
    finally:
        await runtime.aclose()
    assert result.ok
    assert left == []
