"""Whole ``openclaw-runtime run`` worker processes sharing one Redis (separate state dirs).

Each worker has its own state directory, so nothing is shared through files: whatever they
agree on, they agree on through the Redis backends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import redis

from openclaw_runtime.testing import FaultInjectingOpenAIServer
from openclaw_runtime.testing.openai_server import Fault, KeyBehavior, api_key_fingerprint

BACKENDS = """
[backends]
lanes = "redis"
auth_store = "redis"
steering_store = "redis"
session_index = "redis"
session_store = "redis"
"""


def write_config(path: Path, base_url: str, keys: list[str]) -> Path:
    profiles = "".join(
        f'[[auth.profiles]]\nid = "srv:p{i}"\nprovider = "srv"\nmode = "api_key"\n'
        f'credential = {{ value = "{key}" }}\n'
        for i, key in enumerate(keys)
    )
    path.write_text(
        '[agent]\nmodel = "srv/m1"\n'
        '[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{base_url}"\ncontext_window = 64000\n' + profiles + BACKENDS
    )
    return path


def command(config: Path, *args: str) -> list[str]:
    """``openclaw-runtime --config CONFIG ARGS...`` in this interpreter."""
    return [sys.executable, "-m", "openclaw_runtime", "--config", str(config), *args]


def worker_env(state: Path, url: str, prefix: str) -> dict[str, str]:
    """A worker's environment: its own state dir, the shared Redis, only the redis plugin."""
    env = {
        **os.environ,
        "OPENCLAW_RUNTIME_STATE_DIR": str(state),
        "OPENCLAW_RUNTIME_REDIS_URL": url,
        "OPENCLAW_RUNTIME_REDIS_PREFIX": prefix,
        "OPENCLAW_RUNTIME_PLUGINS": "redis",
        "OPENCLAW_RUNTIME_RAISE_ERRORS": "0",
    }
    env.pop("OPENCLAW_RUNTIME_CONFIG", None)
    return env


