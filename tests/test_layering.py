"""The kernel stays a kernel: it imports nothing from providers, auth, failover or runner."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

AGENT = Path(__file__).resolve().parent.parent / "openclaw_runtime" / "agent"
FORBIDDEN = (
    "providers",
    "auth",
    "failover",
    "runner",
    "context",
    "transcript",
    "_runtime",
    "_plugins",
)


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            prefix = "." * node.level
            found.add(prefix + (node.module or ""))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("path", sorted(AGENT.glob("*.py")), ids=lambda p: p.name)
def test_kernel_module_imports_no_orchestrator_package(path):
    for module in imported_modules(path):
        parts = module.lstrip(".").split(".")
        top = parts[1] if module.startswith("openclaw_runtime.") else parts[0]
        if module.startswith("..") or module.startswith("openclaw_runtime."):
            assert top not in FORBIDDEN, f"{path.name} imports {module}"
