"""``[plugins.settings.<name>]``: validated by the model the plugin declares, errors naming the
plugin and the key, values masked where shown, reachable from the plugin and shown by doctor."""

from __future__ import annotations

import importlib
import json

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from openclaw_runtime import ConfigurationError, Runtime, RuntimeConfig, hookimpl
from openclaw_runtime._plugin_settings import (
    DeclaredSettings,
    describe_settings,
    settings_problems,
    unclaimed_settings,
    validate_plugin_settings,
)
from openclaw_runtime.cli import cli


class Retry(BaseModel):
    attempts: int = Field(default=2, ge=1)


class GreeterSettings(BaseModel):
    greeting: str = "Hello"
    retry: Retry = Field(default_factory=Retry)
    api_key: SecretStr | None = None


class Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = "x"


class Needy(BaseModel):
    endpoint: str


GREETER = DeclaredSettings("greeter", GreeterSettings, "greeter-plugin")


@pytest.mark.parametrize(
    ("declared", "values", "problems"),
    [
        (GREETER, {}, []),
        (GREETER, {"greeting": "Hi", "retry": {"attempts": 5}}, []),
        (
            GREETER,
            {"greting": "Hi"},
            ["[plugins.settings.greeter] greting: unknown key (plugin 'greeter-plugin')"],
        ),
        (
            GREETER,
            {"retry": {"attempts": 0}},
            [
                "[plugins.settings.greeter] retry.attempts: Input should be greater than or "
                "equal to 1 (plugin 'greeter-plugin')"
            ],
        ),
        (
            GREETER,
            {"greeting": 7, "retry": {"attempts": "x"}},
            [
                "[plugins.settings.greeter] greeting: Input should be a valid string "
                "(plugin 'greeter-plugin')",
                "[plugins.settings.greeter] retry.attempts: Input should be a valid integer, "
                "unable to parse string as an integer (plugin 'greeter-plugin')",
            ],
        ),
        (DeclaredSettings("loose", Loose, "p"), {"typo": 1}, []),  # the model's own rule
        (
            DeclaredSettings("needy", Needy, "p"),
            {},
            ["[plugins.settings.needy] endpoint: Field required (plugin 'p')"],
        ),
    ],
)
def test_settings_problems(declared, values, problems):
    instance, found = settings_problems(declared, values)
    assert found == problems
    assert (instance is None) == bool(problems)


def test_a_problem_never_shows_the_value():
    _, found = settings_problems(GREETER, {"greeting": ["sk-secret-value-123456"]})
    assert found and "sk-secret" not in " ".join(found)


def test_validation_reports_every_plugin_at_once():
    declared = {"greeter": GREETER, "needy": DeclaredSettings("needy", Needy, "n")}
    with pytest.raises(ConfigurationError) as info:
        validate_plugin_settings(declared, {"greeter": {"greting": 1}})
    assert "greting: unknown key (plugin 'greeter-plugin')" in str(info.value)
    assert "endpoint: Field required (plugin 'n')" in str(info.value)


def test_unclaimed_tables():
    assert unclaimed_settings({"greeter": GREETER}, {"greeter": {}, "ghost": {}}) == ["ghost"]


def test_describe_masks_credentials():
    instance = GreeterSettings(api_key=SecretStr("sk-live-1234567890"))
    shown = describe_settings(instance)
    assert shown == {"greeting": "Hello", "retry": {"attempts": 2}, "api_key": "***"}

    class Tokens(BaseModel):
        auth_token: str = "plain-token-value-1"
        nested: dict[str, str] = {"password": "hunter2hunter2", "user": "ada"}

    assert describe_settings(Tokens()) == {
        "auth_token": "***",
        "nested": {"password": "***", "user": "ada"},
    }


class GreeterPlugin:
    @hookimpl
    def register_plugin_settings(self, register):
        register("greeter", GreeterSettings)


def runtime(config, *plugins):
    return Runtime(config, plugins=list(plugins), load_entrypoints=False)


def test_toml_table_reaches_the_plugin(tmp_path):
    path = tmp_path / "openclaw-runtime.toml"
    path.write_text('[plugins.settings.greeter]\ngreeting = "Hi"\nretry = { attempts = 4 }\n')
    rt = runtime(RuntimeConfig.load(path), ("greeter", GreeterPlugin()))
    settings = rt.plugin_settings("greeter", GreeterSettings)
    assert (settings.greeting, settings.retry.attempts) == ("Hi", 4)
    assert runtime({}, ("greeter", GreeterPlugin())).plugin_settings("greeter").greeting == "Hello"


def test_unknown_or_mistyped_settings_name():
    rt = runtime({}, ("greeter", GreeterPlugin()))
    with pytest.raises(
        ConfigurationError, match=r"no plugin declares settings 'nope' \(declared: greeter\)"
    ):
        rt.plugin_settings("nope")
    with pytest.raises(ConfigurationError, match="not a Loose"):
        rt.plugin_settings("greeter", Loose)


