"""End-to-end recovery paths of ``Runtime.run`` over real HTTP (seeds 000/001/003/004).

Every test runs a real session against the fault-injecting OpenAI-compatible server and
checks four things: the event sequence (what was decided, in order), the outcome, the
auth-profile ledger and the transcript on disk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime._markers import hookimpl
from openclaw_runtime._types import RunBlock
from openclaw_runtime.abort import AbortController
from openclaw_runtime.agent import tool
from openclaw_runtime.context.engine import ContextEngineInfo
from openclaw_runtime.events import Event
from openclaw_runtime.messages import AssistantMessage, ToolResultMessage, UserMessage
from openclaw_runtime.runner.retry_instructions import (
    EMPTY_RESPONSE_RETRY_INSTRUCTION,
    REASONING_ONLY_RETRY_INSTRUCTION,
)
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer, Reply

pytestmark = pytest.mark.anyio

KEYS = {"key-a": "ok", "key-b": "ok", "key-backup": "ok"}


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(
        models={"main": 64_000, "mini": 64_000, "summarizer": 64_000}, keys=KEYS
    ) as running:
        yield running


def build_runtime(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    *,
    keys: tuple[str, ...] = ("key-a", "key-b"),
    fallbacks: tuple[str, ...] = (),
    window: int = 64_000,
    reasoning: bool = False,
    agent: dict[str, Any] | None = None,
    plugins: tuple[Any, ...] = (),
) -> Runtime:
    def model(model_id: str, provider: str, context_window: int) -> dict[str, Any]:
        return {
            "id": model_id,
            "api": "openai-completions",
            "provider": provider,
            "baseUrl": server.base_url,
            "contextWindow": context_window,
            "maxTokens": 1024,
            "reasoning": reasoning and model_id == "main",
        }

    profiles = [
        {"id": f"mock:{index}", "provider": "mock", "mode": "api_key", "credential": {"value": k}}
        for index, k in enumerate(keys)
    ]
    profiles.append(
        {
            "id": "backup:0",
            "provider": "backup",
            "mode": "api_key",
            "credential": {"value": "key-backup"},
        }
    )
    config = {
        "state_dir": str(tmp_path / "state"),
        "models": [model("main", "mock", window), model("mini", "backup", 64_000)],
        "agent": {
            "model": "mock/main",
            "fallbacks": list(fallbacks),
            "timeout_seconds": 20,
            **(agent or {}),
        },
        "auth": {"profiles": profiles},
    }
    runtime = Runtime(config, load_entrypoints=False, plugins=list(plugins))
    runtime.retry_backoff_scale = 0
    return runtime


@pytest.fixture
async def make_runtime(tmp_path: Path) -> Any:
    made: list[Runtime] = []

    def factory(server: FaultInjectingOpenAIServer, **options: Any) -> Runtime:
        runtime = build_runtime(tmp_path, server, **options)
        made.append(runtime)
        return runtime

    yield factory
    for runtime in made:
        await runtime.aclose()


class Recorder:
    """Collects run events (token deltas left out)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        if event.type != "message_update":
            self.events.append(event)

    def types(self) -> list[str]:
        return [event.type for event in self.events]

    def of(self, kind: str) -> list[Any]:
        return [event for event in self.events if event.type == kind]

    def decisions(self) -> list[str]:
        return [event.action for event in self.of("attempt_decision")]


@tool
async def get_weather(city: str) -> str:
    """The weather for a city."""
    return f"Sunny, 21 C in {city}"


async def ledger(runtime: Runtime) -> dict[str, dict[str, Any]]:
    state = await runtime.auth_store.load()
    return {pid: stats.to_dict() for pid, stats in state.usage_stats.items()}


