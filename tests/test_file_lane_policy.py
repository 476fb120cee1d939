"""The rules of a lane shared across processes (``runner/file_lane_policy.py``), by table."""

from __future__ import annotations

import pytest

from openclaw_runtime.runner.file_lane_policy import (
    WAITER_STALE_AFTER_S,
    FileLaneClaimant,
    FileLaneState,
    LaneRecord,
    beat_file_lane,
    is_stale_lane_record,
    release_file_lane,
    step_file_lane,
)

HOST = "box"
NOW = 1_000.0
ALIVE = {1, 2, 3, 4, 5}


def alive(pid: int) -> bool:
    return pid in ALIVE


def record(
    rid: str, pid: int = 1, *, host: str = HOST, beat: float = NOW, stale: float | None = 60.0
) -> LaneRecord:
    return LaneRecord(rid, pid, host, beat, beat, stale)


def claimant(rid: str, pid: int = 1, stale: float | None = 60.0) -> FileLaneClaimant:
    return FileLaneClaimant(rid, pid, HOST, stale)


@pytest.mark.parametrize(
    ("case", "rec", "stale"),
    [
        ("live pid, fresh beat", record("a", 1), False),
        ("pid gone on this host", record("a", 99), True),
        ("pid gone but another host: cannot tell", record("a", 99, host="other"), False),
        ("beat older than its stale_after", record("a", 1, beat=NOW - 61), True),
        ("beat exactly at the limit", record("a", 1, beat=NOW - 60), False),
        ("old beat on another host", record("a", 99, host="other", beat=NOW - 61), True),
        ("no age limit, live pid", record("a", 1, beat=NOW - 10**6, stale=None), False),
        ("no age limit, pid gone", record("a", 99, beat=NOW, stale=None), True),
        ("beat in the future (clock skew)", record("a", 1, beat=NOW + 500), False),
    ],
)
def test_stale_rule(case, rec, stale):
    assert is_stale_lane_record(rec, now=NOW, host=HOST, pid_alive=alive) is stale, case


def test_first_claimant_of_a_free_lane_holds_it():
    step = step_file_lane(
        FileLaneState(), claimant("a"), capacity=1, now=NOW, host=HOST, pid_alive=alive
    )
    assert step.granted
    assert [r.id for r in step.state.holders] == ["a"] and step.state.queue == ()
    assert step.state.holders[0].stale_after_s == 60.0  # the hold's own limit, not the waiter's


def test_waiters_queue_in_arrival_order_and_are_served_first_come_first_served():
    state = FileLaneState(holders=(record("a", 1),))
    for rid, pid in (("b", 2), ("c", 3)):
        step = step_file_lane(
            state, claimant(rid, pid), capacity=1, now=NOW, host=HOST, pid_alive=alive
        )
        assert not step.granted
        state = step.state
    assert [r.id for r in state.queue] == ["b", "c"]
    assert state.queue[0].stale_after_s == WAITER_STALE_AFTER_S
    state = release_file_lane(state, "a")
    # c polls first, but b arrived first: c keeps waiting
    step = step_file_lane(state, claimant("c", 3), capacity=1, now=NOW, host=HOST, pid_alive=alive)
    assert not step.granted
    step = step_file_lane(
        step.state, claimant("b", 2), capacity=1, now=NOW, host=HOST, pid_alive=alive
    )
    assert step.granted and [r.id for r in step.state.queue] == ["c"]


def test_a_stale_holder_is_reclaimed_and_a_dead_waiter_loses_its_place():
    state = FileLaneState(holders=(record("dead", 99),), queue=(record("gone", 98), record("b", 2)))
    step = step_file_lane(state, claimant("b", 2), capacity=1, now=NOW, host=HOST, pid_alive=alive)
    assert step.granted
    assert [r.id for r in step.reclaimed] == ["dead"]
    assert [r.id for r in step.state.holders] == ["b"] and step.state.queue == ()


