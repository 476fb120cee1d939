"""The complete example of docs/testing-plugins.md runs as written, as a third-party project
would run it (its own directory, its own conftest, the kit's pytest11 plugin auto-loaded),
with trio and with trio hidden (the trio variants are then skipped with a reason)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "testing-plugins.md"
EXAMPLE = re.compile(r"<!-- example-file: (\S+) -->\n```python\n(.*?)```", re.S)

HIDE_TRIO = '''
import sys


class _NoTrio:
    """Make `import trio` fail as it does where trio is not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "trio" or name.startswith("trio."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoTrio())
'''


def example_files() -> dict[str, str]:
    return dict(EXAMPLE.findall(DOC.read_text(encoding="utf-8")))


def write_project(root: Path) -> None:
    for name, source in example_files().items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    (root / "conftest.py").write_text('pytest_plugins = ["openclaw_runtime.testing"]\n')
    (root / "pytest.ini").write_text(
        "[pytest]\naddopts = --import-mode=importlib -ra\nfilterwarnings = error\n"
    )


def run_pytest(
    root: Path, *, pythonpath: list[Path], **env_vars: str
) -> tuple[str, dict[str, int]]:
    env = {**os.environ, **env_vars, "PYTHONPATH": os.pathsep.join(str(p) for p in pythonpath)}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?)", out)}
    return out, counts


def test_the_documented_example_is_complete():
    assert set(example_files()) == {"acme_plugin.py", "tests/test_acme.py"}


def test_the_documented_example_passes(tmp_path):
    write_project(tmp_path)
    out, counts = run_pytest(tmp_path, pythonpath=[tmp_path])
    assert counts == {"passed": 15}, out


def test_without_trio_the_trio_variants_are_skipped_with_a_reason(tmp_path):
    project, site = tmp_path / "project", tmp_path / "site"
    project.mkdir()
    site.mkdir()
    write_project(project)
    (site / "sitecustomize.py").write_text(HIDE_TRIO)
    # trio's package is hidden but its dist-info is still there, and hypothesis loads trio's
    # "hypothesis" entry point at the end of the session: where trio is really missing that
    # entry point is too, so keep hypothesis from looking
    out, counts = run_pytest(project, pythonpath=[site, project], HYPOTHESIS_NO_PLUGINS="1")
    # the two async tests keep their asyncio run; their trio variants are skipped, not failed
    assert counts == {"passed": 13, "skipped": 2}, out
    assert "trio is not installed: the trio variant is skipped (pip install trio)" in out, out