def cli_json(
    config: Path, state: Path, cwd: Path, url: str, prefix: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """One CLI command as a separate worker (its own state dir, the shared Redis)."""
    return subprocess.run(
        command(config, *args),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=worker_env(state, url, prefix),
    )


def spawn(config: Path, state: Path, url: str, prefix: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(config, "run", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=worker_env(state, url, prefix),
        cwd=state.parent,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def wait_until(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def session_lines(url: str, prefix: str, key: str) -> list[dict]:
    client = redis.Redis.from_url(url)
    try:
        raw = client.hget(f"{prefix}sessions:index", key)
        assert raw is not None, "the session key was never claimed in Redis"
        session_id = json.loads(raw)["sessionId"]
        return [
            json.loads(line) for line in client.lrange(f"{prefix}session:{session_id}:lines", 0, -1)
        ]
    finally:
        client.close()


def branch_texts(lines: list[dict]) -> list[tuple[str, str]]:
    by_id = {e["id"]: e for e in lines[1:]}
    leaf = lines[-1]["id"]
    chain = []
    while leaf is not None:
        entry = by_id[leaf]
        chain.append(entry)
        leaf = entry.get("parentId")
    out = []
    for entry in reversed(chain):
        if entry["type"] != "message":
            continue
        message = entry["message"]
        content = message["content"]
        text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
        out.append((message["role"], text))
    return out


def test_three_workers_on_one_session_key_keep_three_turns_in_order(
    tmp_path, redis_url, redis_prefix
):
    with FaultInjectingOpenAIServer(models={"m1": 64_000}) as server:
        server.inject(Fault("delay", seconds=2.0, times=3))  # turns overlap
        config = write_config(tmp_path / "c.toml", server.base_url, ["key-a"])
        arrivals = f"{redis_prefix}lane:session:chat-1:seq"  # INCR'd as each worker queues
        client = redis.Redis.from_url(redis_url)
        workers = []
        try:
            for i in range(3):
                state = tmp_path / f"w{i}" / "state"
                state.parent.mkdir()
                workers.append(
                    spawn(
                        config,
                        state,
                        redis_url,
                        redis_prefix,
                        "--session-key",
                        "chat-1",
                        f"turn {i}",
                    )
                )
                # start the next worker only once this one is in the session lane's queue
                wait_until(lambda i=i: int(client.get(arrivals) or 0) == i + 1, f"worker {i}")
            results = [finish(w) for w in workers]
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
                    w.communicate()
            client.close()
        for code, _out, err in results:
            assert code == 0, err
        texts = branch_texts(session_lines(redis_url, redis_prefix, "chat-1"))
        assert [t for role, t in texts if role == "user"] == ["turn 0", "turn 1", "turn 2"]
        assert [role for role, _ in texts] == ["user", "assistant"] * 3
        # each later turn was sent with the history of the earlier ones (nothing forked),
        # after the system prompt
        assert [r.message_count for r in server.requests] == [2, 4, 6]
        # and any other worker (a fourth, empty state dir) reads it with `sessions show`
        state = tmp_path / "w3" / "state"
        shown = cli_json(
            config, state, tmp_path, redis_url, redis_prefix, "sessions", "show", "chat-1", "--json"
        )
        assert shown.returncode == 0, shown.stderr
        document = json.loads(shown.stdout)
        assert document["sessionKey"] == "chat-1"
        users = [
            e["message"]["content"]
            for e in document["entries"]
            if e["type"] == "message" and e["message"]["role"] == "user"
        ]
        assert [u if isinstance(u, str) else u[0]["text"] for u in users] == [
            "turn 0",
            "turn 1",
            "turn 2",
        ]
        # `sessions list` there lists it from Redis (no transcript file on this worker's disk)
        listed = cli_json(
            config, state, tmp_path, redis_url, redis_prefix, "sessions", "list", "--json"
        )
        assert listed.returncode == 0, listed.stderr
        rows = json.loads(listed.stdout)
        assert [(r["id"], r["key"], r["messages"]) for r in rows] == [
            (document["sessionId"], "chat-1", 6)
        ]
        assert rows[0]["updatedMs"] > 0 and rows[0]["bytes"] is None
        assert not list(state.glob("sessions/*.jsonl"))
        # `compact` from that fourth worker finds the Redis session and runs under its lane
        # (three short turns: nothing to compact; rewrites are covered in test_redis_sessions)
        compacted = cli_json(
            config, state, tmp_path, redis_url, redis_prefix, "compact", "chat-1", "--json"
        )
        assert compacted.returncode == 0, compacted.stderr
        outcome = json.loads(compacted.stdout)
        assert outcome["sessionId"] == document["sessionId"] and outcome["ok"] is True
        assert len(session_lines(redis_url, redis_prefix, "chat-1")) == 7  # header + 6 messages


def test_a_key_rate_limited_by_one_worker_is_skipped_by_anothers_first_attempt(
    tmp_path, redis_url, redis_prefix
):
    with FaultInjectingOpenAIServer(models={"m1": 64_000}) as server:
        server.set_key("key-a", KeyBehavior.RATE_LIMITED)
        config = write_config(tmp_path / "c.toml", server.base_url, ["key-a", "key-b"])
        results = []
        for i in range(2):
            state = tmp_path / f"w{i}" / "state"
            state.parent.mkdir()
            results.append(finish(spawn(config, state, redis_url, redis_prefix, f"hello {i}")))
        for code, _, err in results:
            assert code == 0, err
        keys = [r.api_key_fingerprint for r in server.requests]
        a, b = api_key_fingerprint("key-a"), api_key_fingerprint("key-b")
        # worker 0: key-a is rate limited, it rotates to key-b; worker 1 starts on key-b
        assert keys == [a, b, b]
        assert not (tmp_path / "w1" / "state" / "auth-profiles.json").exists()
        # `profiles` on a third worker shows the shared ledger: srv:p0 (key-a) cooling down
        state = tmp_path / "w2" / "state"
        shown = cli_json(config, state, tmp_path, redis_url, redis_prefix, "profiles", "--json")
        assert shown.returncode == 0, shown.stderr
        health = {row["id"]: row["status"] for row in json.loads(shown.stdout)}
        assert health == {"srv:p0": "cooling_down", "srv:p1": "healthy"}
        # and `doctor` there checks the Redis ledger itself (a read), not a local file
        checked = cli_json(config, state, tmp_path, redis_url, redis_prefix, "doctor", "--json")
        rows = {row["check"]: row for row in json.loads(checked.stdout)}
        assert rows["auth store"]["status"] == "ok", rows["auth store"]
        assert "'redis' auth store backend" in rows["auth store"]["detail"]
        assert "cooling down" in rows["profile srv:p0"]["detail"]
