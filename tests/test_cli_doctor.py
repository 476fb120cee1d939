"""``openclaw-runtime doctor``: a table of ok/warn/fail checks, exit 1 on any fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from openclaw_runtime.cli import cli

SECRET = "sk-doctor-inline-secret-0000001"
ENV_SECRET = "sk-doctor-env-secret-000000002"


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    monkeypatch.setenv("DOCTOR_KEY", ENV_SECRET)
    monkeypatch.delenv("OPENCLAW_RUNTIME_MODEL", raising=False)
    monkeypatch.delenv("MISSING_DOCTOR_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return tmp_path


def config(path: Path, *, model: str = "srv/m1", profiles: str = "", extra: str = "") -> Path:
    path.write_text(
        f'[agent]\nmodel = "{model}"\n{extra}'
        '[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        'base_url = "https://llm.example.com/v1"\n' + profiles
    )
    return path


GOOD_PROFILES = (
    '[[auth.profiles]]\nid = "srv:inline"\nprovider = "srv"\nmode = "api_key"\n'
    f'credential = "{SECRET}"\n'
    '[[auth.profiles]]\nid = "srv:env"\nprovider = "srv"\nmode = "api_key"\n'
    'credential = { env = "DOCTOR_KEY" }\n'
)


def doctor(path: Path | None, *args: str):
    prefix = ["--config", str(path)] if path is not None else []
    return CliRunner().invoke(cli, [*prefix, "doctor", *args])


def rows(result) -> dict[str, list[tuple[str, str]]]:
    """check → [(status, detail)] from the table."""
    table: dict[str, list[tuple[str, str]]] = {}
    for item in json.loads(result.stdout):
        table.setdefault(item["check"], []).append((item["status"], item["detail"]))
    return table


def no_secrets(result) -> None:
    assert SECRET not in result.output and ENV_SECRET not in result.output


def test_a_healthy_setup_is_ready(env):
    path = config(env / "c.toml", profiles=GOOD_PROFILES)
    result = doctor(path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["ok", "config", str(path) + ";"]
    assert lines[-1] == "ready: 0 failed, 0 warnings"
    assert not any(line.startswith("fail") for line in lines)
    table = rows(doctor(path, "--json"))
    assert table["state dir"] == [("ok", f"{env / 'state'} (will be created)")]
    assert table["default model"] == [
        ("ok", "srv/m1 (openai-completions, https://llm.example.com/v1)")
    ]
    assert table["key for srv"] == [("ok", "auth profiles: srv:inline, srv:env")]
    assert table["context engine"] == [("ok", "legacy")]
    assert table["profile srv:inline"] == [("ok", "srv · inline")]
    assert table["profile srv:env"] == [("ok", "srv · env:DOCTOR_KEY")]
    assert all(status == "ok" for status, _ in table["plugin"])
    assert any(detail.startswith("builtin.core") for _, detail in table["plugin"])
    no_secrets(result)


def test_an_unresolvable_credential_fails_without_printing_secrets(env):
    profiles = GOOD_PROFILES + (
        '[[auth.profiles]]\nid = "srv:missing"\nprovider = "srv"\nmode = "api_key"\n'
        'credential = { env = "MISSING_DOCTOR_KEY" }\n'
        '[[auth.profiles]]\nid = "srv:nofile"\nprovider = "srv"\nmode = "api_key"\n'
        f'credential = {{ file = "{env / "nope.key"}" }}\n'
    )
    path = config(env / "c.toml", profiles=profiles)
    result = doctor(path)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "not ready: 2 failed, 0 warnings"
    table = rows(doctor(path, "--json"))
    assert table["profile srv:missing"] == [
        ("fail", "srv · env:MISSING_DOCTOR_KEY cannot be resolved ($MISSING_DOCTOR_KEY is not set)")
    ]
    assert table["profile srv:nofile"][0][0] == "fail"
    assert table["profile srv:inline"] == [("ok", "srv · inline")]
    no_secrets(result)


def test_a_broken_config_fails_first(env):
    path = env / "broken.toml"
    path.write_text(f'[agent]\nmodel = "x"\napi_key = "{SECRET}"\n')
    result = doctor(path)
    assert result.exit_code == 1
    first = result.stdout.splitlines()[0]
    assert first.startswith("fail  config  ")
    assert "agent.api_key: Extra inputs are not permitted" in first
    no_secrets(result)


def test_unknown_models_and_missing_keys_fail(env):
    path = config(
        env / "c.toml",
        model="srv/nope",
        extra='fallbacks = ["srv/m1"]\ncontext_tokens = 20000\n',
    )
    table = rows(doctor(path, "--json"))
    status, detail = table["default model"][0]
    assert status == "fail" and "unknown model 'srv/nope'" in detail
    assert table["fallback model"] == [
        ("ok", "srv/m1 (openai-completions, https://llm.example.com/v1)")
    ]
    assert table["key for srv"] == [
        ("fail", "no key found: set $SRV_API_KEY or add an [[auth.profiles]] entry")
    ]
    assert doctor(path).exit_code == 1


def test_no_model_configured_is_a_warning(env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./openclaw-runtime.toml: defaults
    result = doctor(None)
    assert result.exit_code == 0, result.output
    table = rows(doctor(None, "--json"))
    assert table["config"][0][0] == "ok" and table["config"][0][1].startswith("defaults")
    status, detail = table["default model"][0]
    assert status == "warn" and "no [agent] model configured" in detail


def test_unknown_context_engine_and_unwritable_state_dir_fail(env, monkeypatch):
    blocker = env / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(blocker / "state"))
    path = env / "c.toml"
    path.write_text('context_engine = "nope"\n[agent]\nmodel = "echo/echo"\n')
    table = rows(doctor(path, "--json"))
    assert table["state dir"][0][0] == "fail"
    status, detail = table["context engine"][0]
    assert status == "fail" and "unknown context engine 'nope'" in detail


def test_a_damaged_auth_store_is_set_aside_listed_and_profiles_are_still_checked(env):
    state = env / "state"
    state.mkdir()
    (state / "auth-profiles.json").write_text('{"profiles": {"x": {"key": "' + SECRET)
    path = config(env / "c.toml", profiles=GOOD_PROFILES)
    result = doctor(path, "--json")
    assert result.exit_code == 0
    table = rows(result)
    (aside,) = state.glob("auth-profiles.json.corrupt-*")
    assert table["auth store"][0][0] == "ok"  # a fresh ledger: runs go on
    ((status, detail),) = table["set-aside file"]
    assert status == "warn" and str(aside) in detail
    assert table["profile srv:env"] == [("ok", "srv · env:DOCTOR_KEY")]
    no_secrets(result)