def test_the_old_table_shape_is_rejected_with_a_hint():
    with pytest.raises(
        ConfigurationError, match=r"plugins\.greeter: Extra inputs.*\[plugins\.settings\.greeter\]"
    ):
        RuntimeConfig.coerce({"plugins": {"greeter": {"greeting": "Hi"}}})
    with pytest.raises(
        ConfigurationError, match=r"plugins\.settings\.greeter: Input should be a valid dictionary"
    ):
        RuntimeConfig.coerce({"plugins": {"settings": {"greeter": 3}}})


@pytest.mark.parametrize(
    ("register_args", "message"),
    [
        (("greeter", dict), "expected a pydantic BaseModel subclass"),
        (("", GreeterSettings), "non-empty string"),
        (("greeter",), "bad arguments"),
    ],
)
def test_bad_declarations_name_the_plugin(register_args, message):
    class Bad:
        @hookimpl
        def register_plugin_settings(self, register):
            register(*register_args)

    with pytest.raises(ConfigurationError, match=message) as info:
        runtime({}, ("bad-plugin", Bad()))
    assert "'bad-plugin'" in str(info.value)


def test_a_name_declared_twice_names_both_plugins():
    with pytest.raises(ConfigurationError, match="declared by both plugin") as info:
        runtime({}, ("one", GreeterPlugin()), ("two", GreeterPlugin()))
    assert "'one'" in str(info.value) and "'two'" in str(info.value)


def test_a_plugin_that_raises_declares_nothing_and_is_recorded():
    class Broken:
        @hookimpl
        def register_plugin_settings(self, register):
            register("broken", GreeterSettings)
            raise RuntimeError("boom")

    rt = Runtime(plugins=[("broken", Broken())], load_entrypoints=False, on_load_failure="warn")
    assert rt.declared_plugin_settings == {}
    assert [(f.plugin, f.hook) for f in rt.hooks.faults] == [("broken", "register_plugin_settings")]


@pytest.fixture
def greeter_entry_point(monkeypatch):
    """Load GreeterPlugin as if installed, for the CLI (which builds its own Runtime)."""
    doctor_module = importlib.import_module("openclaw_runtime.commands.doctor")

    original = doctor_module.Runtime

    def with_greeter(config):
        return original(config, plugins=[("greeter", GreeterPlugin())])

    monkeypatch.setattr(doctor_module, "Runtime", with_greeter)
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")


def test_doctor_shows_settings_masked_and_unclaimed_tables(tmp_path, greeter_entry_point):
    config = tmp_path / "c.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        '[plugins.settings.greeter]\ngreeting = "Hi"\napi_key = "sk-doctor-secret-123"\n'
        "[plugins.settings.ghost]\nx = 1\n"
    )
    result = CliRunner().invoke(cli, ["--config", str(config), "doctor", "--json"])
    rows = [r for r in json.loads(result.output) if r["check"] == "plugin settings"]
    assert rows == [
        {
            "status": "ok",
            "check": "plugin settings",
            "detail": "greeter (greeter): greeting='Hi', retry={'attempts': 2}, api_key='***'",
        },
        {
            "status": "warn",
            "check": "plugin settings",
            "detail": "[plugins.settings.ghost] is set but no loaded plugin declares it",
        },
    ]
    assert "sk-doctor-secret" not in result.output


def test_doctor_fails_on_invalid_settings_naming_plugin_and_key(tmp_path, greeter_entry_point):
    config = tmp_path / "c.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n[plugins.settings.greeter]\nretry = {{ attempts = 0 }}\n'
    )
    result = CliRunner().invoke(cli, ["--config", str(config), "doctor", "--json"])
    assert result.exit_code == 1
    failed = [r for r in json.loads(result.output) if r["status"] == "fail"]
    assert len(failed) == 1
    assert (
        "[plugins.settings.greeter] retry.attempts: Input should be greater than or equal to 1 (plugin 'greeter')"
        in failed[0]["detail"]
    )


def test_plugins_lists_each_plugins_settings_masked(tmp_path, monkeypatch):
    plugins_module = importlib.import_module("openclaw_runtime.commands.plugins")
    original = plugins_module.Runtime
    monkeypatch.setattr(
        plugins_module,
        "Runtime",
        lambda config: original(config, plugins=[("greeter", GreeterPlugin())]),
    )
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    config = tmp_path / "c.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        '[plugins.settings.greeter]\ngreeting = "Hi"\napi_key = "sk-listed-secret-123"\n'
    )
    result = CliRunner().invoke(cli, ["--config", str(config), "plugins", "greeter"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    assert row["settings"] == {
        "greeter": {"greeting": "Hi", "retry": {"attempts": 2}, "api_key": "***"}
    }
    assert "sk-listed-secret" not in result.output
