"""The persisted sanitizer checkpoint: a cold start resumes from it, with the full pipeline's
result, and ignores it whenever the session, the policy or the sanitizer set changed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from openclaw_runtime.messages import (
    AssistantMessage,
    CompactionSummaryMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.transcript import run_transcript_sanitizers
from openclaw_runtime.transcript.incremental import boundary_holds_after
from openclaw_runtime.transcript.replay_checkpoint import (
    ReplayCheckpoint,
    checkpoint_path,
    key_fingerprint,
    read_checkpoint,
    write_checkpoint,
)
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS, SanitizerSpec
from openclaw_runtime.transcript.store import SessionManager
from tests.test_transcript_incremental import POLICIES, History, dumped

pytestmark = pytest.mark.anyio

Full = Any


def _counting_full(seen: list[int]) -> Full:
    def full(messages: list[Any], policy: Any, sanitizers: Any, *, on_error: Any = None) -> Any:
        seen.append(len(messages))
        return run_transcript_sanitizers(messages, policy, sanitizers, on_error=on_error)

    return full


def _answer(text: str, stamp: int) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)],
        api="openai-completions",
        provider="openai",
        model="gpt-4o",
        timestamp=stamp,
    )


async def _turn(
    session: SessionManager, policy: Any, stamp: int, sanitizers: Any = BUILTIN_SANITIZERS
) -> tuple[list[Any], list[Any], list[int]]:
    """One turn as the runner does it: sanitize the history and the new prompt (returned next
    to the full pipeline's result and the sizes the pipeline ran on), then persist both."""
    prompt = UserMessage(content=f"prompt {stamp}", timestamp=stamp)
    messages = [*session.build_session_context().messages, prompt]
    seen: list[int] = []
    got = session.replay_sanitizer.run(messages, policy, sanitizers, full=_counting_full(seen))
    expected = run_transcript_sanitizers(messages, policy, sanitizers)
    await session.append_message(prompt)
    await session.append_message(_answer(f"answer {stamp}", stamp + 1))
    return dumped(got), dumped(expected), seen


class CleanHistory(History):
    """Turns the pipeline leaves as they are: a question, a tool call and its result, an
    answer."""

    def turn(self) -> None:
        index = len(self.messages)
        self.calls += 1
        call = ToolCall(id=f"call_{self.calls}", name="read", arguments={"path": "a.py"})
        self.messages += [
            UserMessage(content=f"question {index}", timestamp=self.stamp()),
            _answer("", self.stamp()).model_copy(update={"content": [call]}),
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name="read",
                content=[TextContent(text="x = 1")],
                timestamp=self.stamp(),
            ),
            _answer(f"answer {index}", self.stamp()),
        ]


async def _written(path: Path, seed: int | None, policy: Any, turns: int = 30) -> History:
    """A session written by a "previous process": its history, one turn, closed
    (``seed=None``: a clean history)."""
    history = CleanHistory(0) if seed is None else History(seed)
    for _ in range(turns):
        history.turn()
    session = await SessionManager.create(path, session_id=path.stem, cwd="/w", durability="none")
    for message in history.messages:
        await session.append_message(message)
    got, expected, _ = await _turn(session, policy, 10_000_000)
    assert got == expected
    await session.aclose()
    return history


async def _cold(path: Path, policy: Any, sanitizers: Any = BUILTIN_SANITIZERS) -> tuple[int, int]:
    """The first turn of a "restarted process": (messages taken from the checkpoint,
    messages the pipeline ran on: 0 when it did not run, the rest after the checkpoint
    being a clean region, ``transcript.clean_turns``); asserts it equals the full pipeline."""
    session = SessionManager.open_sync(path, durability="none")
    got, expected, seen = await _turn(session, policy, 20_000_000, sanitizers)
    assert got == expected
    restored = session.replay_checkpoint.restored
    await session.aclose()
    return restored, seen[0] if seen else 0


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
async def test_cold_start_resumes_from_the_checkpoint(tmp_path: Path, policy_name: str) -> None:
    policy = POLICIES[policy_name]
    used = 0
    for seed in range(8):
        path = tmp_path / f"s{seed}.jsonl"
        await _written(path, seed, policy)
        checkpoint = read_checkpoint(checkpoint_path(path))
        restored, ran_on = await _cold(path, policy)
        if checkpoint is None:
            assert restored == 0
            continue
        # every message before the checkpoint was left out of the pipeline's run
        assert restored == checkpoint.messages > 0
        total = len(SessionManager.open_sync(path).build_session_context().messages)
        # the rest and the prompt, nothing before (or nothing at all: a clean region)
        assert ran_on in (total - 2 - restored + 1, 0)
        used += 1
    assert used >= 3  # many random sessions have a reusable prefix


