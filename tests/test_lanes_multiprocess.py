"""Real processes on one state dir share session lanes (``FileLanes``): one turn per session
at a time across processes, in arrival order, every turn kept on the active branch, and a
holder killed with SIGKILL does not block the session (the stale rule).

The processes are ``openclaw-runtime run`` (``python -m openclaw_runtime``) or a small worker
script; the model is a ``FaultInjectingOpenAIServer`` in this process, slowed with ``delay``
faults so that turns overlap.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.runner.file_lanes import FileLaneStore
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer
from openclaw_runtime.transcript.jsonl import parse_session_bytes
from openclaw_runtime.transcript.store import SessionManager
from tests.run_support import jsonl_problems, pending_repairs

REPO = Path(__file__).resolve().parent.parent
KEY = "sk-lanes-test-0000"
SESSION = "shared"


@pytest.fixture
def server():
    with FaultInjectingOpenAIServer() as srv:
        yield srv


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OPENCLAW_RUNTIME_") and k != "OPENAI_API_KEY"
    }
    return {
        **base,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "OPENCLAW_RUNTIME_STATE_DIR": str(tmp_path / "state"),
        "OPENCLAW_RUNTIME_PLUGINS": "",
        "OPENAI_API_KEY": KEY,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


def cli_run(env: Mapping[str, str], base_url: str, prompt: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openclaw_runtime",
            "run",
            "--base-url",
            base_url,
            "--model",
            "m1",
            "--session-key",
            SESSION,
            "--json",
            prompt,
        ],
        cwd=REPO,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(predicate: Callable[[], bool], what: str, *, limit_s: float = 120) -> None:
    """Poll until ``predicate()`` (a generous limit only so a broken build fails, not hangs)."""
    end = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


def lane_pids(state: Path) -> tuple[list[int], list[int]]:
    """(holder pids, waiter pids) of the session's shared lane record."""
    record = FileLaneStore(state / "lanes").read(f"session:{SESSION}")
    return [r.pid for r in record.holders], [r.pid for r in record.queue]


def session_file(state: Path) -> Path:
    index = json.loads((state / "sessions" / "index.json").read_text())
    return state / "sessions" / f"{index['sessions'][SESSION]['sessionId']}.jsonl"


def transcript(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(every message entry in the file, the message entries on the active branch)."""
    parsed = parse_session_bytes(path.read_bytes())
    messages = [e for e in parsed.entries if isinstance(e, dict) and e.get("type") == "message"]
    session = SessionManager.open_sync(path, repair=False)
    return messages, [e for e in session.get_branch() if e.get("type") == "message"]


def text_of(entry: Mapping[str, Any]) -> str:
    content = entry["message"]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, Mapping))


def exchanges(branch: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(role, text) of every message on the branch."""
    return [(e["message"]["role"], text_of(e)) for e in branch]


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def test_three_processes_on_one_session_keep_three_turns_in_arrival_order(server, env, tmp_path):
    state = tmp_path / "state"
    server.inject(Fault("delay", seconds=1.0, times=3))  # each turn is slow: they overlap
    prompts = [f"turn {n} from process {n}" for n in range(3)]
    processes: list[subprocess.Popen[str]] = []
    for prompt in prompts:
        processes.append(cli_run(env, server.base_url, prompt))
        newest, count = processes[-1], len(processes)

        def arrived(p: subprocess.Popen[str] = newest, count: int = count) -> bool:
            # holds the session or waits in its queue, reached the model, or is done
            holders, waiters = lane_pids(state)
            return (
                p.pid in holders + waiters or len(server.requests) >= count or p.poll() is not None
            )

        # the next process starts only once this one has arrived
        wait_for(arrived, f"process {count} to arrive at the session lane")
    results = [finish(p) for p in processes]
    assert [code for code, _, _ in results] == [0, 0, 0], [err for _, _, err in results]
    assert [json.loads(out)["text"] for _, out, _ in results] == [f"You said: {p}" for p in prompts]

    # the model saw the turns one after another, each with the turns before it
    served = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert [r.message_count for r in served] == [2, 4, 6]  # the system prompt, then the turns

    messages, branch = transcript(session_file(state))
    assert exchanges(branch) == [
        pair for p in prompts for pair in (("user", p), ("assistant", f"You said: {p}"))
    ]
    assert len(messages) == len(branch)  # nothing set aside on another branch
    assert jsonl_problems(session_file(state)) == []
    assert pending_repairs(session_file(state)) == {}
    assert lane_pids(state) == ([], [])


# Each worker waits for the "go" file so that all contend at once, then runs TURNS turns on
# one session key through one Runtime (as a long-lived worker process does) and prints one
# JSON line per turn.
WORKER = r"""
import json, pathlib, sys, time
import anyio
from openclaw_runtime import Runtime

base_url, state, go, worker, turns = sys.argv[1:6]
config = {
    "state_dir": state,
    "models": [{"id": "m1", "api": "openai-completions", "provider": "srv",
                "baseUrl": base_url, "contextWindow": 200000, "maxTokens": 256}],
    "agent": {"model": "srv/m1"},
    "auth": {"profiles": [{"id": "srv:p0", "provider": "srv", "mode": "api_key",
                           "credential": {"value": "sk-lanes-test-0000"}}]},
}
while not pathlib.Path(go).exists():
    time.sleep(0.005)

async def main() -> None:
    async with Runtime(config, load_entrypoints=False) as runtime:
        for turn in range(int(turns)):
            prompt = f"worker {worker} turn {turn}"
            result = await runtime.run(prompt, session_key="shared")
            print(json.dumps({"prompt": prompt, "ok": result.ok, "text": result.text}), flush=True)

anyio.run(main)
"""

WORKERS = 8
TURNS = 3


def test_many_processes_many_turns_keep_every_successful_turn(server, env, tmp_path):
    state = tmp_path / "state"
    go = tmp_path / "go"
    server.inject(Fault("delay", seconds=0.05, times=WORKERS * TURNS))
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                server.base_url,
                str(state),
                str(go),
                str(n),
                str(TURNS),
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(WORKERS)
    ]
    go.touch()
    outcomes: list[dict[str, Any]] = []
    for worker in workers:
        code, out, err = finish(worker)
        assert code == 0, err
        outcomes.extend(json.loads(line) for line in out.splitlines() if line.strip())
    assert len(outcomes) == WORKERS * TURNS
    succeeded = [o["prompt"] for o in outcomes if o["ok"]]
    assert succeeded, outcomes

    path = session_file(state)
    assert jsonl_problems(path) == []
    assert pending_repairs(path) == {}  # the transcript loads without repair
    messages, branch = transcript(path)
    assert len(messages) == len(branch)  # no turn forked off the active branch
    said = exchanges(branch)
    for prompt in succeeded:
        at = said.index(("user", prompt))
        assert said[at + 1] == ("assistant", f"You said: {prompt}")
    # each worker's turns stay in its own order
    users = [text for role, text in said if role == "user"]
    for n in range(WORKERS):
        mine = [u for u in users if u.startswith(f"worker {n} ")]
        assert mine == sorted(mine)
    assert lane_pids(state) == ([], [])


