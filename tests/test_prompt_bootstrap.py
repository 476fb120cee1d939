"""Bootstrap (project-context) files: OpenClaw's per-file and total budgets, the truncation
marker, which files are read and in which mode; and the prompt package's layering."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from openclaw_runtime.prompt import (
    ContextFile,
    build_bootstrap_context_files,
    load_bootstrap_files,
    trim_bootstrap_content,
)


@pytest.mark.parametrize(
    ("content", "limit", "expected"),
    [
        ("short\n\n  ", 100, "short"),
        ("x" * 100, 100, "x" * 100),
        (
            "0123456789" * 2,  # 20 chars, limit 10: head 7, tail 2
            10,
            "0123456\n[...truncated, read A.md for full content...]\n"
            "…(truncated A.md: kept 7+2 chars of 20)…\n89",
        ),
        (
            "abcdefghijk",  # limit 4: head 2, tail 0
            4,
            "ab\n[...truncated, read A.md for full content...]\n"
            "…(truncated A.md: kept 2+0 chars of 11)…\n",
        ),
    ],
)
def test_trim_bootstrap_content(content: str, limit: int, expected: str) -> None:
    assert trim_bootstrap_content(content, "A.md", limit) == expected


def test_total_budget_cuts_the_last_file_and_stops_under_64_chars() -> None:
    files = [("A.md", "a" * 100), ("B.md", "b" * 100), ("C.md", "c" * 100)]
    out = build_bootstrap_context_files(files, max_chars=1000, total_max_chars=150)
    assert out == [ContextFile("A.md", "a" * 100)]  # 50 left < 64: B is not started
    out = build_bootstrap_context_files(files, max_chars=1000, total_max_chars=180)
    assert out == [ContextFile("A.md", "a" * 100), ContextFile("B.md", "b" * 79 + "…")]


@pytest.mark.parametrize("bad", [0, -5, None])
def test_non_positive_budgets_fall_back_to_the_defaults(bad: int | None) -> None:
    out = build_bootstrap_context_files([("A.md", "a" * 25_000)], max_chars=bad)
    assert "kept 14000+4000 chars of 25000" in out[0].content


def test_load_reads_existing_defaults_in_order(tmp_path: Path) -> None:
    for name in ("USER.md", "AGENTS.md", "CLAUDE.md", "memory.md", "TOOLS.md"):
        (tmp_path / name).write_text(f"{name} text\n", encoding="utf-8")
    (tmp_path / "SOUL.md").write_bytes(b"bad \xff byte")
    full = load_bootstrap_files(tmp_path)
    assert [f.path for f in full] == ["AGENTS.md", "SOUL.md", "TOOLS.md", "USER.md", "memory.md"]
    assert full[1].content == "bad \ufffd byte"
    minimal = load_bootstrap_files(tmp_path, mode="minimal")
    assert [f.path for f in minimal] == ["AGENTS.md", "TOOLS.md"]
    assert load_bootstrap_files(tmp_path, mode="none") == []
    custom = load_bootstrap_files(tmp_path, names=["CLAUDE.md", "MISSING.md"])
    assert custom == [ContextFile("CLAUDE.md", "CLAUDE.md text")]


def test_per_file_limit_applies_when_loading(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("z" * 500, encoding="utf-8")
    (loaded,) = load_bootstrap_files(tmp_path, max_chars=100)
    assert loaded.content.startswith("z" * 70 + "\n[...truncated, read AGENTS.md")
    assert loaded.content.endswith("\n" + "z" * 20)


PROMPT = Path(__file__).resolve().parent.parent / "openclaw_runtime" / "prompt"
FORBIDDEN = ("runner", "_runtime", "cli", "commands", "_plugins", "config")


@pytest.mark.parametrize("path", sorted(PROMPT.rglob("*.py")), ids=lambda p: p.name)
def test_prompt_package_is_a_policy_package(path: Path) -> None:
    """It may use the kernel and shared leaves, never the runner, Runtime or CLI."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            depth = len(path.relative_to(PROMPT).parts)  # 1: prompt/x.py, 2: prompt/skills/x.py
            if node.level > depth:
                top = (node.module or "").split(".")[0]
                assert top not in FORBIDDEN, f"{path.name} imports {node.module}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "openclaw_runtime"
        ):
            parts = (node.module or "").split(".")
            assert len(parts) < 2 or parts[1] not in FORBIDDEN, f"{path.name} imports {node.module}"
