"""``steer`` / ``follow_up`` from another worker reaches a run through Redis (issue 15 §1).

Real worker processes, each with its **own** state dir (nothing shared through files), on one
real Redis with every backend set to ``redis``. The model is a ``FaultInjectingOpenAIServer``
in this process whose ``"hold"`` fault keeps the run's first answer open until the message is
in. The lease test kills the running worker with SIGKILL and polls (with a deadline) until its
owner lease lapses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis

from openclaw_runtime import Runtime
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer

KEY = "sk-live-redis-worker-0000"

WORKER = """
import json, sys
import anyio
from openclaw_runtime import Runtime

async def main(config_path, verb, *args):
    config = json.loads(open(config_path).read())
    async with Runtime(config) as runtime:
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


def write_config(directory: Path, base_url: str) -> Path:
    config: dict[str, Any] = {
        "state_dir": str(directory / "state"),
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
        "agent": {"model": "mock/main", "timeout_seconds": 60},
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
        "backends": {
            "lanes": "redis",
            "auth_store": "redis",
            "steering_store": "redis",
            "session_index": "redis",
            "session_store": "redis",
        },
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.json"
    path.write_text(json.dumps(config))
    return path


def spawn(
    directory: Path,
    server: FaultInjectingOpenAIServer,
    url: str,
    prefix: str,
    *args: str,
    lease_ms: int = 30_000,
) -> subprocess.Popen[str]:
    """A worker with its own state dir (``directory``), the shared Redis, only that plugin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_RUNTIME_")}
    env.update(
        OPENCLAW_RUNTIME_PLUGINS="redis",
        OPENCLAW_RUNTIME_REDIS_URL=url,
        OPENCLAW_RUNTIME_REDIS_PREFIX=prefix,
        OPENCLAW_RUNTIME_REDIS_LEASE_MS=str(lease_ms),
    )
    config = write_config(directory, server.base_url)
    script = directory / "worker.py"
    script.write_text(WORKER)
    return subprocess.Popen(
        [sys.executable, str(script), str(config), *args],
        env=env,
        cwd=directory,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return dict(json.loads(out.strip().splitlines()[-1]))


def wait_until(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def live_keys(client: redis.Redis, prefix: str) -> list[bytes]:
    return sorted(client.scan_iter(match=f"{prefix}live:*"))


@pytest.mark.parametrize("verb", ["steer", "follow_up"])
def test_a_message_from_another_worker_reaches_the_run_through_redis(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    redis_url: str,
    redis_prefix: str,
    verb: str,
) -> None:
    client = redis.Redis.from_url(redis_url)
    server.inject(Fault(kind="hold", model="main", after_chunks=2))
    runner = spawn(
        tmp_path / "a", server, redis_url, redis_prefix, "run", "write a poem", "chat:mp"
    )
    try:
        assert server.wait_for_held(1, timeout=60), runner.stderr
        assert [k.decode().rsplit(":", 1)[-1] for k in live_keys(client, redis_prefix)] == ["owner"]
        sent = finish(
            spawn(
                tmp_path / "b",
                server,
                redis_url,
                redis_prefix,
                verb,
                "also check the CI",
                "chat:mp",
            )
        )
        assert sent == {"accepted": True, "reason": "queued_remote"}
    finally:
        server.release_holds()
    result = finish(runner)
    assert result["ok"]
    assert result["text"].endswith("You said: also check the CI")
    users = [
        [m["content"] for m in r.body["messages"] if m["role"] == "user"] for r in server.requests
    ]
    assert users == [["write a poem"], ["write a poem", "also check the CI"]]
    # the run is over: its lease and inbox are gone, a later message is refused, not kept
    assert live_keys(client, redis_prefix) == []
    late = finish(
        spawn(tmp_path / "b", server, redis_url, redis_prefix, verb, "too late", "chat:mp")
    )
    assert late == {"accepted": False, "reason": "no_active_run"}
    client.close()


def test_the_owner_lease_is_renewed_while_the_run_lives_and_lapses_when_it_dies(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    redis_url: str,
    redis_prefix: str,
) -> None:
    client = redis.Redis.from_url(redis_url)
    server.inject(Fault(kind="hold", model="main", after_chunks=2))
    runner = spawn(
        tmp_path / "a",
        server,
        redis_url,
        redis_prefix,
        "run",
        "a long task",
        "chat:dies",
        lease_ms=1_500,
    )
    try:
        assert server.wait_for_held(1, timeout=60), runner.stderr
        (owner,) = live_keys(client, redis_prefix)
        # renewed in the background while the turn is stuck mid-answer: the TTL goes back up
        first = client.pttl(owner)
        assert 0 < first <= 1_500
        wait_until(lambda: client.pttl(owner) > first, "a renewal of the owner lease")
        sent = finish(
            spawn(tmp_path / "b", server, redis_url, redis_prefix, "steer", "hi", "chat:dies")
        )
        assert sent == {"accepted": True, "reason": "queued_remote"}
        runner.kill()  # SIGKILL: no cleanup, no more renewals
        runner.wait()
        wait_until(lambda: not client.exists(owner), "the dead worker's lease to lapse")
        assert live_keys(client, redis_prefix) == []  # its unread inbox expired with it
        late = finish(
            spawn(tmp_path / "b", server, redis_url, redis_prefix, "steer", "hi", "chat:dies")
        )
        assert late == {"accepted": False, "reason": "no_active_run"}
    finally:
        server.release_holds()
        if runner.poll() is None:
            runner.kill()
        runner.communicate()
        client.close()


@pytest.mark.anyio
async def test_an_aborted_run_on_redis_gives_its_inbox_up(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    redis_url: str,
    redis_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In process: the lease renewal task does not swallow or wrap how the run ends."""
    for name, value in (("URL", redis_url), ("PREFIX", redis_prefix), ("LEASE_MS", "900")):
        monkeypatch.setenv(f"OPENCLAW_RUNTIME_REDIS_{name}", value)
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "redis")
    config = json.loads(write_config(tmp_path, server.base_url).read_text())
    client = redis.Redis.from_url(redis_url)
    server.inject(Fault(kind="hold", model="main", after_chunks=2))
    results: list[Any] = []
    async with Runtime(config) as runtime:

        async def run() -> None:
            results.append(await runtime.run("a long task", session_key="chat:abort"))

        with anyio.fail_after(60):  # only turns a hang into a failure
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                assert await anyio.to_thread.run_sync(server.wait_for_held, 1, 30.0)
                assert runtime.is_run_active(session_key="chat:abort")
                assert len(live_keys(client, redis_prefix)) == 1
                assert await runtime.abort_run(session_key="chat:abort")
            server.release_holds()
    (result,) = results
    assert not result.ok and result.error is not None and result.error.kind == "aborted"
    assert live_keys(client, redis_prefix) == []
    client.close()


@pytest.mark.anyio
async def test_redis_sessions_keep_no_side_file_in_the_working_directory(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    redis_url: str,
    redis_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Redis session is no file: closing it after turns whose sanitized prefix moved on
    records no replay checkpoint (and takes no lock file) beside a relative ``<id>.jsonl``."""
    for name, value in (("URL", redis_url), ("PREFIX", redis_prefix)):
        monkeypatch.setenv(f"OPENCLAW_RUNTIME_REDIS_{name}", value)
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "redis")
    config = json.loads(write_config(tmp_path / "cfg", server.base_url).read_text())
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    async with Runtime(config) as runtime:
        for prompt in ("one", "two", "three", "four"):
            result = await runtime.run(prompt, session_key="chat:side-files")
            assert result.ok, result.error
        session = await runtime.session_store.open(result.session_id)
        assert not session.replay_checkpoint.enabled
        await session.aclose()
    assert sorted(p.name for p in cwd.iterdir()) == []
