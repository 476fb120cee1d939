"""Issue 15 §5: sessions OpenClaw itself wrote, continued as written.

The fixture ``tests/fixtures/openclaw/<id>.jsonl`` is built like a file OpenClaw's
SessionManager writes (no personal data): a v3 header, ``model_change`` and
``thinking_level_change`` entries, ``custom`` ``model-snapshot`` / ``openclaw.cache-ttl``
entries, OpenAI Responses tool-call ids ``call_…|fc_…`` of ~90 characters, ``textSignature`` on
text blocks, ``details`` on tool results, and error turns stored as ``content: []`` (one of
them the last entry). Beside it, OpenClaw's key index ``sessions.json`` names it under the key
``agent:main:main``.

* pure tables: reading ``sessions.json`` (keys, case-folded legacy keys, ``sessionFile``), and
  the blank-user stand-in done on replay instead of on disk;
* the session index: OpenClaw's keys found, ours still first, nothing written for them, bad
  JSON a clear error naming the file with the file untouched;
* opening the file to continue rewrites none of OpenClaw's lines and leaves no ``.bak``;
* end to end over real HTTP (asyncio and trio) and through the CLI in a subprocess: the
  request carries valid, paired ids; the original bytes are unchanged; the new turn is
  appended after OpenClaw's last entry.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from openclaw_runtime import Runtime
from openclaw_runtime.cli import cli
from openclaw_runtime.messages import ImageContent, TextContent, UserMessage
from openclaw_runtime.runner.openclaw_sessions import (
    OpenClawSessionIndexError,
    openclaw_entry_session_id,
    parse_openclaw_session_index,
    resolve_openclaw_session_entry,
)
from openclaw_runtime.runner.session_index import JsonFileSessionIndex
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer
from openclaw_runtime.transcript import resolve_transcript_policy
from openclaw_runtime.transcript.blank_user import fill_blank_user_content
from openclaw_runtime.transcript.repair import BLANK_USER_FALLBACK_TEXT
from openclaw_runtime.transcript.sanitize import sanitize_session_history
from openclaw_runtime.transcript.store import JsonlSessionStore
from tests.run_support import openai_config

SESSION_ID = "0199a8c2-7f1e-7b3a-9c4d-2e5f6a7b8c9d"
FIXTURE = Path(__file__).parent / "fixtures" / "openclaw" / f"{SESSION_ID}.jsonl"
KEY = "agent:main:main"
OPENAI_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
LAST_OPENCLAW_ENTRY = "a1b2c3d5"


def sessions_json(**extra: Any) -> bytes:
    """OpenClaw's index as its store writes it (``JSON.stringify(store, null, 2)``)."""
    store = {
        KEY: {
            "sessionId": SESSION_ID,
            "updatedAt": 1763630091000,
            "sessionFile": f"{SESSION_ID}.jsonl",
            "chatType": "direct",
            "thinkingLevel": "medium",
            "modelProvider": "openai",
            "model": "gpt-5.2",
            "contextTokens": 400000,
        },
        **extra,
    }
    return json.dumps(store, indent=2).encode()


def openclaw_dir(root: Path) -> Path:
    """``<root>/sessions`` holding the fixture and ``sessions.json``, as OpenClaw's agent
    folder does (point ``state_dir`` at the folder above it)."""
    sessions = root / "sessions"
    sessions.mkdir(parents=True)
    shutil.copyfile(FIXTURE, sessions / FIXTURE.name)
    (sessions / "sessions.json").write_bytes(sessions_json())
    return sessions


def side_files(sessions: Path) -> list[str]:
    """Backups and set-aside files a repair would have left, and OpenClaw's own lock file
    (``<file>.lock``: one left behind would keep OpenClaw's writers out for 30 minutes)."""
    return sorted(
        p.name
        for p in sessions.iterdir()
        if ".bak" in p.name or p.name.endswith((".invalid.jsonl", ".jsonl.lock"))
    )


# --------------------------------------------------------------------------- sessions.json


