"""The canary: a key a provider echoes back never leaves the process in clear.

A unique canary key is configured as an auth-profile credential (one profile reads it from an
environment variable, another from a file). A real ``FaultInjectingOpenAIServer`` on 127.0.0.1
repeats the key it was sent (a) in a 401 JSON body, (b) in a 500 ``text/plain`` body and (c) in
an SSE error event after some streamed content; its bodies also carry a well-known-shape key
(``sk-proj-…``) that was never registered anywhere. A tool that prints the key is called too.
The test runs ``Runtime.run`` (asyncio and trio) and the CLI (``run --events``, ``run --json``,
``sessions show``, ``sessions show --json --all``, ``doctor``, ``profiles``), collects every
event (``on_event`` and the ``on_agent_event`` plugin observer), the ``RunResult`` (repr and
JSON), log records and stdout/stderr, and reads every file under the state dir (transcripts,
``.bak-*`` and side files, the auth ledger, the session index): zero hits.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from openclaw_runtime import hookimpl, tool
from openclaw_runtime.cli import cli
from openclaw_runtime.testing import Fault, FaultInjectingOpenAIServer

ENV_CANARY = f"canary-env-{uuid.uuid4().hex}-Q7"
FILE_CANARY = f"canary-file-{uuid.uuid4().hex}-Z3"
#: Never registered: only its well-known shape gets it masked.
SHAPED = f"sk-proj-{uuid.uuid4().hex}{uuid.uuid4().hex[:8]}"
CANARIES = (ENV_CANARY, FILE_CANARY, SHAPED)

UNAUTHORIZED = {
    "error": {
        "message": "Incorrect API key provided: {api_key}. You can find your API key at "
        f"https://platform.openai.com/account/api-keys (also tried {SHAPED}).",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
}
TEXT_500 = (
    "upstream proxy error: request with 'Authorization: Bearer {api_key}' failed; "
    f"fallback key {SHAPED} also failed"
)
STREAM_ERROR = {
    "error": {
        "message": "The stream broke while serving key {api_key} ({SHAPED})".replace(
            "{SHAPED}", SHAPED
        ),
        "type": "server_error",
        "code": "stream_error",
    }
}

SCENARIOS: dict[str, Fault] = {
    "401-json": Fault("status", status=401, body=UNAUTHORIZED, echo_key=True, times=50),
    "500-text": Fault("status", status=500, body=TEXT_500, echo_key=True, times=50),
    "stream-error": Fault("cut_stream", after_chunks=3, body=STREAM_ERROR, echo_key=True, times=50),
}


def leaks(text: str) -> list[str]:
    """Which canaries (or their JSON-escaped forms) appear in ``text``."""
    return [c for c in CANARIES if c in text or json.dumps(c)[1:-1] in text]


def state_leaks(state_dir: Path) -> dict[str, list[str]]:
    """Every file under the state dir that holds a canary, with the canaries it holds."""
    found: dict[str, list[str]] = {}
    for path in sorted(state_dir.rglob("*")):
        if path.is_file():
            hits = leaks(path.read_bytes().decode("latin-1"))
            if hits:
                found[str(path.relative_to(state_dir))] = hits
    return found


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"m1": 64_000}, chunk_chars=4) as running:
        yield running


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "secrets" / "srv.key"
    path.parent.mkdir()
    path.write_text(FILE_CANARY + "\n")
    return path


@pytest.fixture
def canary_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SRV_CANARY_KEY", ENV_CANARY)


def config_dict(state_dir: Path, base_url: str, key_file: Path) -> dict[str, Any]:
    return {
        "state_dir": str(state_dir),
        "models": [
            {
                "id": "m1",
                "api": "openai-completions",
                "provider": "srv",
                "baseUrl": base_url,
                "contextWindow": 64_000,
                "maxTokens": 1024,
            }
        ],
        "agent": {"model": "srv/m1"},
        "auth": {
            "profiles": [
                {
                    "id": "srv:env",
                    "provider": "srv",
                    "mode": "api_key",
                    "credential": {"env": "SRV_CANARY_KEY"},
                },
                {
                    "id": "srv:file",
                    "provider": "srv",
                    "mode": "api_key",
                    "credential": {"file": str(key_file)},
                },
            ]
        },
    }


@tool
def show_credentials() -> str:
    """Print the credentials this process can see."""
    return f"SRV_CANARY_KEY={os.environ.get('SRV_CANARY_KEY')}; header: Bearer {SHAPED}"


class _Observer:
    """An ``on_agent_event`` plugin observer that renders every event it sees."""

    def __init__(self) -> None:
        self.rendered: list[str] = []

    @hookimpl
    def on_agent_event(self, event: Any, session_id: str | None) -> None:
        self.rendered.append(repr(event))
        self.rendered.append(json.dumps(event.to_dict(), default=str))


def _collect(outputs: list[str], event: Any) -> None:
    outputs.append(repr(event))
    outputs.append(json.dumps(event.to_dict(), default=str))


def test_the_server_really_echoes_the_key_it_was_sent(
    server: FaultInjectingOpenAIServer,
) -> None:
    server.inject(*(dataclasses.replace(fault, times=1) for fault in SCENARIOS.values()))
    bodies = []
    for _ in SCENARIOS:
        received = b""
        with httpx.stream(
            "POST",
            server.base_url + "/chat/completions",
            json={"model": "m1", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
            headers={"authorization": f"Bearer {ENV_CANARY}"},
        ) as response:
            try:
                for chunk in response.iter_raw():
                    received += chunk
            except httpx.RemoteProtocolError:
                pass  # the stream is cut right after its error event
        bodies.append((response.status_code, received.decode()))
    assert [status for status, _ in bodies] == [401, 500, 200]
    assert all(ENV_CANARY in text for _, text in bodies)
    assert bodies[2][1].rstrip().splitlines()[-1].startswith('data: {"error"')
    # the server's own record keeps a fingerprint only
    assert all(ENV_CANARY not in repr(r) for r in server.requests)


# --------------------------------------------------------------------------- Runtime.run


@pytest.mark.anyio
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_runtime_run_never_leaks_an_echoed_key(
    scenario: str,
    server: FaultInjectingOpenAIServer,
    tmp_path: Path,
    key_file: Path,
    canary_env: None,
    caplog: pytest.LogCaptureFixture,
    runtime_factory: Any,
) -> None:
    state_dir = tmp_path / "state"
    observer = _Observer()
    runtime = runtime_factory(
        config_dict(state_dir, server.base_url, key_file), plugins=[("observer", observer)]
    )
    outputs: list[str] = []
    server.inject(SCENARIOS[scenario])
    caplog.set_level(logging.DEBUG)
    try:
        result = await runtime.run(
            "Please reply", session_key="canary", on_event=lambda e: _collect(outputs, e)
        )
    finally:
        await runtime.aclose()
    # the server really echoed the keys: both profiles were tried and refused
    assert not result.ok
    assert len(server.requests) >= 2
    outputs += [repr(result), json.dumps(result.to_dict(), default=str), str(result.error)]
    outputs += observer.rendered
    outputs += [record.getMessage() for record in caplog.records]
    outputs.append(caplog.text)
    assert [leaks(text) for text in outputs if leaks(text)] == []
    assert state_leaks(state_dir) == {}
    # what the provider said is still there, with the echoed keys masked
    said = json.dumps([result.to_dict(), outputs])
    assert "{api_key}" not in said  # the server did echo a key
    expected = {
        "401-json": "Incorrect API key provided: ***.",
        "500-text": "Authorization: Bearer ***",
        "stream-error": "The stream broke while serving key ***",
    }[scenario]
    assert expected in said
    assert "sk-***" in said  # the never-registered key, masked by its shape


@pytest.mark.anyio
async def test_a_tool_that_prints_the_key_never_leaks_it(
    server: FaultInjectingOpenAIServer,
    tmp_path: Path,
    key_file: Path,
    canary_env: None,
    runtime_factory: Any,
) -> None:
    state_dir = tmp_path / "state"
    runtime = runtime_factory(config_dict(state_dir, server.base_url, key_file))
    outputs: list[str] = []
    try:
        result = await runtime.run(
            "call show_credentials now",
            session_key="tool",
            tools=[show_credentials],
            on_event=lambda e: _collect(outputs, e),
        )
    finally:
        await runtime.aclose()
    assert result.ok, result.error
    assert any(r.outcome == "tool_call" for r in server.requests)
    outputs += [repr(result), json.dumps(result.to_dict(), default=str)]
    assert [leaks(text) for text in outputs if leaks(text)] == []
    assert state_leaks(state_dir) == {}
    # the tool's output reached the model, masked
    sent = json.dumps([r.body for r in server.requests])
    assert "SRV_CANARY_KEY=***" in sent and ENV_CANARY not in sent


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def cli_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FaultInjectingOpenAIServer
) -> Path:
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    monkeypatch.delenv("OPENCLAW_RUNTIME_MODEL", raising=False)
    monkeypatch.delenv("OPENCLAW_RUNTIME_CONFIG", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("SRV_CANARY_KEY", ENV_CANARY)
    monkeypatch.chdir(tmp_path)
    key_path = tmp_path / "srv.key"
    key_path.write_text(FILE_CANARY + "\n")
    config = tmp_path / "c.toml"
    config.write_text(
        '[agent]\nmodel = "srv/m1"\n'
        '[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{server.base_url}"\n'
        '[[auth.profiles]]\nid = "srv:env"\nprovider = "srv"\nmode = "api_key"\n'
        'credential = { env = "SRV_CANARY_KEY" }\n'
        '[[auth.profiles]]\nid = "srv:file"\nprovider = "srv"\nmode = "api_key"\n'
        f'credential = {{ file = "{key_path}" }}\n'
    )
    return config


def _invoke(config: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--config", str(config), *args])


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_cli_never_leaks_an_echoed_key(
    scenario: str,
    server: FaultInjectingOpenAIServer,
    cli_env: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    server.inject(SCENARIOS[scenario])
    runs = [
        _invoke(cli_env, "run", "--events", "--session-key", "cli", "Please reply"),
        _invoke(cli_env, "run", "--json", "--session-key", "cli", "Please reply again"),
    ]
    assert [r.exit_code for r in runs] == [1, 1], [r.output for r in runs]
    data = json.loads(runs[1].stdout)
    assert data["ok"] is False
    session_id = data["sessionId"]
    shows = [
        _invoke(cli_env, "sessions", "show", session_id),
        _invoke(cli_env, "sessions", "show", "--json", "--all", session_id),
        _invoke(cli_env, "sessions", "list"),
        _invoke(cli_env, "doctor"),
        _invoke(cli_env, "profiles"),
    ]
    assert shows[0].exit_code == 0, shows[0].output
    assert shows[1].exit_code == 0, shows[1].output
    outputs = [text for r in runs + shows for text in (r.stdout, r.stderr, repr(r.exception))]
    outputs.append(caplog.text)
    assert [leaks(text) for text in outputs if leaks(text)] == []
    assert state_leaks(tmp_path / "state") == {}
    # the masked error is what the user sees
    assert "***" in runs[0].stderr
