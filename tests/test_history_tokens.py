"""The running token sum of a session's history (``runner.history_tokens``) always equals
the full estimate, measures only what is new, and a restarted process takes the prefix's
sum from the replay checkpoint instead of measuring 10 000 fresh messages."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.context.tokens import (
    estimate_llm_boundary_token_pressure,
    estimate_message_token_pressure,
)
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.runner import history_tokens
from openclaw_runtime.runner.history_tokens import (
    TOKEN_SCHEME,
    HistoryTokens,
    estimate_prompt_tokens,
)
from openclaw_runtime.transcript.replay_checkpoint import (
    checkpoint_path,
    read_checkpoint,
    write_checkpoint,
)
from openclaw_runtime.transcript.store import SessionManager
from tests.run_support import ProbeProvider, probe_config
from tests.test_transcript_incremental import History


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    measured: list[Any] = []
    original = history_tokens.estimate_message_token_pressure

    def measure(message: Any) -> int:
        measured.append(message)
        return original(message)

    monkeypatch.setattr(history_tokens, "estimate_message_token_pressure", measure)
    return measured


class _Session:
    """Any weakly referenceable object stands for a session without a checkpoint."""


def _full(messages: list[Any]) -> int:
    return estimate_llm_boundary_token_pressure(messages, system_prompt="sys", prompt="go")


@pytest.mark.parametrize("seed", range(6))
def test_the_running_sum_equals_the_full_estimate(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured = _counting(monkeypatch)
    history = History(seed)
    session = _Session()
    seen = 0
    for step in range(25):
        history.turn()
        messages = list(history.messages)
        if step == 12:
            # another history (a compaction replaced the messages): summed afresh
            messages = [m.model_copy() for m in messages[len(messages) // 2 :]]
        before = len(measured)
        got = estimate_prompt_tokens(session, messages, system_prompt="sys", prompt="go")
        assert got == _full(messages)
        if step in (0, 12, 13):
            assert len(measured) - before == len(messages)
        else:
            assert len(measured) - before == len(messages) - seen  # only the new ones
        seen = len(messages)


def test_a_shorter_or_changed_history_is_summed_afresh() -> None:
    state = HistoryTokens()
    messages = [UserMessage(content=f"message {'x' * index}") for index in range(10)]
    full = [estimate_llm_boundary_token_pressure([m], prompt="") for m in messages]
    assert state.total(messages) > 0
    assert state.total(messages[:4]) == HistoryTokens().total(messages[:4])
    swapped = [messages[0], UserMessage(content="other"), *messages[2:]]
    assert state.total(swapped) == HistoryTokens().total(swapped)
    assert full  # the per-message estimates exist (sanity of the fixture)


def test_a_prefix_is_known_only_for_the_history_summed() -> None:
    state = HistoryTokens()
    messages = [UserMessage(content="m" * index) for index in range(1, 9)]
    state.total(messages)
    assert state.prefix(messages[:5]) == HistoryTokens().total(messages[:5])
    assert state.prefix([UserMessage(content="new"), *messages[1:5]]) is None
    assert state.prefix([*messages, UserMessage(content="beyond")]) is None


def test_a_vouched_prefix_is_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    measured = _counting(monkeypatch)
    messages = [UserMessage(content="q" * index) for index in range(1, 11)]
    state = HistoryTokens()
    assert state.total(messages, seed=lambda _: (6, 1_000)) == 1_000 + sum(
        HistoryTokens().total([m]) for m in messages[6:]
    )
    assert measured[:4] == messages[6:]
    # the seed is asked once: a later other history is measured in full
    other = [UserMessage(content="z")]
    assert state.total(other, seed=lambda _: (1, 5)) == HistoryTokens().total(other)
    # below the vouched part no prefix sum is known
    state = HistoryTokens()
    state.total(messages, seed=lambda _: (6, 1_000))
    assert state.prefix(messages[:3]) is None
    assert state.prefix(messages[:6]) == 1_000


async def _previous_process(state: Path) -> None:
    probe = ProbeProvider()
    runtime = Runtime(probe_config(state), plugins=[probe.plugin()], load_entrypoints=False)
    for index in range(40):
        result = await runtime.run(f"question {index}", session_id="s1")
        assert result.ok, result
    await runtime.aclose()


async def _cold_estimate(path: Path) -> tuple[int, int]:
    """A restarted process's first estimate of the session: (estimate, messages measured)."""
    session = SessionManager.open_sync(path, durability="none")
    messages = session.build_session_context().messages
    measured_before = len(_MEASURED)
    got = estimate_prompt_tokens(session, messages, system_prompt="sys", prompt="go")
    assert got == _full(messages)
    await session.aclose()
    return got, len(_MEASURED) - measured_before


_MEASURED: list[Any] = []


@pytest.mark.anyio
async def test_a_restarted_process_takes_the_prefix_sum_from_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    await _previous_process(state)
    path = state / "sessions" / "s1.jsonl"
    checkpoint = read_checkpoint(checkpoint_path(path))
    assert checkpoint is not None and checkpoint.messages > 40
    assert checkpoint.token_scheme == TOKEN_SCHEME and checkpoint.tokens is not None

    monkeypatch.setattr(history_tokens, "estimate_message_token_pressure", _measure_into)
    _, measured = await _cold_estimate(path)
    total = len(SessionManager.open_sync(path).build_session_context().messages)
    assert measured == total - checkpoint.messages  # nothing before the checkpoint

    # a wrong sum with a file that changed is not used: measured in full, still right
    wrong = dataclasses.replace(checkpoint, tokens=checkpoint.tokens + 999)
    write_checkpoint(checkpoint_path(path), wrong)
    path.write_bytes(path.read_bytes().replace(b"question 0", b"question X", 1))
    _, measured = await _cold_estimate(path)
    assert measured == total

    # another estimator version's sum is not used either
    other = state / "other"
    await _previous_process(other)
    other_path = other / "sessions" / "s1.jsonl"
    recorded = read_checkpoint(checkpoint_path(other_path))
    assert recorded is not None
    monkeypatch.setattr(history_tokens, "TOKEN_SCHEME", "boundary-chars/other")
    _, measured = await _cold_estimate(other_path)
    assert measured == total


def _measure_into(message: Any) -> int:
    _MEASURED.append(message)
    return estimate_message_token_pressure(message)
