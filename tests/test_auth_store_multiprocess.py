"""Many real processes hammer one ``auth-profiles.json``: no failure is lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from openclaw_runtime.auth import AuthProfile, JsonFileAuthProfileStore

REPO = Path(__file__).resolve().parent.parent
NOW = 1_700_000_000_000
PROCESSES = 6
UPDATES = 40

# Each worker waits for the "go" file so that all of them contend at once, then records
# UPDATES failures: i % 3 == 0 is a rate limit, the rest auth failures; even i on "shared:a",
# odd i on "shared:b". A dropped update (returned None) makes the worker exit non-zero.
WORKER = r"""
import sys, time, pathlib
import anyio
from openclaw_runtime.auth import AuthProfile, JsonFileAuthProfileStore, mark_auth_profile_failure

path, go, updates, now = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
profiles = [
    AuthProfile(id=pid, provider="openai", mode="api_key", credential={"env": "UNUSED"})
    for pid in ("shared:a", "shared:b")
]
store = JsonFileAuthProfileStore(path, profiles=profiles)
while not go.exists():
    time.sleep(0.005)

async def main() -> None:
    for i in range(updates):
        reason = "rate_limit" if i % 3 == 0 else "auth"
        entry = await mark_auth_profile_failure(store, f"shared:{'ab'[i % 2]}", reason, now_ms=now)
        if entry is None:
            sys.exit(f"update {i} was dropped")

anyio.run(main)
"""


def expected_counts(profile_index: int) -> dict[str, int]:
    counts = {"auth": 0, "rate_limit": 0}
    for i in range(UPDATES):
        if i % 2 == profile_index:
            counts["rate_limit" if i % 3 == 0 else "auth"] += PROCESSES
    return counts


def test_concurrent_processes_lose_no_update(tmp_path):
    path = tmp_path / "auth-profiles.json"
    go = tmp_path / "go"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), str(go), str(UPDATES), str(NOW)],
            cwd=REPO,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    go.touch()
    errors = []
    for worker in workers:
        _, stderr = worker.communicate(timeout=300)
        if worker.returncode != 0:
            errors.append(stderr)
    assert errors == []

    raw = json.loads(path.read_text())  # still one valid document
    for index, profile_id in enumerate(("shared:a", "shared:b")):
        counts = expected_counts(index)
        entry = raw["usageStats"][profile_id]
        assert entry["failureCounts"] == counts
        assert entry["errorCount"] == sum(counts.values())
        assert entry["lastFailureAt"] == NOW

    profiles = [
        AuthProfile(id=pid, provider="openai", mode="api_key", credential={"env": "UNUSED"})
        for pid in ("shared:a", "shared:b")
    ]
    state = JsonFileAuthProfileStore(path, profiles=profiles).load_sync()
    assert state.stats_for("shared:a").error_count == PROCESSES * UPDATES // 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