def test_sessions_json_parses_to_its_object_entries() -> None:
    entries = parse_openclaw_session_index(
        b'{"a": {"sessionId": "s1"}, "b": 3, "c": null}', path="x/sessions.json"
    )
    assert entries == {"a": {"sessionId": "s1"}}
    assert parse_openclaw_session_index(b"  \n", path="x/sessions.json") == {}


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b'{"agent:main:main": {', "not valid JSON"), (b"[1, 2]", "expected a JSON object")],
)
def test_bad_sessions_json_is_an_error_naming_the_file(data: bytes, reason: str) -> None:
    with pytest.raises(OpenClawSessionIndexError) as caught:
        parse_openclaw_session_index(data, path="/x/agents/main/sessions/sessions.json")
    message = str(caught.value)
    assert "/x/agents/main/sessions/sessions.json" in message and reason in message


ENTRIES = {
    "agent:main:main": {"sessionId": "exact", "updatedAt": 1},
    "telegram:Group:42": {"sessionId": "older", "updatedAt": 5},
    "TELEGRAM:group:42": {"sessionId": "newer", "updatedAt": 9},
}


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("agent:main:main", "exact"),
        ("  agent:main:main ", "exact"),  # trimmed
        ("Agent:Main:Main", "exact"),  # only a case-folded match: it
        ("telegram:group:42", "newer"),  # two case-folded matches: the most recently updated
        ("agent:main:other", None),
        ("", None),
    ],
)
def test_keys_resolve_as_openclaws_store_does(key: str, expected: str | None) -> None:
    entry = resolve_openclaw_session_entry(ENTRIES, key)
    assert (None if entry is None else entry["sessionId"]) == expected


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"sessionId": "abc"}, "abc"),
        ({"sessionId": " abc "}, "abc"),
        ({"sessionId": "abc", "sessionFile": "abc-topic-7.jsonl"}, "abc-topic-7"),
        ({"sessionId": "abc", "sessionFile": "{dir}/abc-topic-7.jsonl"}, "abc-topic-7"),
        ({"sessionId": "abc", "sessionFile": "/elsewhere/zzz.jsonl"}, "abc"),  # not ours
        ({"sessionId": "abc", "sessionFile": "../zzz.jsonl"}, "abc"),
        ({"sessionId": "../etc/passwd"}, None),
        ({"sessionId": 7}, None),
        ({}, None),
    ],
)
def test_the_transcript_an_entry_names(
    tmp_path: Path, entry: dict[str, Any], expected: str | None
) -> None:
    if isinstance(entry.get("sessionFile"), str):
        entry = {**entry, "sessionFile": entry["sessionFile"].replace("{dir}", str(tmp_path))}
    assert openclaw_entry_session_id(entry, tmp_path) == expected


# --------------------------------------------------------------------------- the session index


def test_index_finds_openclaw_keys_and_writes_nothing_for_them(tmp_path: Path) -> None:
    sessions = openclaw_dir(tmp_path)
    index = JsonFileSessionIndex(sessions / "index.json")

    async def scenario() -> None:
        assert await index.lookup_id(KEY) == SESSION_ID
        assert await index.lookup_id(KEY.upper()) == SESSION_ID
        assert await index.lookup_key(SESSION_ID) == KEY  # the backfill
        await index.bind(KEY, SESSION_ID)  # already OpenClaw's binding: no write
        assert not (sessions / "index.json").exists()
        assert (await index.entries())[KEY]["source"] == "openclaw"
        # ours keeps working, and a key bound here wins over OpenClaw's binding of it
        await index.bind("mine", "s-mine")
        await index.bind(KEY, "s-override")
        assert await index.lookup_id("mine") == "s-mine"
        assert await index.lookup_id(KEY) == "s-override"

    anyio.run(scenario)
    assert (sessions / "sessions.json").read_bytes() == sessions_json()  # never written


