"""``replay_checkpoint._sources_digest`` (the ids digest of the entry each message was made
from) gives the same answer through its one-walk fast path as through its look-up tables, and
as the two walks it replaces (the sources, then their digest), on branches in file order, out
of order, with messages from elsewhere and with entries that made no message."""

from __future__ import annotations

import random
from typing import Any

import pytest

from openclaw_runtime.transcript.replay_checkpoint import (
    _sources_by_tables,
    _sources_digest,
    ids_digest,
)


def _sources(messages: Any, entries: Any, cache: Any) -> list[Any] | None:
    """The walk ``_sources_digest`` replaced (verbatim, session 12)."""
    out = []
    walk = iter(entries)
    found = True
    for message in messages:
        for entry in walk:
            if cache.get(id(entry)) is message:
                out.append(entry)
                break
        else:
            found = False
            break
    return out if found else _sources_by_tables(messages, entries, cache)


def _digest(sources: list[Any] | None) -> str | None:
    return None if sources is None else ids_digest(sources)


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
    tables = _sources_by_tables(messages, entries, cache)
    assert _sources(messages, entries, cache) == tables
    assert _sources_digest(messages, entries, cache) == _digest(tables)
    assert _sources_digest(messages, entries, cache) == _digest(_sources(messages, entries, cache))
    if shape == "in order" and tables:  # (the fast path found them: the digest tells which)
        assert _sources_digest(messages, entries[:-1], cache) == _digest(
            _sources_by_tables(messages, entries[:-1], cache)
        )


def test_an_empty_history_has_no_sources() -> None:
    assert _sources([], [], {}) == []
    assert _sources_digest([], [], {}) == ids_digest([])
