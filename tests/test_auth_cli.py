"""``openclaw-runtime profiles``: each profile's health, human-readable and JSON, no secrets."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from openclaw_runtime.cli import cli

SECRET = "sk-CLI-SECRET-9999"
STORED_SECRET = "sk-STORED-CLI-1234"
Y2100 = 4_102_444_800_000  # 2100-01-01T00:00:00.000Z
Y2101 = 4_133_980_800_000  # 2101-01-01T00:00:00.000Z


@pytest.fixture
def setup(tmp_path):
    store = tmp_path / "auth-profiles.json"
    store.write_text(
        json.dumps(
            {
                "version": 1,
                "profiles": {
                    "openai:stored": {"type": "api_key", "provider": "openai", "key": STORED_SECRET}
                },
                "usageStats": {
                    "openai:main": {
                        "cooldownUntil": Y2100,
                        "cooldownReason": "rate_limit",
                        "cooldownModel": "gpt-5",
                        "errorCount": 2,
                        "failureCounts": {"rate_limit": 2},
                    },
                    "anthropic:billing": {
                        "disabledUntil": Y2101,
                        "disabledReason": "billing",
                        "cooldownUntil": Y2100,
                        "cooldownReason": "auth",
                    },
                    "openai:stored": {"cooldownUntil": 1_000, "cooldownReason": "auth"},
                    "openai:codex": {
                        "blockedUntil": Y2100,
                        "blockedReason": "subscription_limit",
                        "blockedModel": "gpt-5.5",
                        "blockedScope": "model",
                    },
                    "openrouter:x": {"cooldownUntil": Y2100, "cooldownReason": "auth"},
                },
            }
        )
    )
    config = tmp_path / "openclaw-runtime.toml"
    config.write_text(
        f"""
[auth]
store_path = "{store}"

[[auth.profiles]]
id = "openai:main"
provider = "openai"
mode = "api_key"
credential = "{SECRET}"

[[auth.profiles]]
id = "anthropic:billing"
provider = "anthropic"
mode = "token"
credential = {{ env = "ANTHROPIC_TOKEN" }}

[[auth.profiles]]
id = "openai:codex"
provider = "openai"
mode = "oauth"
credential = {{ file = "/secrets/codex" }}

[[auth.profiles]]
id = "openrouter:x"
provider = "openrouter"
mode = "api_key"
credential = "{SECRET}"
"""
    )
    return config, store


def run(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert SECRET not in result.output and STORED_SECRET not in result.output
    return result


def test_profiles_are_rendered_human_readable(setup):
    config, _ = setup
    result = run("--config", str(config), "profiles")
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert lines["openai:main"].endswith(
        "cooling down until 2100-01-01T00:00:00.000Z (rate_limit, model gpt-5)"
    )
    assert lines["anthropic:billing"].endswith("disabled until 2101-01-01T00:00:00.000Z (billing)")
    assert lines["openai:codex"].endswith(
        "cooling down until 2100-01-01T00:00:00.000Z (subscription_limit, model gpt-5.5)"
    )
    assert lines["openai:stored"].endswith("healthy")  # its window expired long ago
    assert lines["openrouter:x"].endswith("healthy")  # OpenRouter manages its own limits
    assert "openai/api_key" in lines["openai:main"]


def test_profiles_json(setup):
    config, _ = setup
    result = run("--config", str(config), "profiles", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["id"]: row for row in json.loads(result.output)}
    assert list(rows) == [
        "openai:main",
        "anthropic:billing",
        "openai:codex",
        "openrouter:x",
        "openai:stored",
    ]
    main = rows["openai:main"]
    assert main["status"] == "cooling_down"
    assert main["until"] == "2100-01-01T00:00:00.000Z" and main["until_ms"] == Y2100
    assert (main["reason"], main["model"]) == ("rate_limit", "gpt-5")
    assert main["error_count"] == 2 and main["failure_counts"] == {"rate_limit": 2}
    assert main["credential"] == "inline"
    billing = rows["anthropic:billing"]
    assert (billing["status"], billing["reason"], billing["until_ms"]) == (
        "disabled",
        "billing",
        Y2101,
    )
    assert billing["credential"] == "env:ANTHROPIC_TOKEN"
    assert rows["openai:codex"]["credential"] == "file:/secrets/codex"
    assert rows["openai:stored"]["status"] == "healthy"
    assert rows["openai:stored"]["until"] is None


def test_store_option_overrides_the_config(setup, tmp_path):
    config, _ = setup
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"usageStats": {}}))
    result = run("--config", str(config), "profiles", "--store", str(other), "--json")
    rows = {row["id"]: row["status"] for row in json.loads(result.output)}
    assert set(rows.values()) == {"healthy"}
    assert "openai:stored" not in rows


def test_no_profiles(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(f'[auth]\nstore_path = "{tmp_path / "none.json"}"\n')
    result = run("--config", str(config), "profiles")
    assert result.exit_code == 0
    assert "no auth profiles" in result.output


def test_corrupt_store_is_set_aside_with_a_warning(setup, monkeypatch, caplog):
    config, store = setup
    damaged = '{"profiles": {"x": {"key": "' + STORED_SECRET
    store.write_text(damaged)
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    result = run("--config", str(config), "profiles")
    assert result.exit_code == 0, result.output
    (aside,) = store.parent.glob("auth-profiles.json.corrupt-*")
    assert aside.read_text() == damaged
    assert "not valid JSON" in caplog.text and aside.name in caplog.text
    assert "openai:main" in result.output  # configured profiles are still listed
    assert STORED_SECRET not in result.output + caplog.text


def test_bad_auth_config_names_the_field(tmp_path, monkeypatch):
    config = tmp_path / "c.toml"
    config.write_text(
        f'[[auth.profiles]]\nid = "a"\nprovider = "openai"\nmode = "apikey"\n'
        f'credential = "{SECRET}"\n'
    )
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    result = run("--config", str(config), "profiles")
    assert result.exit_code == 1
    assert "auth.profiles.0.mode" in result.output
