"""The lane record's fast paths (a claim's first step written straight into a new record, a
release that skips parsing a record this store wrote) against a real second process on the
same lanes folder: neither may lose the other process's claim.

The other process is a small worker script driven line by line over its stdin (``step <id>``,
``release <id>``), answering each command with one JSON line: no sleeps, no timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.runner.file_lane_policy import FileLaneClaimant
from openclaw_runtime.runner.file_lanes import FileLaneStore

REPO = Path(__file__).resolve().parent.parent
LANE = "session:shared"

WORKER = textwrap.dedent(
    """
    import json, os, sys
    from openclaw_runtime.runner.file_lane_policy import FileLaneClaimant
    from openclaw_runtime.runner.file_lanes import FileLaneStore

    store = FileLaneStore(sys.argv[1])
    for line in sys.stdin:
        command, claim = line.split()
        if command == "step":
            claimant = FileLaneClaimant(claim, os.getpid(), store.host, None)
            step = store.step(sys.argv[2], claimant, 1, expect_new=True)
            answer = {"granted": step.granted}
        else:
            answer = {"released": store.release(sys.argv[2], claim)}
        state = store.read(sys.argv[2])
        answer["holders"] = [r.id for r in state.holders]
        answer["queue"] = [r.id for r in state.queue]
        print(json.dumps(answer), flush=True)
    """
)


class Worker:
    def __init__(self, directory: Path) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(directory), LANE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )

    def ask(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the worker process ended"
        return dict(json.loads(line))

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            assert self.process.wait(timeout=60) == 0
        finally:
            self.process.stdout.close()


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Worker]:
    running = Worker(tmp_path)
    try:
        yield running
    finally:
        running.close()


def ids(store: FileLaneStore) -> tuple[list[str], list[str]]:
    state = store.read(LANE)
    return [r.id for r in state.holders], [r.id for r in state.queue]


def test_a_waiter_from_another_process_survives_the_fast_release(
    tmp_path: Path, worker: Worker
) -> None:
    store = FileLaneStore(tmp_path)
    mine = FileLaneClaimant("mine", os.getpid(), store.host, None)
    step = store.step(LANE, mine, 1, expect_new=True)
    assert step is not None and step.granted
    # the other process's first step finds our record: it reads it and queues
    assert worker.ask("step theirs") == {"granted": False, "holders": ["mine"], "queue": ["theirs"]}
    assert store.release(LANE, "mine")  # the record changed since we wrote it: parsed
    assert ids(store) == ([], ["theirs"])
    assert worker.ask("step theirs") == {"granted": True, "holders": ["theirs"], "queue": []}
    assert worker.ask("release theirs") == {"released": True, "holders": [], "queue": []}
    assert not store.path(LANE).exists()


def test_our_waiter_survives_the_other_process_releasing(tmp_path: Path, worker: Worker) -> None:
    assert worker.ask("step theirs") == {"granted": True, "holders": ["theirs"], "queue": []}
    store = FileLaneStore(tmp_path)
    mine = FileLaneClaimant("mine", os.getpid(), store.host, None)
    step = store.step(LANE, mine, 1, expect_new=True)  # a record is there: read, queued
    assert step is not None and not step.granted
    assert worker.ask("release theirs") == {"released": True, "holders": [], "queue": ["mine"]}
    step = store.step(LANE, mine, 1)
    assert step is not None and step.granted
    assert store.release(LANE, "mine")  # unchanged since our step wrote it: no parse
    assert not store.path(LANE).exists()