def test_a_hung_holder_is_reclaimed_only_after_its_own_limit():
    hung = record("hung", 1, beat=NOW - 100, stale=120.0)
    state = FileLaneState(holders=(hung,))
    step = step_file_lane(state, claimant("b", 2), capacity=1, now=NOW, host=HOST, pid_alive=alive)
    assert not step.granted and step.reclaimed == ()
    step = step_file_lane(
        step.state, claimant("b", 2), capacity=1, now=NOW + 21, host=HOST, pid_alive=alive
    )
    assert step.granted and [r.id for r in step.reclaimed] == ["hung"]


@pytest.mark.parametrize(
    ("holders", "queue_before", "me", "granted"),
    [
        (0, [], "x", True),  # free slots, nobody waits
        (1, [], "x", True),  # 2 of 3 slots free
        (3, [], "x", False),  # full
        (2, ["w"], "x", False),  # one slot left, w arrived first
        (1, ["w"], "x", True),  # two slots left: w and x both fit
    ],
)
def test_counted_semaphore(holders, queue_before, me, granted):
    state = FileLaneState(
        holders=tuple(record(f"h{i}", 1) for i in range(holders)),
        queue=tuple(record(w, 2) for w in queue_before),
    )
    step = step_file_lane(state, claimant(me, 3), capacity=3, now=NOW, host=HOST, pid_alive=alive)
    assert step.granted is granted
    assert len(step.state.holders) <= 3


def test_polling_refreshes_a_waiters_beat_at_most_every_second():
    state = FileLaneState(holders=(record("a", 1),))
    state = step_file_lane(
        state, claimant("b", 2), capacity=1, now=NOW, host=HOST, pid_alive=alive
    ).state
    again = step_file_lane(
        state, claimant("b", 2), capacity=1, now=NOW + 0.5, host=HOST, pid_alive=alive
    )
    assert again.state == state  # nothing to write
    later = step_file_lane(
        state, claimant("b", 2), capacity=1, now=NOW + 2, host=HOST, pid_alive=alive
    )
    assert later.state.queue[0].beat == NOW + 2 and later.state.queue[0].started == NOW


def test_a_waiter_that_stopped_polling_loses_its_place():
    state = FileLaneState(queue=(record("quiet", 1, beat=NOW - 31, stale=30.0),))
    step = step_file_lane(state, claimant("b", 2), capacity=1, now=NOW, host=HOST, pid_alive=alive)
    assert step.granted and step.state.queue == ()


def test_beat_and_release():
    state = FileLaneState(holders=(record("a", 1, beat=NOW - 10),), queue=(record("b", 2),))
    beaten = beat_file_lane(state, "a", now=NOW)
    assert beaten is not None and beaten.holders[0].beat == NOW
    assert beat_file_lane(state, "b", now=NOW) is None  # a waiter holds nothing
    assert beat_file_lane(state, "zzz", now=NOW) is None  # taken over
    assert release_file_lane(state, "b").queue == ()
    assert release_file_lane(release_file_lane(state, "a"), "b").empty


def test_state_round_trips_and_bad_records_are_named():
    state = FileLaneState(holders=(record("a", 1),), queue=(record("b", 2, stale=None),))
    assert FileLaneState.from_dict(state.to_dict()) == state
    with pytest.raises(ValueError, match="'pid'"):
        FileLaneState.from_dict({"holders": [{"id": "a", "pid": "1", "host": "h"}]})
    with pytest.raises(ValueError, match="'queue'"):
        FileLaneState.from_dict({"queue": "nope"})
    with pytest.raises(ValueError, match="'beat'"):
        FileLaneState.from_dict(
            {"holders": [{"id": "a", "pid": 1, "host": "h", "started": 1, "beat": float("nan")}]}
        )


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity"):
        step_file_lane(
            FileLaneState(), claimant("a"), capacity=0, now=NOW, host=HOST, pid_alive=alive
        )


def test_the_largest_capacity_asked_for_applies_while_the_lane_is_busy():
    state = FileLaneState(holders=(record("a", 1),), capacity=2)
    step = step_file_lane(state, claimant("b", 2), capacity=1, now=NOW, host=HOST, pid_alive=alive)
    assert step.granted and step.state.capacity == 2
    idle = release_file_lane(release_file_lane(step.state, "a"), "b")
    fresh = step_file_lane(idle, claimant("c", 3), capacity=1, now=NOW, host=HOST, pid_alive=alive)
    assert fresh.state.capacity == 1  # an idle lane forgets it
