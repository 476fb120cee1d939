"""How ``FileLaneStore`` writes a lane's record: the first one straight into its new file (no
temporary file and rename), later ones replaced atomically, a half-written first record read
back as the state before it (no record)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from openclaw_runtime.runner import file_lanes
from openclaw_runtime.runner.file_lane_policy import FileLaneClaimant
from openclaw_runtime.runner.file_lanes import FileLaneStore, create_record


def claimant(name: str) -> FileLaneClaimant:
    return FileLaneClaimant(name, os.getpid(), "host-a", None)


@pytest.fixture
def replaced(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The records written through a temporary file and a rename."""
    calls: list[Path] = []
    atomic_write = file_lanes.atomic_write

    def counting(path: Path, content: bytes, **kwargs: object) -> None:
        calls.append(Path(path))
        atomic_write(path, content, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(file_lanes, "atomic_write", counting)
    return calls


def test_the_first_record_is_created_in_place_later_ones_replaced(
    tmp_path: Path, replaced: list[Path]
) -> None:
    store = FileLaneStore(tmp_path, host="host-a")
    first = store.step("session:k", claimant("a"), 1)
    assert first is not None and first.granted
    path = store.path("session:k")
    assert replaced == []  # no temporary file for a record that did not exist
    record = orjson.loads(path.read_bytes())
    assert record["lane"] == "session:k" and [h["id"] for h in record["holders"]] == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, f"{path.name}.lock"])

    second = store.step("session:k", claimant("b"), 1)  # queues behind a: a change
    assert second is not None and not second.granted
    assert replaced == [path]
    assert [r.id for r in store.read("session:k").queue] == ["b"]

    assert store.release("session:k", "a") and store.release("session:k", "b")
    assert not path.exists() and store.read("session:k").empty


def test_a_half_written_first_record_reads_as_no_record(tmp_path: Path) -> None:
    store = FileLaneStore(tmp_path, host="host-a")
    path = store.path("session:k")
    tmp_path.mkdir(exist_ok=True)
    path.write_bytes(b'{"lane": "session:k", "capa')  # a writer killed mid-create
    step = store.step("session:k", claimant("a"), 1)
    assert step is not None and step.granted  # the lane was free before that record
    aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == b'{"lane": "session:k", "capa'
    assert [h.id for h in store.read("session:k").holders] == ["a"]


def test_create_record_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    assert create_record(path, b"{}") is True
    assert (path.stat().st_mode & 0o777) == 0o600
    assert create_record(path, b'{"x": 1}') is False
    assert path.read_bytes() == b"{}"
