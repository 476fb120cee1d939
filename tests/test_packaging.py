"""Every distribution of the repository is publishable: license, classifiers, Python versions,
and a dependency list that covers every third-party module its code imports (and no more)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = [
    ROOT,
    *sorted(
        p.parent
        for p in [*ROOT.glob("plugins/*/pyproject.toml"), *ROOT.glob("contrib/*/pyproject.toml")]
    ),
]
IDS = [str(p.relative_to(ROOT)) for p in DISTRIBUTIONS]
REQUIRED_CLASSIFIERS = {
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.11",
    "Typing :: Typed",
}


def project(dist: Path) -> dict:
    return tomllib.loads((dist / "pyproject.toml").read_text())["project"]


def requirement_name(requirement: str) -> str:
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert name, f"unparsable requirement {requirement!r}"
    return re.sub(r"[-_.]+", "-", name.group(0)).lower()


def imported_top_levels(package_dir: Path) -> set[str]:
    """Top-level modules imported anywhere in a package (absolute imports only)."""
    out: set[str] = set()
    for path in package_dir.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                out.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.add(node.module.split(".")[0])
    return out


def test_every_distribution_is_found():
    assert len(DISTRIBUTIONS) == 7, IDS  # core, 4 plugins, 2 contrib


def test_license_file_is_mit_and_matches_pyproject():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "WITHOUT WARRANTY OF ANY KIND" in text
    assert project(ROOT)["license"] == "MIT"


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=IDS)
def test_distribution_metadata_fields(dist):
    meta = project(dist)
    assert meta["name"].startswith("openclaw-runtime")
    assert meta["requires-python"] == ">=3.11"
    assert meta["license"] == "MIT"
    assert meta.get("license-files") == ["LICENSE"]
    assert (dist / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    missing = REQUIRED_CLASSIFIERS - set(meta.get("classifiers", []))
    assert not missing, f"{meta['name']} lacks classifiers {sorted(missing)}"
    assert not [c for c in meta["classifiers"] if c.startswith("License ::")], (
        "the SPDX `license` field replaces License :: classifiers (PEP 639)"
    )
    assert meta.get("description") and meta.get("readme") == "README.md"


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=IDS)
def test_dependencies_cover_every_third_party_import(dist):
    meta = project(dist)
    packages = tomllib.loads((dist / "pyproject.toml").read_text())["tool"]["hatch"]["build"][
        "targets"
    ]["wheel"]["packages"]
    declared = {requirement_name(r) for r in meta.get("dependencies", [])}
    optional = {
        requirement_name(r)
        for extra in meta.get("optional-dependencies", {}).values()
        for r in extra
    }
    by_module = importlib.metadata.packages_distributions()
    imported: set[str] = set()
    for package in packages:
        imported |= imported_top_levels(dist / package)
    ours = {p.split("/")[-1] for p in packages} | {"openclaw_runtime"}
    third_party = {
        m
        for m in imported
        if m not in sys.stdlib_module_names and m not in ours and m != "__future__"
    }
    for module in sorted(third_party):
        dists = {requirement_name(d) for d in by_module.get(module, [module])}
        # optional ones (trio imported lazily, pytest by the testing kit) may sit in an extra
        assert dists & (declared | optional), (
            f"{meta['name']} imports {module} but does not declare {dists}"
        )


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=IDS)
def test_no_backport_where_the_stdlib_suffices(dist):
    """importlib-metadata only if the code imports the backport (3.10+ stdlib has entry_points(group=))."""
    meta = project(dist)
    declared = {requirement_name(r) for r in meta.get("dependencies", [])}
    if "importlib-metadata" in declared:
        packages = tomllib.loads((dist / "pyproject.toml").read_text())["tool"]["hatch"]["build"][
            "targets"
        ]["wheel"]["packages"]
        assert any("importlib_metadata" in imported_top_levels(dist / p) for p in packages)