def test_a_broken_sessions_json_is_a_clear_error_and_stays_as_it_was(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sessions = openclaw_dir(tmp_path)
    broken = sessions_json()[:-20]
    (sessions / "sessions.json").write_bytes(broken)
    index = JsonFileSessionIndex(sessions / "index.json")
    with pytest.raises(OpenClawSessionIndexError, match=re.escape(str(sessions / "sessions.json"))):
        index.lookup_id_sync(KEY)
    with caplog.at_level(logging.WARNING):
        assert index.lookup_key_sync(SESSION_ID) is None  # the backfill only warns
    assert "sessions.json" in caplog.text
    assert (sessions / "sessions.json").read_bytes() == broken  # nothing lost
    assert sorted(p.name for p in sessions.iterdir()) == [FIXTURE.name, "sessions.json"]


# --------------------------------------------------------------------------- blank user turns


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (UserMessage(content="  "), BLANK_USER_FALLBACK_TEXT),
        (UserMessage(content=[TextContent(text="")]), [BLANK_USER_FALLBACK_TEXT]),
        (
            UserMessage(
                content=[TextContent(text=" "), ImageContent(data="aGk=", mime_type="image/png")]
            ),
            ["<image>"],
        ),
        ({"role": "user", "content": ""}, BLANK_USER_FALLBACK_TEXT),
        ({"role": "user", "content": [{"type": "text", "text": "\n"}]}, [BLANK_USER_FALLBACK_TEXT]),
    ],
)
def test_blank_user_content_gets_its_stand_in_on_replay(message: Any, expected: Any) -> None:
    out = fill_blank_user_content(message)
    content = out["content"] if isinstance(out, dict) else out.content
    if isinstance(expected, list):
        content = [
            "<image>"
            if (b.get("type") if isinstance(b, dict) else b.type) == "image"
            else (b["text"] if isinstance(b, dict) else b.text)
            for b in content
        ]
    assert content == expected
    assert out is not message


@pytest.mark.parametrize(
    "message",
    [
        UserMessage(content="hi"),
        UserMessage(content=[TextContent(text="hi"), TextContent(text="there")]),
        {"role": "assistant", "content": []},
        {"role": "toolResult", "content": [{"type": "text", "text": ""}]},
    ],
)
def test_other_messages_are_the_same_objects(message: Any) -> None:
    assert fill_blank_user_content(message) is message


# --------------------------------------------------------------------------- opening


@pytest.mark.anyio
async def test_opening_an_openclaw_session_rewrites_nothing(tmp_path: Path) -> None:
    sessions = openclaw_dir(tmp_path)
    path = sessions / FIXTURE.name
    # a blank user turn as an older OpenClaw could write it, answered
    blank = (
        b'{"type":"message","id":"b1b2b3b4","parentId":"a1b2c3d5","timestamp":'
        b'"2026-11-20T09:16:00.000Z","message":{"role":"user","content":[{"type":"text",'
        b'"text":""}],"timestamp":1763630160000}}\n'
    )
    original = FIXTURE.read_bytes() + blank
    path.write_bytes(original)
    store = JsonlSessionStore(sessions)
    manager = await store.open(SESSION_ID)
    try:
        assert manager.get_leaf_id() == "b1b2b3b4"
        entries = manager.get_entries()
        error_turns = [
            e
            for e in entries
            if e["type"] == "message" and e["message"].get("stopReason") == "error"
        ]
        assert len(error_turns) == 2 and all(e["message"]["content"] == [] for e in error_turns)
        kinds = [e.get("customType") for e in entries if e["type"] == "custom"]
        assert kinds == ["model-snapshot", "openclaw.cache-ttl"]
    finally:
        await manager.aclose()
    assert path.read_bytes() == original
    assert side_files(sessions) == []


# --------------------------------------------------------------------------- over HTTP


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"m1": 64_000}) as srv:
        yield srv


