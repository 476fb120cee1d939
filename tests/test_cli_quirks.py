"""``run``/``chat`` and provider quirks (issue 9 §3): ``--max-tokens``, ``[agent] max_tokens``,
the ad-hoc ``--base-url`` default cap, a refused oversized prompt, an unreachable provider."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from openclaw_runtime.cli import cli
from openclaw_runtime.commands._common import ADHOC_DEFAULT_MAX_TOKENS
from openclaw_runtime.testing import FaultInjectingOpenAIServer


@pytest.fixture
def server():
    with FaultInjectingOpenAIServer(models={"m1": 64_000}) as srv:
        yield srv


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    monkeypatch.delenv("OPENCLAW_RUNTIME_MODEL", raising=False)
    monkeypatch.delenv("OPENCLAW_RUNTIME_CONFIG", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_config(path: Path, base_url: str, agent: str = "", max_tokens: int | None = None):
    model_cap = f"max_tokens = {max_tokens}\n" if max_tokens is not None else ""
    path.write_text(
        f'[agent]\nmodel = "srv/m1"\n{agent}'
        f'[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{base_url}"\ncontext_window = 64000\n{model_cap}'
    )
    return path


def invoke(config: Path | None, *args: str, **kwargs):
    prefix = ["--config", str(config)] if config is not None else []
    return CliRunner().invoke(cli, [*prefix, *args], **kwargs)


def test_run_max_tokens_reaches_the_request(server, env):
    config = write_config(env / "c.toml", server.base_url)
    result = invoke(config, "run", "--max-tokens", "123", "Hello")
    assert result.exit_code == 0, result.output
    assert server.requests[-1].body["max_tokens"] == 123


def test_agent_max_tokens_is_the_default_cap(server, env):
    config = write_config(env / "c.toml", server.base_url, agent="max_tokens = 321\n")
    assert invoke(config, "run", "Hello").exit_code == 0
    assert server.requests[-1].body["max_tokens"] == 321
    assert invoke(config, "run", "--max-tokens", "50", "Hello").exit_code == 0
    assert server.requests[-1].body["max_tokens"] == 50


def test_chat_max_tokens_reaches_every_turn(server, env):
    config = write_config(env / "c.toml", server.base_url)
    result = invoke(config, "chat", "--max-tokens", "64", input="one\ntwo\n/exit\n")
    assert result.exit_code == 0, result.output
    assert [r.body["max_tokens"] for r in server.requests] == [64, 64]


def test_adhoc_base_url_model_gets_a_sane_default_cap(server, env):
    result = invoke(None, "run", "--base-url", server.base_url, "--model", "m1", "Hi")
    assert result.exit_code == 0, result.output
    assert server.requests[-1].body["max_tokens"] == ADHOC_DEFAULT_MAX_TOKENS
    # an explicit cap above the default is honoured for an ad-hoc model (it has no catalog cap)
    result = invoke(
        None,
        "run",
        "--base-url",
        server.base_url,
        "--model",
        "m1",
        "--max-tokens",
        "20000",
        "Hi",
    )
    assert result.exit_code == 0, result.output
    assert server.requests[-1].body["max_tokens"] == 20_000


@pytest.mark.parametrize(
    ("command", "value", "message"),
    [
        ("run", "0", "Invalid value for '--max-tokens': 0 is not in the range x>=1."),
        ("run", "-3", "Invalid value for '--max-tokens': -3 is not in the range x>=1."),
        ("run", "many", "Invalid value for '--max-tokens': 'many' is not a valid integer"),
        ("run", "2.5", "Invalid value for '--max-tokens': '2.5' is not a valid integer"),
        ("chat", "0", "Invalid value for '--max-tokens': 0 is not in the range x>=1."),
    ],
)
def test_bad_max_tokens_is_a_usage_error(server, env, command, value, message):
    config = write_config(env / "c.toml", server.base_url)
    args = [command, "--max-tokens", value] + (["Hello"] if command == "run" else [])
    result = invoke(config, *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert server.requests == []


@pytest.mark.parametrize(
    ("command", "value", "message"),
    [
        ("run", "nan", "Invalid value for '--timeout': 'nan' is not a number of seconds."),
        ("run", "NaN", "Invalid value for '--timeout': 'NaN' is not a number of seconds."),
        ("run", "-1", "Invalid value for '--timeout': -1.0 is not in the range x>=0."),
        ("run", "soon", "Invalid value for '--timeout': 'soon' is not a valid float range."),
        ("chat", "nan", "Invalid value for '--timeout': 'nan' is not a number of seconds."),
    ],
)
def test_bad_timeout_is_a_usage_error(server, env, command, value, message):
    """``nan`` passed click's ``FloatRange(min=0)`` (no comparison with it is true) and the
    run's own check then raised a ``ValueError`` traceback."""
    config = write_config(env / "c.toml", server.base_url)
    args = [command, "--timeout", value] + (["Hello"] if command == "run" else [])
    result = invoke(config, *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert server.requests == []


def test_a_timeout_of_zero_or_more_runs(server, env):
    config = write_config(env / "c.toml", server.base_url)
    for value in ("0", "30", "2.5", "inf"):
        assert invoke(config, "run", "--timeout", value, "Hello").exit_code == 0, value


@pytest.mark.parametrize("value", ["0", "-1", '"100"', "2.5", "true"])
def test_bad_agent_max_tokens_in_config_exits_2(server, env, value):
    config = write_config(env / "c.toml", server.base_url, agent=f"max_tokens = {value}\n")
    result = invoke(config, "run", "Hello")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "agent.max_tokens" in lines[0]


def test_a_refused_prompt_exits_1_with_one_line(server, env):
    config = write_config(env / "c.toml", server.base_url)
    prompt = "x" * 400_000  # ~120k tokens estimated against a 64k window
    result = invoke(config, "run", "-", input=prompt)
    assert result.exit_code == 1
    assert server.requests == []
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: the run failed (prompt_too_large): prompt too large: about ")
    assert "(400,000 characters) for the 64,000-token context window of srv/m1" in lines[0]


def test_json_result_of_a_refused_prompt(server, env):
    config = write_config(env / "c.toml", server.base_url)
    result = invoke(config, "run", "--json", "-", input="y" * 400_000)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert data["error"]["kind"] == "prompt_too_large"


def test_an_unreachable_provider_says_network_and_the_url(env):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    config = write_config(env / "c.toml", base)
    result = invoke(config, "run", "--events", "Hello")
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"error: the run failed (network): Connection error: cannot reach "
        f"{base}/chat/completions (connection refused)"
    )
    assert "timeout" not in result.stderr and "timed out" not in result.stderr
