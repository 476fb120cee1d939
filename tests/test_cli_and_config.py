"""The command line and configuration loading (the demo: ``test_demo.py``)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from openclaw_runtime import ConfigurationError, RuntimeConfig
from openclaw_runtime.cli import cli


def test_plugins_command_prints_json(monkeypatch):
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    result = CliRunner().invoke(cli, ["plugins"])
    assert result.exit_code == 0, result.output
    plugins = json.loads(result.output)
    core = next(p for p in plugins if p["name"] == "builtin.core")
    assert core["status"] == "loaded"
    assert core["hooks"] == ["register_models", "register_providers"]


def test_configuration_errors_print_one_line_or_raise(tmp_path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text("[plugins]\nalow = ['x']\n")
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    result = CliRunner().invoke(cli, ["--config", str(bad), "plugins"])
    assert result.exit_code == 1
    assert "error: " in result.output
    assert "plugins.alow: Extra inputs are not permitted" in result.output
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "1")
    result = CliRunner().invoke(cli, ["--config", str(bad), "plugins"])
    assert isinstance(result.exception, ConfigurationError)


def test_config_loads_from_toml(tmp_path, monkeypatch):
    path = tmp_path / "openclaw-runtime.toml"
    path.write_text(
        'context_engine = "sliding_window"\n'
        "[plugins]\nallow = ['hello']\nstrict = true\n"
        "[agent]\nmodel = 'echo'\nthinking_level = 'low'\n"
        "[[models]]\nid = 'local'\napi = 'openai-completions'\nprovider = 'ollama'\n"
        "base_url = 'http://127.0.0.1:11434/v1'\ncontext_window = 32768\n"
    )
    config = RuntimeConfig.load(path)
    assert config.plugins.allow == ["hello"]
    assert config.agent.thinking_level == "low"
    assert config.models[0].base_url == "http://127.0.0.1:11434/v1"
    assert config.context_engine == "sliding_window"
    monkeypatch.chdir(tmp_path)
    assert RuntimeConfig.load().agent.model == "echo"  # ./openclaw-runtime.toml by default


def test_config_errors_name_the_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert RuntimeConfig.load() == RuntimeConfig()  # no file: defaults
    with pytest.raises(ConfigurationError, match="does not exist"):
        RuntimeConfig.load(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[agent\n")
    with pytest.raises(ConfigurationError, match="cannot read config file"):
        RuntimeConfig.load(broken)
    with pytest.raises(ConfigurationError, match=r"agent\.thinking_level"):
        RuntimeConfig.coerce({"agent": {"thinking_level": "ludicrous"}})