def appended_lines(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    original = FIXTURE.read_bytes()
    assert data.startswith(original), "OpenClaw's lines changed"
    return [json.loads(line) for line in data[len(original) :].splitlines()]


def request_problems(body: dict[str, Any]) -> list[str]:
    """What is wrong with the ids and the pairing of a Chat Completions request."""
    problems: list[str] = []
    pending: list[str] = []
    for message in body["messages"]:
        if message["role"] == "assistant":
            if pending:
                problems.append(f"unanswered calls {pending}")
            pending = [c["id"] for c in message.get("tool_calls") or []]
            problems += [f"bad id {i!r}" for i in pending if not OPENAI_ID_RE.match(i)]
        elif message["role"] == "tool":
            if message["tool_call_id"] not in pending:
                problems.append(f"result {message['tool_call_id']!r} answers no open call")
            else:
                pending.remove(message["tool_call_id"])
        elif pending:
            problems.append(f"unanswered calls {pending}")
            pending = []
    if "|fc_" in json.dumps(body):
        problems.append("a Responses id was sent as it is")
    return problems


@pytest.mark.anyio
async def test_continuing_an_openclaw_session_by_its_key_over_http(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    state = tmp_path / "agent"
    sessions = openclaw_dir(state)
    config = openai_config(state, server.base_url, provider="p", models={"m1": 64_000}, keys=["k"])
    runtime = Runtime(config, load_entrypoints=False)
    try:
        result = await runtime.run("Did the tests pass?", session_key=KEY)
    finally:
        await runtime.aclose()
    assert result.ok, result.error
    assert result.session_id == SESSION_ID
    body = server.requests[-1].body
    assert request_problems(body) == []
    calls = [
        c for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []
    ]
    assert len(calls) == 3 and len({c["id"] for c in calls}) == 3
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    assert results[:2] == ["main.py\nutil.py", "[server]\nport = 8080"]  # each kept its call
    assert body["messages"][-1]["role"] == "user"
    assert "Did the tests pass?" in body["messages"][-1]["content"]
    new = appended_lines(sessions / FIXTURE.name)
    assert [e["message"]["role"] for e in new] == ["user", "assistant"]
    assert new[0]["parentId"] == LAST_OPENCLAW_ENTRY  # continues after OpenClaw's last entry
    assert new[1]["parentId"] == new[0]["id"]
    assert side_files(sessions) == []
    assert (sessions / "sessions.json").read_bytes() == sessions_json()
    assert not (sessions / "index.json").exists()  # the binding stays OpenClaw's


def test_cli_run_with_an_openclaw_session_key(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    state = tmp_path / "agent"
    sessions = openclaw_dir(state)
    config = tmp_path / "c.toml"
    config.write_text(
        '[agent]\nmodel = "srv/m1"\n'
        f'[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{server.base_url}"\n'
        '[[auth.profiles]]\nid = "srv:a"\nprovider = "srv"\nmode = "api_key"\n'
        'credential = "sk-test-cli-0001"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "OPENCLAW_"))}
    env.update(OPENCLAW_RUNTIME_STATE_DIR=str(state), OPENCLAW_RUNTIME_PLUGINS="")
    args = ["--config", str(config), "run", "--json", "--session-key", KEY, "And now?"]
    proc = subprocess.run(
        [sys.executable, "-m", "openclaw_runtime", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True and data["sessionKey"] == KEY
    assert Path(data["sessionFile"]) == (sessions / FIXTURE.name).resolve()
    assert request_problems(server.requests[-1].body) == []
    new = appended_lines(sessions / FIXTURE.name)
    assert [e["message"]["role"] for e in new] == ["user", "assistant"]
    assert new[0]["parentId"] == LAST_OPENCLAW_ENTRY
    assert side_files(sessions) == []
    assert (sessions / "sessions.json").read_bytes() == sessions_json()


def test_the_replay_pipeline_fills_blank_user_turns() -> None:
    policy = resolve_transcript_policy("openai-completions", "p", "m1")
    out = sanitize_session_history([UserMessage(content=[TextContent(text=" ")])], policy)
    assert out[0].content == [TextContent(text=BLANK_USER_FALLBACK_TEXT)]


def test_cli_names_a_broken_sessions_json(
    tmp_path: Path, server: FaultInjectingOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "agent"
    sessions = openclaw_dir(state)
    (sessions / "sessions.json").write_bytes(b'{"agent:main:main": ')
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    monkeypatch.setenv("OPENCLAW_RUNTIME_MODEL", "echo/echo")
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    monkeypatch.delenv("OPENCLAW_RUNTIME_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["run", "--session-key", KEY, "hi"])
    assert result.exit_code == 2, result.output
    assert str(sessions / "sessions.json") in result.output
    assert "not valid JSON" in result.output
    assert (sessions / "sessions.json").read_bytes() == b'{"agent:main:main": '
    assert (sessions / FIXTURE.name).read_bytes() == FIXTURE.read_bytes()
