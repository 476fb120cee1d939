"""A plugin made by ``plugins new`` installs, is listed with its components, and passes its own
generated tests: for every kind, in a throwaway venv, through the real commands and real pip.

The venv sees this environment's packages (the core, pytest, hatchling) through a ``.pth``
that adds our site-packages as a site dir, so nothing is downloaded: pip runs with
``--no-index --no-deps --no-build-isolation`` (set through pip's own environment variables,
which ``openclaw-runtime install`` passes on). About a minute for all six kinds (more under load).
"""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from openclaw_runtime.commands.scaffold import render_plugin

REPO = Path(__file__).resolve().parent.parent
KINDS = ("engine", "classifier", "sanitizer", "repairer", "provider", "format")
EXPECTED_COMPONENTS = {
    "engine": {"engines": ["acme_engine"]},
    "classifier": {"classifiers": ["classify_failover"]},
    "sanitizer": {"sanitizers": ["acme_sanitizer"]},
    "repairer": {"repairers": ["acme_repairer"]},
    "provider": {"providers": ["acme_provider"], "models": ["acme_provider/echo"]},
    "format": {"formats": ["acme_format"]},
}


def _run(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A venv with one generated plugin of each kind installed by ``openclaw-runtime install``."""
    root = tmp_path_factory.mktemp("plugin-kit")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = sysconfig.get_paths()["purelib"]
    (purelib / "_outer_env.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    env = {
        **os.environ,
        "OPENCLAW_RUNTIME_STATE_DIR": str(root / "state"),
        "OPENCLAW_RUNTIME_RAISE_ERRORS": "0",
        "PIP_NO_INDEX": "1",
        "PIP_NO_DEPS": "1",
        "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling of "do not isolate the build"
    }
    editable: list[str] = []
    for kind in KINDS:
        made = _run(
            [str(python), "-m", "openclaw_runtime", "plugins", "new", f"acme_{kind}",
             "--kind", kind, "--dir", str(root / kind)],
            cwd=root,
            env=env,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        editable += ["-e", str(root / kind)]
    done = _run([str(python), "-m", "openclaw_runtime", "install", *editable], cwd=root, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root, python, env


#: The contract suite each kind's generated tests inherit, and tests of it that must run.
CONTRACTS = {
    "engine": ("ContextEngineContract", ["test_assemble_is_deterministic_and_idempotent"]),
    "classifier": ("FailoverClassifierContract", ["test_answers_its_cases", "test_leaves_other_providers_alone"]),
    "sanitizer": ("TranscriptSanitizerContract", ["test_is_idempotent"]),
    "repairer": ("StreamRepairerContract", ["test_final_message_agrees_with_the_stream"]),
    "provider": ("ProviderContract", ["test_streams_an_answer", "test_an_aborted_call_ends_aborted"]),
    "format": ("ToolCallFormatContract", ["test_parses_its_samples", "test_the_runtime_promotes_its_samples"]),
}  # fmt: skip


def _outcomes(report: str) -> dict[str, str]:
    """``-rA`` short summary lines (``PASSED path::Class::test[param]``) → node id: outcome."""
    found = {}
    for line in report.splitlines():
        outcome, _, rest = line.partition(" ")
        if outcome in ("PASSED", "FAILED", "SKIPPED", "ERROR") and "::" in rest:
            found[rest.split(" - ")[0].strip()] = outcome
    return found


@pytest.mark.parametrize("kind", KINDS)
def test_the_generated_plugin_passes_its_own_tests(installed, kind):
    root, python, env = installed
    done = _run(
        [str(python), "-m", "pytest", "-rA", "-p", "no:cacheprovider"], cwd=root / kind, env=env
    )
    assert done.returncode == 0, done.stdout[-4000:]
    outcomes = _outcomes(done.stdout)
    assert outcomes and set(outcomes.values()) <= {"PASSED", "SKIPPED"}, outcomes
    # the kind's contract suite ran, on both backends for its async tests
    suite, names = CONTRACTS[kind]
    test_file = (root / kind / "tests" / f"test_acme_{kind}_installed.py").read_text()
    assert f"({suite}):" in test_file
    contract_ids = [node for node in outcomes if "Contract::" in node]
    for name in names:
        assert any(f"::{name}" in node for node in contract_ids), (name, contract_ids)
    passed_contracts = [n for n in contract_ids if outcomes[n] == "PASSED"]
    assert len(passed_contracts) >= 3, contract_ids
    if kind not in ("sanitizer", "classifier"):  # suites with async tests ran them on trio too
        assert any(n.endswith("[trio]") for n in passed_contracts), contract_ids
    # the entry-point test, and the pytest11 fixtures (a run through openclaw_runtime_fake or
    # the installed runtime) on asyncio and trio
    entry = [n for n in outcomes if n.endswith("::test_found_through_the_entry_point")]
    assert [outcomes[n] for n in entry] == ["PASSED"], entry
    runs = [n for n in outcomes if "test_a_" in n and outcomes[n] == "PASSED"]
    assert any(n.endswith("[asyncio]") for n in runs) and any(n.endswith("[trio]") for n in runs)


def test_every_generated_plugin_is_listed_with_its_components(installed):
    root, python, env = installed
    done = _run([str(python), "-m", "openclaw_runtime", "plugins"], cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    for kind in KINDS:
        row = rows[f"acme_{kind}"]
        assert (row["status"], row["source"]) == ("loaded", "entrypoint")
        assert row["distribution"] == f"openclaw-runtime-acme-{kind}"
        assert row["components"] == EXPECTED_COMPONENTS[kind]
        assert row["registration_errors"] == []
    only = _run(
        [str(python), "-m", "openclaw_runtime", "plugins", "--kind", "format", "acme_format"],
        cwd=root,
        env=env,
    )
    assert [(r["name"], r["components"]) for r in json.loads(only.stdout)] == [
        ("acme_format", {"formats": ["acme_format"]})
    ]


def _tox_testenv(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path, encoding="utf-8")
    return {**parser["tox"], **parser["testenv"]}


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.strip().splitlines() if line.strip()]


def _dep_factor(line: str) -> str:
    """``checkout: -e ...`` → ``checkout``; an unconditional ``-e .[extra]`` → ``-e .``."""
    head = line.split()[0]
    return head.rstrip(":") if head.endswith(":") else line.split("[")[0]


def test_the_generated_tox_ini_follows_the_template():
    """Same envs, labels, variable and runs as contrib/hello/tox.ini (the documented template)."""
    template = _tox_testenv(REPO / "contrib" / "hello" / "tox.ini")
    generated_text = render_plugin("acme", "engine")["tox.ini"]
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(generated_text)
    generated = {**parser["tox"], **parser["testenv"]}
    for key in ("env_list", "labels", "package", "commands", "skip_missing_interpreters"):
        assert _lines(generated[key]) == _lines(template[key]), key
    assert _lines(generated["set_env"]) == [
        line.replace("PLUGIN = hello", "PLUGIN = acme") for line in _lines(template["set_env"])
    ]
    deps = [(_dep_factor(line), line) for line in _lines(generated["deps"])]
    template_deps = [(_dep_factor(line), line) for line in _lines(template["deps"])]
    assert [factor for factor, _ in deps] == [factor for factor, _ in template_deps]
    # one variable names the core checkout, in both files and in the docs
    assert "{env:OPENCLAW_RUNTIME_CHECKOUT:" in deps[0][1]
    assert "{env:OPENCLAW_RUNTIME_CHECKOUT:" in template_deps[0][1]
    for doc in ("testing-plugins.md", "plugins.md"):
        text = (REPO / "docs" / doc).read_text(encoding="utf-8")
        assert "OPENCLAW_RUNTIME_CHECKOUT" in text and "OPENCLAW_RUNTIME_CORE" not in text, doc
    assert "OPENCLAW_RUNTIME_CORE" not in "".join(render_plugin("acme", "engine").values())


@pytest.mark.parametrize("kind", ["engine", "format"])
def test_the_generated_tox_commands_run(installed, kind):
    """What tox runs in ``core-checkout``, run here: the plugin's tests, then the installed
    contract suites narrowed to this plugin by the env's ``OPENCLAW_RUNTIME_PLUGINS``."""
    root, python, env = installed
    testenv = _tox_testenv(root / kind / "tox.ini")
    set_env = dict(line.split(" = ", 1) for line in _lines(testenv["set_env"]))
    set_env["OPENCLAW_RUNTIME_PLUGINS"] = set_env["PLUGIN"]
    assert set_env["PLUGIN"] == f"acme_{kind}"
    outputs = []
    for command in _lines(testenv["commands"]):
        args = command.replace("{posargs}", "").split()
        assert args[0] == "pytest"
        done = _run(
            [str(python), "-m", *args, "-rA", "-p", "no:cacheprovider"],
            cwd=root / kind,
            env={**env, **set_env},
        )
        assert done.returncode == 0, done.stdout[-4000:]
        outputs.append(_outcomes(done.stdout))
    installed_run = outputs[-1]
    loaded = [n.partition("::")[2] for n in installed_run if "through_its_entry_point" in n]
    assert loaded == [f"test_installed_plugin_loads_through_its_entry_point[acme_{kind}]"], loaded
    if kind == "engine":  # the installed engine went through ContextEngineContract
        engine_runs = [n for n in installed_run if "TestInstalledContextEngines::" in n]
        assert engine_runs and all(installed_run[n] == "PASSED" for n in engine_runs)
        assert any(f"acme_{kind}:acme_{kind}" in n for n in engine_runs), engine_runs


def test_without_trio_the_generated_tests_skip_their_trio_variants(installed, tmp_path):
    """trio is optional for a plugin author: hidden from the venv, the generated conftest's
    ``anyio_backend`` skips every trio variant with the reason, and the asyncio ones pass."""
    root, python, env = installed
    shadow = tmp_path / "no-trio" / "trio"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("trio is hidden for this test")\n')
    # trio's metadata stays visible here, and hypothesis (in this outer environment, not in an
    # author's) loads trio's hypothesis entry point; a trio-less install has neither
    done = _run(
        [str(python), "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"],
        cwd=root / "engine",
        env={**env, "PYTHONPATH": str(shadow.parent)},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    passed = [n for n, outcome in _outcomes(done.stdout).items() if outcome == "PASSED"]
    assert any(n.endswith("[asyncio]") for n in passed), passed
    assert not any(n.endswith("[trio]") for n in passed), passed
    assert "trio is not installed: the trio variant is skipped" in done.stdout