@pytest.mark.parametrize("seed", range(6))
async def test_other_writers_appending_keep_the_checkpoint(tmp_path: Path, seed: int) -> None:
    policy = POLICIES["anthropic"]
    path = tmp_path / "s.jsonl"
    history = await _written(path, seed, policy)
    before = read_checkpoint(checkpoint_path(path))
    other = SessionManager.open_sync(path, durability="none")
    start = len(history.messages)
    for _ in range(5):
        history.turn()
    for message in history.messages[start:]:
        await other.append_message(message)
    await other.aclose()
    restored, _ = await _cold(path, policy)
    assert restored == (before.messages if before is not None else 0)


async def test_a_rewrite_of_the_prefix_invalidates_it(tmp_path: Path) -> None:
    # another writer rewrites the file in place, same size: the first user turn is now
    # blank, which the pipeline fills; taking the old prefix as sanitized would be wrong
    policy = POLICIES["openai"]
    path = tmp_path / "s.jsonl"
    await _written(path, None, policy)
    assert read_checkpoint(checkpoint_path(path)) is not None
    data = path.read_bytes()
    assert b'"content":"question 0"' in data
    path.write_bytes(data.replace(b'"content":"question 0"', b'"content":"          "', 1))
    restored, _ = await _cold(path, policy)
    assert restored == 0


async def test_another_policy_or_sanitizer_set_invalidates_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    await _written(path, None, POLICIES["openai"])
    assert read_checkpoint(checkpoint_path(path)) is not None
    copy = tmp_path / "copy.jsonl"
    shutil.copy(path, copy)
    shutil.copy(checkpoint_path(path), checkpoint_path(copy))
    restored, _ = await _cold(path, POLICIES["google"])
    assert restored == 0
    # one built-in stage left out is another sanitizer set
    fewer = [spec for spec in BUILTIN_SANITIZERS if spec.name != "images"]
    restored, _ = await _cold(copy, POLICIES["openai"], fewer)
    assert restored == 0


async def test_plugin_sanitizers_never_use_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    await _written(path, None, POLICIES["openai"])
    assert read_checkpoint(checkpoint_path(path)) is not None
    calls: list[int] = []

    def plugin(messages: list[Any], policy: Any) -> list[Any]:
        calls.append(len(messages))
        return messages

    sanitizers = [*BUILTIN_SANITIZERS, SanitizerSpec("plugin", plugin, 90, "p")]
    restored, ran_on = await _cold(path, POLICIES["openai"], sanitizers)
    assert restored == 0
    assert calls and calls[0] == ran_on  # the whole history went through the plugin