def file_entries(path: str) -> list[dict[str, Any]]:
    """Every line of the transcript parses: nothing torn, nothing lost."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


async def branch_messages(runtime: Runtime, session_id: str) -> list[Any]:
    session = await runtime.session_store.open(session_id)
    try:
        return session.build_session_context().messages
    finally:
        await session.aclose()


def assert_lifecycle(recorder: Recorder) -> None:
    kinds = recorder.types()
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert kinds.count("run_start") == 1 and kinds.count("run_end") == 1
    for opening, closing in (
        ("agent_start", "agent_end"),
        ("attempt_start", "attempt_end"),
        ("message_start", "message_end"),
        ("tool_execution_start", "tool_execution_end"),
        ("compaction_start", "compaction_end"),
    ):
        assert kinds.count(opening) == kinds.count(closing), (opening, kinds)


# --------------------------------------------------------------------------- the happy path


async def test_tool_call_turn_is_persisted_and_answered(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    runtime = make_runtime(server)
    recorder = Recorder()
    result = await runtime.run(
        "What is the weather in Paris? Use get_weather.",
        tools=[get_weather],
        on_event=recorder,
    )
    assert result.ok, result.error
    assert "Sunny, 21 C in" in result.text
    assert result.attempts == 1 and result.auth_profile_id == "mock:0"
    assert_lifecycle(recorder)
    assert recorder.types().index("tool_execution_start") < recorder.types().index("run_end")
    roles = [m.role for m in await branch_messages(runtime, result.session_id)]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    assert result.usage.total_tokens > 0
    assert [m.role for m in result.messages] == roles
    assert (await ledger(runtime))["mock:0"].get("errorCount", 0) == 0


# --------------------------------------------------------------------------- auth rotation


async def test_rate_limited_key_rotates_to_next_profile(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.set_key("key-a", "rate_limited")
    runtime = make_runtime(server)
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert result.ok and result.auth_profile_id == "mock:1"
    rotated = recorder.of("profile_rotated")
    assert [(r.from_profile, r.to_profile, r.reason, r.recorded_reason) for r in rotated] == [
        ("mock:0", "mock:1", "rate_limit", "rate_limit")
    ]
    assert recorder.decisions() == ["rotate_profile", "done"]
    stats = await ledger(runtime)
    assert stats["mock:0"]["cooldownReason"] == "rate_limit"
    assert stats["mock:0"]["failureCounts"] == {"rate_limit": 1}
    # the failed turn is kept in the file but set aside from the active branch
    roles = [m.role for m in await branch_messages(runtime, result.session_id)]
    assert roles == ["user", "assistant"]
    failed = [
        e
        for e in file_entries(result.session_file or "")
        if e.get("type") == "message" and e["message"].get("stopReason") == "error"
    ]
    assert len(failed) == 1 and "429" in failed[0]["message"]["errorMessage"]
    assert_lifecycle(recorder)
    # the next run skips the cooling profile from the start
    server_requests = len(server.requests)
    again = await runtime.run("again", session_id=result.session_id)
    assert again.ok and again.auth_profile_id == "mock:1"
    assert len(server.requests) == server_requests + 1


async def test_invalid_key_records_auth_failure_and_rotates(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.set_key("key-a", "invalid")
    runtime = make_runtime(server)
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert result.ok and result.auth_profile_id == "mock:1"
    assert recorder.of("profile_rotated")[0].recorded_reason == "auth"
    assert (await ledger(runtime))["mock:0"]["cooldownReason"] == "auth"


async def test_billing_failure_disables_the_profile(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.set_key("key-a", "billing")
    runtime = make_runtime(server)
    result = await runtime.run("hello")
    assert result.ok and result.auth_profile_id == "mock:1"
    stats = (await ledger(runtime))["mock:0"]
    assert stats["disabledReason"] == "billing" and stats["disabledUntil"] > 0


async def test_all_keys_rate_limited_retries_same_model_then_surfaces(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.set_key("key-a", "rate_limited")
    server.set_key("key-b", "rate_limited")
    runtime = make_runtime(server)
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert not result.ok
    assert result.outcome.status == "error" and result.error is not None
    assert result.error.reason == "rate_limit"
    retries = recorder.of("retry_scheduled")
    assert [r.kind for r in retries] == ["rate_limit"] * 3
    assert result.attempts == 5  # key-a, key-b, then three same-model retries
    assert result.payloads and result.payloads[0].is_error
    assert "key-a" not in json.dumps(result.to_dict())
    stats = await ledger(runtime)
    assert {stats["mock:0"]["cooldownReason"], stats["mock:1"]["cooldownReason"]} == {"rate_limit"}
    assert_lifecycle(recorder)


# --------------------------------------------------------------------------- model fallback


async def test_overloaded_primary_falls_back_to_next_model(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.inject(Fault(kind="overloaded", model="main", times=10))
    runtime = make_runtime(server, fallbacks=("backup/mini",))
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert result.ok, result.error
    assert (result.provider, result.model, result.auth_profile_id) == ("backup", "mini", "backup:0")
    decisions = recorder.of("fallback_decision")
    assert [(d.model, d.action, d.reason) for d in decisions] == [
        ("main", "fallback_model", "overloaded")
    ]
    assert recorder.types().count("fallback_attempt_start") == 2
    # the failed turns were set aside: the fallback model continued from the prompt
    roles = [m.role for m in await branch_messages(runtime, result.session_id)]
    assert roles == ["user", "assistant"]
    # the built system prompt leads every request (docs/prompt.md)
    assert [m["role"] for m in server.requests[-1].body["messages"]] == ["system", "user"]
    # overloaded is the provider's problem, not the key's: nothing on the ledger
    stats = await ledger(runtime)
    assert "cooldownReason" not in stats.get("mock:0", {})
    assert_lifecycle(recorder)


async def test_small_context_window_is_blocked_and_falls_back(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    runtime = make_runtime(server, window=8_000, fallbacks=("backup/mini",))
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert result.ok and result.model == "mini"
    decision = recorder.of("fallback_decision")[0]
    assert "context window too small (8000 tokens)" in decision.error
    assert all(r.model == "mini" for r in server.requests)


async def test_small_context_window_without_fallback_fails_cleanly(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    runtime = make_runtime(server, window=8_000)
    result = await runtime.run("hello")
    assert not result.ok and result.outcome.status == "error"
    assert "context window too small" in (result.error.message if result.error else "")
    assert server.requests == []


# --------------------------------------------------------------------------- overflow chain


async def seed_history(runtime: Runtime, session_id: str, turns: int, size: int) -> None:
    """Write ``turns`` user/assistant pairs of ``size`` characters each to the session."""
    session = await runtime.session_store.open_or_create(session_id, cwd=str(Path.cwd()))
    try:
        for index in range(turns):
            await session.append_message(UserMessage(content=f"note {index}: " + "x" * size))
            await session.append_message(
                AssistantMessage(
                    content=[{"type": "text", "text": f"ack {index} " + "y" * size}],
                    api="openai-completions",
                    provider="mock",
                    model="main",
                )
            )
        await session.flush()
    finally:
        await session.aclose()


async def test_overflow_compacts_then_retries(tmp_path: Path, make_runtime: Any) -> None:
    # the catalog says 64k, the server really allows 3 000 tokens: the run learns the limit
    # from the error, compacts (the summarizer is the same small model, fed in chunks) and
    # answers
    with FaultInjectingOpenAIServer(models={"main": 3_000, "mini": 64_000}, keys=KEYS) as server:
        runtime = make_runtime(server)
        await seed_history(runtime, "s-overflow", turns=6, size=1_200)
        recorder = Recorder()
        result = await runtime.run("and now?", session_id="s-overflow", on_event=recorder)
        assert result.ok, result.error
        assert result.text.startswith("You said: and now?")
        assert recorder.decisions()[:3] == ["adjust_window", "compact", "done"]
        (start,) = recorder.of("compaction_start")
        (end,) = recorder.of("compaction_end")
        assert start.trigger == "overflow" and end.compacted
        assert end.tokens_after < end.tokens_before
        assert result.compactions == 1
        outcomes = [r.outcome for r in server.requests]
        assert outcomes[0] == "overflow" and "summary" in outcomes and outcomes[-1] == "ok"
        messages = await branch_messages(runtime, "s-overflow")
        assert messages[0].role == "compactionSummary"
        assert [m.role for m in messages[-2:]] == ["user", "assistant"]
        assert any(e["type"] == "compaction" for e in file_entries(result.session_file or ""))
        # overflow is not the key's fault
        assert "cooldownReason" not in (await ledger(runtime)).get("mock:0", {})
        assert_lifecycle(recorder)


async def test_overflow_with_oversized_tool_result_truncates_after_compaction(
    tmp_path: Path, make_runtime: Any
) -> None:
    # the 28 kB tool result passes the pre-prompt check and the per-request guard of the
    # 64k window, but the provider keeps refusing (without saying its limit): compaction
    # helps once, then has nothing left to summarize, then the tool result is truncated
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as server:
        runtime = make_runtime(server, agent={"compaction_model": "backup/mini"})
        refusal = {
            "error": {
                "message": "prompt is too long for this deployment",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        }
        server.inject(Fault(kind="status", status=400, body=refusal, model="main", times=2))
        session = await runtime.session_store.open_or_create("s-trunc", cwd=str(Path.cwd()))
        await session.append_message(UserMessage(content="read the log"))
        await session.append_message(
            AssistantMessage(
                content=[{"type": "toolCall", "id": "call_1", "name": "read_log", "arguments": {}}],
                api="openai-completions",
                provider="mock",
                model="main",
                stop_reason="toolUse",
            )
        )
        await session.append_message(
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="read_log",
                content=[{"type": "text", "text": "line of log output\n" * 1_500}],
            )
        )
        await session.flush()
        await session.aclose()
        recorder = Recorder()
        result = await runtime.run("summarize it", session_id="s-trunc", on_event=recorder)
        assert result.ok, result.error
        assert recorder.decisions() == ["compact", "compact", "truncate", "done"]
        assert [e.compacted for e in recorder.of("compaction_end")] == [True, False]
        (truncated,) = recorder.of("tool_results_truncated")
        assert truncated.truncated == 1
        messages = await branch_messages(runtime, "s-trunc")
        tool_results = [m for m in messages if m.role == "toolResult"]
        assert tool_results and len(tool_results[0].text()) < 20_000
        # the original result is still in the file (on the old branch)
        originals = [
            e
            for e in file_entries(result.session_file or "")
            if e.get("type") == "message" and e["message"]["role"] == "toolResult"
        ]
        assert max(len(json.dumps(e)) for e in originals) > 28_000


async def test_overflow_after_in_attempt_compaction_retries_once_without_compacting(
    tmp_path: Path, make_runtime: Any
) -> None:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as server:
        # summaries come from another model, so the injected overflow hits the turn itself
        runtime = make_runtime(server, window=20_000, agent={"compaction_model": "backup/mini"})
        # history beyond the 20k window: the pre-prompt check compacts inside the attempt
        await seed_history(runtime, "s-pre", turns=12, size=4_000)
        server.inject(Fault(kind="context_overflow", model="main", times=1))
        recorder = Recorder()
        result = await runtime.run("continue", session_id="s-pre", on_event=recorder)
        assert result.ok, result.error
        starts = recorder.of("compaction_start")
        assert [s.trigger for s in starts] == ["preemptive"], recorder.types()
        retry = [d for d in recorder.of("attempt_decision") if d.action == "retry"]
        assert retry and "without additional compaction" in retry[0].explanation
        assert recorder.decisions()[-1] == "done"


async def test_overflow_that_cannot_be_fixed_surfaces_context_overflow(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.inject(Fault(kind="context_overflow", model="main", times=20))
    runtime = make_runtime(server)
    recorder = Recorder()
    result = await runtime.run("hi", on_event=recorder)
    assert not result.ok
    assert result.error is not None and result.error.kind in (
        "context_overflow",
        "compaction_failure",
    )
    assert result.payloads[0].is_error and "Context overflow" in (result.payloads[0].text or "")
    assert recorder.decisions()[-1] == "surface_error"
    assert_lifecycle(recorder)


# --------------------------------------------------------------------------- timeouts


async def test_idle_timeout_with_full_prompt_compacts_and_retries(
    tmp_path: Path, make_runtime: Any
) -> None:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys=KEYS) as server:
        runtime = make_runtime(server, window=20_000)
        await seed_history(runtime, "s-slow", turns=7, size=4_000)  # ~70% of the window
        server.inject(Fault(kind="hang", model="main", times=1))
        recorder = Recorder()
        result = await runtime.run(
            "go on", session_id="s-slow", idle_timeout_s=0.5, on_event=recorder
        )
        assert result.ok, result.error
        ends = recorder.of("attempt_end")
        assert ends[0].idle_timed_out and ends[0].timed_out
        assert [s.trigger for s in recorder.of("compaction_start")] == ["timeout"]
        assert "compact" in recorder.decisions()


async def test_idle_timeout_breaker_stops_runaway_attempts(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    keys = tuple(f"k{i}" for i in range(6))
    for key in keys:
        server.set_key(key, "ok")
    server.inject(Fault(kind="hang", model="main", times=10))
    runtime = make_runtime(server, keys=keys)
    recorder = Recorder()
    result = await runtime.run("hi", idle_timeout_s=0.2, on_event=recorder)
    assert not result.ok
    assert result.error is not None and result.error.kind == "retry_limit"
    assert "breaker tripped" in result.error.message
    assert result.attempts == 5
    assert result.payloads[0].text == (
        "Request failed after repeated internal retries. Please try again, or use /new to "
        "start a fresh session."
    )
    assert result.outcome.liveness_state == "blocked"


async def test_attempt_timeout_surfaces_a_timeout_outcome(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.inject(Fault(kind="hang", model="main", times=10))
    runtime = make_runtime(server, keys=("key-a",))
    recorder = Recorder()
    result = await runtime.run("hi", timeout_s=0.4, on_event=recorder)
    assert not result.ok and result.outcome.status == "timeout"
    assert result.error is not None and result.error.kind == "timeout"
    assert "timed out after 0.4s" in result.error.message
    assert recorder.of("attempt_end")[0].timed_out
    assert_lifecycle(recorder)


# --------------------------------------------------------------------------- directed retries


async def test_reasoning_only_answer_is_retried_with_instruction(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.inject(Fault(kind="reasoning_only", model="main", times=1))
    runtime = make_runtime(server)
    recorder = Recorder()
    result = await runtime.run("explain", on_event=recorder)
    assert result.ok and result.text
    assert [r.kind for r in recorder.of("retry_scheduled")] == ["reasoning_only"]
    second = server.requests[-1].body["messages"][-1]["content"]
    assert REASONING_ONLY_RETRY_INSTRUCTION in second
    assert recorder.of("attempt_start")[1].additions == ["reasoning_only"]


async def test_empty_answer_is_retried_with_instruction(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.inject(Fault(kind="empty", model="main", times=1))
    runtime = make_runtime(server)
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert result.ok and result.text
    assert [r.kind for r in recorder.of("retry_scheduled")] == ["empty_response"]
    assert EMPTY_RESPONSE_RETRY_INSTRUCTION in server.requests[-1].body["messages"][-1]["content"]
    # the rewound prompt is not sent twice
    users = [m for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    assert len(users) == 1


async def test_retry_limit_returns_the_retry_limit_payload(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.inject(Fault(kind="reasoning_only", model="main", times=10))
    runtime = make_runtime(
        server, agent={"run_retries": {"base": 1, "per_profile": 0, "min": 2, "max": 2}}
    )
    recorder = Recorder()
    result = await runtime.run("explain", on_event=recorder)
    assert not result.ok and result.error is not None
    assert result.error.kind == "retry_limit"
    assert result.error.message == "Exceeded retry limit after 2 attempts (max=2)."
    assert result.attempts == 2
    assert "repeated internal retries" in (result.payloads[0].text or "")


async def test_cut_stream_is_retried_on_the_next_profile(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.inject(Fault(kind="cut_stream", model="main", times=1))
    runtime = make_runtime(server)
    recorder = Recorder()
    result = await runtime.run("hello there", on_event=recorder)
    assert result.ok, result.error
    assert result.attempts == 2
    assert recorder.of("attempt_end")[0].stop_reason == "error"


async def test_rejected_thinking_level_is_downgraded(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.inject(
        Fault(
            kind="status",
            status=400,
            model="main",
            body={
                "error": {
                    "message": "reasoning_effort 'high' is not supported by this model",
                    "type": "invalid_request_error",
                    "code": "unsupported_value",
                }
            },
        )
    )
    runtime = make_runtime(server, reasoning=True)
    recorder = Recorder()
    result = await runtime.run("think hard", thinking_level="high", on_event=recorder)
    assert result.ok, result.error
    assert "downgrade_thinking" in recorder.decisions()
    assert [s.thinking_level for s in recorder.of("attempt_start")] == ["high", "medium"]
    assert server.requests[-1].body.get("reasoning_effort") == "medium"


async def test_format_error_surfaces_without_rotation(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    server.inject(
        Fault(
            kind="status",
            status=400,
            model="main",
            body={
                "error": {
                    "message": "Invalid 'messages[0].content': expected a string.",
                    "type": "invalid_request_error",
                    "code": "invalid_value",
                }
            },
        )
    )
    runtime = make_runtime(server)
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert not result.ok
    assert recorder.of("profile_rotated") == []
    assert result.attempts == 1
    assert "cooldownReason" not in (await ledger(runtime)).get("mock:0", {})


# --------------------------------------------------------------------------- gates and aborts


class Blocker:
    @hookimpl
    def before_agent_run(self, prompt: str, **_: Any) -> RunBlock | None:
        return RunBlock("no secrets here") if "password" in prompt else None


async def test_before_agent_run_blocks_without_calling_the_model(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    runtime = make_runtime(server, plugins=(Blocker(),))
    recorder = Recorder()
    result = await runtime.run("my password is hunter2", on_event=recorder)
    assert not result.ok and result.error is not None and result.error.kind == "blocked"
    assert result.outcome.stop_reason == "hook_block"
    assert server.requests == []
    assert recorder.types() == ["run_start", "run_end"]


async def test_external_abort_ends_the_run_as_aborted(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    import anyio

    server.inject(Fault(kind="hang", model="main", times=1))
    runtime = make_runtime(server)
    controller = AbortController()
    recorder = Recorder()

    async def abort_soon() -> None:
        await anyio.sleep(0.3)
        controller.abort()

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_soon)
        result = await runtime.run("hi", abort_signal=controller.signal, on_event=recorder)
    assert not result.ok
    assert result.outcome.reason == "aborted" and result.error is not None
    assert result.attempts == 1
    messages = await branch_messages(runtime, result.session_id)
    assert isinstance(messages[1], AssistantMessage) and messages[1].stop_reason == "aborted"
    assert_lifecycle(recorder)


async def test_session_key_is_backfilled_and_reused(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    runtime = make_runtime(server)
    first = await runtime.run("one", session_key="chat:42")
    second = await runtime.run("two", session_key="chat:42")
    assert first.session_id == second.session_id
    third = await runtime.run("three", session_id=first.session_id)
    assert third.session_key == "chat:42"
    roles = [m.role for m in await branch_messages(runtime, first.session_id)]
    assert roles == ["user", "assistant"] * 3
    assert "You said: one" in server.requests[-1].body["messages"][2]["content"]  # [0]: system


async def test_unknown_model_is_a_clear_error(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    from openclaw_runtime._exceptions import OpenClawRuntimeError

    runtime = make_runtime(server)
    with pytest.raises(OpenClawRuntimeError, match="nope"):
        await runtime.run("hi", model="mock/nope")


# --------------------------------------------------------------------------- steering


async def test_subagent_results_steer_the_next_successful_turn_exactly_once(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    from openclaw_runtime.runner.steering import (
        STEERING_PROMPT_PREAMBLE,
        SubagentRunRecord,
        upsert_subagent_run,
    )

    runtime = make_runtime(server, keys=("key-a",))
    record = SubagentRunRecord.completed(
        run_id="child-1",
        requester_session_key="chat:7",
        created_at=1_000,
        ended_at=2_000,
        task="look up the release date",
        result_text="The release is on 2026-12-24.",
    )
    await upsert_subagent_run(runtime.steering_store, record)

    # the first turn fails: the result must go back to the queue, not be lost
    server.inject(Fault(kind="server_error", model="main", times=1))
    failed = await runtime.run("status?", session_key="chat:7")
    assert not failed.ok
    first_prompt = server.requests[0].body["messages"][-1]["content"]
    assert first_prompt.startswith(STEERING_PROMPT_PREAMBLE.split("\n")[0])
    assert "The release is on 2026-12-24." in first_prompt
    runs = await runtime.steering_store.load()
    assert runs["child-1"].delivery.status == "pending"

    # the next turn carries it and acks it
    ok = await runtime.run("status now?", session_key="chat:7")
    assert ok.ok, ok.error
    content = server.requests[-1].body["messages"][-1]["content"]
    assert "The release is on 2026-12-24." in content and content.endswith("status now?")
    runs = await runtime.steering_store.load()
    assert runs["child-1"].delivery.status == "delivered"

    # ... and only once
    again = await runtime.run("thanks", session_key="chat:7")
    assert again.ok
    assert "2026-12-24" not in server.requests[-1].body["messages"][-1]["content"]


async def test_post_compaction_tool_loop_is_stopped(tmp_path: Path, make_runtime: Any) -> None:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as server:
        runtime = make_runtime(server, agent={"compaction_model": "backup/mini"})
        await seed_history(runtime, "s-loop", turns=6, size=8_000)
        server.inject(Fault(kind="context_overflow", model="main", times=1))
        for _ in range(5):
            server.enqueue(Reply(tool_calls=[("get_weather", {"city": "Paris"})], model="main"))
        recorder = Recorder()
        result = await runtime.run(
            "weather?", session_id="s-loop", tools=[get_weather], on_event=recorder
        )
        assert not result.ok and result.error is not None
        assert result.error.kind == "post_compaction_loop"
        assert recorder.types().count("tool_execution_start") == 3
        assert (
            "repeated the same tool calls 3 times"
            in recorder.of("attempt_decision")[-1].explanation
        )
        assert result.payloads[0].is_error


async def test_open_sessions_see_turns_written_by_another_runtime(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    # two runtimes (think: two worker processes) share one state directory
    first = make_runtime(server)
    second = make_runtime(server)
    one = await first.run("from the first worker", session_id="shared")
    two = await second.run("from the second worker", session_id="shared")
    three = await first.run("and back", session_id="shared")
    assert one.ok and two.ok and three.ok
    sent = [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    assert sent == ["from the first worker", "from the second worker", "and back"]
    roles = [m.role for m in await branch_messages(first, "shared")]
    assert roles == ["user", "assistant"] * 3


async def test_a_stated_context_limit_is_remembered_by_later_runs(
    tmp_path: Path, make_runtime: Any
) -> None:
    with FaultInjectingOpenAIServer(models={"main": 3_000}, keys=KEYS) as server:
        runtime = make_runtime(server)
        await seed_history(runtime, "s-learn", turns=6, size=1_200)
        first = await runtime.run("first", session_id="s-learn")
        assert first.ok and runtime.learned_context_windows == {"mock/main": 3_000}
        await seed_history(runtime, "s-learn-2", turns=6, size=1_200)
        served = len(server.requests)
        recorder = Recorder()
        second = await runtime.run("second", session_id="s-learn-2", on_event=recorder)
        assert second.ok
        # planned with 3 000 from the start: compacted before sending, no failed request
        assert [r.outcome for r in server.requests[served:]].count("overflow") == 0
        assert [s.trigger for s in recorder.of("compaction_start")] == ["preemptive"]


async def test_fallback_after_a_tool_ran_continues_instead_of_rerunning_it(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    calls: list[str] = []

    @tool
    async def book_table(city: str) -> str:
        """Book a table (a side effect)."""
        calls.append(city)
        # from now on the primary is down: its next call (the final answer) fails
        server.inject(Fault(kind="overloaded", model="main", times=5))
        return f"booked in {city}"

    runtime = make_runtime(server, keys=("key-a",), fallbacks=("backup/mini",))
    recorder = Recorder()
    result = await runtime.run("book_table in Lisbon please", tools=[book_table], on_event=recorder)
    assert result.ok and result.model == "mini", result.error
    assert calls == ["Lisbon"]
    assert [r.model for r in server.requests] == ["main", "main", "mini"]
    assert [s.mode for s in recorder.of("attempt_start")] == ["prompt", "continue"]
    assert "booked in Lisbon" in result.text
    roles = [m.role for m in await branch_messages(runtime, result.session_id)]
    assert roles == ["user", "assistant", "toolResult", "assistant"]


# --------------------------------------------------------------------------- broken plugins


class BrokenEngine:
    """A context engine that raises in every method."""

    info = ContextEngineInfo(id="broken", name="Broken", owns_compaction=True)

    async def ingest(self, params: Any) -> Any:
        raise RuntimeError("ingest exploded")

    async def assemble(self, params: Any) -> Any:
        raise KeyError("index missing")

    async def after_turn(self, params: Any) -> None:
        raise RuntimeError("after_turn exploded")

    async def compact(self, params: Any) -> Any:
        raise RuntimeError("compact exploded")


class BrokenEnginePlugin:
    @hookimpl
    def register_context_engines(self, register: Any) -> None:
        register("broken", BrokenEngine)

    @hookimpl
    def on_agent_event(self, event: Any, session_id: Any) -> None:
        raise RuntimeError("observer exploded")


async def test_a_context_engine_that_raises_everywhere_never_fails_a_run(
    tmp_path: Path, make_runtime: Any
) -> None:
    with FaultInjectingOpenAIServer(models={"main": 3_000}, keys=KEYS) as server:
        runtime = make_runtime(server, plugins=(BrokenEnginePlugin(),))
        runtime.config.context_engine = "broken"
        await seed_history(runtime, "s-broken", turns=6, size=1_200)
        recorder = Recorder()
        # assemble raises, after_turn raises, and the overflow's compaction goes through the
        # broken engine too: the quarantine falls back to the legacy engine each time
        result = await runtime.run(
            "get_weather for Paris", session_id="s-broken", tools=[get_weather], on_event=recorder
        )
        assert result.ok, result.error
        assert "Sunny, 21 C in" in result.text
        assert [e.compacted for e in recorder.of("compaction_end")] == [True]
        quarantined = {q.operation for q in runtime.context_engines.list_quarantines()}
        assert "assemble" in quarantined
        engine = await runtime.resolve_context_engine()
        assert engine.info.id == "legacy"  # info reflects the fallback
        faults = {f.hook for f in runtime.hooks.faults}
        assert "on_agent_event" in faults  # a raising observer is recorded, not fatal
        runtime.context_engines.clear_quarantine()
        assert runtime.context_engines.list_quarantines() == []


async def test_a_run_waits_for_deferred_maintenance_of_its_session(
    tmp_path: Path, server: Any, make_runtime: Any
) -> None:
    import anyio

    runtime = make_runtime(server)
    done = runtime.defer_session_maintenance("s-maint")
    recorder = Recorder()
    results: list[Any] = []

    async def run() -> None:
        results.append(await runtime.run("hi", session_id="s-maint", on_event=recorder))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.sleep(0.2)
        # started, but not queued for its lanes while the maintenance runs
        assert recorder.types() == ["run_start"] and server.requests == []
        done()
    assert results[0].ok
    assert "lane_wait" in recorder.types()
    await runtime.run("again", session_id="s-maint")  # nothing pending any more
