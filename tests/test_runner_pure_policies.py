"""Tables for the orchestrator's pure decisions: entry resolution, attempt input plans and the
recovery chains."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.context.compaction import split_for_summary
from openclaw_runtime.messages import (
    AssistantMessage,
    CustomMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.runner.attempt import collect_attempt_facts, is_idle_timeout_message
from openclaw_runtime.runner.attempt_input import AttemptInputPlan, plan_attempt_input
from openclaw_runtime.runner.entry import (
    ContextWindowInfo,
    evaluate_context_window_guard,
    resolve_context_window_info,
    resolve_initial_run_model_ref,
    resolve_initial_thinking_level,
)
from openclaw_runtime.runner.recovery import (
    OverflowRecoveryState,
    downgrade_thinking_level,
    is_thinking_level_rejection,
    parse_context_overflow_limit,
    resolve_overflow_recovery_step,
    should_compact_after_timeout,
)
from openclaw_runtime.runner.request import RunRequest
from openclaw_runtime.runner.session_index import SessionIndex
from openclaw_runtime.runner.session_ops import set_aside_failed_tail
from openclaw_runtime.transcript.store import JsonlSessionStore

ALIASES = {"fast": "openai/gpt-4o-mini", "Smart": "anthropic/claude-sonnet"}


@pytest.mark.parametrize(
    ("provider", "model", "default", "expected"),
    [
        ("openai", "gpt-4o", "anthropic/x", "openai/gpt-4o"),  # both given: as is
        (None, "fast", "anthropic/x", "openai/gpt-4o-mini"),  # alias
        (None, "smart", None, "anthropic/claude-sonnet"),  # aliases are case-insensitive
        (None, "openai/gpt-4o", None, "openai/gpt-4o"),  # a ref
        (None, "gpt-4o", None, "gpt-4o"),  # a bare id for the catalog to find
        (None, None, "fast", "openai/gpt-4o-mini"),  # the agent default, through aliases
        (None, None, "google/gemini", "google/gemini"),
        (None, None, None, "echo/echo"),  # built-in default
        ("  ", "  ", None, "echo/echo"),  # blanks are absent
    ],
)
def test_initial_model_ref(
    provider: str | None, model: str | None, default: str | None, expected: str
) -> None:
    ref = resolve_initial_run_model_ref(
        provider=provider, model=model, aliases=ALIASES, agent_default=default
    )
    assert ref == expected


def test_provider_without_model_is_an_error() -> None:
    with pytest.raises(ValueError, match="without a model"):
        resolve_initial_run_model_ref(provider="openai", model=None, aliases={}, agent_default=None)


@pytest.mark.parametrize(
    ("requested", "default", "reasoning", "expected"),
    [
        ("high", "low", False, "high"),  # explicit wins, even on a non-reasoning model
        (None, "medium", True, "medium"),
        (None, "medium", False, "off"),  # same default, different model, different result
        ("off", "high", True, "off"),
    ],
)
def test_initial_thinking_level(
    requested: Any, default: Any, reasoning: bool, expected: str
) -> None:
    level = resolve_initial_thinking_level(requested, default=default, model_reasoning=reasoning)
    assert level == expected


@pytest.mark.parametrize(
    ("model_window", "cap", "tokens", "source"),
    [
        (128_000, None, 128_000, "model"),
        (128_000, 64_000, 64_000, "agentContextTokens"),
        (32_000, 64_000, 32_000, "model"),  # a cap above the window does nothing
        (None, None, 200_000, "default"),
        (0, None, 200_000, "default"),
        (float("nan"), 50_000, 50_000, "agentContextTokens"),
    ],
)
def test_context_window_info(model_window: Any, cap: Any, tokens: int, source: str) -> None:
    info = resolve_context_window_info(model_context_window=model_window, agent_context_tokens=cap)
    assert (info.tokens, info.source) == (tokens, source)


@pytest.mark.parametrize(
    ("tokens", "warn", "block"),
    [
        (0, False, False),
        (8_000, True, True),
        (15_999, True, True),
        (16_000, True, False),
        (31_999, True, False),
        (32_000, False, False),
        (200_000, False, False),
    ],
)
def test_context_window_guard(tokens: int, warn: bool, block: bool) -> None:
    guard = evaluate_context_window_guard(ContextWindowInfo(tokens, "model"))
    assert (guard.should_warn, guard.should_block) == (warn, block)


# --------------------------------------------------------------------------- attempt input

P = "the prompt"
I1 = "instruction one"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (dict(first_attempt=True, last_role=None), AttemptInputPlan("prompt", P)),
        (dict(first_attempt=True, last_role="assistant"), AttemptInputPlan("prompt", P)),
        (
            dict(first_attempt=True, last_role="user"),
            AttemptInputPlan("prompt", P, drop_orphan=True),
        ),
        (
            dict(
                first_attempt=False,
                last_role="user",
                last_is_run_prompt=True,
                leaf_is_run_prompt=True,
            ),
            AttemptInputPlan("continue"),
        ),
        (
            dict(
                first_attempt=False,
                last_role="user",
                last_is_run_prompt=True,
                leaf_is_run_prompt=True,
                additions=[I1],
            ),
            AttemptInputPlan("prompt", f"{P}\n\n{I1}", rewind_prompt=True),
        ),
        (
            dict(
                first_attempt=False,
                last_role="user",
                last_is_run_prompt=True,
                leaf_is_run_prompt=False,
                additions=[I1],
            ),
            AttemptInputPlan("prompt", I1),
        ),
        (dict(first_attempt=False, last_role="toolResult"), AttemptInputPlan("continue")),
        (
            dict(first_attempt=False, last_role="toolResult", additions=[I1, "  "]),
            AttemptInputPlan("prompt", I1),
        ),
        (
            dict(first_attempt=False, last_role="assistant", additions=[I1]),
            AttemptInputPlan("prompt", f"{P}\n\n{I1}"),
        ),
        (dict(first_attempt=False, last_role="assistant"), AttemptInputPlan("prompt", P)),
    ],
)
def test_attempt_input_plan(kwargs: dict[str, Any], expected: AttemptInputPlan) -> None:
    params: dict[str, Any] = {
        "base_prompt": P,
        "additions": [],
        "last_is_run_prompt": False,
        "leaf_is_run_prompt": False,
        **kwargs,
    }
    assert plan_attempt_input(**params) == expected


# --------------------------------------------------------------------------- recovery


@pytest.mark.parametrize(
    ("state", "step"),
    [
        (OverflowRecoveryState(), "compact"),
        (OverflowRecoveryState(attempt_compactions=1), "retry_without_compaction"),
        (
            OverflowRecoveryState(attempt_compactions=1, retried_after_in_attempt_compaction=True),
            "compact",
        ),
        (OverflowRecoveryState(overflow_compaction_attempts=2), "compact"),
        (OverflowRecoveryState(overflow_compaction_attempts=3), "surface_overflow"),
        (
            OverflowRecoveryState(overflow_compaction_attempts=3, has_oversized_tool_results=True),
            "truncate_tool_results",
        ),
        (
            OverflowRecoveryState(compaction_exhausted=True, has_oversized_tool_results=True),
            "truncate_tool_results",
        ),
        (
            OverflowRecoveryState(
                compaction_exhausted=True,
                has_oversized_tool_results=True,
                truncation_attempted=True,
            ),
            "surface_overflow",
        ),
        (
            OverflowRecoveryState(compaction_exhausted=True, last_compaction_failed=True),
            "surface_compaction_failure",
        ),
    ],
)
def test_overflow_recovery_steps(state: OverflowRecoveryState, step: str) -> None:
    assert resolve_overflow_recovery_step(state) == step


@pytest.mark.parametrize(
    ("kwargs", "compact"),
    [
        (dict(prompt_tokens=70_000), True),
        (dict(prompt_tokens=65_000), False),  # strictly above 65 %
        (dict(prompt_tokens=90_000, timed_out=False), False),
        (dict(prompt_tokens=90_000, timed_out_during_tool_execution=True), False),
        (dict(prompt_tokens=90_000, timeout_compaction_attempts=2), False),
        (dict(prompt_tokens=90_000, timeout_compaction_attempts=1), True),
        (dict(prompt_tokens=None), False),
    ],
)
def test_timeout_compaction(kwargs: dict[str, Any], compact: bool) -> None:
    params: dict[str, Any] = {
        "timed_out": True,
        "timed_out_during_tool_execution": False,
        "context_window_tokens": 100_000,
        "timeout_compaction_attempts": 0,
        **kwargs,
    }
    assert should_compact_after_timeout(**params) is compact


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        (
            "400 This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens.",
            8192,
        ),
        ("prompt is too long: 215,000 tokens > 200,000 maximum", 200_000),
        (
            "The input token count (1200000) exceeds the maximum number of tokens allowed "
            "(1048576).",
            1_048_576,
        ),
        ("input exceeds the model's maximum context length of 32768 tokens", 32_768),
        ("context_length_exceeded", None),
        (None, None),
    ],
)
def test_provider_stated_context_limit(text: str | None, limit: int | None) -> None:
    assert parse_context_overflow_limit(text) == limit


def test_thinking_downgrade_ladder_and_rejections() -> None:
    ladder = ["max"]
    while (lower := downgrade_thinking_level(ladder[-1])) is not None:  # type: ignore[arg-type]
        ladder.append(lower)
    assert ladder == ["max", "xhigh", "high", "medium", "low", "minimal", "off"]
    assert is_thinking_level_rejection("reasoning_effort 'high' is not supported by this model")
    assert is_thinking_level_rejection("thinking.budget_tokens: must be less than max_tokens")
    assert not is_thinking_level_rejection("429 Rate limit reached")
    assert not is_thinking_level_rejection(None)


# --------------------------------------------------------------------------- facts


def _assistant(*blocks: Any, stop: str = "stop", **extra: Any) -> AssistantMessage:
    return AssistantMessage(content=list(blocks), stop_reason=stop, **extra)  # type: ignore[arg-type]


def test_attempt_facts() -> None:
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}
    messages = [
        UserMessage(content="hi"),
        _assistant(TextContent(text="checking"), call, stop="toolUse"),
        ToolResultMessage(
            tool_call_id="c1", tool_name="read", content=[TextContent(text="boom")], is_error=True
        ),
        _assistant(TextContent(text="done")),
    ]
    facts = collect_attempt_facts(messages)
    assert facts.assistant_texts == ("checking", "done")
    assert [m.tool_name for m in facts.tool_metas] == ["read"]
    assert facts.last_tool_error is not None and facts.last_tool_error.error == "boom"
    assert facts.provider_started and len(facts.usages) == 2
    failed = collect_attempt_facts([_assistant(TextContent(text=""), stop="error")])
    assert failed.assistant_texts == () and not failed.provider_started
    assert is_idle_timeout_message("Stream idle timeout: no data received for 1s (timed out)")
    assert not is_idle_timeout_message("timed out")


def test_summary_chunks_keep_order_and_bound_size() -> None:
    messages = [UserMessage(content="x" * 4_000) for _ in range(5)]
    chunks = split_for_summary(messages, 2_500)
    assert [len(chunk) for chunk in chunks] == [2, 2, 1]
    assert [m for chunk in chunks for m in chunk] == messages
    assert (
        split_for_summary([UserMessage(content="y" * 40_000)], 100)
        == [[UserMessage(content="y" * 40_000, timestamp=0)]]
        or len(split_for_summary([UserMessage(content="y" * 40_000)], 100)) == 1
    )


def test_run_request_rejects_bad_input() -> None:
    with pytest.raises(TypeError, match="prompt must be a str"):
        RunRequest(prompt=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout_s"):
        RunRequest(prompt="x", timeout_s=-1)
    with pytest.raises(ValueError, match="idle_timeout_s"):
        RunRequest(prompt="x", idle_timeout_s=0)
    with pytest.raises(ValueError, match="lock_auth_profile needs auth_profile"):
        RunRequest(prompt="x", lock_auth_profile=True)


# --------------------------------------------------------------------------- storage


def set_aside_contents(folder: Path) -> list[str]:
    return [p.read_text() for p in folder.glob("index.json.corrupt-*")]


@pytest.mark.anyio
async def test_session_index_binds_and_backfills(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "index.json")
    assert await index.lookup_id("k") is None and await index.lookup_key("s1") is None
    await index.bind("telegram:1", "s1")
    await index.bind("telegram:1", "s1")  # idempotent
    await index.bind("slack:9", "s2")
    assert await index.lookup_id("telegram:1") == "s1"
    assert await index.lookup_key("s2") == "slack:9"
    other = SessionIndex(tmp_path / "index.json")  # another process sees the same
    assert (await other.entries()).keys() == {"telegram:1", "slack:9"}
    # a damaged index is set aside (kept byte for byte) and starts empty
    (tmp_path / "index.json").write_text("{not json")
    assert await SessionIndex(tmp_path / "index.json").lookup_id("telegram:1") is None
    assert set_aside_contents(tmp_path) == ["{not json"]
    await index.bind("telegram:1", "s3")
    assert await SessionIndex(tmp_path / "index.json").lookup_id("telegram:1") == "s3"


@pytest.mark.anyio
async def test_failed_tail_is_set_aside_not_deleted(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    session = await store.create("s", cwd=str(tmp_path))
    await session.append_message(UserMessage(content="q"))
    await session.append_message(_assistant(TextContent(text=""), stop="aborted"))
    await session.append_message(CustomMessage(custom_type="note", content="interrupted"))
    before = [e["id"] for e in session.get_entries()]
    assert await set_aside_failed_tail(session) == 2
    assert [m.role for m in session.build_session_context().messages] == ["user"]
    after = [e["id"] for e in session.get_entries() if e["type"] == "message"]
    assert after == before  # a leaf record moved; no message was removed
    assert await set_aside_failed_tail(session) == 0  # nothing left to set aside
    await session.aclose()


def test_post_compaction_loop_guard() -> None:
    from openclaw_runtime.runner.recovery import PostCompactionLoopGuard

    guard = PostCompactionLoopGuard(repeats=3)
    same = [("read", {"path": "a", "n": 1})]
    reordered = [("read", {"n": 1, "path": "a"})]
    assert not guard.observe(same)
    assert not guard.observe(reordered)  # argument order does not matter
    assert guard.observe(same)  # third identical round
    guard = PostCompactionLoopGuard(repeats=3)
    assert not guard.observe(same)
    assert not guard.observe([("read", {"path": "b"})])  # progress resets the count
    assert not guard.observe(same)
    assert not guard.observe([])  # a turn without tool calls resets too
    assert not guard.observe(same)
