"""A plugin made by ``plugins new`` installs, is listed with its components, and passes its own
generated tests: for every kind, in a throwaway venv, through the real commands and real pip.

The venv sees this environment's packages (the core, pytest, hatchling) through a ``.pth``
that adds our site-packages as a site dir, so nothing is downloaded: pip runs with
``--no-index --no-deps --no-build-isolation`` (set through pip's own environment variables,
which ``openclaw-runtime install`` passes on). About 30 s for all six kinds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("kind", KINDS)
def test_the_generated_plugin_passes_its_own_tests(installed, kind):
    root, python, env = installed
    done = _run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root / kind, env=env
    )
    assert done.returncode == 0, done.stdout[-4000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


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
