"""The tox matrix covers every distribution, installs the core first, and CI runs it exactly
as the README says (.ci/run's test command is the README's)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tox_config() -> configparser.ConfigParser:
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "tox.ini")
    return config


def lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def expected_envs() -> dict[str, Path]:
    """``plugin-<dir>`` / ``contrib-<dir>`` for every distribution directory."""
    return {
        f"{'plugin' if p.parent.parent.name == 'plugins' else 'contrib'}-{p.parent.name}": p.parent
        for p in [*ROOT.glob("plugins/*/pyproject.toml"), *ROOT.glob("contrib/*/pyproject.toml")]
    }


def factor_lines(value: str, factor: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in lines(value) if line.startswith(f"{factor}:")]


def test_every_distribution_has_an_env_in_the_plugins_label():
    config = tox_config()
    labels = dict(
        (name.strip(), [e.strip() for e in envs.split(",")])
        for name, envs in (line.split("=", 1) for line in lines(config["tox"]["labels"]))
    )
    assert sorted(labels["plugins"]) == sorted(expected_envs())
    env_list = " ".join(lines(config["tox"]["env_list"]))
    for env in expected_envs():
        scope, name = env.split("-", 1)
        assert re.search(rf"{scope}-(\{{[^}}]*\b{name}\b[^}}]*\}}|{name}\b)", env_list), env


@pytest.mark.parametrize("env", sorted(expected_envs()))
def test_each_env_installs_the_core_with_its_plugin_and_runs_its_tests_and_contracts(env):
    config = tox_config()["testenv"]
    directory = expected_envs()[env].relative_to(ROOT).as_posix()
    name = env.split("-", 1)[1]
    assert config["package"] == "skip"  # one pip call: the core never comes from an index
    assert lines(config["deps"])[0] == "-e .[test]"
    assert factor_lines(config["deps"], name) == [f"-e {directory}"]
    assert f"-e {directory}" in factor_lines(config["deps"], "set-all")
    (command,) = factor_lines(config["commands"], env)
    assert command.split()[:3] == [
        "pytest",
        f"{directory}/tests",
        "openclaw_runtime/testing/installed_contracts.py",
    ]
    assert " tests " not in f" {command} "  # the core suite runs in core and set-all only


def test_redis_url_passes_through():
    assert "OPENCLAW_RUNTIME_REDIS_URL" in lines(tox_config()["testenv"]["pass_env"])


def test_ci_runs_the_readme_command_including_the_plugin_envs():
    readme = (ROOT / "README.md").read_text()
    ci_command = lines((ROOT / ".ci" / "run").read_text())[-1]
    assert ci_command.endswith("&& .venv/bin/tox run -m plugins")
    assert f"```bash\n{ci_command}\n```" in readme
    assert "tox" in (ROOT / "requirements-test.txt").read_text()
