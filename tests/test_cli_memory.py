"""``openclaw-runtime run --memory`` and ``chat --memory`` against a real OpenAI-compatible
server: the turns are answered, nothing appears under the state dir, and a chat keeps its
conversation for as long as it runs (then it is gone)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli_run import GOOD, env, invoke, server, write_config

__all__ = ["env", "server"]  # fixtures, re-used


def tree_of(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_run_memory_answers_and_writes_nothing(server, env):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    before = tree_of(env)
    result = invoke(config, "run", "--memory", "--json", "--session-key", "k", "hello")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["ok"] and payload["sessionFile"] == f"memory:{payload['sessionId']}"
    assert not (env / "state").exists()
    assert tree_of(env) == before
    # without the flag the same turn is durable: the flag is what made the difference
    durable = invoke(config, "run", "--json", "--session-key", "k", "hello")
    assert durable.exit_code == 0, durable.output
    assert (env / "state" / "sessions" / "index.json").is_file()


def test_chat_memory_keeps_the_conversation_while_it_runs(server, env):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    result = invoke(
        config, "chat", "--memory", "--session-key", "m", input="hello\nagain\n/session\n/exit\n"
    )
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert out[:2] == ["You said: hello", "You said: again"]
    assert out[3] == "transcript: memory"
    # the second turn was sent with the first one: the chat remembered it in memory
    second = [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    assert second == ["hello", "again"]
    assert not (env / "state").exists()