async def test_a_compaction_or_a_moved_leaf_invalidates_it(tmp_path: Path) -> None:
    policy = POLICIES["openai"]
    compacted = tmp_path / "c.jsonl"
    await _written(compacted, None, policy)
    session = SessionManager.open_sync(compacted, durability="none")
    branch = session.get_branch()
    kept = branch[len(branch) // 2]["id"]
    await session.append_compaction("so far", kept, 1_000)
    await session.aclose()
    restored, _ = await _cold(compacted, policy)
    assert restored == 0

    moved = tmp_path / "m.jsonl"
    await _written(moved, None, policy)
    checkpoint = read_checkpoint(checkpoint_path(moved))
    assert checkpoint is not None
    session = SessionManager.open_sync(moved, durability="none")
    branch = [e for e in session.get_branch() if e["type"] == "message"]
    await session.branch(branch[checkpoint.messages // 2]["id"])
    await session.append_message(UserMessage(content="elsewhere", timestamp=30_000_000))
    await session.append_message(_answer("there", 30_000_001))
    await session.aclose()
    restored, _ = await _cold(moved, policy)
    assert restored == 0


async def test_a_branch_after_the_checkpoint_still_uses_it(tmp_path: Path) -> None:
    # the leaf moved back to the checkpoint's last message and the conversation went on
    # from there: the prefix is the same and a new stable boundary follows it
    policy = POLICIES["openai"]
    path = tmp_path / "s.jsonl"
    await _written(path, None, policy)
    checkpoint = read_checkpoint(checkpoint_path(path))
    assert checkpoint is not None
    session = SessionManager.open_sync(path, durability="none")
    entries = [e for e in session.get_branch() if e["type"] == "message"]
    await session.branch(entries[checkpoint.messages - 1]["id"])
    await session.append_message(UserMessage(content="again", timestamp=30_000_000))
    await session.append_message(_answer("sure", 30_000_001))
    await session.aclose()
    restored, _ = await _cold(path, policy)
    assert restored == checkpoint.messages


async def test_a_checkpoint_that_does_not_fit_is_ignored(tmp_path: Path) -> None:
    policy = POLICIES["openai"]
    path = tmp_path / "s.jsonl"
    await _written(path, None, policy)
    side = checkpoint_path(path)
    good = read_checkpoint(side)
    assert good is not None
    # an unreadable side file, one of another format, one claiming more than the file holds
    for content in (b"{not json", orjson.dumps({"format": 99}), b"[]"):
        side.write_bytes(content)
        assert read_checkpoint(side) is None
        assert (await _cold(path, policy))[0] == 0
    # (each cold turn above recorded a new checkpoint at its close)
    good = read_checkpoint(side)
    assert good is not None
    for bigger in (
        ReplayCheckpoint(
            good.fingerprint, good.messages, 10**6, good.file_bytes, good.file_crc, good.ids_digest
        ),
        ReplayCheckpoint(
            good.fingerprint, good.messages, good.entries, 10**9, good.file_crc, good.ids_digest
        ),
        ReplayCheckpoint(
            good.fingerprint, 10**6, good.entries, good.file_bytes, good.file_crc, good.ids_digest
        ),
    ):
        write_checkpoint(side, bigger)
        assert (await _cold(path, policy))[0] == 0
        good = read_checkpoint(side)
        assert good is not None
    # a copy of the session under another id: other header bytes
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes().replace(b'"id":"s"', b'"id":"copy"', 1))
    write_checkpoint(checkpoint_path(copy), good)
    assert (await _cold(copy, policy))[0] == 0


def test_fingerprint_is_stable_and_covers_the_policy() -> None:
    names = tuple((spec.name, spec.order) for spec in BUILTIN_SANITIZERS)
    openai = key_fingerprint((POLICIES["openai"], names))
    assert openai == key_fingerprint((POLICIES["openai"], names))
    assert openai != key_fingerprint((POLICIES["anthropic"], names))
    assert openai != key_fingerprint((POLICIES["openai"], names[:-1]))


def test_boundary_holds_after_checks_the_message_and_what_follows() -> None:
    user = UserMessage(content="q", timestamp=10)
    answer = _answer("a", 11)
    failed = _answer("", 12).model_copy(update={"stop_reason": "error", "content": []})
    summary = CompactionSummaryMessage(summary="s", tokens_before=1, timestamp=20)
    cases = [
        ([user, answer, user, answer], 2, True),
        ([user, answer, user], 2, False),  # no assistant turn after it
        ([user, answer, user, failed], 2, False),  # only a failed one
        ([user, answer, answer, answer], 2, False),  # not a user message
        ([user, answer], 0, False),  # the start is no boundary
        ([summary, answer, user, answer], 2, False),  # kept by the compaction (older)
        (
            [summary, answer, user.model_copy(update={"timestamp": 30}), answer],
            2,
            True,
        ),
    ]
    for messages, index, expected in cases:
        assert boundary_holds_after(messages, index) is expected, (index, expected)
