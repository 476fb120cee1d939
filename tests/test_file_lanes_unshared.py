"""``FileLanes.hold`` of a lane held in this process only (the global lane by default) is the
in-process hold itself since session 8 (no async generator around it); shared lanes still go
through the record. The table compares what a block sees and leaves behind either way
(issue 13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.backends.lanes import LaneReentryError
from openclaw_runtime.runner.file_lanes import FileLaneLease, FileLanes
from openclaw_runtime.runner.lanes import InProcessLanes

CASES = [
    # (lane, global_cap_scope, held across processes)
    ("global", "process", False),
    ("main", "process", False),
    ("session:k", "process", True),
    ("global", "machine", True),
    ("session:k", "machine", True),
]


def records(folder: Path) -> list[str]:
    if not folder.exists():
        return []
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


@pytest.mark.anyio
@pytest.mark.parametrize(("lane", "scope", "shared"), CASES)
@pytest.mark.parametrize("capacity", [1, 3])
@pytest.mark.parametrize("timeout_s", [None, 600.0])
async def test_a_hold_gives_the_in_process_lease_or_the_shared_one(
    tmp_path: Path, lane: str, scope: Any, shared: bool, capacity: int, timeout_s: float | None
) -> None:
    folder = tmp_path / "lanes"
    lanes = FileLanes(folder, global_cap_scope=scope)
    reference = InProcessLanes()
    assert lanes.shares(lane) is shared
    async with (
        lanes.hold(lane, capacity=capacity, timeout_s=timeout_s) as lease,
        reference.hold(f"ref-{lane}", capacity=capacity, timeout_s=timeout_s) as expected,
    ):
        assert (len(records(folder)) == 1) is shared  # the shared record while held
        assert isinstance(lease, FileLaneLease) is shared
        if not shared:
            assert type(lease) is type(expected)
        assert (lease.lane, lease.timeout_s) == (lane, timeout_s)
        assert lanes.stats() == {lane: (1, 0)}
        with pytest.raises(LaneReentryError):
            async with lanes.hold(lane, capacity=capacity):
                pass  # pragma: no cover - refused before the block
        lease.heartbeat()
    assert records(folder) == []
    assert lanes.stats() in ({}, {lane: (0, 0)})
