"""``openclaw-runtime run`` and ``chat`` against a real OpenAI-compatible server on 127.0.0.1.

Every test talks HTTP to a ``FaultInjectingOpenAIServer``: keys it rate-limits or refuses,
models it serves. State goes to a temp dir through ``OPENCLAW_RUNTIME_STATE_DIR``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from openclaw_runtime import ConfigurationError, RuntimeConfig
from openclaw_runtime.cli import cli
from openclaw_runtime.commands import timeline
from openclaw_runtime.testing import Fault, FaultInjectingOpenAIServer
from openclaw_runtime.testing.openai_server import api_key_fingerprint

RATE_LIMITED = "sk-test-rate-limited-000000001"
GOOD = "sk-test-good-key-000000000002"
INVALID = "sk-test-invalid-key-00000003"
SECRETS = (RATE_LIMITED, GOOD, INVALID)


@pytest.fixture
def server():
    keys = {RATE_LIMITED: "rate_limited", GOOD: "ok", INVALID: "invalid"}
    with FaultInjectingOpenAIServer(keys=keys, chunk_chars=4) as srv:
        yield srv


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")  # entry-point plugins stay out
    monkeypatch.delenv("OPENCLAW_RUNTIME_MODEL", raising=False)
    monkeypatch.delenv("OPENCLAW_RUNTIME_CONFIG", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_config(path: Path, base_url: str, *keys: str) -> Path:
    """A config with model ``srv/m1`` at ``base_url`` and one auth profile per key."""
    text = (
        '[agent]\nmodel = "srv/m1"\n'
        f'[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\nbase_url = "{base_url}"\n'
    )
    for index, key in enumerate(keys):
        text += (
            f'[[auth.profiles]]\nid = "srv:{"abcdef"[index]}"\nprovider = "srv"\n'
            f'mode = "api_key"\ncredential = "{key}"\n'
        )
    path.write_text(text)
    return path


def invoke(config: Path | None, *args: str, **kwargs):
    prefix = ["--config", str(config)] if config is not None else []
    return CliRunner().invoke(cli, [*prefix, *args], **kwargs)


def no_secrets(result) -> None:
    for secret in SECRETS:
        assert secret not in result.output
        assert secret not in result.stderr


def test_run_streams_the_answer_as_it_arrives(server, env, monkeypatch):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    writes: list[str] = []
    original = timeline.AnswerWriter.write

    def recording(self, text):
        writes.append(text)
        original(self, text)

    monkeypatch.setattr(timeline.AnswerWriter, "write", recording)
    result = invoke(config, "run", "Hello there")
    assert result.exit_code == 0, result.output
    assert result.stdout == "You said: Hello there\n"
    # stderr holds only the usage line a run ends with (issue 12 §3)
    assert result.stderr.startswith("usage: ") and result.stderr.count("\n") == 1
    assert len(writes) >= 5  # delta by delta (the server sends 4-character chunks)
    assert "".join(writes) == "You said: Hello there\n"


def test_run_json_prints_the_run_result(server, env):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    result = invoke(config, "run", "--json", "--session-key", "me", "Hi")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert data["text"] == "You said: Hi"
    assert data["sessionKey"] == "me"
    assert data["provider"] == "srv" and data["model"] == "m1"
    assert data["authProfileId"] == "srv:a"
    assert data["attempts"] == 1
    assert data["usage"]["input"] > 0 and data["usage"]["output"] > 0
    assert data["outcome"]["status"] == "ok"
    assert Path(data["sessionFile"]).is_file()
    assert Path(data["sessionFile"]).parent == env / "state" / "sessions"


def test_events_timeline_shows_the_key_rotation(server, env):
    config = write_config(env / "c.toml", server.base_url, RATE_LIMITED, GOOD)
    result = invoke(config, "run", "--events", "Hello")
    assert result.exit_code == 0, result.output
    assert result.stdout == "You said: Hello\n"  # the timeline stays off stdout
    lines = result.stderr.splitlines()
    assert any(line.startswith("· attempt 1: srv/m1 with profile srv:a") for line in lines)
    assert any("✗ attempt 1 failed (rate_limit): 429" in line for line in lines)
    assert any(
        "rotated auth profile srv:a → srv:b (rate_limit; srv:a marked rate_limit on the ledger)"
        in line
        for line in lines
    )
    assert any(line.startswith("· attempt 2: srv/m1 with profile srv:b") for line in lines)
    assert lines[-2] == "✓ done after 2 attempts on srv/m1"
    assert lines[-1].startswith("usage: ")  # the usage line ends a run
    no_secrets(result)


def test_prompt_dash_reads_stdin(server, env):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    result = invoke(config, "run", "-", input="from a pipe\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == "You said: from a pipe\n"


def test_events_timeline_shows_the_fallback(server, env):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    text = config.read_text().replace(
        'model = "srv/m1"\n', 'model = "srv/m1"\nfallbacks = ["srv/m2"]\n'
    )
    config.write_text(
        text + f'[[models]]\nid = "m2"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{server.base_url}"\n'
    )
    server.inject(Fault("overloaded", model="m1", times=10))
    result = invoke(config, "run", "--events", "Hello")
    assert result.exit_code == 0, result.output
    assert result.stdout == "You said: Hello\n"
    lines = result.stderr.splitlines()
    assert (
        "✗ attempt 1 failed (overloaded): 503 The server is overloaded with other requests. Please retry your request later."
        in lines
    )
    assert "⇢ srv/m1 gave up (overloaded) → falling back to srv/m2" in lines
    assert lines[-2] == "✓ done after 2 attempts on srv/m2"
    assert lines[-1].startswith("usage: ")  # the usage line ends a run


def test_a_refused_key_fails_with_exit_1_and_no_secret(server, env):
    config = write_config(env / "c.toml", server.base_url, INVALID)
    result = invoke(config, "run", "--events", "Hello")
    assert result.exit_code == 1
    assert result.stdout == ""
    last = result.stderr.splitlines()[-1]
    assert last.startswith("error: the run failed (")
    assert "401" in result.stderr or "auth" in result.stderr
    no_secrets(result)
    as_json = invoke(config, "run", "--json", "Hello")
    assert as_json.exit_code == 1
    data = json.loads(as_json.stdout)
    assert data["ok"] is False and data["error"]["kind"]
    no_secrets(as_json)


def test_base_url_defines_an_adhoc_openai_compatible_model(server, env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", GOOD)
    result = invoke(
        None, "run", "--base-url", server.base_url, "--model", "gpt-adhoc", "--json", "Hello"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["provider"], data["model"], data["text"]) == (
        "openai",
        "gpt-adhoc",
        "You said: Hello",
    )
    request = server.requests[-1]
    assert request.model == "gpt-adhoc"
    assert request.api_key_fingerprint == api_key_fingerprint(GOOD)  # the env key was sent
    no_secrets(result)


def test_base_url_takes_the_key_from_the_providers_auth_profiles(server, env):
    config = env / "c.toml"
    config.write_text(
        f'[[auth.profiles]]\nid = "local:main"\nprovider = "local"\nmode = "api_key"\n'
        f'credential = "{GOOD}"\n'
    )
    result = invoke(
        config, "run", "--base-url", server.base_url, "--provider", "local", "--model", "x", "Hey"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "You said: Hey\n"
    assert server.requests[-1].api_key_fingerprint == api_key_fingerprint(GOOD)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--base-url", "http://127.0.0.1:9/v1", "hi"], "--base-url needs --model"),
        (["run", "--base-url", "ftp://x", "--model", "m", "hi"], "is not an http(s) URL"),
        (
            ["run", "--base-url", "https://api.example.com/v1", "--model", "m", "hi"],
            "no API key for provider 'openai': set OPENAI_API_KEY",
        ),
        (["run", "--model", "nope/missing", "hi"], "unknown model 'nope/missing'"),
        (["run", "--provider", "srv", "hi"], "was given without a model"),
        (["run", "--thinking", "ludicrous", "hi"], "Invalid value for '--thinking'"),
        (["run", "--session", "../etc", "hi"], "Invalid session ID"),
        (["run", "  "], "the prompt is empty"),
    ],
)
def test_usage_and_config_errors_exit_2_with_one_line(server, env, args, message):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    result = invoke(config, *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_a_broken_config_file_exits_2(env):
    bad = env / "bad.toml"
    bad.write_text("[agent]\nmodle = 'x'\n")
    result = invoke(bad, "run", "hi")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {bad}: invalid configuration: agent.modle: Extra inputs are not permitted"
    ]


def test_env_overrides_state_dir_and_model(server, env, monkeypatch):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(env / "elsewhere"))
    monkeypatch.setenv("OPENCLAW_RUNTIME_MODEL", "echo/echo")
    loaded = RuntimeConfig.load(config)
    assert loaded.state_dir == env / "elsewhere"
    assert loaded.agent.model == "echo/echo"
    result = invoke(config, "run", "--json", "ping")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["provider"], data["model"]) == ("echo", "echo")
    assert data["sessionFile"].startswith(str(env / "elsewhere"))


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("OPENCLAW_RUNTIME_STATE_DIR", " ", "OPENCLAW_RUNTIME_STATE_DIR is set but empty"),
        ("OPENCLAW_RUNTIME_STATE_DIR", "{file}", "is not a directory"),
        ("OPENCLAW_RUNTIME_MODEL", "", "OPENCLAW_RUNTIME_MODEL is set but empty"),
        ("OPENCLAW_RUNTIME_MODEL", "gpt 4", "is not a model reference"),
    ],
)
def test_env_overrides_are_validated(env, monkeypatch, name, value, message):
    a_file = env / "a-file"
    a_file.write_text("x")
    monkeypatch.setenv(name, value.format(file=a_file))
    with pytest.raises(ConfigurationError, match=message):
        RuntimeConfig.load()
    result = invoke(None, "run", "hi")
    assert result.exit_code == 2
    assert message in result.stderr


def test_chat_with_piped_input(server, env):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    result = invoke(
        config,
        "chat",
        "--session-key",
        "pipe",
        input="hello\n/session\nsecond message\n/new\n/session\n/bogus\n/exit\nnever sent\n",
    )
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert out[0] == "You said: hello"
    assert out[1].startswith("session ") and out[1].endswith("(key pipe)")
    first_id = out[1].split()[1]
    assert out[2] == f"transcript: {env / 'state' / 'sessions' / first_id}.jsonl"
    assert Path(out[2].split(": ", 1)[1]).is_file()
    assert out[3] == "You said: second message"
    assert out[4].startswith("new session ") and first_id not in out[4]
    assert out[5].startswith("session ") and first_id not in out[5]
    assert out[6].endswith("(not written yet)")
    assert "unknown command /bogus" in result.stderr
    assert len(out) == 7  # nothing after /exit
    assert all(r.outcome == "ok" for r in server.requests)
    assert len(server.requests) == 2


def test_chat_compact_and_end_of_input(server, env):
    config = write_config(env / "c.toml", server.base_url, GOOD)
    result = invoke(config, "chat", input="/compact\nhi\n/compact\n")  # EOF ends the chat
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert out[0] == "nothing to compact yet: the session has no transcript"
    assert out[1] == "You said: hi"
    assert out[2].startswith("nothing to compact")
