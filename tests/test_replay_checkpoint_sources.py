"""``replay_checkpoint._sources`` (which entry each message was made from) gives the same
answer through its one-walk fast path as through its look-up tables, on branches in file
order, out of order, with messages from elsewhere and with entries that made no message."""

from __future__ import annotations

import random
from typing import Any

import pytest

from openclaw_runtime.transcript.replay_checkpoint import _sources, _sources_by_tables


@pytest.mark.parametrize("seed", range(60))
def test_same_sources_as_the_tables(seed: int) -> None:
    rng = random.Random(seed)
    entries = [{"id": f"e{i}"} for i in range(rng.randint(0, 40))]
    made = {id(entry): object() for entry in entries if rng.random() < 0.8}
    cache: dict[int, Any] = dict(made)
    for entry in entries:
        if rng.random() < 0.1:
            cache[id(entry)] = None  # an entry that contributes no message
    in_order = [cache[id(e)] for e in entries if cache.get(id(e)) is not None]
    messages = [m for m in in_order if rng.random() < 0.7]
    shape = rng.choice(["in order", "shuffled", "foreign", "fewer entries"])
    if shape == "shuffled":
        rng.shuffle(messages)
    elif shape == "foreign" and messages:
        messages.insert(rng.randrange(len(messages) + 1), object())
    elif shape == "fewer entries":
        entries = entries[: rng.randint(0, len(entries))]
    assert _sources(messages, entries, cache) == _sources_by_tables(messages, entries, cache)


def test_an_empty_history_has_no_sources() -> None:
    assert _sources([], [], {}) == []
