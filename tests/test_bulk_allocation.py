"""``transcript.load.bulk_allocation``: the GC paused during a session load, and what a large
load built moved straight to the oldest generation (never thawing what a process froze)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from openclaw_runtime.transcript.load import PROMOTE_AT, bulk_allocation, promotes_bulk


@pytest.fixture(autouse=True)
def _gc_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:  # pragma: no cover - the suite runs with the GC on
        gc.disable()


@pytest.mark.parametrize(
    ("young", "frozen", "expected"),
    [
        (0, 0, False),
        (PROMOTE_AT - 1, 0, False),
        (PROMOTE_AT, 0, True),
        (300_000, 0, True),
        (PROMOTE_AT, 1, False),  # something is frozen: the move would thaw it
        (300_000, 50_000, False),
    ],
)
def test_promotes_bulk_table(young: int, frozen: int, expected: bool) -> None:
    assert promotes_bulk(young, frozen) is expected


def _in_generation(obj: object, generation: int) -> bool:
    return any(item is obj for item in gc.get_objects(generation=generation))


def test_a_large_load_goes_straight_to_the_oldest_generation() -> None:
    gc.collect()
    with bulk_allocation():
        assert not gc.isenabled()
        built = [[index] for index in range(PROMOTE_AT + 5_000)]
    assert gc.isenabled()
    assert gc.get_count()[0] < PROMOTE_AT  # the young generation no longer holds the load
    assert _in_generation(built, 2)
    assert _in_generation(built[-1], 2)
    assert built[123] == [123]  # moved, not touched


def test_a_small_load_stays_young() -> None:
    gc.collect()
    with bulk_allocation():
        built = [[index] for index in range(100)]
    assert gc.isenabled()
    assert not _in_generation(built, 2)


def test_the_freeze_count_is_asked_only_after_a_large_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``gc.get_freeze_count()`` walks every frozen object; a process that froze its heap
    (a pre-fork server) must not pay that walk on every small load (a fresh session)."""
    asked: list[int] = []
    real = gc.get_freeze_count

    def counting() -> int:
        asked.append(1)
        return real()

    monkeypatch.setattr(gc, "get_freeze_count", counting)
    gc.collect()
    with bulk_allocation():
        small = [[index] for index in range(100)]
    assert asked == []
    with bulk_allocation():
        large = [[index] for index in range(PROMOTE_AT + 5_000)]
    assert asked == [1]
    assert small[5] == [5] and _in_generation(large, 2)


def test_nothing_frozen_is_thawed() -> None:
    gc.collect()
    kept = [[1], [2]]
    gc.freeze()  # a pre-fork server froze its objects
    frozen = gc.get_freeze_count()
    assert frozen > 0
    with bulk_allocation():
        built = [[index] for index in range(PROMOTE_AT + 5_000)]
    # still frozen (a thaw empties the permanent generation; frozen objects may only die)
    assert 0 < gc.get_freeze_count() <= frozen
    assert not _in_generation(kept, 2)  # still frozen (in no generation)
    assert not _in_generation(built, 2)


def test_a_disabled_gc_stays_disabled_and_untouched() -> None:
    gc.disable()
    with bulk_allocation():
        built = [[index] for index in range(PROMOTE_AT + 5_000)]
    assert not gc.isenabled()
    assert gc.get_count()[0] >= PROMOTE_AT  # no move: the caller owns the GC
    assert len(built) == PROMOTE_AT + 5_000
