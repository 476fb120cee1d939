"""The ``testing`` extra is slim and sufficient: every third-party module the kit imports
is a core dependency or in the extra (trio excepted: optional), and no dev tool is in it."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "openclaw_runtime" / "testing"
OPTIONAL = {"trio"}  # probed lazily; its variants are skipped without it
DEV_TOOLS = {"ruff", "mypy", "hatchling", "hypothesis", "trio"}


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def imported_top_level_modules() -> set[str]:
    names: set[str] = set()
    for path in KIT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"openclaw_runtime", "__future__"}


def test_the_testing_extra_has_no_dev_tools():
    testing = requirement_names(project()["optional-dependencies"]["testing"])
    assert {"pytest", "anyio"} <= testing
    assert not testing & DEV_TOOLS, testing & DEV_TOOLS


def test_the_test_extra_builds_on_the_testing_extra():
    test = project()["optional-dependencies"]["test"]
    assert "openclaw-runtime[testing]" in test
    assert requirement_names(test) >= DEV_TOOLS


def test_every_module_the_kit_imports_is_installed_by_core_or_the_extra():
    project_ = project()
    allowed = requirement_names(project_["dependencies"]) | requirement_names(
        project_["optional-dependencies"]["testing"]
    )
    providers = importlib.metadata.packages_distributions()
    missing = {
        module: providers.get(module)
        for module in imported_top_level_modules() - OPTIONAL
        if not {d.lower() for d in providers.get(module, [module])} & allowed
    }
    assert not missing, f"imported by openclaw_runtime.testing but not declared: {missing}"
