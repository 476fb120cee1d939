"""The sanitizer pipeline: order, policy, determinism, idempotence, purity, images, scale."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_runtime import hookimpl
from openclaw_runtime.messages import load_message
from openclaw_runtime.transcript import (
    SessionManager,
    TranscriptPolicy,
    resolve_transcript_policy,
    run_transcript_sanitizers,
)
from openclaw_runtime.transcript.images import sanitize_session_messages_images
from openclaw_runtime.transcript.sanitize import (
    BUILTIN_SANITIZERS,
    sanitize_session_history,
    strip_stale_assistant_usage_before_latest_compaction,
)

POLICIES = {
    "anthropic": resolve_transcript_policy("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
    "anthropic-new": resolve_transcript_policy(
        "anthropic-messages", "anthropic", "claude-opus-4-6"
    ),
    "gemini": resolve_transcript_policy("google-generative-ai", "google", "gemini-2.5-pro"),
    "strict-openai": resolve_transcript_policy("openai-completions", "vllm", "qwen3"),
    "responses": resolve_transcript_policy("openai-responses", "openai", "gpt-5"),
    "plain": TranscriptPolicy(api="x", provider="y", model_id="z"),
}


def call(call_id, name="read"):
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {"p": 1}}


def messy_history():
    """A transcript with one of every problem the pipeline fixes."""
    return [
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "assistant first"}],
            "stopReason": "stop",
            "timestamp": 1,
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "  "},
                {"type": "image", "data": "", "mimeType": "image/png"},
            ],
            "timestamp": 2,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "unsigned"},
                {"type": "thinking", "thinking": "signed", "thinkingSignature": "c2ln"},
                call("c1"),
                call("c2", "bad name!"),
            ],
            "stopReason": "toolUse",
            "usage": {"input": 5, "output": 6, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 11},
            "timestamp": 3,
        },
        {"role": "user", "content": "interrupting", "timestamp": 4},
        {
            "role": "toolResult",
            "toolCallId": "orphan",
            "toolName": "x",
            "content": [],
            "isError": False,
            "timestamp": 5,
        },
        {"role": "compactionSummary", "summary": "s", "tokensBefore": 10, "timestamp": 6},
        {"role": "assistant", "content": [call("c3")], "stopReason": "error", "timestamp": 7},
        {
            "role": "toolResult",
            "toolCallId": "c3",
            "toolName": "read",
            "content": [{"type": "text", "text": "r"}],
            "details": {"big": True},
            "isError": False,
            "timestamp": 8,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "latest"},
                {"type": "text", "text": "answer"},
            ],
            "stopReason": "stop",
            "timestamp": 9,
        },
    ]


def as_models(messages):
    return [load_message(m) for m in messages]


def wire(messages):
    return [m if isinstance(m, dict) else m.to_dict() for m in messages]


def encoded(messages):
    return orjson.dumps(wire(messages))


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("models", [False, True])
def test_pipeline_is_deterministic_idempotent_and_pure(policy_name, models):
    policy = POLICIES[policy_name]
    history = as_models(messy_history()) if models else messy_history()
    before = copy.deepcopy(wire(history))
    once = sanitize_session_history(history, policy)
    assert wire(history) == before  # no input mutation
    assert encoded(sanitize_session_history(history, policy)) == encoded(once)  # determinism
    assert encoded(sanitize_session_history(once, policy)) == encoded(once)  # idempotence


def test_models_and_dicts_sanitize_to_the_same_content():
    policy = POLICIES["anthropic"]
    from_dicts = sanitize_session_history(messy_history(), policy)
    from_models = sanitize_session_history(as_models(messy_history()), policy)
    assert [m["role"] for m in from_dicts] == [m.role for m in from_models]
    assert [m.get("content") for m in from_dicts if m["role"] == "toolResult"] == [
        m.to_dict()["content"] for m in from_models if m.role == "toolResult"
    ]


@pytest.mark.parametrize("policy_name", ["anthropic", "anthropic-new"])
def test_anthropic_pipeline_outcome(policy_name):
    out = sanitize_session_history(messy_history(), POLICIES[policy_name])
    roles = [m["role"] for m in out]
    assert roles == [
        "assistant",
        "user",
        "assistant",
        "toolResult",
        "user",
        "compactionSummary",
        "assistant",
    ]
    tool_turn = out[2]
    # the unsigned block is invalid; the signed one predates the compaction, so its signature is
    # stale, is stripped, and the now unsigned block goes too. The badly named call is dropped
    # and its sibling is answered by a synthetic result.
    assert tool_turn["content"] == [call("c1")]
    assert out[3]["toolCallId"] == "c1" and out[3]["details"] == {
        "openclawSyntheticMissingToolResult": True
    }
    assert out[1]["content"] == [
        {"type": "text", "text": "[session:history] omitted empty image payload"}
    ]
    assert tool_turn["usage"]["totalTokens"] == 0  # stale usage zeroed
    assert out[-1]["content"][0] == {"type": "thinking", "thinking": "latest"}  # latest exempt


def test_gemini_pipeline_bootstraps_assistant_first_history():
    out = sanitize_session_history(messy_history(), POLICIES["gemini"])
    assert out[0] == {"role": "user", "content": "(session bootstrap)", "timestamp": 1}


def test_responses_pipeline_writes_aborted_for_missing_results():
    out = sanitize_session_history(messy_history(), POLICIES["responses"])
    synthetic = [m for m in out if m["role"] == "toolResult"]
    assert synthetic[0]["content"] == [{"type": "text", "text": "aborted"}]


# --------------------------------------------------------------------------- the runner


def tag(label):
    def sanitizer(messages, policy):
        return [*messages, label]

    return sanitizer


def test_runner_order_disabled_and_errors():
    errors = []

    def broken(messages, policy):
        raise RuntimeError("boom")

    def wrong(messages, policy):
        return "not a list"

    specs = [
        ("b", tag("b"), 10),
        ("a", tag("a"), 10),
        ("c", tag("c")),
        ("first", tag("first"), 1),
        ("bad", broken, 5),
        ("wrong", wrong, 6),
    ]
    policy = TranscriptPolicy(api="x", provider="y", model_id="z", disabled=frozenset({"c"}))
    out = run_transcript_sanitizers(
        [], policy, specs, on_error=lambda *e: errors.append(e), max_passes=1
    )
    assert out == ["first", "a", "b"]
    assert [(name, type(exc).__name__) for name, _plugin, exc in errors] == [
        ("bad", "RuntimeError"),
        ("wrong", "TypeError"),
    ]
    with pytest.raises(RuntimeError, match="boom"):
        run_transcript_sanitizers([], policy, [("bad", broken)])


def test_enabled_forces_a_builtin_on():
    messages = [
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "a"}],
        },
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
    ]
    plain = POLICIES["plain"]
    assert sanitize_session_history(messages, plain)[0]["content"][0]["type"] == "thinking"
    forced = replace(plain, enabled=frozenset({"drop_thinking_blocks"}))
    assert sanitize_session_history(messages, forced)[0]["content"] == [
        {"type": "text", "text": "a"}
    ]
    off = replace(POLICIES["anthropic"], disabled=frozenset({"tool_use_result_pairing"}))
    dangling = [{"role": "assistant", "content": [call("z")]}]
    assert sanitize_session_history(dangling, off) == dangling


def test_allowed_tool_names_travel_on_the_policy():
    policy = resolve_transcript_policy(
        "openai-responses", "openai", "gpt-5", allowed_tool_names=["read"]
    )
    messages = [
        {
            "role": "assistant",
            "content": [call("k", "read"), call("x", "write")],
            "stopReason": "toolUse",
        }
    ]
    out = sanitize_session_history(messages, policy)
    assert [b["id"] for b in out[0]["content"]] == ["k"]


def test_hook_register_transcript_sanitizers_builtins(runtime_factory):
    class Plugin:
        @hookimpl
        def register_transcript_sanitizers(self, register):
            register("acme_marker", tag("acme"), order=95)

    runtime = runtime_factory(plugins=[("acme", Plugin())])
    ordered = runtime.components.transcript_sanitizers.ordered()
    builtin = [(r.name, r.order) for r in ordered if r.plugin == "builtin.transcript"]
    assert builtin == [(spec.name, spec.order) for spec in BUILTIN_SANITIZERS]
    assert ordered[-1].name == "acme_marker"
    out = run_transcript_sanitizers([], POLICIES["plain"], ordered, max_passes=1)
    assert out == ["acme"]


# --------------------------------------------------------------------------- pieces


PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.mark.parametrize(
    ("block", "replacement"),
    [
        ({"type": "image", "data": PNG_1X1, "mimeType": "image/png"}, None),
        (
            {"type": "image", "data": PNG_1X1[:20] + "\n" + PNG_1X1[20:], "mimeType": "image/png"},
            "canonical",
        ),
        (
            {"type": "image", "data": "", "mimeType": "image/png"},
            "[session:history] omitted empty image payload",
        ),
        (
            {"type": "image", "data": "not base64!", "mimeType": "image/png"},
            "[session:history] omitted image payload: invalid base64",
        ),
        (
            {"type": "image", "data": PNG_1X1},
            "[session:history] omitted image payload: missing data or mimeType",
        ),
        (
            {"type": "image", "data": "A" * 4000, "mimeType": "image/png"},
            "[session:history] omitted image payload: Error: Image could not be reduced below 0MB (got 0.00MB)",
        ),
    ],
)
def test_image_limits(block, replacement):
    message = {"role": "toolResult", "toolCallId": "c", "toolName": "t", "content": [block]}
    (out,) = sanitize_session_messages_images([message], max_bytes=2048)
    if replacement is None:
        assert out is message
    elif replacement == "canonical":
        assert out["content"][0]["data"] == PNG_1X1
    else:
        assert out["content"] == [{"type": "text", "text": replacement}]


def test_blank_blocks_and_empty_turns():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": " "}]},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
        {"role": "assistant", "content": [], "providerReplay": {"k": 1}},
        {"role": "toolResult", "toolCallId": "c", "toolName": "t", "content": []},
    ]
    out = sanitize_session_messages_images(messages)
    assert out[0]["content"] == [{"type": "text", "text": "[empty content omitted]"}]
    assert out[1] == messages[2]  # the empty assistant is dropped, provider-owned replay kept
    assert out[2]["content"] == [{"type": "text", "text": "[empty content omitted]"}]


def test_stale_usage_is_zeroed_by_time_or_position():
    usage = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3}
    messages = [
        {"role": "assistant", "content": [], "usage": usage, "timestamp": 10},
        {"role": "compactionSummary", "summary": "s", "tokensBefore": 1, "timestamp": 20},
        {"role": "assistant", "content": [], "usage": usage, "timestamp": 15},
        {"role": "assistant", "content": [], "usage": usage, "timestamp": 30},
    ]
    out = strip_stale_assistant_usage_before_latest_compaction(messages)
    assert [m.get("usage", {}).get("totalTokens") for m in out] == [0, None, 0, 3]
    assert messages[0]["usage"] is usage and usage["totalTokens"] == 3


# --------------------------------------------------------------------------- properties


def message_strategy():
    block = st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, st.sampled_from(["", " ", "x", "answer"])),
        st.builds(
            lambda s: {
                "type": "thinking",
                "thinking": "t",
                **({"thinkingSignature": s} if s is not None else {}),
            },
            st.sampled_from([None, "", "sig"]),
        ),
        st.builds(
            lambda i, n: {"type": "toolCall", "id": i, "name": n, "arguments": {}},
            st.sampled_from(["a", "b", ""]),
            st.sampled_from(["read", "bad name", ""]),
        ),
    )
    assistant = st.builds(
        lambda blocks, stop, ts: {
            "role": "assistant",
            "content": blocks,
            "stopReason": stop,
            "timestamp": ts,
        },
        st.lists(block, max_size=3),
        st.sampled_from(["stop", "toolUse", "error", "aborted"]),
        st.integers(0, 20),
    )
    user = st.builds(
        lambda c, ts: {"role": "user", "content": c, "timestamp": ts},
        st.sampled_from(["", "hi", "q"]),
        st.integers(0, 20),
    )
    result = st.builds(
        lambda i, ts: {
            "role": "toolResult",
            "toolCallId": i,
            "toolName": "read",
            "content": [{"type": "text", "text": "r"}],
            "isError": False,
            "timestamp": ts,
        },
        st.sampled_from(["a", "b", "zz"]),
        st.integers(0, 20),
    )
    summary = st.builds(
        lambda ts: {
            "role": "compactionSummary",
            "summary": "s",
            "tokensBefore": 1,
            "timestamp": ts,
        },
        st.integers(0, 20),
    )
    return st.lists(st.one_of(assistant, user, result, summary), max_size=10)


@settings(max_examples=150, deadline=None)
@given(history=message_strategy(), policy_name=st.sampled_from(sorted(POLICIES)))
def test_pipeline_properties_on_random_histories(history, policy_name):
    policy = POLICIES[policy_name]
    before = json.dumps(history)
    once = sanitize_session_history(history, policy)
    assert json.dumps(history) == before
    assert encoded(sanitize_session_history(history, policy)) == encoded(once)
    assert encoded(sanitize_session_history(once, policy)) == encoded(once)


# --------------------------------------------------------------------------- scale


def test_hundred_thousand_entries_load_and_sanitize(tmp_path):
    path = tmp_path / "big.jsonl"
    lines = [
        json.dumps(
            {
                "type": "session",
                "version": 3,
                "id": "big",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": "/",
            }
        )
    ]
    parent = None
    for index in range(100_000):
        turn = index % 4
        if turn == 0:
            message = {"role": "user", "content": f"question {index}", "timestamp": index}
        elif turn == 1:
            message = {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": f"c{index}", "name": "read", "arguments": {}}
                ],
                "stopReason": "toolUse",
                "timestamp": index,
            }
        elif turn == 2:
            message = {
                "role": "toolResult",
                "toolCallId": f"c{index - 1}",
                "toolName": "read",
                "content": [{"type": "text", "text": "ok"}],
                "isError": False,
                "timestamp": index,
            }
        else:
            message = {
                "role": "assistant",
                "content": [{"type": "text", "text": f"answer {index}"}],
                "stopReason": "stop",
                "timestamp": index,
            }
        entry_id = f"{index:08x}"
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": "2026-01-01T00:00:01.000Z",
                    "message": message,
                }
            )
        )
        parent = entry_id
    lines[50_001] = lines[50_001][:40]  # one damaged line in the middle
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    manager = SessionManager.open_sync(path)
    assert len(manager.get_entries()) == 99_999
    assert manager.repair_report.dropped_lines == 1
    branch = manager.get_branch()
    assert len(branch) == 100_000 - 50_001  # the branch starts after the missing entry
    context = manager.build_session_context(materialize=False)
    out = sanitize_session_history(context.messages, POLICIES["strict-openai"])
    roles = [m["role"] for m in out]
    assert roles[:4] == ["user", "assistant", "toolResult", "assistant"]
    assert roles.count("toolResult") == roles.count("assistant") // 2


def test_pipeline_reaches_a_fixed_point_where_one_openclaw_pass_does_not():
    # Dropping the malformed call ends the "tool turn in progress" that kept its reasoning.
    history = [
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "t"}, call("a", "bad name")],
            "stopReason": "stop",
            "timestamp": 0,
        },
        {
            "role": "toolResult",
            "toolCallId": "a",
            "toolName": "read",
            "content": [{"type": "text", "text": "r"}],
            "isError": False,
            "timestamp": 0,
        },
    ]
    policy = POLICIES["strict-openai"]
    single = run_transcript_sanitizers(history, policy, BUILTIN_SANITIZERS, max_passes=1)
    assert single[-1]["content"] == [{"type": "thinking", "thinking": "t"}]
    stable = sanitize_session_history(history, policy)
    assert stable[-1]["content"] == [{"type": "text", "text": "[assistant reasoning omitted]"}]
    assert sanitize_session_history(stable, policy) == stable


def test_failing_sanitizer_is_reported_once_per_run():
    errors = []

    def broken(messages, policy):
        raise ValueError("nope")

    def grow(messages, policy):
        return messages if len(messages) >= 3 else [*messages, "x"]

    out = run_transcript_sanitizers(
        [],
        POLICIES["plain"],
        [("broken", broken), ("grow", grow)],
        on_error=lambda *e: errors.append(e[0]),
    )
    assert out == ["x", "x", "x"]
    assert errors == ["broken"]


# --------------------------------------------------------------------------- policy resolution

FLAGS = (
    "sanitize_mode",
    "preserve_signatures",
    "drop_thinking_blocks",
    "drop_reasoning_from_history",
    "apply_google_turn_ordering",
    "validate_gemini_turns",
    "validate_anthropic_turns",
    "allow_synthetic_tool_results",
)


@pytest.mark.parametrize(
    ("api", "provider", "model", "expected"),
    [
        (
            "anthropic-messages",
            "anthropic",
            "claude-sonnet-4-5",
            ("full", True, True, False, False, False, True, True),
        ),
        (
            "anthropic-messages",
            "anthropic",
            "claude-opus-4-6",
            ("full", True, False, False, False, False, True, True),
        ),
        (
            "anthropic-messages",
            "anthropic",
            "claude-sonnet-4-6",
            ("full", True, False, False, False, False, True, True),
        ),
        (
            "bedrock-converse-stream",
            "amazon-bedrock",
            "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
            ("full", True, True, False, False, False, True, True),
        ),
        (
            "google-generative-ai",
            "google",
            "gemini-2.5-pro",
            ("full", False, False, False, True, True, False, True),
        ),
        (
            "openai-completions",
            "vllm",
            "qwen3",
            ("images-only", False, False, True, True, True, True, False),
        ),
        (
            "openai-completions",
            "moonshot",
            "kimi-k2-thinking",
            ("images-only", False, False, False, True, True, True, False),
        ),
        (
            "openai-responses",
            "openai",
            "gpt-5",
            ("images-only", False, False, False, False, False, False, True),
        ),
        (
            "openai-responses",
            "openrouter",
            "anthropic/claude-sonnet-4",
            ("images-only", False, False, False, False, False, True, True),
        ),
        (
            "custom-api",
            "custom",
            "model",
            ("images-only", False, False, False, False, False, False, False),
        ),
    ],
)
def test_resolve_transcript_policy(api, provider, model, expected):
    policy = resolve_transcript_policy(api, provider, model)
    assert tuple(getattr(policy, flag) for flag in FLAGS) == expected
    assert policy.repair_tool_use_result_pairing is True
    assert (policy.api, policy.provider, policy.model_id) == (api, provider, model)


def test_reasoning_models_keep_reasoning_on_completions():
    policy = resolve_transcript_policy("openai-completions", "vllm", "qwen3", model_reasoning=True)
    assert policy.drop_reasoning_from_history is False
