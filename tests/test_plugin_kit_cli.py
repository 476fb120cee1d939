"""``install`` / ``uninstall`` (pip into the runtime's environment), ``plugins`` with components
and filters, and ``plugins new`` rendering. The end-to-end run of generated plugins (real pip,
a throwaway venv, their own tests) is in test_plugin_kit_e2e.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from openclaw_runtime import ConfigurationError, Model, Runtime, hookimpl
from openclaw_runtime._plugin_components import components_by_plugin, normalize_kind
from openclaw_runtime.cli import cli
from openclaw_runtime.commands.install import (
    FIRST_PARTY,
    distribution_for,
    pip_command,
    pip_install_args,
    pip_uninstall_args,
)
from openclaw_runtime.commands.plugins import add_components, filter_rows
from openclaw_runtime.commands.scaffold import (
    core_requirement,
    plugin_names,
    render_plugin,
    write_plugin,
)

ROOT = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------- install


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("anthropic", "openclaw-runtime-anthropic"),
        ("Anthropic", "openclaw-runtime-anthropic"),
        ("google>=0.1", "openclaw-runtime-google>=0.1"),
        ("openai[extra]==0.1.0", "openclaw-runtime-openai[extra]==0.1.0"),
        ("sliding_window", "openclaw-runtime-sliding-window"),
        ("llm-cool", "llm-cool"),  # any other distribution passes through
        ("./anthropic", "./anthropic"),  # a path is never renamed
        ("dist/anthropic-0.1-py3-none-any.whl", "dist/anthropic-0.1-py3-none-any.whl"),
    ],
)
def test_distribution_for(spec, expected):
    assert distribution_for(spec) == expected


@pytest.mark.parametrize(
    ("names", "editable", "upgrade", "expected"),
    [
        (["anthropic"], [], False, ["install", "openclaw-runtime-anthropic"]),
        (
            ["redis", "x"],
            ["contrib/hello"],
            True,
            ["install", "--upgrade", "openclaw-runtime-redis", "x", "-e", "contrib/hello"],
        ),
        ([], ["a", "b"], False, ["install", "-e", "a", "-e", "b"]),
    ],
)
def test_pip_install_args(names, editable, upgrade, expected):
    assert pip_install_args(names, editable=editable, upgrade=upgrade) == expected


def test_pip_argument_errors():
    with pytest.raises(ConfigurationError, match="at least one plugin to install"):
        pip_install_args([])
    with pytest.raises(ConfigurationError, match="at least one plugin to uninstall"):
        pip_uninstall_args([])
    with pytest.raises(ConfigurationError, match="refusing to uninstall openclaw-runtime"):
        pip_uninstall_args(["google", "openclaw_runtime"])
    assert pip_uninstall_args(["google"]) == ["uninstall", "-y", "openclaw-runtime-google"]


def test_pip_command_is_this_interpreter_unless_overridden():
    assert pip_command({}) == [sys.executable, "-m", "pip"]
    assert pip_command({"OPENCLAW_RUNTIME_PIP": "uv pip"}) == ["uv", "pip"]


@pytest.fixture
def pip_recorder(tmp_path):
    """A fake pip: records its argv as JSON, exits with $FAKE_PIP_EXIT."""
    log = tmp_path / "argv.json"
    script = tmp_path / "fake_pip.py"
    script.write_text(
        "import json, os, sys\n"
        f"open({str(log)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
        "sys.exit(int(os.environ.get('FAKE_PIP_EXIT', '0')))\n"
    )
    return log, f"{sys.executable} {script}"


def run_cli(*args, env=None, cwd=None):
    full_env = {**os.environ, "OPENCLAW_RUNTIME_RAISE_ERRORS": "0", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "openclaw_runtime", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=120,
    )


def test_install_runs_pip_with_the_mapped_names(pip_recorder):
    log, pip = pip_recorder
    done = run_cli(
        "install",
        "anthropic",
        "-e",
        "contrib/hello",
        "--upgrade",
        env={"OPENCLAW_RUNTIME_PIP": pip},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(log.read_text()) == [
        "install",
        "--upgrade",
        "openclaw-runtime-anthropic",
        "-e",
        "contrib/hello",
    ]


def test_uninstall_and_pip_failures_pass_through(pip_recorder):
    log, pip = pip_recorder
    done = run_cli("uninstall", "redis", env={"OPENCLAW_RUNTIME_PIP": pip, "FAKE_PIP_EXIT": "3"})
    assert done.returncode == 3  # pip's own exit code
    assert json.loads(log.read_text()) == ["uninstall", "-y", "openclaw-runtime-redis"]
    refused = run_cli("uninstall", "openclaw-runtime", env={"OPENCLAW_RUNTIME_PIP": pip})
    assert refused.returncode == 2 and "refusing to uninstall" in refused.stderr
    missing = run_cli("install", env={"OPENCLAW_RUNTIME_PIP": "/nonexistent/pip"})
    assert missing.returncode == 2 and "at least one plugin" in missing.stderr
    broken = run_cli("install", "x", env={"OPENCLAW_RUNTIME_PIP": "/nonexistent/pip"})
    assert broken.returncode == 2 and "cannot run '/nonexistent/pip'" in broken.stderr


# --------------------------------------------------------------------------- plugins listing


class Acme:
    """A plugin registering one component of several kinds."""

    @hookimpl
    def register_providers(self, register):
        register("acme-api", lambda model, context, options: None)

    @hookimpl
    def register_models(self, register):
        register(Model(id="one", api="acme-api", provider="acme"))

    @hookimpl
    def register_context_engines(self, register):
        register("acme-engine", object)

    @hookimpl
    def register_transcript_sanitizers(self, register):
        register("acme-clean", lambda messages, policy: messages)

    @hookimpl
    def register_backends(self, register):
        register("lanes", "acme-lanes", lambda runtime: None)

    @hookimpl
    def classify_failover(self, status):
        return None


class BrokenRegistrar:
    @hookimpl
    def register_stream_repairers(self, register):
        raise RuntimeError("cannot register")


@pytest.fixture
def runtime(tmp_path):
    rt = Runtime(
        {
            "models": [{"id": "mine", "api": "echo", "provider": "local"}],
            "state_dir": str(tmp_path),
        },
        plugins=[("acme", Acme()), ("broken", BrokenRegistrar())],
        load_entrypoints=False,
        on_load_failure="warn",
    )
    yield rt
    rt.close()


def test_components_by_plugin(runtime):
    rows = runtime.describe_plugins()
    by_plugin = components_by_plugin(runtime.components, {r["name"]: r["hooks"] for r in rows})
    assert by_plugin["acme"] == {
        "providers": ["acme-api"],
        "models": ["acme/one"],
        "engines": ["acme-engine"],
        "sanitizers": ["acme-clean"],
        "backends": ["lanes:acme-lanes"],
        "classifiers": ["classify_failover"],
    }
    assert by_plugin[None] == {"models": ["local/mine"]}  # the config's own [[models]]
    assert "legacy" in by_plugin["builtin.context"]["engines"]
    assert "broken" not in by_plugin


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("engine", "engines"),
        ("context-engine", "engines"),
        ("Repairer", "repairers"),
        ("tool_call_format", "formats"),
        ("backends", "backends"),
        ("classifier", "classifiers"),
    ],
)
def test_normalize_kind(kind, expected):
    assert normalize_kind(kind) == expected


def test_normalize_kind_rejects_unknown_kinds():
    with pytest.raises(ValueError, match="unknown component kind 'widget'; kinds: providers"):
        normalize_kind("widget")


def test_rows_get_components_and_registration_errors(runtime):
    rows = runtime.describe_plugins()
    by_plugin = components_by_plugin(runtime.components, {r["name"]: r["hooks"] for r in rows})
    enriched = {r["name"]: r for r in add_components(rows, by_plugin)}
    assert enriched["broken"]["registration_errors"] == [
        {"hook": "register_stream_repairers", "error": "RuntimeError: cannot register"}
    ]
    assert enriched["acme"]["registration_errors"] == []
    only_engines = filter_rows(enriched.values(), kind="engine")
    assert {r["name"] for r in only_engines} == {"acme", "builtin.context"}
    assert all(list(r["components"]) == ["engines"] for r in only_engines)
    assert [r["name"] for r in filter_rows(enriched.values(), name="acme")] == ["acme"]
    assert filter_rows(enriched.values(), name="acme", kind="formats") == []


def test_a_registration_that_cannot_be_collected_is_blamed_on_its_plugin():
    rows = [{"name": "bad", "hook_errors": []}, {"name": "good", "hook_errors": []}]
    message = "plugin 'bad' called register() of register_models with bad arguments: nope"
    out = {r["name"]: r for r in add_components(rows, {}, message)}
    assert out["bad"]["registration_errors"] == [{"hook": "register", "error": message}]
    assert out["good"]["registration_errors"] == []


def test_plugins_command_filters(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    runner = CliRunner()
    result = runner.invoke(cli, ["plugins", "builtin.context"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    assert row["components"]["engines"] == ["legacy"]
    result = runner.invoke(cli, ["plugins", "--json", "--kind", "model"])
    names = {r["name"]: r["components"] for r in json.loads(result.output)}
    assert list(names) == ["builtin.core"]  # the catalog's OpenAI rows and the echo model
    assert {"echo/echo", "openai/gpt-4o-mini"} <= set(names["builtin.core"]["models"])
    assert list(names["builtin.core"]) == ["models"]
    result = runner.invoke(cli, ["plugins", "--kind", "widget"])
    assert result.exit_code == 1 and "unknown component kind 'widget'" in result.output
    result = runner.invoke(cli, ["plugins", "nope"])
    assert result.exit_code == 1 and "no plugin named 'nope'; plugins: " in result.output
    assert "builtin.context" in result.output


# --------------------------------------------------------------------------- plugins new


@pytest.mark.parametrize(
    ("name", "package", "distribution", "stem"),
    [
        ("acme", "openclaw_runtime_acme", "openclaw-runtime-acme", "Acme"),
        ("my_engine", "openclaw_runtime_my_engine", "openclaw-runtime-my-engine", "MyEngine"),
        ("lossless-2", "openclaw_runtime_lossless_2", "openclaw-runtime-lossless-2", "Lossless2"),
    ],
)
def test_plugin_names(name, package, distribution, stem):
    names = plugin_names(name)
    assert (names.package, names.distribution, names.class_stem) == (package, distribution, stem)


@pytest.mark.parametrize("name", ["Acme", "2fast", "a--b", "a_", "my plugin", "", "core", "a.b"])
def test_bad_plugin_names(name):
    with pytest.raises(ConfigurationError, match=r"not valid|reserved"):
        plugin_names(name)


@pytest.mark.parametrize(
    "kind", ["engine", "classifier", "sanitizer", "repairer", "provider", "format"]
)
def test_render_plugin_is_a_complete_distribution(kind):
    files = render_plugin("acme", kind)
    assert sorted(files) == [
        "README.md",
        "conftest.py",
        "openclaw_runtime_acme/__init__.py",
        "openclaw_runtime_acme/_component.py",
        "openclaw_runtime_acme/plugin.py",
        "openclaw_runtime_acme/py.typed",
        "pyproject.toml",
        "tests/test_acme_installed.py",
        "tox.ini",
    ]
    unfilled = {path: re.findall(r"__[A-Z_]+__", text) for path, text in files.items()}
    assert not any(unfilled.values()), unfilled  # every placeholder filled
    assert (
        '[project.entry-points.openclaw_runtime]\nacme = "openclaw_runtime_acme.plugin"'
        in files["pyproject.toml"]
    )
    assert f'dependencies = ["{core_requirement()}"]' in files["pyproject.toml"]
    for path, text in files.items():
        if path.endswith(".py"):
            compile(text, path, "exec")  # valid Python


@pytest.mark.parametrize(
    ("kind", "contract"),
    [
        ("engine", "ContextEngineContract"),
        ("sanitizer", "TranscriptSanitizerContract"),
        ("repairer", "StreamRepairerContract"),
    ],
)
def test_rendered_tests_inherit_the_kinds_contract_suite(kind, contract):
    assert (
        f"class TestAcmeContract({contract}):"
        in render_plugin("acme", kind)["tests/test_acme_installed.py"]
    )


def test_core_requirement():
    assert core_requirement("0.1.0") == "openclaw-runtime>=0.1"
    assert core_requirement("2.13.4.dev1") == "openclaw-runtime>=2.13"


def test_new_writes_once_and_refuses_to_overwrite(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    target = tmp_path / "acme"
    result = CliRunner().invoke(
        cli, ["plugins", "new", "acme", "--kind", "provider", "--dir", str(target)]
    )
    assert result.exit_code == 0, result.output
    assert "install -e" in result.output
    assert (
        (target / "openclaw_runtime_acme" / "_component.py")
        .read_text()
        .startswith('"""The acme provider')
    )
    again = CliRunner().invoke(cli, ["plugins", "new", "acme", "--dir", str(target)])
    assert again.exit_code == 1 and "already exists and is not empty" in again.output
    bad = CliRunner().invoke(cli, ["plugins", "new", "Bad Name", "--dir", str(tmp_path / "b")])
    assert bad.exit_code == 1 and "is not valid" in bad.output
    assert not (tmp_path / "b").exists()
    with pytest.raises(ConfigurationError, match="already exists"):
        write_plugin(target, {"x.txt": "y"})


