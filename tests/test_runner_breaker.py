"""The idle-timeout cost-runaway breaker (spec §11.1, seed 001)."""

from __future__ import annotations

import pytest

from openclaw_runtime.runner.breaker import (
    MAX_CONSECUTIVE_IDLE_TIMEOUTS_BEFORE_OUTPUT,
    IdleTimeoutBreakerState,
    format_idle_timeout_breaker_message,
    has_completed_model_progress_for_idle_breaker,
    step_idle_timeout_breaker,
)


def test_cap_is_five():
    assert MAX_CONSECUTIVE_IDLE_TIMEOUTS_BEFORE_OUTPUT == 5


@pytest.mark.parametrize(
    ("count", "idle", "progress", "expected"),
    [
        (0, True, False, 1),  # wedged provider candidate
        (3, True, False, 4),
        (4, True, True, 0),  # alive but slow tail
        (4, False, True, 0),  # clean progress
        (4, False, False, 4),  # non-timeout error: neither poisons nor resets
        (0, False, False, 0),
        (0, False, True, 0),
    ],
)
def test_decision_table(count, idle, progress, expected):
    step = step_idle_timeout_breaker(
        IdleTimeoutBreakerState(count), idle_timed_out=idle, completed_model_progress=progress
    )
    assert step.consecutive == expected
    assert step.state.consecutive_idle_timeouts_before_output == expected


@pytest.mark.parametrize(
    ("count_before", "cap", "tripped"),
    [
        (3, 5, False),  # 4 < 5
        (4, 5, True),  # reaches the cap
        (9, 5, True),  # beyond the cap stays tripped
        (0, 1, True),  # cap 1 trips on the first idle timeout
        (100, 0, False),  # cap 0 disables the breaker
    ],
)
def test_tripped_when_count_reaches_positive_cap(count_before, cap, tripped):
    step = step_idle_timeout_breaker(
        IdleTimeoutBreakerState(count_before),
        idle_timed_out=True,
        completed_model_progress=False,
        cap=cap,
    )
    assert step.tripped is tripped


def test_five_consecutive_idle_timeouts_trip_the_default_breaker():
    state = IdleTimeoutBreakerState()
    trips = []
    for _ in range(5):
        step = step_idle_timeout_breaker(state, idle_timed_out=True, completed_model_progress=False)
        state = step.state
        trips.append(step.tripped)
    assert trips == [False, False, False, False, True]


@pytest.mark.parametrize("output_tokens", [0, 1, 5_000])
def test_billed_partial_output_is_not_progress(output_tokens):
    step = step_idle_timeout_breaker(
        IdleTimeoutBreakerState(4),
        idle_timed_out=True,
        completed_model_progress=False,
        output_tokens=output_tokens,
    )
    assert step.consecutive == 5
    assert step.tripped


def test_state_is_not_mutated():
    state = IdleTimeoutBreakerState(2)
    step_idle_timeout_breaker(state, idle_timed_out=True, completed_model_progress=False)
    assert state.consecutive_idle_timeouts_before_output == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"idle_timed_out": 1, "completed_model_progress": False}, TypeError, "idle_timed_out"),
        (
            {"idle_timed_out": True, "completed_model_progress": None},
            TypeError,
            "completed_model_progress",
        ),
        ({"idle_timed_out": True, "completed_model_progress": False, "cap": -1}, ValueError, "cap"),
        (
            {"idle_timed_out": True, "completed_model_progress": False, "cap": 2.5},
            ValueError,
            "cap",
        ),
        (
            {"idle_timed_out": True, "completed_model_progress": False, "output_tokens": "5"},
            TypeError,
            "output_tokens",
        ),
    ],
)
def test_bad_input_is_named(kwargs, error, name):
    with pytest.raises(error, match=name):
        step_idle_timeout_breaker(IdleTimeoutBreakerState(), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "progress"),
    [
        ({}, False),
        ({"assistant_texts": ["", "   \n"]}, False),
        ({"assistant_texts": ["done"]}, True),
        ({"tool_meta_count": 1}, True),
        ({"client_tool_call_count": 1}, True),
        ({"outbound_delivery_evidence": True}, True),
        ({"completed_item_count": 2}, True),
    ],
)
def test_completed_model_progress(kwargs, progress):
    assert has_completed_model_progress_for_idle_breaker(**kwargs) is progress


def test_breaker_message_is_seed_001_text():
    assert format_idle_timeout_breaker_message(5) == (
        "Idle-timeout cost-runaway breaker tripped: 5 consecutive idle timeouts without "
        "completed model progress (cap=5). Halting further attempts to bound paid model calls. "
        "See issue #76293."
    )