def test_a_holder_killed_mid_turn_does_not_block_the_session(server, env, tmp_path):
    state = tmp_path / "state"
    server.inject(Fault("delay", seconds=120, times=1))  # the first turn hangs in the model
    doomed = cli_run(env, server.base_url, "the turn that dies")
    wait_for(lambda: len(server.requests) == 1, "the first turn to reach the model")
    assert lane_pids(state)[0] == [doomed.pid]
    follower = cli_run(env, server.base_url, "the turn after")
    wait_for(lambda: lane_pids(state)[1] == [follower.pid], "the second process to queue")

    os.kill(doomed.pid, signal.SIGKILL)
    doomed.communicate(timeout=60)  # reaps it and closes its pipes
    code, out, err = finish(follower)
    assert code == 0, err
    assert json.loads(out)["text"] == "You said: the turn after"
    assert "stale holder pid" in err  # it took the lane over by the stale rule

    path = session_file(state)
    assert jsonl_problems(path) == []
    messages, branch = transcript(path)
    assert len(messages) == len(branch)
    # the killed turn's buffered lines died with it (at most the turn in flight is lost)
    assert exchanges(branch)[-2:] == [
        ("user", "the turn after"),
        ("assistant", "You said: the turn after"),
    ]
    assert lane_pids(state) == ([], [])


# Each worker holds the machine-wide global lane (capacity 2) a few times; inside, it drops a
# marker file, counts the markers (the holders right now), and removes its marker.
CAP_WORKER = r"""
import os, pathlib, sys, time
import anyio
from openclaw_runtime.runner.file_lanes import FileLanes

lanes_dir, markers, go, scope = sys.argv[1:5]
lanes = FileLanes(lanes_dir, global_cap_scope=scope)
markers = pathlib.Path(markers)
while not pathlib.Path(go).exists():
    time.sleep(0.005)

async def main() -> None:
    for _ in range(3):
        async with lanes.hold("main", capacity=2):
            mine = markers / f"{os.getpid()}"
            mine.touch()
            await anyio.sleep(0.05)
            print(len(list(markers.iterdir())), flush=True)
            mine.unlink()

anyio.run(main)
"""


def test_machine_wide_global_cap_holds_across_processes(env, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    go = tmp_path / "go"
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                CAP_WORKER,
                str(tmp_path / "lanes"),
                str(markers),
                str(go),
                "machine",
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(5)
    ]
    go.touch()
    seen: list[int] = []
    for worker in workers:
        code, out, err = finish(worker)
        assert code == 0, err
        seen.extend(int(line) for line in out.split())
    assert len(seen) == 15
    assert max(seen) <= 2  # never more than the cap at once, machine-wide
