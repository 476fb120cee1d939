"""``steer`` from another process reaches a run (issue 15 §1): two real processes on one state
dir, the run's inbox in the file steering store. The model is a ``FaultInjectingOpenAIServer``
in this process whose ``"hold"`` fault keeps the run's first answer open until the steer is in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer

REPO = Path(__file__).resolve().parent.parent
KEY = "sk-live-multiprocess-0000"

WORKER = """
import json, sys
import anyio
from openclaw_runtime import Runtime

async def main(config_path, verb, *args):
    config = json.loads(open(config_path).read())
    async with Runtime(config, load_entrypoints=False) as runtime:
        if verb == "run":
            result = await runtime.run(args[0], session_key=args[1])
            print(json.dumps({"ok": result.ok, "text": result.text, "sessionId": result.session_id}))
        else:
            verb_fn = runtime.steer if verb == "steer" else runtime.follow_up
            answer = await verb_fn(args[0], session_key=args[1])
            print(json.dumps({"accepted": answer.accepted, "reason": answer.reason}))

anyio.run(main, *sys.argv[1:])
"""


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}) as running:
        yield running


def write_config(tmp_path: Path, base_url: str) -> Path:
    config: dict[str, Any] = {
        "state_dir": str(tmp_path / "state"),
        "models": [
            {
                "id": "main",
                "api": "openai-completions",
                "provider": "mock",
                "baseUrl": base_url,
                "contextWindow": 64_000,
                "maxTokens": 1024,
            }
        ],
        "agent": {"model": "mock/main", "timeout_seconds": 30},
        "auth": {
            "profiles": [
                {
                    "id": "mock:0",
                    "provider": "mock",
                    "mode": "api_key",
                    "credential": {"value": KEY},
                }
            ]
        },
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def spawn(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_RUNTIME_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env["OPENCLAW_RUNTIME_PLUGINS"] = ""
    script = tmp_path / "worker.py"
    if not script.exists():
        script.write_text(WORKER)
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return dict(json.loads(out.strip().splitlines()[-1]))


@pytest.mark.parametrize("verb", ["steer", "follow_up"])
def test_a_message_from_another_process_reaches_the_running_turn(
    tmp_path: Path, server: FaultInjectingOpenAIServer, verb: str
) -> None:
    config = str(write_config(tmp_path, server.base_url))
    server.inject(Fault(kind="hold", model="main", after_chunks=2))
    runner = spawn(tmp_path, config, "run", "write a poem", "chat:mp")
    try:
        assert server.wait_for_held(1, timeout=60), runner.stderr
        sent = finish(spawn(tmp_path, config, verb, "also check the CI config", "chat:mp"))
        assert sent == {"accepted": True, "reason": "queued_remote"}
    finally:
        server.release_holds()
    result = finish(runner)
    assert result["ok"]
    assert result["text"].endswith("You said: also check the CI config")
    users = [
        [m["content"] for m in r.body["messages"] if m["role"] == "user"] for r in server.requests
    ]
    assert users == [["write a poem"], ["write a poem", "also check the CI config"]]
    # the run is over: a later message finds no owner and is refused, not kept
    late = finish(spawn(tmp_path, config, verb, "too late", "chat:mp"))
    assert late == {"accepted": False, "reason": "no_active_run"}
    live_dir = tmp_path / "state" / "subagents" / "live"
    assert not list(live_dir.glob("*.owner")) and not list(live_dir.glob("*.inbox.jsonl"))
