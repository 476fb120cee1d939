"""A restarted process resumes sanitizing from the checkpoint the previous process left, and
sends the model exactly the request it would send without it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from openclaw_runtime import Runtime, tool
from openclaw_runtime.transcript.replay_checkpoint import checkpoint_path, read_checkpoint
from tests.run_support import ProbeProvider, probe_config

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]

# the previous process: 12 turns on one session (each with a tool call), then it exits
WRITER = """
import sys
import anyio
from openclaw_runtime import Runtime, tool
from openclaw_runtime.providers.fake import FakeResponse, text, tool_call
from tests.run_support import ProbeProvider, probe_config

@tool
async def read(path: str) -> str:
    "Read a file."
    return "x = 1"

def respond(request):
    last = request.context.messages[-1]
    if getattr(last, "role", None) == "user":
        return FakeResponse([tool_call("read", {"path": "a.py"})], stop_reason="toolUse")
    return FakeResponse([text("done")])

async def main():
    probe = ProbeProvider(respond)
    runtime = Runtime(probe_config(sys.argv[1]), plugins=[probe.plugin()], load_entrypoints=False)
    for index in range(12):
        result = await runtime.run(f"question {index}", session_id="s1", tools=[read])
        assert result.ok, result
    await runtime.aclose()

anyio.run(main)
"""


@tool
async def read(path: str) -> str:
    "Read a file."
    return "x = 1"


def _request(probe: ProbeProvider) -> list[Any]:
    messages = probe.fake.history[-1].context.messages
    dumped = [m.model_dump(mode="json") for m in messages]
    dumped[-1].pop("timestamp", None)  # the new prompt's own time
    return dumped


async def _first_turn(state: Path) -> tuple[list[Any], int]:
    probe = ProbeProvider()
    runtime = Runtime(probe_config(state), plugins=[probe.plugin()], load_entrypoints=False)
    # the same tools as before: the set of tools offered is part of the policy
    result = await runtime.run("one more", session_id="s1", tools=[read])
    assert result.ok, result
    session: Any = await runtime.checkout_session("s1", cwd=str(ROOT))
    restored = session.replay_checkpoint.restored
    await runtime.checkin_session(session)
    await runtime.aclose()
    return _request(probe), restored


async def test_a_restarted_process_sends_the_same_request(tmp_path: Path) -> None:
    state = tmp_path / "state"
    command = [sys.executable, "-c", WRITER, str(state)]
    await anyio.to_thread.run_sync(
        lambda: subprocess.run(command, cwd=ROOT, check=True, timeout=120)
    )
    session_file = state / "sessions" / "s1.jsonl"
    checkpoint = read_checkpoint(checkpoint_path(session_file))
    assert checkpoint is not None and checkpoint.messages > 30
    # the same state without the side file: what the full pipeline sends
    bare = tmp_path / "bare"
    shutil.copytree(state, bare)
    checkpoint_path(bare / "sessions" / "s1.jsonl").unlink()

    with_checkpoint, restored = await _first_turn(state)
    without, restored_bare = await _first_turn(bare)
    assert restored == checkpoint.messages and restored_bare == 0
    assert with_checkpoint == without
    assert len(with_checkpoint) == 12 * 4 + 1
