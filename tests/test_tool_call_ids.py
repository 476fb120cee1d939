"""Issue 15 §5: tool-call ids minted by another API are rewritten to the replay target's rules.

Table tests for the pure functions of ``openclaw_runtime.transcript.tool_call_ids`` (OpenClaw's
``normalizeToolCallId`` / ``sanitizeToolCallIdsForCloudCodeAssist`` rules), then a session
holding OpenAI Responses ``call_…|fc_…`` ids continued over real HTTP against the fault
server, on asyncio and trio: every id in the request body fits Chat Completions' 40
characters and every tool result still answers its call.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer
from openclaw_runtime.testing.random_tool_loops import RandomToolLoop
from openclaw_runtime.transcript.tool_call_ids import (
    ToolCallIdMode,
    ToolCallIdRule,
    normalize_tool_call_id,
    normalize_tool_call_ids,
    tool_call_id_mode,
)
from tests.run_support import openai_config
from tests.test_openai_request_memo import GPT

#: A Responses-API id as OpenClaw stores it: ``call_<24>|fc_<64>`` (~90 characters).
CALL_A = "call_sE22kQ9vXw3LmN8pRt5YbZ1c|fc_0b65" + "a1" * 30
#: Same call part, another item: must not collapse onto CALL_A.
CALL_B = "call_sE22kQ9vXw3LmN8pRt5YbZ1c|fc_0b65" + "b2" * 30
OPENAI_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
STRICT9_RE = re.compile(r"^[A-Za-z0-9]{9}$")


# --------------------------------------------------------------------------- one id


@pytest.mark.parametrize(
    ("raw", "mode", "expected"),
    [
        ("call_abc", "openai", "call_abc"),  # valid: unchanged
        ("call_abc|fc_1", "openai", "call_abc_fc_1"),  # short pipe id: both parts kept
        ("call_a+b/c|fc_=1", "openai", "call_a_b_c_fc__1"),  # unsafe characters become _
        ("call_abc|", "openai", "call_abc"),  # empty item part
        ("x" * 40, "openai", "x" * 40),  # exactly at the limit
        ("toolu_01ABC", "keep", "toolu_01ABC"),
        ("call_" + "z" * 200, "keep", "call_" + "z" * 200),
        ("abcDEF123", "strict9", "abcDEF123"),  # already 9 alphanumerics
        ("call_abc-DEF_123xyz", "strict9", "callabcDE"),  # first 9 alphanumerics
    ],
)
def test_normalize_one_id(raw: str, mode: ToolCallIdMode, expected: str) -> None:
    assert normalize_tool_call_id(raw, mode) == expected


@pytest.mark.parametrize("raw", [CALL_A, "x" * 41, "call_" + "q" * 400, "a|" + "b" * 90])
def test_long_ids_fit_40_chars_and_end_in_a_hash_of_the_raw_id(raw: str) -> None:
    out = normalize_tool_call_id(raw, "openai")
    assert OPENAI_ID_RE.match(out), out
    assert re.search(r"_[0-9a-f]{8}$", out), out
    assert out.startswith(raw.split("|")[0][:31])  # the readable call part leads
    assert normalize_tool_call_id(raw, "openai") == out  # deterministic


def test_long_pipe_ids_sharing_a_call_part_stay_distinct() -> None:
    a, b = normalize_tool_call_id(CALL_A, "openai"), normalize_tool_call_id(CALL_B, "openai")
    assert a != b
    assert a.startswith("call_sE22kQ9vXw3LmN8pRt5YbZ1c") and b.startswith(
        "call_sE22kQ9vXw3LmN8pRt5YbZ1c"
    )


@pytest.mark.parametrize("raw", ["ab", "", "|||", "a-b", CALL_A])
def test_strict9_is_always_nine_alphanumerics(raw: str) -> None:
    assert STRICT9_RE.match(normalize_tool_call_id(raw, "strict9"))


@pytest.mark.parametrize(
    ("provider", "model", "compat", "expected"),
    [
        ("openai", "gpt-4o", None, "openai"),
        ("vllm", "qwen3", None, "openai"),
        ("mistral", "mistral-large-latest", None, "strict9"),
        ("openrouter", "mistralai/mistral-small", None, "strict9"),
        ("together", "mixtral-8x7b", None, "strict9"),
        ("vllm", "qwen3", {"tool_call_id_mode": "keep"}, "keep"),
        ("mistral", "m", {"tool_call_id_mode": "openai"}, "openai"),
    ],
)
def test_mode_per_provider(
    provider: str, model: str, compat: dict[str, Any] | None, expected: str
) -> None:
    assert tool_call_id_mode(provider, model, compat) == expected


def test_unknown_mode_in_compat_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"tool_call_id_mode.*'loose'"):
        tool_call_id_mode("p", "m", {"tool_call_id_mode": "loose"})


# --------------------------------------------------------------------------- a transcript


def _call(*ids: str) -> AssistantMessage:
    return AssistantMessage(
        content=[ToolCall(id=i, name="read", arguments={"path": "a"}) for i in ids],
        stop_reason="toolUse",
    )


def _result(call_id: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="read", content=[TextContent(text=call_id[-6:])]
    )


def _pairs(messages: list[Message]) -> list[tuple[str, str]]:
    """(call id, result id) in order: each result after the calls of its turn."""
    calls = [b.id for m in messages if isinstance(m, AssistantMessage) for b in m.tool_calls()]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)]
    return list(zip(calls, results, strict=True))


TRANSCRIPTS: dict[str, list[Message]] = {
    "two long ids sharing a call part": [
        UserMessage(content="go"),
        _call(CALL_A, CALL_B),
        _result(CALL_A),
        _result(CALL_B),
    ],
    "a raw id repeated in a later turn": [
        _call(CALL_A),
        _result(CALL_A),
        _call(CALL_A),
        _result(CALL_A),
    ],
    "a short id equal to another's truncation": [
        _call("y" * 50),
        _result("y" * 50),
        _call("y" * 40),
        _result("y" * 40),
    ],
    "mistral-unfriendly short ids": [
        _call("call_1", "call-1", "call.1"),
        _result("call_1"),
        _result("call-1"),
        _result("call.1"),
    ],
}


@pytest.mark.parametrize("mode", ["openai", "strict9"])
@pytest.mark.parametrize("name", list(TRANSCRIPTS))
def test_transcript_ids_are_valid_unique_and_paired(name: str, mode: ToolCallIdMode) -> None:
    messages = TRANSCRIPTS[name]
    before = [m.model_dump() for m in messages]
    out = normalize_tool_call_ids(messages, mode)
    pattern = STRICT9_RE if mode == "strict9" else OPENAI_ID_RE
    pairs = _pairs(out)
    assert len(pairs) == len(_pairs(messages))
    for call_id, result_id in pairs:
        assert call_id == result_id
        assert pattern.match(call_id), call_id
    call_ids = [c for c, _ in pairs]
    assert len(set(call_ids)) == len(call_ids), call_ids  # collision-free
    assert [m.model_dump() for m in messages] == before  # inputs untouched
    assert [m.model_dump() for m in normalize_tool_call_ids(messages, mode)] == [
        m.model_dump() for m in out
    ]  # deterministic


def test_valid_ids_and_other_messages_are_left_as_they_are() -> None:
    messages: list[Message] = [UserMessage(content="q"), _call("call_ok"), _result("call_ok")]
    out = normalize_tool_call_ids(messages, "openai")
    assert all(a is b for a, b in zip(out, messages, strict=True))


def test_an_orphan_result_is_still_made_valid() -> None:
    (out,) = normalize_tool_call_ids([_result(CALL_A)], "openai")
    assert isinstance(out, ToolResultMessage)
    assert OPENAI_ID_RE.match(out.tool_call_id)


# --------------------------------------------------------------------------- over HTTP


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"m1": 64_000}) as srv:
        yield srv


@pytest.mark.anyio
async def test_responses_ids_in_a_session_replay_within_40_chars_and_paired(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    config = openai_config(
        tmp_path / "state", server.base_url, provider="p", models={"m1": 64_000}, keys=["k-1"]
    )
    runtime = Runtime(config, load_entrypoints=False)
    try:
        manager = await runtime.session_store.create("resp-ids", cwd=str(tmp_path))
        responses = dict(api="openai-responses", provider="openai", model="gpt-5")
        for message in [
            UserMessage(content="read both files"),
            AssistantMessage(
                content=[
                    ToolCall(id=CALL_A, name="read", arguments={"path": "a.txt"}),
                    ToolCall(id=CALL_B, name="read", arguments={"path": "b.txt"}),
                ],
                stop_reason="toolUse",
                **responses,
            ),
            ToolResultMessage(
                tool_call_id=CALL_A, tool_name="read", content=[TextContent(text="alpha")]
            ),
            ToolResultMessage(
                tool_call_id=CALL_B, tool_name="read", content=[TextContent(text="beta")]
            ),
            AssistantMessage(content=[TextContent(text="a=alpha, b=beta")], **responses),
        ]:
            await manager.append_message(message)
        await manager.aclose()
        result = await runtime.run("and now?", session_id="resp-ids")
    finally:
        await runtime.aclose()
    assert result.ok, result.error
    body = server.requests[-1].body
    sent = body["messages"]
    calls = [c for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = [m for m in sent if m["role"] == "tool"]
    assert len(calls) == 2 and len(results) == 2, sent
    call_ids = [c["id"] for c in calls]
    assert all(OPENAI_ID_RE.match(i) for i in call_ids), call_ids
    assert len(set(call_ids)) == 2
    assert [r["tool_call_id"] for r in results] == call_ids
    assert [r["content"] for r in results] == ["alpha", "beta"]  # each result kept its call
    assert CALL_A not in str(body) and CALL_B not in str(body)
    assert sent[-1] == {"role": "user", "content": "and now?"}


# --------------------------------------------------------------------------- Anthropic and Gemini

STRICT_RE = re.compile(r"^[A-Za-z0-9]{1,40}$")


@pytest.mark.parametrize(
    ("raw", "mode", "expected"),
    [
        # OpenClaw tool-call-id.test.ts vectors (strict: alphanumerics only)
        ("call|item:123", "strict", "callitem123"),
        ("whatsapp_login_1768799841527_1", "strict", "whatsapplogin17687998415271"),
        ("call1", "strict", "call1"),
        ("call_" + "x" * 434, "strict", "call" + "x" * 36),  # capped at 40
        ("|:-", "strict", "sanitizedtoolid"),  # nothing alphanumeric left
        # Anthropic: its own ids stay as they are, every other id is strict
        ("toolu_01A09q90qw90lq917835lq9", "anthropic", "toolu_01A09q90qw90lq917835lq9"),
        ("toolu_bdrk_01ABC", "anthropic", "toolu_bdrk_01ABC"),
        ("toolu-01", "anthropic", "toolu01"),  # not the native pattern
        ("call.1", "anthropic", "call1"),
        (CALL_A, "anthropic", "callsE22kQ9vXw3LmN8pRt5YbZ1cfc0b65a1a1a1"),
    ],
)
def test_strict_and_anthropic_ids(raw: str, mode: ToolCallIdMode, expected: str) -> None:
    assert normalize_tool_call_id(raw, mode) == expected


@pytest.mark.parametrize("mode", ["strict", "anthropic"])
@pytest.mark.parametrize("name", list(TRANSCRIPTS))
def test_strict_transcripts_are_valid_unique_and_paired(name: str, mode: ToolCallIdMode) -> None:
    out = normalize_tool_call_ids(TRANSCRIPTS[name], mode)
    pairs = _pairs(out)
    assert len(pairs) == len(_pairs(TRANSCRIPTS[name]))
    for call_id, result_id in pairs:
        assert call_id == result_id
        assert STRICT_RE.match(call_id), call_id
    assert len({c for c, _ in pairs}) == len(pairs)


def test_collisions_get_alphanumeric_suffixes() -> None:
    # OpenClaw: "call_a|b" and "call_a:b" both strip to "callab"; the second must differ
    out = normalize_tool_call_ids([_call("call_a|b", "call_a:b"), _result("call_a|b")], "strict")
    assistant = out[0]
    assert isinstance(assistant, AssistantMessage)
    first, second = (c.id for c in assistant.tool_calls())
    assert first == "callab" and second != first and STRICT_RE.match(second)
    result = out[1]
    assert isinstance(result, ToolResultMessage) and result.tool_call_id == first


def test_native_anthropic_ids_repeated_get_a_fresh_id_the_second_time() -> None:
    native = "toolu_01XYZ"
    out = normalize_tool_call_ids(
        [_call(native), _result(native), _call(native), _result(native)], "anthropic"
    )
    first, second = (c for c, _ in _pairs(out))
    assert first == native
    assert second != native and STRICT_RE.match(second)
    assert [r for _, r in _pairs(out)] == [first, second]


@pytest.mark.parametrize("mode", ["openai", "strict9", "strict", "anthropic", "keep"])
@pytest.mark.parametrize("seed", range(8))
def test_the_rule_applied_in_parts_rewrites_as_at_once(mode: ToolCallIdMode, seed: int) -> None:
    """``ToolCallIdRule`` (what a request memo keeps between requests): a transcript applied
    in parts, with a copy taken at each cut going on apart, gives what the whole transcript
    gives (ids numbered per answer, repeats, late and stray results)."""
    loop = RandomToolLoop(seed, GPT, native="call_", per_turn=seed % 2 == 0)
    for _ in range(60):
        loop.step()
    messages = list(loop.messages)
    expected = normalize_tool_call_ids(messages, mode)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(messages)), min(4, len(messages) - 1)))
    rule, got, copies = ToolCallIdRule(mode), [], []
    for start, end in zip([0, *cuts], [*cuts, len(messages)], strict=True):
        got += rule.apply(messages[start:end])
        copies.append((end, rule.copy()))
    assert got == expected
    for end, copy in copies:  # each copy goes on from its cut as the whole would
        assert got[:end] + copy.apply(messages[end:]) == expected
