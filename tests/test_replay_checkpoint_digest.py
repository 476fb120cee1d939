"""The checkpoint's ids digest is the SHA-256 of every id followed by a newline: computed in
one pass, it equals hashing them one by one (checkpoints written before still match)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from openclaw_runtime.transcript.replay_checkpoint import ids_digest


def one_by_one(entries: Sequence[Mapping[str, Any]]) -> str:
    hasher = hashlib.sha256()
    for entry in entries:
        hasher.update(str(entry.get("id")).encode())
        hasher.update(b"\n")
    return hasher.hexdigest()


@pytest.mark.parametrize(
    "entries",
    [
        [],
        [{"id": "a1b2c3d4"}],
        [{"id": "a"}, {"type": "leaf"}, {"id": 7}, {"id": "é✓"}, {"id": ""}],
        [{"id": f"{index:08x}"} for index in range(2_000)],
    ],
)
def test_the_digest_of_the_ids(entries: list[dict[str, Any]]) -> None:
    assert ids_digest(entries) == one_by_one(entries)


def test_the_order_and_the_boundaries_count() -> None:
    assert ids_digest([{"id": "a"}, {"id": "b"}]) != ids_digest([{"id": "b"}, {"id": "a"}])
    assert ids_digest([{"id": "ab"}]) != ids_digest([{"id": "a"}, {"id": "b"}])
