"""The README works for a new user on a fresh clone (issue 14 §5): its links stay inside the
repository (and point at files and headings that exist), and every shell command it shows runs
without an activated venv — the venv's programs are called by path (``.venv/bin/...``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")
AUTOLINK = re.compile(r"<(?:https?|ftp)://[^>]+>")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
#: Programs that live in the venv: a README command must name them by their venv path.
VENV_PROGRAMS = frozenset(
    {"openclaw-runtime", "pip", "pip3", "python", "pytest", "ruff", "mypy", "tox"}
)
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks."""
    return FENCE.sub("", text)


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading."""
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return slug.replace(" ", "-")


def bare_venv_commands(script: str) -> list[str]:
    """The commands of a shell snippet that call a venv program without its path."""
    found = []
    for line in script.splitlines():
        line = line.split(" #", 1)[0]
        for command in re.split(r"&&|\|\||[|;]", line):
            words = [w for w in command.split() if not ASSIGNMENT.match(w)]
            if words and words[0] in VENV_PROGRAMS:
                found.append(command.strip())
    return found


@pytest.mark.parametrize(
    ("script", "bare"),
    [
        (".venv/bin/openclaw-runtime demo", []),
        ("python3 -m venv .venv && .venv/bin/pip install -e .", []),
        (
            "OPENAI_API_KEY=sk-x openclaw-runtime run hi",
            ["OPENAI_API_KEY=sk-x openclaw-runtime run hi"],
        ),
        ("pip install -e plugins/redis   # a comment", ["pip install -e plugins/redis"]),
        (".venv/bin/ruff check . && mypy", ["mypy"]),
        ("redis-server --port 6379", []),
    ],
)
def test_bare_venv_commands(script: str, bare: list[str]) -> None:
    assert bare_venv_commands(script) == bare


def test_readme_links_stay_in_the_repository() -> None:
    text = README.read_text(encoding="utf-8")
    prose = _prose(text)
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", prose, re.M)}
    assert not AUTOLINK.search(prose)
    links = LINK.findall(prose)
    assert links, "the README links to its docs"
    for target in links:
        assert "://" not in target and not target.startswith("mailto:"), target
        path, _, anchor = target.partition("#")
        if not path:
            assert anchor in anchors, f"no heading for #{anchor}"
            continue
        resolved = (REPO / path).resolve()
        assert resolved.is_relative_to(REPO), f"{target} leaves the repository"
        assert resolved.exists(), f"{target} does not exist"


def test_readme_commands_need_no_activated_venv() -> None:
    text = README.read_text(encoding="utf-8")
    scripts = [body for lang, body in FENCE.findall(text) if lang in ("bash", "sh", "shell")]
    assert scripts
    bare = [command for script in scripts for command in bare_venv_commands(script)]
    assert bare == []
    assert ". .venv/bin/activate" in text  # ... and how to activate it for short commands


def test_readme_says_how_to_install_every_first_party_plugin() -> None:
    text = README.read_text(encoding="utf-8")
    for plugin in sorted((REPO / "plugins").iterdir()):
        if (plugin / "pyproject.toml").is_file():
            assert f".venv/bin/pip install -e plugins/{plugin.name}" in text, plugin.name