# --------------------------------------------------------------------------- docs/plugins.md


def _distributions() -> dict[str, str]:
    """folder (plugins/x, contrib/y) → distribution name, from each pyproject."""
    out = {}
    for pyproject in sorted(
        [*ROOT.glob("plugins/*/pyproject.toml"), *ROOT.glob("contrib/*/pyproject.toml")]
    ):
        folder = pyproject.parent.relative_to(ROOT).as_posix()
        out[folder] = tomllib.loads(pyproject.read_text())["project"]["name"]
    return out


def test_the_plugin_directory_lists_every_distribution_with_a_working_install_line():
    page = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    distributions = _distributions()
    assert distributions  # the repository has plugins
    for folder, distribution in distributions.items():
        assert f"`{distribution}`" in page, f"docs/plugins.md does not list {distribution}"
        assert f"`openclaw-runtime install -e {folder}`" in page, folder
    for folder in re.findall(r"openclaw-runtime install -e ((?:plugins|contrib)/[\w-]+)", page):
        assert (ROOT / folder / "pyproject.toml").exists(), f"docs/plugins.md names {folder}"
    # the short names the install command maps are exactly the directory's plugins
    assert set(FIRST_PARTY.values()) == set(distributions.values())


def test_new_names_the_program_as_it_was_started(tmp_path):
    """The 'next:' hints work without an activated venv: started as ``python -m
    openclaw_runtime``, they say so (not a bare ``openclaw-runtime`` that may not be on PATH)."""
    target = tmp_path / "zed"
    done = subprocess.run(
        [sys.executable, "-m", "openclaw_runtime", "plugins", "new", "zed", "--dir", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENCLAW_RUNTIME_STATE_DIR": str(tmp_path / "state")},
    )
    assert done.returncode == 0, done.stderr
    assert f"  {sys.executable} -m openclaw_runtime install -e {target}" in done.stdout
    assert f"  {sys.executable} -m openclaw_runtime plugins zed" in done.stdout
    assert f"&& {sys.executable} -m pytest" in done.stdout
