"""``openclaw-runtime sessions list|show`` and ``compact`` on sessions written by real runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from openclaw_runtime.cli import cli
from openclaw_runtime.testing import FaultInjectingOpenAIServer

RATE_LIMITED = "sk-sessions-rate-limited-0001"
GOOD = "sk-sessions-good-key-000000002"


@pytest.fixture
def server():
    with FaultInjectingOpenAIServer(keys={RATE_LIMITED: "rate_limited", GOOD: "ok"}) as srv:
        yield srv


@pytest.fixture
def config(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    monkeypatch.delenv("OPENCLAW_RUNTIME_MODEL", raising=False)
    path = tmp_path / "c.toml"
    path.write_text(
        '[agent]\nmodel = "srv/m1"\nkeep_recent_tokens = 40\n'
        f'[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{server.base_url}"\n'
        '[[auth.profiles]]\nid = "srv:a"\nprovider = "srv"\nmode = "api_key"\n'
        f'credential = "{RATE_LIMITED}"\n'
        '[[auth.profiles]]\nid = "srv:b"\nprovider = "srv"\nmode = "api_key"\n'
        f'credential = "{GOOD}"\n'
    )
    return path


def invoke(config: Path, *args: str):
    return CliRunner().invoke(cli, ["--config", str(config), *args])


def run(config: Path, *args: str) -> dict:
    result = invoke(config, "run", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_list_after_two_runs(config, tmp_path):
    assert invoke(config, "sessions", "list").stdout.startswith("no sessions in ")
    first = run(config, "--session-key", "alice", "Hello")
    second = run(config, "--session-key", "alice", "How are you?")
    assert first["sessionId"] == second["sessionId"]
    other = run(config, "--session", "solo-1", "Hi")
    result = invoke(config, "sessions", "list")
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["ID", "KEY", "MSGS", "UPDATED", "SIZE"]
    assert len(rows) == 2
    assert rows[0].split()[:3] == [other["sessionId"], "-", "2"]  # newest first
    assert rows[1].split()[:3] == [first["sessionId"], "alice", "4"]
    listed = json.loads(invoke(config, "sessions", "list", "--json").stdout)
    alice = next(row for row in listed if row["key"] == "alice")
    assert alice["id"] == first["sessionId"]
    assert alice["messages"] == 4
    assert alice["bytes"] == Path(first["sessionFile"]).stat().st_size
    assert alice["path"] == first["sessionFile"]
    assert alice["updatedAt"]


def test_show_renders_the_active_branch_by_key_or_id(config):
    first = run(config, "--session-key", "bob", "Hello")  # srv:a is rate limited: rotated
    run(config, "--session-key", "bob", "Again")
    result = invoke(config, "sessions", "show", "bob")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"session {first['sessionId']} (key bob)"
    assert lines[1] == f"file: {first['sessionFile']}"
    assert lines[3:] == [
        "user ▸ Hello",
        "assistant ▸ You said: Hello",
        "user ▸ Again",
        "assistant ▸ You said: Again",
    ]
    by_id = invoke(config, "sessions", "show", first["sessionId"])
    assert by_id.stdout == result.stdout
    # --all adds the failed attempt the run set aside when it rotated keys
    everything = invoke(config, "sessions", "show", "--all", "bob").stdout.splitlines()
    aside = [line for line in everything if line.startswith("[off-branch]")]
    assert len(aside) == 1
    assert aside[0].startswith("[off-branch] assistant ✗ failed: 429")
    assert RATE_LIMITED not in "".join(everything)


def test_show_json_and_tool_calls(config, server):
    from openclaw_runtime.testing import Reply

    server.enqueue(Reply(tool_calls=[("lookup", {"q": "x" * 300})]), Reply(text="Found it."))
    first = run(config, "--session-key", "carol", "Hello")
    data = json.loads(invoke(config, "sessions", "show", "--json", "carol").stdout)
    assert data["sessionId"] == first["sessionId"]
    assert data["sessionKey"] == "carol"
    assert [e["type"] for e in data["entries"]].count("message") >= 2
    assert data["entries"][-1]["id"] == data["leafId"]
    everything = json.loads(invoke(config, "sessions", "show", "--all", "--json", "carol").stdout)
    assert set(everything["activeBranch"]) < {e["id"] for e in everything["entries"]}


def test_show_says_what_it_could_not_read_and_leaves_the_file(config):
    first = run(config, "--session-key", "dave", "Hello")
    run(config, "--session-key", "dave", "Again")
    path = Path(first["sessionFile"])
    assert invoke(config, "sessions", "show", "--json", "dave").stdout.count(
        '"pendingRepair": null'
    )
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(3, b'{"type":"message","id":"broken\n')  # a writer killed mid-line
    path.write_bytes(b"".join(lines))
    before = path.read_bytes()

    result = invoke(config, "sessions", "show", "dave")
    assert result.exit_code == 0, result.output
    shown = result.stdout.splitlines()
    assert shown[2] == (
        "note: shown as a run reads it, not as written: dropped 1 malformed line(s). The file "
        "is left as it is; the next run on this session repairs it, and keeps what it cannot "
        f"read in {path.name}.invalid.jsonl."
    )
    assert shown[4:] == [
        "user ▸ Hello",
        "assistant ▸ You said: Hello",
        "user ▸ Again",
        "assistant ▸ You said: Again",
    ]
    data = json.loads(invoke(config, "sessions", "show", "--json", "dave").stdout)
    assert data["pendingRepair"] == "dropped 1 malformed line(s)"
    assert path.read_bytes() == before  # looking never rewrites
    assert not path.with_name(f"{path.name}.invalid.jsonl").exists()

    run(config, "--session-key", "dave", "Third")  # the run repairs: nothing left to say
    after = invoke(config, "sessions", "show", "dave").stdout.splitlines()
    assert not any(line.startswith("note:") for line in after)
    assert path.with_name(f"{path.name}.invalid.jsonl").exists()


def test_show_an_unknown_session_exits_2(config):
    result = invoke(config, "sessions", "show", "nobody")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no session with id or key 'nobody' in ")
    assert "sessions list" in result.stderr


def test_compact_a_session_with_history(config, server):
    notes = " ".join(f"note {n}: remember the blue door on street {n}." for n in range(60))
    run(config, "--session-key", "dave", f"Here are my notes: {notes}")
    run(config, "--session-key", "dave", "Second question about the notes?")
    run(config, "--session-key", "dave", "Third, short one.")
    result = invoke(config, "compact", "dave")
    assert result.exit_code == 0, result.output
    line = result.stdout.strip()
    assert line.startswith("session ") and ": compacted: " in line
    before, after = (
        int(n.replace(",", ""))
        for n in line.split(": compacted: ")[1].split(" tokens")[0].split(" → ")
    )
    assert after < before
    assert any(r.outcome == "summary" for r in server.requests)  # the server wrote it
    shown = invoke(config, "sessions", "show", "dave").stdout
    assert "══ compaction summary: replaces " in shown
    assert "  │ Goal: " in shown
    again = invoke(config, "compact", "--json", "dave")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["ok"] is True


def test_compact_unknown_session_exits_2(config):
    result = invoke(config, "compact", "ghost")
    assert result.exit_code == 2
    assert "no session with id or key 'ghost'" in result.stderr
