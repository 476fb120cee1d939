"""An append's stamp, id and repair check made cheaper, with the same answers:

* ``iso_timestamp_now`` (the default clock's stamp read from ``time.time_ns``, no
  ``datetime``) against ``iso_timestamp_slow`` of the same instant, over random and edge
  readings in order and out of order; the clock it reads is the one ``datetime.now`` reads;
  ``iso_timestamp()`` is that stamp, and a session's ``clock_stamp`` uses it only for the
  default clock (an injected clock's reading is what stamps its entries);
* ``generate_entry_id`` (its first draw outside the loop) against its previous body over
  every number of collisions, with the same draws;
* ``append_message``'s repair check (``_may_need_repair``) never skips a message that
  ``_loadable_message`` would change.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from openclaw_runtime.transcript import entries
from openclaw_runtime.transcript.append import _loadable_message, _may_need_repair
from openclaw_runtime.transcript.entries import (
    generate_entry_id,
    iso_timestamp,
    iso_timestamp_now,
    iso_timestamp_slow,
)
from openclaw_runtime.transcript.load import clock_stamp, utc_now
from openclaw_runtime.transcript.memory import MemorySessionStore
from openclaw_runtime.transcript.repair import STREAM_ERROR_FALLBACK_TEXT
from openclaw_runtime.transcript.store import JsonlSessionStore

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: readings up to the last instant of year 9999
_LAST_NS = int((datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - _EPOCH).total_seconds()) * 10**9


def _moment(ns: int) -> datetime:
    """The instant ``datetime.now`` would give for a clock reading of ``ns``."""
    return _EPOCH + timedelta(microseconds=ns // 1000)


def _readings(seed: int) -> list[int]:
    rng = random.Random(seed)
    now = time.time_ns()
    out = [0, 1, 999_999, 1_000_000, 999_999_999, 10**9, _LAST_NS, now]
    for _ in range(3_000):
        pick = rng.randrange(4)
        if pick == 0:
            out.append(rng.randrange(_LAST_NS))
        elif pick == 1:  # around now, several per second (the one-slot cache's hits)
            out.append(now + rng.randrange(-5 * 10**9, 5 * 10**9))
        elif pick == 2:  # the edges of a second and of a millisecond
            second = rng.randrange(_LAST_NS // 10**9) * 10**9
            out.append(second + rng.choice([0, 1, 999_999, 1_000_000, 999_999_999]))
        else:
            out.append(out[-1] + rng.randrange(0, 3_000_000))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_iso_timestamp_now_equals_the_slow_formatting(seed: int) -> None:
    readings = _readings(seed)
    for ns in [*readings, *sorted(readings)]:  # out of order, then in order
        assert iso_timestamp_now(ns) == iso_timestamp_slow(_moment(ns)), ns
        assert iso_timestamp_now(ns) == iso_timestamp(_moment(ns)), ns


def test_iso_timestamp_now_reads_the_clock_datetime_now_reads() -> None:
    for _ in range(2_000):
        before = iso_timestamp_slow(datetime.now(UTC))
        stamp = iso_timestamp_now()
        after = iso_timestamp_slow(datetime.now(UTC))
        assert before <= stamp <= after  # the same fixed-width format: text order is time order


def test_iso_timestamp_now_keeps_no_stale_second(monkeypatch: pytest.MonkeyPatch) -> None:
    # the cached second is the reading's, not the last call's: alternate two seconds
    for ns in [5 * 10**9 + 7, 6 * 10**9 + 8, 5 * 10**9 + 999_999_999, 6 * 10**9]:
        assert iso_timestamp_now(ns) == iso_timestamp_slow(_moment(ns))
    monkeypatch.setattr(entries, "_last_epoch_second", [(None, "")])
    assert iso_timestamp_now(0) == "1970-01-01T00:00:00.000Z"


@pytest.mark.anyio
async def test_a_default_clock_session_stamps_with_the_clock() -> None:
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    for n in range(200):
        before = iso_timestamp_slow(datetime.now(UTC))
        entry_id = await session.append_custom_entry("n", {"n": n})
        after = iso_timestamp_slow(datetime.now(UTC))
        stamp = session._tree.by_id[entry_id]["timestamp"]
        assert before <= stamp <= after


def test_the_default_clock_stamps_without_a_datetime_and_others_are_read() -> None:
    assert clock_stamp(utc_now) is iso_timestamp_now
    fixed = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    assert clock_stamp(lambda: fixed)() == "2031-05-06T07:08:09.123Z"
    before = iso_timestamp_slow(datetime.now(UTC))
    assert before <= iso_timestamp() <= iso_timestamp_slow(datetime.now(UTC))


@pytest.mark.anyio
@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
async def test_an_injected_clock_stamps_every_entry(durable: bool, tmp_path: Any) -> None:
    readings = iter(
        datetime(2030, 1, 1, tzinfo=UTC) + timedelta(seconds=n, milliseconds=n) for n in range(99)
    )
    clock = lambda: next(readings)  # noqa: E731
    store: Any = (
        JsonlSessionStore(tmp_path, now=clock) if durable else MemorySessionStore(now=clock)
    )
    session = await store.create("s", cwd="/w")
    ids = [await session.append_custom_entry("n", {"n": n}) for n in range(3)]
    stamps = [session._tree.by_id[entry_id]["timestamp"] for entry_id in ids]
    assert stamps == [
        "2030-01-01T00:00:01.001Z",  # reading 0 stamped the header
        "2030-01-01T00:00:02.002Z",
        "2030-01-01T00:00:03.003Z",
    ]


def _old_generate_entry_id(taken: Mapping[str, Any] | set[str]) -> str:
    """``generate_entry_id`` before this change, verbatim."""
    for _ in range(100):
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            return candidate
    return os.urandom(16).hex()


def _draws(monkeypatch: pytest.MonkeyPatch, seed: int) -> list[int]:
    """``os.urandom`` patched to a repeatable stream; the sizes asked for."""
    rng = random.Random(seed)
    asked: list[int] = []

    def urandom(size: int) -> bytes:
        asked.append(size)
        return bytes(rng.randrange(4) for _ in range(size))  # few values: collisions

    monkeypatch.setattr(os, "urandom", urandom)
    return asked


@pytest.mark.parametrize("seed", range(3))
def test_generate_entry_id_draws_as_before(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    every = {bytes(b).hex() for b in _all_four_byte_values()}
    for taken_count in [0, 1, 2, 10, 100, 255, 256]:
        taken = set(sorted(every)[:taken_count]) if taken_count < 256 else set(every)
        for case in range(20):
            asked_new = _draws(monkeypatch, seed * 1000 + taken_count * 50 + case)
            new = generate_entry_id(taken)
            asked_old = _draws(monkeypatch, seed * 1000 + taken_count * 50 + case)
            old = _old_generate_entry_id(taken)
            assert (new, asked_new) == (old, asked_old)
    # every draw collides: 100 four-byte draws, then a full-length id
    asked = _draws(monkeypatch, seed)
    assert len(generate_entry_id(every)) == 32
    assert asked == [4] * 100 + [16]


def _all_four_byte_values() -> list[list[int]]:
    return [[a, b, c, d] for a in range(4) for b in range(4) for c in range(4) for d in range(4)]


def _wire_dicts(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    roles = ["assistant", "user", "toolResult", "custom", None, 3, "Assistant"]
    reasons = ["stop", "toolUse", "error", "aborted", "length", None, "", 1]
    contents: list[Any] = [
        [],
        " ",
        "",
        "text",
        [{"type": "text", "text": " "}],
        [{"type": "text", "text": "x"}],
        [{"type": "text", "text": " "}, {"type": "text", "text": "x"}],
        [{"type": "image", "data": "A"}],
        None,
        {"type": "text"},
    ]
    out: list[dict[str, Any]] = []
    for _ in range(2_000):
        wire: dict[str, Any] = {}
        if rng.random() < 0.9:
            wire["role"] = rng.choice(roles)
        if rng.random() < 0.8:
            wire["stopReason"] = rng.choice(reasons)
        if rng.random() < 0.9:
            wire["content"] = rng.choice(contents)
        out.append(wire)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_the_repair_check_skips_only_what_needs_no_repair(seed: int) -> None:
    skipped = repaired = 0
    for wire in _wire_dicts(seed):
        if not _may_need_repair(wire):
            skipped += 1
            assert _loadable_message(wire) is wire, wire
        elif _loadable_message(wire) is not wire:
            repaired += 1
    assert skipped and repaired  # both sides of the check were met


@pytest.mark.anyio
async def test_an_empty_error_turn_is_still_written_repaired() -> None:
    from openclaw_runtime.messages import AssistantMessage

    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    await session.append_message(AssistantMessage(content=[], stop_reason="error"))
    await session.append_message(AssistantMessage(content=[], stop_reason="aborted"))
    data = store.export_jsonl("s")
    assert data.count(STREAM_ERROR_FALLBACK_TEXT.encode()) == 1
